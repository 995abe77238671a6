package io.kbroker.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.ListShareGroupOffsetsSpec;
import org.apache.kafka.clients.admin.SharePartitionOffsetInfo;
import org.apache.kafka.clients.admin.ShareGroupDescription;
import org.apache.kafka.clients.consumer.AcknowledgeType;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.common.GroupState;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.junit.jupiter.api.Test;

/** ShareConsumerTest: the Java client's KafkaShareConsumer (KIP-932 share groups). */
class ShareConsumerTest {
    /**
     * A share consumer with explicit acknowledgement reads two partitions
     * from the start (share.auto.offset.reset=earliest, a GROUP config),
     * accepts every record but one, which it rejects; once committed, the
     * Admin's listShareGroupOffsets shows no lag on either partition,
     * and after close the group is Empty.
     */
    @Test
    void explicitAcknowledgement() throws Exception {
        String topic = TestBroker.topic("share");
        String group = TestBroker.topic("sg");
        try (Admin admin = Clients.admin(); var p = Clients.producer(Clients.props())) {
            Clients.createTopic(admin, topic, 2, Map.of());
            ConfigResource res = new ConfigResource(ConfigResource.Type.GROUP, group);
            Clients.get(admin.incrementalAlterConfigs(Map.of(res, List.of(
                new AlterConfigOp(new ConfigEntry("share.auto.offset.reset", "earliest"), AlterConfigOp.OpType.SET)))).all());
            Clients.produce(p, topic, 0, Clients.values("a", 20));
            Clients.produce(p, topic, 1, Clients.values("b", 20));
        }
        Properties props = new Properties();
        props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, TestBroker.bootstrap());
        props.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        props.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        props.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        props.put(ConsumerConfig.REQUEST_TIMEOUT_MS_CONFIG, "10000");
        props.put(ConsumerConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "20000");
        props.put("share.acknowledgement.mode", "explicit");
        Set<String> seen = new HashSet<>();
        try (var c = new KafkaShareConsumer<String, String>(props)) {
            c.subscribe(List.of(topic));
            Clients.await("40 records", () -> {
                for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(200))) {
                    assertTrue(seen.add(r.value()), "delivered twice: " + r.value());
                    c.acknowledge(r, r.value().equals("a-7") ? AcknowledgeType.REJECT : AcknowledgeType.ACCEPT);
                }
                c.commitSync();
            }, () -> seen.size() == 40);
            assertTrue(c.acquisitionLockTimeoutMs().isPresent(), "no acquisition lock timeout");
        }
        try (Admin admin = Clients.admin()) {
            // Every record is acknowledged: no lag. kbroker moves the start
            // offset past the acknowledged window at once; Kafka 4.4 keeps
            // it at 0 until a later fetch, and counts the window as done.
            Map<TopicPartition, SharePartitionOffsetInfo> offsets = Map.of();
            for (long deadline = System.nanoTime() + Clients.WAIT.toNanos(); ; Thread.sleep(100)) {
                offsets = Clients.get(admin.listShareGroupOffsets(Map.of(group, new ListShareGroupOffsetsSpec()))
                    .partitionsToOffsetInfo(group));
                if (allDelivered(offsets) || System.nanoTime() > deadline) {
                    break;
                }
            }
            assertTrue(allDelivered(offsets), "share-partitions, want lag 0 each: " + offsets);
            if (TestBroker.isKbroker()) {
                for (var e : offsets.entrySet()) {
                    assertEquals(20L, e.getValue().startOffset(), "start offset of " + e.getKey());
                }
            }
            ShareGroupDescription d = Clients.get(admin.describeShareGroups(List.of(group)).describedGroups().get(group));
            assertEquals(GroupState.EMPTY, d.groupState());
        }
    }

    private static boolean allDelivered(Map<TopicPartition, SharePartitionOffsetInfo> offsets) {
        return offsets.size() == 2 && offsets.values().stream().allMatch(o -> o.lag().orElse(-1L) == 0L);
    }

}
