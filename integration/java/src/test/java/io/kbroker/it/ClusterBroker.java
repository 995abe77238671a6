package io.kbroker.it;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.producer.ProducerConfig;

/**
 * ClusterBroker is a second kbroker of this JVM, for the tests of the test
 * controls (docs/TESTING-CONTROLS.md): a simulated cluster of three nodes
 * ({@code --nodes 3}) with the controls on a loopback admin listener, driven
 * over HTTP as a test in any language drives them. Started on first use,
 * stopped when the JVM exits; null when the tests run against an external
 * broker, which has no controls.
 */
final class ClusterBroker {
    static final int NODES = 3;

    private static final Duration START_TIMEOUT = Duration.ofSeconds(30);
    private static final Duration STOP_TIMEOUT = Duration.ofSeconds(10);
    private static final HttpClient HTTP = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

    private static ClusterBroker instance;

    /** Bootstrap is every node's address, comma-separated, as a client of a real cluster is configured. */
    final String bootstrap;
    /** Admin is the base URL of the controls, http://host:port. */
    final String admin;

    private ClusterBroker(String bootstrap, String admin) {
        this.bootstrap = bootstrap;
        this.admin = admin;
    }

    /** Get returns the cluster broker, starting it on first use; null without a kbroker binary. */
    static synchronized ClusterBroker get() {
        String binary = System.getProperty("kbroker.binary", "");
        if (TestBroker.external() != null || binary.isBlank()) {
            return null;
        }
        if (instance == null) {
            instance = start(binary);
        }
        return instance;
    }

    private static ClusterBroker start(String binary) {
        try {
            Path dir = Files.createTempDirectory("kbroker-java-cluster-");
            Path config = dir.resolve("server.properties");
            Files.write(config, java.util.Arrays.asList(TestBroker.BROKER_SETTINGS), StandardCharsets.UTF_8);
            Path log = Path.of("target", "kbroker-cluster.log").toAbsolutePath();
            Files.createDirectories(log.getParent());
            Process p = new ProcessBuilder(binary, "--listen", "127.0.0.1:0", "--data-dir", dir.resolve("data").toString(),
                "--segment-bytes", "4194304", "--config", config.toString(), "--nodes", String.valueOf(NODES),
                "--admin-listen", "127.0.0.1:0")
                .redirectError(ProcessBuilder.Redirect.to(log.toFile()))
                .start();
            Runtime.getRuntime().addShutdownHook(new Thread(() -> stop(p, dir, log), "kbroker-cluster-stop"));
            BufferedReader out = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8));
            // stdout: "kbroker listening on A", a "kbroker node N listener ..."
            // line per node, then "kbroker admin listening on B".
            CompletableFuture<List<String>> lines = CompletableFuture.supplyAsync(() -> {
                List<String> got = new ArrayList<>();
                try {
                    for (String line; (line = out.readLine()) != null; ) {
                        got.add(line);
                        if (line.startsWith("kbroker admin listening on ")) {
                            return got;
                        }
                    }
                } catch (IOException e) {
                    throw new RuntimeException(e);
                }
                return got;
            });
            List<String> got;
            try {
                got = lines.get(START_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
            } catch (Exception e) {
                throw new IllegalStateException("kbroker --nodes printed no admin line within " + START_TIMEOUT
                    + "; log in " + log, e);
            }
            List<String> nodes = new ArrayList<>();
            String admin = null;
            for (String line : got) {
                if (line.startsWith("kbroker node ")) {
                    nodes.add(line.substring(line.lastIndexOf(' ') + 1));
                } else if (line.startsWith("kbroker admin listening on ")) {
                    admin = "http://" + line.substring("kbroker admin listening on ".length()).trim();
                }
            }
            if (nodes.size() != NODES || admin == null) {
                throw new IllegalStateException("kbroker --nodes printed " + got + "; log in " + log);
            }
            Thread drain = new Thread(() -> {
                try {
                    while (out.readLine() != null) {
                        // discard
                    }
                } catch (IOException ignored) {
                    // the process is gone
                }
            }, "kbroker-cluster-stdout");
            drain.setDaemon(true);
            drain.start();
            return new ClusterBroker(String.join(",", nodes), admin);
        } catch (IOException e) {
            throw new IllegalStateException("start kbroker " + binary, e);
        }
    }

    private static void stop(Process p, Path dir, Path log) {
        p.destroy();
        try {
            if (!p.waitFor(STOP_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS)) {
                System.err.println("kbroker cluster still running " + STOP_TIMEOUT + " after SIGTERM; log in " + log);
                p.destroyForcibly().waitFor();
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

    /** Call sends a control request (json may be null) and returns the body; a status of 300 or more fails. */
    String call(String method, String path, String json) throws Exception {
        var body = json == null ? HttpRequest.BodyPublishers.noBody() : HttpRequest.BodyPublishers.ofString(json);
        var req = HttpRequest.newBuilder(URI.create(admin + path)).timeout(Duration.ofSeconds(30))
            .method(method, body).build();
        var resp = HTTP.send(req, HttpResponse.BodyHandlers.ofString());
        if (resp.statusCode() >= 300) {
            throw new IllegalStateException(method + " " + path + ": " + resp.statusCode() + " " + resp.body());
        }
        return resp.body();
    }

    /** ProducerProps are TestBroker's producer settings for this cluster, retrying after 50 ms. */
    Properties producerProps() {
        Properties p = TestBroker.producerProps();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ProducerConfig.RETRY_BACKOFF_MS_CONFIG, "50");
        return p;
    }

    /** ConsumerProps are TestBroker's consumer settings for this cluster (group null: none). */
    Properties consumerProps(String group) {
        Properties p = TestBroker.consumerProps(group);
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ConsumerConfig.RETRY_BACKOFF_MS_CONFIG, "50");
        return p;
    }
}
