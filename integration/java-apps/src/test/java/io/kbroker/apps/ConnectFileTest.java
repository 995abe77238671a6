package io.kbroker.apps;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.connect.cli.ConnectDistributed;
import org.apache.kafka.connect.runtime.Connect;
import org.apache.kafka.connect.runtime.Herder;
import org.apache.kafka.connect.runtime.distributed.DistributedHerder;
import org.apache.kafka.connect.runtime.rest.entities.ConnectorInfo;
import org.apache.kafka.connect.util.FutureCallback;
import org.junit.jupiter.api.Test;

/**
 * A Kafka Connect distributed worker against kbroker: it creates its config,
 * offset and status topics (compacted), runs FileStreamSource -> topic ->
 * FileStreamSink, and after a restart finds its connectors' configs and the
 * source's offsets again (the topics pass its cleanup.policy check), so the
 * sink gets each line exactly once.
 */
class ConnectFileTest {
  @Test
  void fileSourceToSinkSurvivesRestart() throws Exception {
    String bootstrap = Broker.bootstrap();
    String id = "connect-" + UUID.randomUUID().toString().substring(0, 8);
    Path dir = Files.createTempDirectory("kbroker-connect");
    Path in = dir.resolve("in.txt"), out = dir.resolve("out.txt");
    List<String> lines = new ArrayList<>();
    for (int i = 0; i < 100; i++) {
      lines.add("line-" + i);
    }
    Files.write(in, lines, StandardCharsets.UTF_8);

    Map<String, String> worker = new HashMap<>();
    worker.put("bootstrap.servers", bootstrap);
    worker.put("group.id", id);
    worker.put("config.storage.topic", id + "-configs");
    worker.put("offset.storage.topic", id + "-offsets");
    worker.put("status.storage.topic", id + "-status");
    worker.put("config.storage.replication.factor", "1");
    worker.put("offset.storage.replication.factor", "1");
    worker.put("status.storage.replication.factor", "1");
    worker.put("offset.storage.partitions", "2");
    worker.put("status.storage.partitions", "1");
    worker.put("key.converter", "org.apache.kafka.connect.storage.StringConverter");
    worker.put("value.converter", "org.apache.kafka.connect.storage.StringConverter");
    worker.put("offset.flush.interval.ms", "200");
    worker.put("listeners", "http://127.0.0.1:0");
    worker.put("plugin.discovery", "only_scan");

    Connect<DistributedHerder> connect = new ConnectDistributed().startConnect(worker);
    try {
      Herder h = connect.herder();
      put(h, "source", Map.of("connector.class", "org.apache.kafka.connect.file.FileStreamSourceConnector",
          "tasks.max", "1", "file", in.toString(), "topic", id + "-data"));
      put(h, "sink", Map.of("connector.class", "org.apache.kafka.connect.file.FileStreamSinkConnector",
          "tasks.max", "1", "file", out.toString(), "topics", id + "-data"));
      awaitLines(out, lines);
    } finally {
      connect.stop();
      connect.awaitStop();
    }

    // Connect's topics are compacted, as it created them.
    try (Admin a = Broker.admin()) {
      for (String t : List.of("-configs", "-offsets", "-status")) {
        ConfigResource r = new ConfigResource(ConfigResource.Type.TOPIC, id + t);
        Config c = a.describeConfigs(List.of(r)).all().get().get(r);
        assertEquals("compact", c.get("cleanup.policy").value(), id + t);
      }
    }

    // More lines while the worker is down; after the restart the source
    // goes on from its stored offset and the sink gets each line once.
    List<String> more = new ArrayList<>();
    for (int i = 100; i < 150; i++) {
      more.add("line-" + i);
    }
    Files.write(in, more, StandardCharsets.UTF_8, StandardOpenOption.APPEND);
    lines.addAll(more);
    connect = new ConnectDistributed().startConnect(worker);
    try {
      Herder h = connect.herder();
      Broker.await("connectors restored", Duration.ofSeconds(60), () -> {
        FutureCallback<java.util.Collection<String>> cb = new FutureCallback<>();
        h.connectors(cb);
        try {
          return Set.copyOf(cb.get(10, TimeUnit.SECONDS)).equals(Set.of("source", "sink"));
        } catch (Exception e) {
          return false; // not ready yet (rebalancing)
        }
      });
      awaitLines(out, lines);
    } finally {
      connect.stop();
      connect.awaitStop();
    }
  }

  private static void put(Herder h, String name, Map<String, String> config) throws Exception {
    Map<String, String> c = new HashMap<>(config);
    c.put("name", name); // the REST layer adds it; the herder wants it
    FutureCallback<Herder.Created<ConnectorInfo>> cb = new FutureCallback<>();
    h.putConnectorConfig(name, c, true, cb);
    cb.get(60, TimeUnit.SECONDS);
  }

  /** Waits until out holds exactly want (each line once, in order). */
  private static void awaitLines(Path out, List<String> want) throws InterruptedException {
    Broker.await("sink file has " + want.size() + " lines", Duration.ofSeconds(90), () -> {
      try {
        if (!Files.exists(out)) {
          return false;
        }
        List<String> got = Files.readAllLines(out, StandardCharsets.UTF_8);
        assertTrue(got.size() <= want.size(), "sink wrote " + got.size() + " lines, more than the " + want.size() + " of the source");
        return got.equals(want);
      } catch (java.io.IOException e) {
        return false;
      }
    });
  }
}
