package io.kbroker.streams;

import static org.junit.jupiter.api.Assertions.fail;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.function.BooleanSupplier;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;

/** Where the kbroker under test listens, and small helpers. */
final class Broker {
  private Broker() {}

  /** The broker's address: -Dkbroker.bootstrap, else KBROKER_TEST_BOOTSTRAP; the test is skipped without one. */
  static String bootstrap() {
    String b = System.getProperty("kbroker.bootstrap", "");
    if (b.isEmpty()) {
      b = System.getenv().getOrDefault("KBROKER_TEST_BOOTSTRAP", "");
    }
    assumeTrue(!b.isEmpty(), "no broker: set -Dkbroker.bootstrap (integration/java_streams_test.go does)");
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
}
