package io.kbroker.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CopyOnWriteArrayList;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.ConsumerGroupDescription;
import org.apache.kafka.clients.admin.MemberDescription;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.CooperativeStickyAssignor;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.consumer.RangeAssignor;
import org.apache.kafka.common.GroupType;
import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** ConsumerTest: the Java consumer's groups (classic and KIP-848), positions and commits. */
class ConsumerTest {
    /** Revocations records what a member's rebalance listener was told. */
    static final class Revocations implements ConsumerRebalanceListener {
        final List<Set<TopicPartition>> revoked = new CopyOnWriteArrayList<>();
        final List<Set<TopicPartition>> assigned = new CopyOnWriteArrayList<>();

        @Override
        public void onPartitionsRevoked(Collection<TopicPartition> partitions) {
            if (!partitions.isEmpty()) {
                revoked.add(new HashSet<>(partitions));
            }
        }

        @Override
        public void onPartitionsAssigned(Collection<TopicPartition> partitions) {
            assigned.add(new HashSet<>(partitions));
        }
    }

    /**
     * Two members of a classic group on 4 partitions: the first gets all
     * four, the second's join splits them 2/2. Eager (range) revokes all of
     * the first member's partitions; cooperative-sticky revokes only the
     * two that move. Every record is consumed, and each by one member.
     */
    @ParameterizedTest
    @ValueSource(strings = {"eager", "cooperative"})
    void classicGroupRebalance(String mode) throws Exception {
        String topic = TestBroker.topic("classic-" + mode);
        String group = TestBroker.topic("g-" + mode);
        String assignor = mode.equals("eager") ? RangeAssignor.class.getName()
            : CooperativeStickyAssignor.class.getName();
        var props = Clients.props(ConsumerConfig.PARTITION_ASSIGNMENT_STRATEGY_CONFIG, assignor,
            ConsumerConfig.GROUP_PROTOCOL_CONFIG, "classic");
        try (Admin admin = Clients.admin(); var p = Clients.producer(Clients.props())) {
            Clients.createTopic(admin, topic, 4, Map.of());
            for (int i = 0; i < 4; i++) {
                Clients.produce(p, topic, i, Clients.values("p" + i, 25));
            }
        }
        Revocations l1 = new Revocations();
        Revocations l2 = new Revocations();
        Set<String> seen = new HashSet<>();
        try (var c1 = Clients.consumer(group, props); var c2 = Clients.consumer(group, props)) {
            c1.subscribe(List.of(topic), l1);
            Clients.await("first member assigned all 4 partitions",
                () -> c1.poll(Duration.ofMillis(100)).forEach(r -> assertTrue(seen.add(r.value()), "dup " + r.value())),
                () -> c1.assignment().size() == 4);
            c2.subscribe(List.of(topic), l2);
            Clients.await("members split 2/2",
                () -> {
                    c1.poll(Duration.ofMillis(100)).forEach(r -> seen.add(r.value()));
                    c2.poll(Duration.ofMillis(100)).forEach(r -> seen.add(r.value()));
                },
                () -> c1.assignment().size() == 2 && c2.assignment().size() == 2);
            Set<TopicPartition> union = new HashSet<>(c1.assignment());
            union.addAll(c2.assignment());
            assertEquals(4, union.size(), "assignments overlap: " + c1.assignment() + " " + c2.assignment());
            assertFalse(l1.revoked.isEmpty(), "first member was never told of a revocation");
            if (mode.equals("eager")) {
                assertEquals(4, l1.revoked.get(0).size(), "eager revokes everything: " + l1.revoked);
            } else {
                for (Set<TopicPartition> r : l1.revoked) {
                    assertFalse(c1.assignment().stream().anyMatch(r::contains),
                        "cooperative revoked a partition it kept: " + r + " kept " + c1.assignment());
                }
                assertEquals(2, l1.revoked.stream().mapToInt(Set::size).sum(), "revoked " + l1.revoked);
            }
            // Records are not committed, so the move may re-deliver: count distinct values.
            Clients.await("all 100 records consumed",
                () -> {
                    c1.poll(Duration.ofMillis(100)).forEach(r -> seen.add(r.value()));
                    c2.poll(Duration.ofMillis(100)).forEach(r -> seen.add(r.value()));
                },
                () -> seen.size() == 100);
        }
    }

    /**
     * A static member (group.instance.id) that closes and comes back with
     * the same id within the session timeout gets its partitions back
     * without a rebalance: the generation does not move.
     */
    @Test
    void staticMembership() throws Exception {
        String topic = TestBroker.topic("static");
        String group = TestBroker.topic("g-static");
        try (Admin admin = Clients.admin()) {
            Clients.createTopic(admin, topic, 2, Map.of());
        }
        var props = Clients.props(ConsumerConfig.GROUP_INSTANCE_ID_CONFIG, "instance-1",
            ConsumerConfig.GROUP_PROTOCOL_CONFIG, "classic");
        int generation;
        String memberId;
        try (var c = Clients.consumer(group, props)) {
            c.subscribe(List.of(topic));
            Clients.await("static member assigned", () -> c.poll(Duration.ofMillis(100)),
                () -> c.assignment().size() == 2);
            generation = c.groupMetadata().generationId();
            memberId = c.groupMetadata().memberId();
            assertEquals("instance-1", c.groupMetadata().groupInstanceId().orElseThrow());
        }
        // A static member's close does not leave the group: it is still there.
        try (Admin admin = Clients.admin()) {
            ConsumerGroupDescription d = Clients.get(admin.describeConsumerGroups(List.of(group)).all()).get(group);
            assertEquals(1, d.members().size(), "members " + d.members());
            MemberDescription m = d.members().iterator().next();
            assertEquals("instance-1", m.groupInstanceId().orElseThrow());
            assertEquals(memberId, m.consumerId());
        }
        try (var c = Clients.consumer(group, props)) {
            c.subscribe(List.of(topic));
            Clients.await("static member back", () -> c.poll(Duration.ofMillis(100)),
                () -> c.assignment().size() == 2);
            assertEquals(generation, c.groupMetadata().generationId(), "a static rejoin rebalanced");
            c.enforceRebalance(); // then leave for real at close: not needed by the assertions
        }
    }

