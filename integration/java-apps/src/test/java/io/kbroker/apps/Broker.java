package io.kbroker.apps;

import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.UUID;
import java.util.function.BooleanSupplier;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.serialization.LongDeserializer;
import org.apache.kafka.common.serialization.StringDeserializer;

/** Where the kbroker under test listens, and small helpers. */
final class Broker {
  private Broker() {}

  /** The broker's address: -Dkbroker.bootstrap, else KBROKER_TEST_BOOTSTRAP; the test is skipped without one. */
  static String bootstrap() {
    String b = System.getProperty("kbroker.bootstrap", "");
    if (b.isEmpty()) {
      b = System.getenv().getOrDefault("KBROKER_TEST_BOOTSTRAP", "");
    }
    assumeTrue(!b.isEmpty(), "no broker: set -Dkbroker.bootstrap (integration/java_apps_test.go does)");
    return b;
  }

  static Admin admin() {
    Properties p = new Properties();
    p.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap());
    p.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, 10_000);
    p.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, 20_000);
    return Admin.create(p);
  }

  static void createTopic(String name, int partitions, Map<String, String> configs) throws Exception {
    try (Admin a = admin()) {
      a.createTopics(List.of(new NewTopic(name, partitions, (short) 1).configs(configs))).all().get();
    }
  }

  /** Polls cond every 100 ms until it holds or within expires. */
  static void await(String what, Duration within, BooleanSupplier cond) throws InterruptedException {
    long deadline = System.nanoTime() + within.toNanos();
    while (!cond.getAsBoolean()) {
      if (System.nanoTime() > deadline) {
        fail(what + ": not within " + within);
      }
      Thread.sleep(100);
    }
  }

  /**
   * Reads topic (read_committed) until every key's latest count is the wanted
   * one: under exactly_once_v2 a count never goes back and never skips past
   * the truth.
   */
  static void awaitCounts(String bootstrap, String topic, Map<String, Long> want, String what)
      throws InterruptedException {
    Map<String, Long> seen = new HashMap<>();
    Properties p = new Properties();
    p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    p.put(ConsumerConfig.GROUP_ID_CONFIG, "reader-" + UUID.randomUUID());
    p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
    p.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
    p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class);
    p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, LongDeserializer.class);
    try (KafkaConsumer<String, Long> c = new KafkaConsumer<>(p)) {
      c.subscribe(List.of(topic));
      await(what + ": counts " + want, Duration.ofSeconds(90), () -> {
        for (ConsumerRecord<String, Long> r : c.poll(Duration.ofMillis(200))) {
          Long prev = seen.get(r.key());
          assertTrue(prev == null || r.value() >= prev, "count of " + r.key() + " went back from " + prev + " to " + r.value());
          assertTrue(r.value() <= want.get(r.key()), "count of " + r.key() + " is " + r.value() + ", more than produced");
          seen.put(r.key(), r.value());
        }
        return seen.equals(want);
      });
    }
  }
}
