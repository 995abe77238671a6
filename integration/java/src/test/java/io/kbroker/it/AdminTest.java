package io.kbroker.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.stream.Collectors;

import org.apache.kafka.clients.admin.AbortTransactionSpec;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.ConsumerGroupDescription;
import org.apache.kafka.clients.admin.DescribeClusterResult;
import org.apache.kafka.clients.admin.FeatureMetadata;
import org.apache.kafka.clients.admin.GroupListing;
import org.apache.kafka.clients.admin.ListOffsetsResult.ListOffsetsResultInfo;
import org.apache.kafka.clients.admin.ListTransactionsOptions;
import org.apache.kafka.clients.admin.LogDirDescription;
import org.apache.kafka.clients.admin.NewPartitions;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.ProducerState;
import org.apache.kafka.clients.admin.RecordsToDelete;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.admin.TransactionDescription;
import org.apache.kafka.clients.admin.TransactionListing;
import org.apache.kafka.clients.admin.TransactionState;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.GroupState;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.errors.GroupIdNotFoundException;
import org.apache.kafka.common.errors.GroupNotEmptyException;
import org.apache.kafka.common.errors.InvalidConfigurationException;
import org.apache.kafka.common.errors.InvalidPartitionsException;
import org.apache.kafka.common.errors.InvalidTopicException;
import org.apache.kafka.common.errors.OffsetOutOfRangeException;
import org.apache.kafka.common.errors.TopicExistsException;
import org.apache.kafka.common.errors.UnknownTopicOrPartitionException;
import org.junit.jupiter.api.Test;

/** AdminTest: the Java AdminClient's topic, config, offset, group, log-dir and transaction calls. */
class AdminTest {
    /**
     * Create, describe, add partitions, delete; and the errors for an
     * existing topic, an invalid name, a partition count that shrinks, and
     * an unknown topic.
     */
    @Test
    void topicsAndPartitions() throws Exception {
        String topic = TestBroker.topic("admin-topic");
        try (Admin admin = Clients.admin()) {
            Clients.createTopic(admin, topic, 2, Map.of("retention.ms", "3600000"));
            TopicDescription d = Clients.get(admin.describeTopics(List.of(topic)).allTopicNames()).get(topic);
            assertEquals(2, d.partitions().size());
            assertFalse(d.isInternal());
            assertNotNull(d.topicId());
            Node leader = d.partitions().get(0).leader();
            assertNotNull(leader);
            assertEquals(List.of(leader), d.partitions().get(1).replicas());
            assertTrue(Clients.get(admin.listTopics().names()).contains(topic));

            assertInstanceOf(TopicExistsException.class, assertThrows(Exception.class,
                () -> Clients.createTopic(admin, topic, 1, Map.of())));
            assertInstanceOf(InvalidTopicException.class, assertThrows(Exception.class,
                () -> Clients.createTopic(admin, "bad/name", 1, Map.of())));

            Clients.get(admin.createPartitions(Map.of(topic, NewPartitions.increaseTo(5))).all());
            Clients.eventually("5 partitions described", () -> Clients.get(admin.describeTopics(List.of(topic))
                .allTopicNames()).get(topic).partitions().size() == 5);
            assertInstanceOf(InvalidPartitionsException.class, assertThrows(Exception.class,
                () -> Clients.get(admin.createPartitions(Map.of(topic, NewPartitions.increaseTo(3))).all())));

            Clients.get(admin.deleteTopics(List.of(topic)).all());
            Clients.eventually("deleted topic gone from listTopics",
                () -> !Clients.get(admin.listTopics().names()).contains(topic));
            assertInstanceOf(UnknownTopicOrPartitionException.class, assertThrows(Exception.class,
                () -> Clients.get(admin.deleteTopics(List.of(topic)).all())));
            assertInstanceOf(UnknownTopicOrPartitionException.class, assertThrows(Exception.class,
                () -> Clients.get(admin.describeTopics(List.of(topic)).allTopicNames())));
        }
    }

