package io.kbroker.apps;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.UUID;
import java.util.stream.Stream;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;
import org.junit.jupiter.api.Test;

/**
 * A Kafka Streams application with a state store (a count by key) under
 * exactly_once_v2. Streams creates its changelog topic compacted; the broker
 * is started with settings that make its cleaner act within a second. The
 * application is stopped, its state directory deleted, and started again: it
 * restores the store from the compacted changelog, and the counts it then
 * emits continue from the restored ones.
 */
class StreamsCountTest {
  private static final int KEYS = 50;

  @Test
  void countRestoresFromCompactedChangelog() throws Exception {
    String bootstrap = Broker.bootstrap();
    String id = "count-" + UUID.randomUUID().toString().substring(0, 8);
    String input = id + "-in", output = id + "-out";
    Broker.createTopic(input, 1, Map.of());
    Broker.createTopic(output, 1, Map.of());
    Path stateDir = Files.createTempDirectory("kbroker-streams");
    Map<String, Long> want = new HashMap<>();

    produce(bootstrap, input, 2000, want);
    try (KafkaStreams app = start(bootstrap, id, input, output, stateDir)) {
      Broker.awaitCounts(bootstrap, output, want, "first run");
    }

    // The changelog is compacted: DescribeConfigs says so, as Kafka would.
    try (Admin a = Broker.admin()) {
      ConfigResource r = new ConfigResource(ConfigResource.Type.TOPIC, id + "-counts-changelog");
      Config c = a.describeConfigs(List.of(r)).all().get().get(r);
      assertEquals("compact", c.get("cleanup.policy").value());
    }

    // Lose the local state: the next run restores it from the changelog.
    try (Stream<Path> s = Files.walk(stateDir)) {
      s.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
    }
    awaitCompacted(bootstrap, id + "-counts-changelog");
    produce(bootstrap, input, 1000, want);
    try (KafkaStreams app = start(bootstrap, id, input, output, stateDir)) {
      // Without the restored store the counts would start again from 0.
      Broker.awaitCounts(bootstrap, output, want, "after restore");
    }
  }

  /** Waits until the changelog, read from the start, holds at most two records a key: the cleaner ran. */
  private static void awaitCompacted(String bootstrap, String topic) throws InterruptedException {
    Properties p = new Properties();
    p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class);
    p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class);
    p.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
    TopicPartition tp = new TopicPartition(topic, 0);
    Broker.await("changelog " + topic + " compacted", Duration.ofSeconds(60), () -> {
      try (KafkaConsumer<String, String> c = new KafkaConsumer<>(p)) {
        c.assign(List.of(tp));
        c.seekToBeginning(List.of(tp));
        long end = c.endOffsets(List.of(tp)).get(tp);
        int n = 0;
        while (c.position(tp) < end) {
          n += c.poll(Duration.ofMillis(200)).count();
        }
        return n <= 2 * KEYS;
      }
    });
  }

  private static void produce(String bootstrap, String topic, int n, Map<String, Long> want) {
    Properties p = new Properties();
    p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class);
    p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class);
    try (KafkaProducer<String, String> pr = new KafkaProducer<>(p)) {
      for (int i = 0; i < n; i++) {
        String k = "k" + (i % KEYS);
        want.merge(k, 1L, Long::sum);
        pr.send(new ProducerRecord<>(topic, k, "v" + i));
      }
      pr.flush();
    }
  }

  private static KafkaStreams start(String bootstrap, String id, String input, String output, Path stateDir) {
    StreamsBuilder b = new StreamsBuilder();
    b.stream(input, Consumed.with(Serdes.String(), Serdes.String()))
        .groupByKey()
        .count(Materialized.as("counts"))
        .toStream()
        .to(output, Produced.with(Serdes.String(), Serdes.Long()));
    Properties p = new Properties();
    p.put(StreamsConfig.APPLICATION_ID_CONFIG, id);
    p.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    p.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, StreamsConfig.EXACTLY_ONCE_V2);
    p.put(StreamsConfig.STATE_DIR_CONFIG, stateDir.toString());
    p.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, 100);
    p.put(StreamsConfig.REPLICATION_FACTOR_CONFIG, 1);
    p.put(StreamsConfig.consumerPrefix(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG), 10_000);
    p.put(StreamsConfig.consumerPrefix(ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG), 1_000);
    p.put(StreamsConfig.producerPrefix(ProducerConfig.TRANSACTION_TIMEOUT_CONFIG), 10_000);
    KafkaStreams app = new KafkaStreams(b.build(), p);
    app.start();
    return app;
  }
}
