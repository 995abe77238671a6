package io.kbroker.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.fail;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.Consumer;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.Producer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.KafkaFuture;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.UnknownTopicOrPartitionException;

/** Clients holds the small helpers the tests share. */
final class Clients {
    /** WAIT bounds every wait for the broker or a rebalance. */
    static final Duration WAIT = Duration.ofSeconds(30);

    private Clients() {
    }

    static Admin admin() {
        return Admin.create(TestBroker.adminProps());
    }

    static KafkaProducer<String, String> producer(Properties extra) {
        Properties p = TestBroker.producerProps();
        p.putAll(extra);
        return new KafkaProducer<>(p);
    }

    static KafkaConsumer<String, String> consumer(String group, Properties extra) {
        Properties p = TestBroker.consumerProps(group);
        p.putAll(extra);
        return new KafkaConsumer<>(p);
    }

    static Properties props(String... kv) {
        Properties p = new Properties();
        for (int i = 0; i + 1 < kv.length; i += 2) {
            p.put(kv[i], kv[i + 1]);
        }
        return p;
    }

    /** Get waits for f at most WAIT and unwraps its ExecutionException. */
    static <T> T get(KafkaFuture<T> f) throws Exception {
        try {
            return f.get(WAIT.toMillis(), TimeUnit.MILLISECONDS);
        } catch (ExecutionException e) {
            if (e.getCause() instanceof Exception cause) {
                throw cause;
            }
            throw e;
        }
    }

    /** CreateTopic creates a topic with n partitions and configs, and waits for it. */
    static void createTopic(Admin admin, String topic, int n, Map<String, String> configs) throws Exception {
        get(admin.createTopics(List.of(new NewTopic(topic, n, (short) 1).configs(configs))).all());
        // Kafka answers before its broker's metadata has the topic (kbroker
        // after): wait until describeTopics sees every partition, as a
        // client of a real cluster must.
        eventually("topic " + topic + " with " + n + " partitions in the metadata", () -> {
            try {
                return get(admin.describeTopics(List.of(topic)).allTopicNames()).get(topic).partitions().size() == n;
            } catch (UnknownTopicOrPartitionException e) {
                return false;
            }
        });
    }

    /** Produce sends values to topic's partition (null: by key) and waits for every acknowledgement. */
    static void produce(Producer<String, String> p, String topic, Integer partition, List<String> values)
        throws Exception {
        List<java.util.concurrent.Future<?>> acks = new ArrayList<>();
        for (String v : values) {
            acks.add(p.send(new ProducerRecord<>(topic, partition, null, v)));
        }
        for (var a : acks) {
            a.get(WAIT.toMillis(), TimeUnit.MILLISECONDS);
        }
    }

    /** Values returns "prefix-0" ... "prefix-(n-1)". */
    static List<String> values(String prefix, int n) {
        List<String> out = new ArrayList<>(n);
        for (int i = 0; i < n; i++) {
            out.add(prefix + "-" + i);
        }
        return out;
    }

    /** Poll polls c until it has returned n records or WAIT passed; it fails on fewer, returns exactly what came. */
    static List<ConsumerRecord<String, String>> poll(Consumer<String, String> c, int n) {
        List<ConsumerRecord<String, String>> out = new ArrayList<>();
        long deadline = System.nanoTime() + WAIT.toNanos();
        while (out.size() < n && System.nanoTime() < deadline) {
            c.poll(Duration.ofMillis(200)).forEach(out::add);
        }
        if (out.size() < n) {
            fail("got " + out.size() + " records within " + WAIT + ", want " + n);
        }
        return out;
    }

    /** ReadAll assigns every partition of topic (n of them) to a fresh consumer and reads want records. */
    static List<ConsumerRecord<String, String>> readAll(String topic, int partitions, int want, Properties extra) {
        try (var c = consumer(null, extra)) {
            List<TopicPartition> tps = new ArrayList<>();
            for (int i = 0; i < partitions; i++) {
                tps.add(new TopicPartition(topic, i));
            }
            c.assign(tps);
            c.seekToBeginning(tps);
            List<ConsumerRecord<String, String>> got = poll(c, want);
            // Nothing beyond what we expect may follow.
            assertEquals(0, c.poll(Duration.ofMillis(300)).count(), "records beyond the " + want + " expected");
            return got;
        }
    }

    /** Callable that may throw, for eventually. */
    interface Check {
        boolean holds() throws Exception;
    }

    /**
     * Eventually polls an admin-visible condition every 50 ms until it holds
     * or WAIT passes. Kafka applies topic and config changes to its broker's
     * metadata a moment after answering the request that made them; kbroker
     * at once.
     */
    static void eventually(String what, Check cond) throws Exception {
        long deadline = System.nanoTime() + WAIT.toNanos();
        while (!cond.holds()) {
            if (System.nanoTime() > deadline) {
                fail("not within " + WAIT + ": " + what);
            }
            Thread.sleep(50);
        }
    }

    /** Await polls cond (each round calling step, e.g. a consumer poll) until it holds or WAIT passes. */
    static void await(String what, Runnable step, BooleanSupplier cond) {
        long deadline = System.nanoTime() + WAIT.toNanos();
        while (!cond.getAsBoolean()) {
            if (System.nanoTime() > deadline) {
                fail("not within " + WAIT + ": " + what);
            }
            step.run();
        }
    }
}