    /**
     * describeConfigs shows a topic's own settings as DYNAMIC_TOPIC_CONFIG
     * and the rest as defaults; incrementalAlterConfigs sets, appends to and
     * deletes them; an unknown value is refused.
     */
    @Test
    void configs() throws Exception {
        String topic = TestBroker.topic("admin-configs");
        ConfigResource res = new ConfigResource(ConfigResource.Type.TOPIC, topic);
        try (Admin admin = Clients.admin()) {
            Clients.createTopic(admin, topic, 1, Map.of("retention.ms", "3600000"));
            Config c = Clients.get(admin.describeConfigs(List.of(res)).all()).get(res);
            assertEquals("3600000", c.get("retention.ms").value());
            assertEquals(ConfigEntry.ConfigSource.DYNAMIC_TOPIC_CONFIG, c.get("retention.ms").source());
            assertEquals("delete", c.get("cleanup.policy").value());
            assertTrue(c.get("cleanup.policy").isDefault());

            Clients.get(admin.incrementalAlterConfigs(Map.of(res, List.of(
                new AlterConfigOp(new ConfigEntry("retention.bytes", "1048576"), AlterConfigOp.OpType.SET),
                new AlterConfigOp(new ConfigEntry("retention.ms", ""), AlterConfigOp.OpType.DELETE)))).all());
            Clients.eventually("retention.bytes altered", () -> "1048576".equals(
                Clients.get(admin.describeConfigs(List.of(res)).all()).get(res).get("retention.bytes").value()));
            c = Clients.get(admin.describeConfigs(List.of(res)).all()).get(res);
            assertEquals("1048576", c.get("retention.bytes").value());
            assertEquals(ConfigEntry.ConfigSource.DYNAMIC_TOPIC_CONFIG, c.get("retention.bytes").source());
            assertTrue(c.get("retention.ms").isDefault(), "retention.ms after DELETE: " + c.get("retention.ms"));

            assertInstanceOf(InvalidConfigurationException.class, assertThrows(Exception.class,
                () -> Clients.get(admin.incrementalAlterConfigs(Map.of(res, List.of(
                    new AlterConfigOp(new ConfigEntry("retention.ms", "soon"), AlterConfigOp.OpType.SET)))).all())));

            int node = Clients.get(admin.describeCluster().nodes()).iterator().next().id();
            ConfigResource broker = new ConfigResource(ConfigResource.Type.BROKER, String.valueOf(node));
            Config bc = Clients.get(admin.describeConfigs(List.of(broker)).all()).get(broker);
            assertNotNull(bc.get("message.max.bytes"), "broker config has no message.max.bytes");
            assertEquals("0", bc.get("group.initial.rebalance.delay.ms").value());
        }
    }

    /**
     * listOffsets: earliest, latest, the record with the largest timestamp
     * (KIP-734), and by timestamp; then deleteRecords moves the earliest,
     * and deleting past the high watermark is OFFSET_OUT_OF_RANGE.
     */
    @Test
    void listOffsetsAndDeleteRecords() throws Exception {
        String topic = TestBroker.topic("admin-offsets");
        TopicPartition tp = new TopicPartition(topic, 0);
        long base = System.currentTimeMillis() - 60_000;
        try (Admin admin = Clients.admin(); var p = Clients.producer(Clients.props(ProducerConfig.LINGER_MS_CONFIG, "0"))) {
            Clients.createTopic(admin, topic, 1, Map.of());
            // Timestamps 0, 5, 2, 9, 4 seconds after base: the largest is at offset 3.
            long[] ts = {0, 5000, 2000, 9000, 4000};
            for (int i = 0; i < ts.length; i++) {
                p.send(new ProducerRecord<>(topic, 0, base + ts[i], null, "v" + i)).get();
            }
            assertEquals(0, offset(admin, tp, OffsetSpec.earliest()).offset());
            assertEquals(5, offset(admin, tp, OffsetSpec.latest()).offset());
            ListOffsetsResultInfo max = offset(admin, tp, OffsetSpec.maxTimestamp());
            assertEquals(3, max.offset());
            assertEquals(base + 9000, max.timestamp());
            ListOffsetsResultInfo at = offset(admin, tp, OffsetSpec.forTimestamp(base + 3000));
            assertEquals(1, at.offset(), "first record at or after base+3s");
            assertEquals(base + 5000, at.timestamp());
            assertEquals(-1, offset(admin, tp, OffsetSpec.forTimestamp(base + 10_000)).offset());

            var low = Clients.get(admin.deleteRecords(Map.of(tp, RecordsToDelete.beforeOffset(2))).lowWatermarks()
                .get(tp));
            assertEquals(2, low.lowWatermark());
            assertEquals(2, offset(admin, tp, OffsetSpec.earliest()).offset());
            assertInstanceOf(OffsetOutOfRangeException.class, assertThrows(Exception.class,
                () -> Clients.get(admin.deleteRecords(Map.of(tp, RecordsToDelete.beforeOffset(6))).all())));
            // -1 means "up to the high watermark".
            low = Clients.get(admin.deleteRecords(Map.of(tp, RecordsToDelete.beforeOffset(-1))).lowWatermarks()
                .get(tp));
            assertEquals(5, low.lowWatermark());
        }
        // A consumer starting from the beginning now gets nothing old.
        try (var c = Clients.consumer(null, Clients.props())) {
            c.assign(List.of(tp));
            c.seekToBeginning(List.of(tp));
            assertEquals(5, c.position(tp));
        }
    }

