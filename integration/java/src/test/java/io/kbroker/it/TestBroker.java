package io.kbroker.it;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Comparator;
import java.util.Properties;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * TestBroker is the broker every test of this module talks to: one per JVM,
 * started on first use and stopped when the JVM exits.
 *
 * <p>With {@code KBROKER_TEST_BOOTSTRAP=host:port} in the environment the
 * tests use that broker (any Kafka-compatible one, for example the Apache
 * Kafka that {@code scripts/kafka-ref.sh} starts) and tests of kbroker-only
 * behaviour skip. Otherwise the kbroker binary named by the system property
 * {@code kbroker.binary} (test.sh builds it) is started on a free loopback
 * port with a temporary data directory, and stopped with SIGTERM at exit.
 *
 * <p>The broker settings below have the same names and meaning on Kafka;
 * {@code scripts/kafka-ref.sh} starts Kafka with them too, so a test sees the
 * same timeouts on both.
 */
final class TestBroker {
    /** Environment variable naming an external broker to test instead. */
    static final String BOOTSTRAP_ENV = "KBROKER_TEST_BOOTSTRAP";

    /**
     * Broker settings the tests rely on: no initial rebalance delay, and
     * KIP-848 heartbeats every 500 ms instead of 5 s so that consumer-group
     * reconciliation takes a second, not half a minute.
     */
    static final String[] BROKER_SETTINGS = {
        "group.initial.rebalance.delay.ms=0",
        "group.consumer.min.heartbeat.interval.ms=500",
        "group.consumer.heartbeat.interval.ms=500",
        "group.consumer.min.session.timeout.ms=6000",
        "group.consumer.session.timeout.ms=6000",
        "transaction.abort.timed.out.transaction.cleanup.interval.ms=1000",
    };

    private static final Duration START_TIMEOUT = Duration.ofSeconds(30);
    private static final Duration STOP_TIMEOUT = Duration.ofSeconds(10);

    private static TestBroker instance;

    private final String bootstrap;
    private final boolean kbroker;

    private TestBroker(String bootstrap, boolean kbroker) {
        this.bootstrap = bootstrap;
        this.kbroker = kbroker;
    }

    /** External is the bootstrap address of the broker to test instead of a started kbroker, or null. */
    static String external() {
        String v = System.getenv(BOOTSTRAP_ENV);
        return v == null || v.isBlank() ? null : v.trim();
    }

    /** Get returns the broker of this JVM, starting it on first use. */
    static synchronized TestBroker get() {
        if (instance == null) {
            String ext = external();
            instance = ext != null ? new TestBroker(ext, false) : start();
        }
        return instance;
    }

    /** Bootstrap is the address clients connect to. */
    static String bootstrap() {
        return get().bootstrap;
    }

    /** IsKbroker tells whether the tests run against the kbroker this harness started. */
    static boolean isKbroker() {
        return get().kbroker;
    }

    private static TestBroker start() {
        String binary = System.getProperty("kbroker.binary", "");
        if (binary.isBlank()) {
            throw new IllegalStateException("set -Dkbroker.binary=<path of kbroker> (test.sh does) or "
                + BOOTSTRAP_ENV + "=host:port");
        }
        try {
            Path dir = Files.createTempDirectory("kbroker-java-");
            Path config = dir.resolve("server.properties");
            Files.write(config, java.util.Arrays.asList(BROKER_SETTINGS), StandardCharsets.UTF_8);
            Path data = dir.resolve("data");
            Path log = Path.of("target", "kbroker.log").toAbsolutePath();
            Files.createDirectories(log.getParent());
            // 4 MiB commit-log files: the default 128 MiB, allocated two ahead,
            // is more than a test run needs.
            ProcessBuilder pb = new ProcessBuilder(binary, "--listen", "127.0.0.1:0", "--data-dir", data.toString(),
                "--segment-bytes", "4194304", "--config", config.toString())
                .redirectError(ProcessBuilder.Redirect.to(log.toFile()));
            Process p = pb.start();
            Runtime.getRuntime().addShutdownHook(new Thread(() -> stop(p, dir, log), "kbroker-stop"));
            BufferedReader out = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8));
            CompletableFuture<String> first = CompletableFuture.supplyAsync(() -> {
                try {
                    return out.readLine();
                } catch (IOException e) {
                    throw new RuntimeException(e);
                }
            });
            String line;
            try {
                line = first.get(START_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
            } catch (Exception e) {
                throw new IllegalStateException("kbroker printed no listening line within " + START_TIMEOUT
                    + "; log in " + log, e);
            }
            String prefix = "kbroker listening on ";
            if (line == null || !line.startsWith(prefix)) {
                throw new IllegalStateException("kbroker printed " + line + ", want \"" + prefix
                    + "<addr>\"; log in " + log);
            }
            // Keep draining stdout so the broker never blocks on a full pipe.
            Thread drain = new Thread(() -> {
                try {
                    while (out.readLine() != null) {
                        // discard
                    }
                } catch (IOException ignored) {
                    // the process is gone
                }
            }, "kbroker-stdout");
            drain.setDaemon(true);
            drain.start();
            return new TestBroker(line.substring(prefix.length()).trim(), true);
        } catch (IOException e) {
            throw new IllegalStateException("start kbroker " + binary, e);
        }
    }

    /** Stop sends SIGTERM, waits, kills after STOP_TIMEOUT and removes the data. */
    private static void stop(Process p, Path dir, Path log) {
        p.destroy();
        try {
            if (!p.waitFor(STOP_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS)) {
                System.err.println("kbroker still running " + STOP_TIMEOUT + " after SIGTERM: killing it; log in " + log);
                p.destroyForcibly().waitFor();
            } else if (p.exitValue() != 0) {
                System.err.println("kbroker exited with status " + p.exitValue() + "; log in " + log);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        try (Stream<Path> files = Files.walk(dir)) {
            files.sorted(Comparator.reverseOrder()).forEach(f -> f.toFile().delete());
        } catch (IOException ignored) {
            // a temporary directory left behind is harmless
        }
    }

    /** Topic returns a topic name no other test uses. */
    static String topic(String prefix) {
        return prefix + "-" + UUID.randomUUID().toString().substring(0, 8);
    }

    /** AdminProps are AdminClient settings with short timeouts. */
    static Properties adminProps() {
        Properties p = new Properties();
        p.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap());
        p.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, "10000");
        p.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "20000");
        return p;
    }

    /** ProducerProps are String producer settings with short timeouts. */
    static Properties producerProps() {
        Properties p = new Properties();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap());
        p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        p.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, "20000");
        p.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, "10000");
        p.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, "15000");
        return p;
    }

    /** ConsumerProps are String consumer settings for group (null: no group) with short timeouts. */
    static Properties consumerProps(String group) {
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap());
        p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        p.put(ConsumerConfig.REQUEST_TIMEOUT_MS_CONFIG, "10000");
        p.put(ConsumerConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "20000");
        if (group != null) {
            p.put(ConsumerConfig.GROUP_ID_CONFIG, group);
            p.put(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG, "6000");
            p.put(ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG, "500");
            p.put(ConsumerConfig.MAX_POLL_INTERVAL_MS_CONFIG, "20000");
        }
        return p;
    }
}
