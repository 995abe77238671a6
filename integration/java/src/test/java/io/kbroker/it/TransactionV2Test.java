package io.kbroker.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.TransactionDescription;
import org.apache.kafka.clients.admin.TransactionState;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.errors.InvalidProducerEpochException;
import org.apache.kafka.common.errors.ProducerFencedException;
import org.junit.jupiter.api.Test;

/**
 * TransactionV2Test: transactions v2 (KIP-890 part 2), which kafka-clients 4
 * uses when the broker finalizes transaction.version 2: partitions join the
 * transaction through Produce, and every commit or abort bumps the epoch.
 */
class TransactionV2Test {
    static TransactionDescription describe(Admin admin, String txid) throws Exception {
        return Clients.get(admin.describeTransactions(List.of(txid)).description(txid));
    }

    /** Fenced reports whether e or a cause is ProducerFencedException or InvalidProducerEpochException. */
    static boolean fenced(Throwable e) {
        for (Throwable t = e; t != null; t = t.getCause()) {
            if (t instanceof ProducerFencedException || t instanceof InvalidProducerEpochException) {
                return true;
            }
        }
        return false;
    }

    /**
     * Many transactions over two partitions, one in three aborted: a
     * read_committed consumer sees exactly the committed records, in order,
     * and the coordinator's epoch moved once per transaction.
     */
    @Test
    void manyTransactionsBumpTheEpoch() throws Exception {
        String topic = TestBroker.topic("txv2-many");
        String txid = TestBroker.topic("txv2-many");
        int transactions = 30;
        List<String> committed = new ArrayList<>();
        try (Admin admin = Clients.admin()) {
            var features = Clients.get(admin.describeFeatures().featureMetadata());
            assertEquals(2, features.finalizedFeatures().get("transaction.version").maxVersionLevel(),
                "finalized transaction.version");
            Clients.createTopic(admin, topic, 2, Map.of());
            try (var p = TransactionTest.txProducer(txid)) {
                p.initTransactions();
                int initEpoch = describe(admin, txid).producerEpoch();
                for (int i = 0; i < transactions; i++) {
                    p.beginTransaction();
                    List<String> values = Clients.values("t" + i, 4);
                    for (int j = 0; j < values.size(); j++) {
                        p.send(new ProducerRecord<>(topic, j % 2, null, values.get(j)));
                    }
                    if (i % 3 == 1) {
                        p.flush();
                        p.abortTransaction();
                    } else {
                        p.commitTransaction();
                        committed.addAll(values);
                    }
                }
                TransactionDescription d = describe(admin, txid);
                assertEquals(initEpoch + transactions, d.producerEpoch(), "epoch after " + transactions + " transactions");
                assertTrue(d.state() == TransactionState.COMPLETE_COMMIT, "state " + d.state());
            }
        }
        var rc = Clients.props(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
        List<String> got = Clients.readAll(topic, 2, committed.size(), rc).stream().map(ConsumerRecord::value).toList();
        assertEquals(committed.stream().sorted().toList(), got.stream().sorted().toList());
        for (int part = 0; part < 2; part++) {
            final int q = part;
            List<String> want = committed.stream().filter(v -> Integer.parseInt(v.substring(v.indexOf('-') + 1)) % 2 == q).toList();
            List<String> inPart = Clients.readAll(topic, 2, committed.size(), rc).stream()
                .filter(r -> r.partition() == q).map(ConsumerRecord::value).toList();
            assertEquals(want, inPart, "partition " + q + " in order");
        }
    }

    /**
     * A second producer with the same transactional.id fences the first in
     * the middle of its transaction: the coordinator aborts it, the zombie
     * cannot commit nor write, and read_committed sees only the new
     * producer's records.
     */
    @Test
    void zombieIsFenced() throws Exception {
        String topic = TestBroker.topic("txv2-zombie");
        String txid = TestBroker.topic("txv2-zombie");
        try (Admin admin = Clients.admin()) {
            Clients.createTopic(admin, topic, 1, Map.of());
        }
        try (var zombie = TransactionTest.txProducer(txid)) {
            zombie.initTransactions();
            zombie.beginTransaction();
            zombie.send(new ProducerRecord<>(topic, 0, null, "committed-before")).get();
            zombie.commitTransaction();
            zombie.beginTransaction();
            zombie.send(new ProducerRecord<>(topic, 0, null, "zombie-1")).get();
            try (var p = TransactionTest.txProducer(txid)) {
                p.initTransactions();
                // The zombie's next write is refused with its old epoch, and
                // its transaction cannot commit.
                Exception e = assertThrows(Exception.class,
                    () -> zombie.send(new ProducerRecord<>(topic, 0, null, "zombie-2")).get());
                assertTrue(fenced(e), "zombie write: got " + e);
                KafkaException c = assertThrows(KafkaException.class, zombie::commitTransaction);
                assertTrue(fenced(c), "zombie commit: got " + c);
                p.beginTransaction();
                p.send(new ProducerRecord<>(topic, 0, null, "new-1"));
                p.commitTransaction();
            }
        }
        var rc = Clients.props(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
        assertEquals(List.of("committed-before", "new-1"),
            Clients.readAll(topic, 1, 2, rc).stream().map(ConsumerRecord::value).toList());
    }
}