    /**
     * group.protocol=consumer (KIP-848): the broker assigns; two members
     * share 4 partitions 2/2, the group describes as a CONSUMER group, and
     * every record is consumed.
     */
    @Test
    void consumerProtocolGroup() throws Exception {
        String topic = TestBroker.topic("kip848");
        String group = TestBroker.topic("g-kip848");
        try (Admin admin = Clients.admin(); var p = Clients.producer(Clients.props())) {
            Clients.createTopic(admin, topic, 4, Map.of());
            for (int i = 0; i < 4; i++) {
                Clients.produce(p, topic, i, Clients.values("p" + i, 10));
            }
        }
        var props = Clients.props(ConsumerConfig.GROUP_PROTOCOL_CONFIG, "consumer");
        Set<String> seen = new HashSet<>();
        try (var c1 = consumer848(group, props); var c2 = consumer848(group, props)) {
            c1.subscribe(List.of(topic));
            Clients.await("first member assigned all 4", () -> c1.poll(Duration.ofMillis(100))
                .forEach(r -> seen.add(r.value())), () -> c1.assignment().size() == 4);
            c2.subscribe(List.of(topic));
            Clients.await("members split 2/2", () -> {
                c1.poll(Duration.ofMillis(100)).forEach(r -> seen.add(r.value()));
                c2.poll(Duration.ofMillis(100)).forEach(r -> seen.add(r.value()));
            }, () -> c1.assignment().size() == 2 && c2.assignment().size() == 2);
            Clients.await("all 40 records consumed", () -> {
                c1.poll(Duration.ofMillis(100)).forEach(r -> seen.add(r.value()));
                c2.poll(Duration.ofMillis(100)).forEach(r -> seen.add(r.value()));
            }, () -> seen.size() == 40);
            try (Admin admin = Clients.admin()) {
                ConsumerGroupDescription d = Clients.get(admin.describeConsumerGroups(List.of(group)).all()).get(group);
                assertEquals(GroupType.CONSUMER, d.type());
                assertEquals(2, d.members().size());
                for (MemberDescription m : d.members()) {
                    assertEquals(2, m.assignment().topicPartitions().size(), "member " + m);
                }
            }
        }
    }

    /** Consumer848 is a consumer for group.protocol=consumer, which refuses the classic session settings. */
    static KafkaConsumer<String, String> consumer848(String group, java.util.Properties extra) {
        var p = TestBroker.consumerProps(group);
        p.remove(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG);
        p.remove(ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG);
        p.putAll(extra);
        return new KafkaConsumer<>(p);
    }

    /**
     * seek, position and committed: a seek moves the next fetch; a commit
     * with metadata is what committed() and a new member of the group see.
     */
    @Test
    void seekPositionCommitted() throws Exception {
        String topic = TestBroker.topic("seek");
        String group = TestBroker.topic("g-seek");
        TopicPartition tp = new TopicPartition(topic, 0);
        try (Admin admin = Clients.admin(); var p = Clients.producer(Clients.props())) {
            Clients.createTopic(admin, topic, 1, Map.of());
            Clients.produce(p, topic, 0, Clients.values("v", 10));
        }
        try (var c = Clients.consumer(group, Clients.props())) {
            c.assign(List.of(tp));
            assertEquals(null, c.committed(Set.of(tp)).get(tp), "committed before any commit");
            c.seek(tp, 5);
            assertEquals(5, c.position(tp));
            List<ConsumerRecord<String, String>> got = Clients.poll(c, 5);
            assertEquals(5, got.get(0).offset());
            assertEquals("v-5", got.get(0).value());
            assertEquals(10, c.position(tp));
            c.seekToBeginning(List.of(tp));
            assertEquals(0, c.position(tp));
            c.seekToEnd(List.of(tp));
            assertEquals(10, c.position(tp));
            c.commitSync(Map.of(tp, new OffsetAndMetadata(7, "seven")));
            OffsetAndMetadata om = c.committed(Set.of(tp)).get(tp);
            assertNotNull(om);
            assertEquals(7, om.offset());
            assertEquals("seven", om.metadata());
            assertEquals(Map.of(tp, 10L), c.endOffsets(List.of(tp)));
            assertEquals(Map.of(tp, 0L), c.beginningOffsets(List.of(tp)));
        }
        try (var c = Clients.consumer(group, Clients.props())) {
            c.subscribe(List.of(topic));
            List<ConsumerRecord<String, String>> got = Clients.poll(c, 3);
            assertEquals(List.of(7L, 8L, 9L), got.stream().map(ConsumerRecord::offset).toList());
        }
    }

    /** Ids returns the offsets of records. */
    static List<Long> offsets(List<ConsumerRecord<String, String>> records) {
        List<Long> out = new ArrayList<>();
        records.forEach(r -> out.add(r.offset()));
        return out;
    }
}
