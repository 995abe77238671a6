package io.kbroker.it;

import static io.kbroker.it.Clients.WAIT;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.LogDirDescription;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.RecordTooLargeException;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeader;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** ProducerTest: the Java producer's idempotence, ordering, codecs, headers and size limits. */
class ProducerTest {
    /**
     * An idempotent producer with five requests in flight per connection,
     * tiny batches and retries: every record lands once, in send order per
     * partition, at dense offsets from 0, with its key and headers.
     */
    @Test
    void idempotentInFlightFiveKeepsOrderAndHeaders() throws Exception {
        String topic = TestBroker.topic("idem");
        int partitions = 3;
        int n = 3000;
        try (Admin admin = Clients.admin();
             var p = Clients.producer(Clients.props(
                 ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "true",
                 ProducerConfig.ACKS_CONFIG, "all",
                 ProducerConfig.MAX_IN_FLIGHT_REQUESTS_PER_CONNECTION, "5",
                 ProducerConfig.RETRIES_CONFIG, String.valueOf(Integer.MAX_VALUE),
                 ProducerConfig.LINGER_MS_CONFIG, "0",
                 ProducerConfig.BATCH_SIZE_CONFIG, "512"))) {
            Clients.createTopic(admin, topic, partitions, Map.of());
            List<Future<RecordMetadata>> acks = new ArrayList<>();
            for (int i = 0; i < n; i++) {
                int part = i % partitions;
                var r = new ProducerRecord<>(topic, part, "k" + i, "v" + i,
                    List.<Header>of(new RecordHeader("seq", Integer.toString(i).getBytes(StandardCharsets.UTF_8)),
                        new RecordHeader("empty", new byte[0])));
                acks.add(p.send(r));
            }
            long[] next = new long[partitions];
            for (int i = 0; i < n; i++) {
                RecordMetadata md = acks.get(i).get(WAIT.toMillis(), TimeUnit.MILLISECONDS);
                int part = i % partitions;
                assertEquals(part, md.partition());
                assertEquals(next[part]++, md.offset(), "offset of record " + i);
            }
        }
        List<ConsumerRecord<String, String>> got = Clients.readAll(topic, partitions, n, Clients.props());
        Map<Integer, Long> lastSeq = new HashMap<>();
        for (ConsumerRecord<String, String> r : got) {
            int seq = Integer.parseInt(new String(r.headers().lastHeader("seq").value(), StandardCharsets.UTF_8));
            assertEquals("k" + seq, r.key());
            assertEquals("v" + seq, r.value());
            assertEquals(seq % partitions, r.partition());
            assertArrayEquals(new byte[0], r.headers().lastHeader("empty").value());
            assertEquals(seq / partitions, r.offset(), "offset of record " + seq);
            Long prev = lastSeq.put(r.partition(), (long) seq);
            assertTrue(prev == null || prev < seq, "record " + seq + " after " + prev);
        }
    }

    /**
     * Every codec: batches stay compressed on the broker (the partition is
     * much smaller than the records) and read back intact.
     */
    @ParameterizedTest
    @ValueSource(strings = {"none", "gzip", "snappy", "lz4", "zstd"})
    void compressionCodecs(String codec) throws Exception {
        String topic = TestBroker.topic("codec-" + codec);
        int n = 2000;
        String pad = "x".repeat(200);
        List<String> values = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            values.add(i + pad);
        }
        try (Admin admin = Clients.admin();
             var p = Clients.producer(Clients.props(
                 ProducerConfig.COMPRESSION_TYPE_CONFIG, codec,
                 ProducerConfig.LINGER_MS_CONFIG, "50",
                 ProducerConfig.BATCH_SIZE_CONFIG, "65536"))) {
            Clients.createTopic(admin, topic, 1, Map.of());
            Clients.produce(p, topic, 0, values);
            long size = partitionSize(admin, new TopicPartition(topic, 0));
            long raw = (long) n * values.get(0).length();
            if (codec.equals("none")) {
                assertTrue(size >= raw, "uncompressed partition of " + size + " bytes, records " + raw);
            } else {
                assertTrue(size < raw / 4, codec + " partition of " + size + " bytes, records " + raw);
            }
        }
        List<ConsumerRecord<String, String>> got = Clients.readAll(topic, 1, n, Clients.props());
        for (int i = 0; i < n; i++) {
            assertEquals(values.get(i), got.get(i).value());
            assertEquals(i, got.get(i).offset());
        }
    }

    /** PartitionSize is the partition's size that DescribeLogDirs reports. */
    static long partitionSize(Admin admin, TopicPartition tp) throws Exception {
        int node = Clients.get(admin.describeCluster().nodes()).iterator().next().id();
        Map<Integer, Map<String, LogDirDescription>> dirs =
            Clients.get(admin.describeLogDirs(List.of(node)).allDescriptions());
        long size = -1;
        for (var byDir : dirs.values()) {
            for (LogDirDescription d : byDir.values()) {
                var info = d.replicaInfos().get(tp);
                if (info != null) {
                    size = info.size();
                }
            }
        }
        assertTrue(size >= 0, tp + " not in DescribeLogDirs");
        return size;
    }

    /**
     * Large records: 900 KB passes the default message.max.bytes; 2 MiB is
     * refused with RecordTooLargeException (MESSAGE_TOO_LARGE) unless the
     * topic's max.message.bytes allows it.
     */
    @Test
    void largeRecords() throws Exception {
        String small = TestBroker.topic("large-default");
        String big = TestBroker.topic("large-8m");
        String v900k = "a".repeat(900_000);
        String v2m = "b".repeat(2 << 20);
        try (Admin admin = Clients.admin();
             var p = Clients.producer(Clients.props(
                 ProducerConfig.MAX_REQUEST_SIZE_CONFIG, String.valueOf(8 << 20),
                 ProducerConfig.BUFFER_MEMORY_CONFIG, String.valueOf(32 << 20),
                 ProducerConfig.RETRIES_CONFIG, "0"))) {
            Clients.createTopic(admin, small, 1, Map.of());
            Clients.createTopic(admin, big, 1, Map.of("max.message.bytes", String.valueOf(8 << 20)));
            Clients.produce(p, small, 0, List.of(v900k));
            ExecutionException e = assertThrows(ExecutionException.class,
                () -> p.send(new ProducerRecord<>(small, 0, null, v2m)).get(WAIT.toMillis(), TimeUnit.MILLISECONDS));
            assertInstanceOf(RecordTooLargeException.class, e.getCause());
            Clients.produce(p, big, 0, List.of(v2m, v900k));
        }
        var props = Clients.props("max.partition.fetch.bytes", String.valueOf(16 << 20),
            "fetch.max.bytes", String.valueOf(16 << 20));
        List<ConsumerRecord<String, String>> got = Clients.readAll(small, 1, 1, props);
        assertEquals(v900k, got.get(0).value());
        got = Clients.readAll(big, 1, 2, props);
        assertEquals(v2m, got.get(0).value());
        assertEquals(v900k, got.get(1).value());
    }
}