    static ListOffsetsResultInfo offset(Admin admin, TopicPartition tp, OffsetSpec spec) throws Exception {
        return Clients.get(admin.listOffsets(Map.of(tp, spec)).partitionResult(tp));
    }

    /**
     * Consumer groups: listed with their type and state, described with
     * members; offsets altered and deleted while empty; a group with a
     * member cannot be deleted, an empty one can, then it is unknown.
     */
    @Test
    void consumerGroups() throws Exception {
        String topic = TestBroker.topic("admin-groups");
        String group = TestBroker.topic("g-admin");
        TopicPartition tp0 = new TopicPartition(topic, 0);
        TopicPartition tp1 = new TopicPartition(topic, 1);
        try (Admin admin = Clients.admin()) {
            Clients.createTopic(admin, topic, 2, Map.of());
            try (var p = Clients.producer(Clients.props())) {
                Clients.produce(p, topic, 0, Clients.values("a", 5));
                Clients.produce(p, topic, 1, Clients.values("b", 5));
            }
            try (var c = Clients.consumer(group, Clients.props(ConsumerConfig.GROUP_PROTOCOL_CONFIG, "classic"))) {
                c.subscribe(List.of(topic));
                Clients.poll(c, 10);
                c.commitSync();
                Collection<GroupListing> groups = Clients.get(admin.listGroups().all());
                GroupListing gl = groups.stream().filter(g -> g.groupId().equals(group)).findFirst().orElseThrow();
                assertEquals(GroupState.STABLE, gl.groupState().orElseThrow());
                assertEquals("consumer", gl.protocol());

                ConsumerGroupDescription d = Clients.get(admin.describeConsumerGroups(List.of(group)).all()).get(group);
                assertEquals(GroupState.STABLE, d.groupState());
                assertEquals(1, d.members().size());
                assertEquals(Set.of(tp0, tp1), d.members().iterator().next().assignment().topicPartitions());
                assertInstanceOf(GroupNotEmptyException.class, assertThrows(Exception.class,
                    () -> Clients.get(admin.deleteConsumerGroups(List.of(group)).all())));
            }
            Map<TopicPartition, OffsetAndMetadata> offs =
                Clients.get(admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata());
            assertEquals(5, offs.get(tp0).offset());
            assertEquals(5, offs.get(tp1).offset());

            Clients.get(admin.alterConsumerGroupOffsets(group, Map.of(tp0, new OffsetAndMetadata(2, "m"))).all());
            offs = Clients.get(admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata());
            assertEquals(2, offs.get(tp0).offset());
            assertEquals("m", offs.get(tp0).metadata());

            Clients.get(admin.deleteConsumerGroupOffsets(group, Set.of(tp1)).all());
            offs = Clients.get(admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata());
            assertFalse(offs.containsKey(tp1) && offs.get(tp1) != null, "offset of " + tp1 + " after delete: " + offs);

            ConsumerGroupDescription d = Clients.get(admin.describeConsumerGroups(List.of(group)).all()).get(group);
            assertEquals(GroupState.EMPTY, d.groupState());
            Clients.get(admin.deleteConsumerGroups(List.of(group)).all());
            assertInstanceOf(GroupIdNotFoundException.class, assertThrows(Exception.class,
                () -> Clients.get(admin.deleteConsumerGroups(List.of(group)).all())));
        }
    }

