package io.kbroker.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.ProducerFencedException;
import org.junit.jupiter.api.Test;

/** TransactionTest: transactional producers, read_committed consumers and sendOffsetsToTransaction. */
class TransactionTest {
    static KafkaProducer<String, String> txProducer(String id) {
        return Clients.producer(Clients.props(ProducerConfig.TRANSACTIONAL_ID_CONFIG, id,
            ProducerConfig.TRANSACTION_TIMEOUT_CONFIG, "10000"));
    }

    /**
     * Committed, aborted, committed: read_committed sees the two committed
     * transactions only, read_uncommitted sees every record, and an open
     * transaction holds read_committed back at the last stable offset.
     */
    @Test
    void readCommittedSkipsAbortedAndStopsAtOpen() throws Exception {
        String topic = TestBroker.topic("txn-rc");
        TopicPartition tp = new TopicPartition(topic, 0);
        try (Admin admin = Clients.admin()) {
            Clients.createTopic(admin, topic, 1, Map.of());
        }
        var rc = Clients.props(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
        try (var p = txProducer(TestBroker.topic("tx-rc"))) {
            p.initTransactions();
            for (String what : List.of("commit1", "abort", "commit2")) {
                p.beginTransaction();
                for (String v : Clients.values(what, 5)) {
                    p.send(new ProducerRecord<>(topic, 0, null, v));
                }
                if (what.equals("abort")) {
                    // Flushed first: abortTransaction drops batches not yet sent,
                    // and the aborted records must be in the log for this test.
                    p.flush();
                    p.abortTransaction();
                } else {
                    p.commitTransaction();
                }
            }
            List<String> want = new ArrayList<>(Clients.values("commit1", 5));
            want.addAll(Clients.values("commit2", 5));
            assertEquals(want, Clients.readAll(topic, 1, 10, rc).stream().map(ConsumerRecord::value).toList());
            // 15 records and 3 markers.
            var ru = Clients.props(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_uncommitted");
            assertEquals(15, Clients.readAll(topic, 1, 15, ru).size());

            p.beginTransaction();
            p.send(new ProducerRecord<>(topic, 0, null, "open")).get();
            try (var c = Clients.consumer(null, rc); var u = Clients.consumer(null, ru)) {
                long end = u.endOffsets(List.of(tp)).get(tp);
                assertEquals(19, end, "high watermark after 16 records and 3 markers");
                assertEquals(18L, c.endOffsets(List.of(tp)).get(tp), "read_committed end is the LSO");
                c.assign(List.of(tp));
                c.seek(tp, 18);
                assertEquals(0, c.poll(Duration.ofMillis(500)).count(), "read_committed read an open transaction");
                u.assign(List.of(tp));
                u.seek(tp, 18);
                assertEquals("open", Clients.poll(u, 1).get(0).value());
                p.commitTransaction();
                assertEquals("open", Clients.poll(c, 1).get(0).value());
            }
        }
    }

    /**
     * Consume-transform-produce: offsets sent to the transaction are
     * committed with it, and a second producer with the same
     * transactional.id fences the first.
     */
    @Test
    void sendOffsetsToTransactionAndFencing() throws Exception {
        String in = TestBroker.topic("txn-in");
        String out = TestBroker.topic("txn-out");
        String group = TestBroker.topic("g-txn");
        String txid = TestBroker.topic("tx-ctp");
        try (Admin admin = Clients.admin(); var p = Clients.producer(Clients.props())) {
            Clients.createTopic(admin, in, 1, Map.of());
            Clients.createTopic(admin, out, 1, Map.of());
            Clients.produce(p, in, 0, Clients.values("in", 10));
        }
        TopicPartition inTp = new TopicPartition(in, 0);
        try (var p = txProducer(txid);
             var c = Clients.consumer(group, Clients.props(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed"))) {
            p.initTransactions();
            c.subscribe(List.of(in));
            List<ConsumerRecord<String, String>> got = Clients.poll(c, 10);
            p.beginTransaction();
            for (var r : got) {
                p.send(new ProducerRecord<>(out, 0, null, r.value().toUpperCase()));
            }
            p.sendOffsetsToTransaction(Map.of(inTp, new OffsetAndMetadata(10)), c.groupMetadata());
            p.commitTransaction();
            assertEquals(10, c.committed(Set.of(inTp)).get(inTp).offset());

            try (var p2 = txProducer(txid)) {
                p2.initTransactions();
                p.beginTransaction();
                p.send(new ProducerRecord<>(out, 0, null, "zombie"));
                KafkaException e = assertThrows(KafkaException.class, p::commitTransaction);
                assertTrue(e instanceof ProducerFencedException
                    || e.getCause() instanceof ProducerFencedException
                    || e.getClass().getSimpleName().equals("InvalidProducerEpochException"),
                    "got " + e);
            }
        }
        var values = Clients.readAll(out, 1, 10,
            Clients.props(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed"))
            .stream().map(ConsumerRecord::value).toList();
        assertEquals(Clients.values("IN", 10), values);
    }
}
