package io.kbroker.apps;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ExecutionException;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.GroupListing;
import org.apache.kafka.clients.admin.ListGroupsOptions;
import org.apache.kafka.clients.admin.StreamsGroupDescription;
import org.apache.kafka.clients.admin.StreamsGroupMemberDescription;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.GroupType;
import org.apache.kafka.common.errors.GroupIdNotFoundException;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;
import org.junit.jupiter.api.Test;

/**
 * Two instances of a Kafka Streams application with group.protocol=streams
 * (KIP-1071): the broker receives the topology, creates the repartition and
 * changelog topics, and assigns the tasks. The counts must come out right
 * under exactly_once_v2; when one instance stops, the other gets all tasks
 * and the counts stay right.
 */
class StreamsGroupProtocolTest {
  private static final int KEYS = 40;
  private static final int PARTITIONS = 4;

  @Test
  void twoInstancesThenOne() throws Exception {
    String bootstrap = Broker.bootstrap();
    String id = "sgp-" + UUID.randomUUID().toString().substring(0, 8);
    String input = id + "-in", output = id + "-out";
    Broker.createTopic(input, PARTITIONS, Map.of());
    Broker.createTopic(output, 1, Map.of());
    Map<String, Long> want = new HashMap<>();

    produce(bootstrap, input, 1000, want);
    try (KafkaStreams a = start(bootstrap, id, input, output);
        KafkaStreams b = start(bootstrap, id, input, output);
        Admin admin = Broker.admin()) {
      // Both instances get tasks: two subtopologies of 4 tasks each.
      Broker.await("both instances running with tasks", Duration.ofSeconds(60), () -> {
        StreamsGroupDescription d = describe(admin, id);
        return d != null && d.members().size() == 2
            && d.members().stream().allMatch(m -> !m.assignment().activeTasks().isEmpty())
            && activeTasks(d) == 2 * PARTITIONS
            && d.groupState().toString().equalsIgnoreCase("Stable");
      });
      // The broker created the internal topics with the partition counts it decided.
      Set<String> topics = admin.listTopics().names().get();
      assertTrue(topics.contains(id + "-counts-changelog"), "changelog topic: " + topics);
      assertTrue(topics.contains(id + "-counts-repartition"), "repartition topic: " + topics);
      assertEquals(PARTITIONS, admin.describeTopics(List.of(id + "-counts-changelog")).allTopicNames().get()
          .get(id + "-counts-changelog").partitions().size());
      // ListGroups shows a streams group.
      boolean listed = admin.listGroups(new ListGroupsOptions().withTypes(Set.of(GroupType.STREAMS))).all().get()
          .stream().map(GroupListing::groupId).anyMatch(id::equals);
      assertTrue(listed, "ListGroups of type streams lists " + id);
      Broker.awaitCounts(bootstrap, output, want, "two instances");

      // One instance leaves: the other takes over every task.
      b.close(Duration.ofSeconds(20));
      Broker.await("one instance with every task", Duration.ofSeconds(60), () -> {
        StreamsGroupDescription d = describe(admin, id);
        return d != null && d.members().size() == 1 && activeTasks(d) == 2 * PARTITIONS
            && d.groupState().toString().equalsIgnoreCase("Stable");
      });
      produce(bootstrap, input, 1000, want);
      Broker.awaitCounts(bootstrap, output, want, "one instance");
    }
  }

  /**
   * The group's description, or null while it does not exist yet: the
   * instances create it with their first heartbeat, which a loaded machine
   * may delay past the first describe (GROUP_ID_NOT_FOUND, as from Kafka).
   */
  private static StreamsGroupDescription describe(Admin admin, String id) {
    try {
      return admin.describeStreamsGroups(List.of(id)).all().get().get(id);
    } catch (ExecutionException e) {
      if (e.getCause() instanceof GroupIdNotFoundException) {
        return null;
      }
      throw new AssertionError("describe streams group " + id, e);
    } catch (Exception e) {
      throw new AssertionError("describe streams group " + id, e);
    }
  }

  private static int activeTasks(StreamsGroupDescription d) {
    int n = 0;
    for (StreamsGroupMemberDescription m : d.members()) {
      n += m.assignment().activeTasks().stream().mapToInt(t -> t.partitions().size()).sum();
    }
    return n;
  }

  private static void produce(String bootstrap, String topic, int n, Map<String, Long> want) {
    Properties p = new Properties();
    p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class);
    p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class);
    try (KafkaProducer<String, String> pr = new KafkaProducer<>(p)) {
      for (int i = 0; i < n; i++) {
        // Keyed by i, counted by value: groupBy repartitions by the value.
        String v = "w" + (i % KEYS);
        want.merge(v, 1L, Long::sum);
        pr.send(new ProducerRecord<>(topic, "k" + i, v));
      }
      pr.flush();
    }
  }

  private static KafkaStreams start(String bootstrap, String id, String input, String output) throws Exception {
    StreamsBuilder b = new StreamsBuilder();
    b.stream(input, Consumed.with(Serdes.String(), Serdes.String()))
        .groupBy((k, v) -> v, Grouped.with("counts", Serdes.String(), Serdes.String()))
        .count(Materialized.as("counts"))
        .toStream()
        .to(output, Produced.with(Serdes.String(), Serdes.Long()));
    Properties p = new Properties();
    p.put(StreamsConfig.APPLICATION_ID_CONFIG, id);
    p.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    p.put(StreamsConfig.GROUP_PROTOCOL_CONFIG, "streams");
    p.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, StreamsConfig.EXACTLY_ONCE_V2);
    p.put(StreamsConfig.STATE_DIR_CONFIG, Files.createTempDirectory("kbroker-sgp").toString());
    p.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, 100);
    p.put(StreamsConfig.REPLICATION_FACTOR_CONFIG, 1);
    p.put(StreamsConfig.producerPrefix(ProducerConfig.TRANSACTION_TIMEOUT_CONFIG), 10_000);
    KafkaStreams app = new KafkaStreams(b.build(), p);
    app.start();
    return app;
  }
}