    /** describeCluster, describeFeatures and describeLogDirs of the one node. */
    @Test
    void clusterFeaturesAndLogDirs() throws Exception {
        String topic = TestBroker.topic("admin-logdirs");
        TopicPartition tp = new TopicPartition(topic, 0);
        try (Admin admin = Clients.admin()) {
            DescribeClusterResult cluster = admin.describeCluster();
            Collection<Node> nodes = Clients.get(cluster.nodes());
            assertEquals(1, nodes.size());
            Node node = nodes.iterator().next();
            assertNotNull(Clients.get(cluster.clusterId()));
            assertFalse(Clients.get(cluster.clusterId()).isBlank());
            assertEquals(TestBroker.bootstrap(), node.host() + ":" + node.port());

            FeatureMetadata features = Clients.get(admin.describeFeatures().featureMetadata());
            assertNotNull(features.finalizedFeatures());
            assertNotNull(features.supportedFeatures());

            Clients.createTopic(admin, topic, 1, Map.of());
            try (var p = Clients.producer(Clients.props())) {
                Clients.produce(p, topic, 0, Clients.values("x", 100));
            }
            Map<String, LogDirDescription> dirs =
                Clients.get(admin.describeLogDirs(List.of(node.id())).allDescriptions()).get(node.id());
            assertFalse(dirs.isEmpty());
            long size = -1;
            for (LogDirDescription d : dirs.values()) {
                assertEquals(null, d.error(), "log dir error");
                if (d.replicaInfos().containsKey(tp)) {
                    size = d.replicaInfos().get(tp).size();
                }
                assertTrue(d.totalBytes().isPresent(), "totalBytes");
                assertTrue(d.usableBytes().isPresent(), "usableBytes");
            }
            // 100 records of about 5 bytes in batches of 61+ bytes of overhead.
            assertTrue(size > 500 && size < 100 * 100, "partition size " + size);
        }
    }

    /**
     * describeProducers, listTransactions and describeTransactions of an
     * open transaction; then abortTransaction from the admin (WriteTxnMarkers,
     * key 27), which ends it on the partition.
     */
    @Test
    void producersAndTransactions() throws Exception {
        String topic = TestBroker.topic("admin-txn");
        String txid = TestBroker.topic("tx-admin");
        TopicPartition tp = new TopicPartition(topic, 0);
        try (Admin admin = Clients.admin();
             var p = Clients.producer(Clients.props(ProducerConfig.TRANSACTIONAL_ID_CONFIG, txid,
                 ProducerConfig.TRANSACTION_TIMEOUT_CONFIG, "60000"))) {
            Clients.createTopic(admin, topic, 1, Map.of());
            p.initTransactions();
            p.beginTransaction();
            p.send(new ProducerRecord<>(topic, 0, null, "open")).get();

            List<ProducerState> producers = Clients.get(admin.describeProducers(List.of(tp)).partitionResult(tp))
                .activeProducers();
            assertEquals(1, producers.size(), "producers " + producers);
            ProducerState ps = producers.get(0);
            assertEquals(0, ps.lastSequence());
            assertEquals(0L, ps.currentTransactionStartOffset().orElseThrow());

            Collection<TransactionListing> listed = Clients.get(admin.listTransactions(
                new ListTransactionsOptions().filterStates(Set.of(TransactionState.ONGOING))).all());
            TransactionListing tl = listed.stream().filter(t -> t.transactionalId().equals(txid)).findFirst()
                .orElseThrow(() -> new AssertionError(txid + " not among ongoing " + listed));
            assertEquals(ps.producerId(), tl.producerId());
            // ListTransactions v2 (KIP-1152): the pattern must match the whole id.
            List<String> matched = Clients.get(admin.listTransactions(
                new ListTransactionsOptions().filterOnTransactionalIdPattern("tx-admin.*")).all()).stream()
                .map(TransactionListing::transactionalId).toList();
            assertTrue(matched.contains(txid) && matched.stream().allMatch(id -> id.startsWith("tx-admin")),
                "listed by the pattern tx-admin.*: " + matched);
            assertEquals(List.of(), Clients.get(admin.listTransactions(
                new ListTransactionsOptions().filterOnTransactionalIdPattern("tx-admi")).all()).stream()
                .map(TransactionListing::transactionalId).toList());

            TransactionDescription td = Clients.get(admin.describeTransactions(List.of(txid)).description(txid));
            assertEquals(TransactionState.ONGOING, td.state());
            assertEquals(Set.of(tp), td.topicPartitions());
            assertEquals(60000, td.transactionTimeoutMs());
            assertEquals(ps.producerId(), td.producerId());

            AbortTransactionSpec spec = new AbortTransactionSpec(tp, ps.producerId(), (short) ps.producerEpoch(),
                ps.coordinatorEpoch().orElse(-1));
            Clients.get(admin.abortTransaction(spec).all());
            // The marker ends the transaction on the partition: the LSO reaches the end.
            try (var c = Clients.consumer(null, Clients.props(ConsumerConfig.ISOLATION_LEVEL_CONFIG,
                "read_committed"))) {
                assertEquals(2L, c.endOffsets(List.of(tp)).get(tp));
            }
            assertEquals(Set.of(), Clients.get(admin.describeProducers(List.of(tp)).partitionResult(tp))
                .activeProducers().stream().filter(s -> s.currentTransactionStartOffset().isPresent())
                .collect(Collectors.toSet()), "a transaction still open on " + tp);
        }
    }
}
