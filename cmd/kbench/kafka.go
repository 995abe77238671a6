package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// kafkaClusterID is the KRaft cluster id every benchmarked Kafka is
// formatted with (any 16 bytes in URL-safe base64 do).
const kafkaClusterID = "_cgpz1UjROWdSdjbzXB_kA"

// kafkaHeap is the Kafka JVM's heap, that of Kafka's own start script
// (kafka-server-start.sh: -Xmx1G -Xms1G).
const kafkaHeap = "1g"

// kafkaClasspath resolves Apache Kafka's broker jars once, with
// scripts/kafka-ref.sh classpath (Maven, from Central into ~/.m2) of the
// module kbench runs in.
func (e *env) kafkaClasspath() (string, error) {
	e.kafkaOnce.Do(func() {
		gomod, err := exec.Command("go", "env", "GOMOD").Output()
		root := filepath.Dir(string(bytes.TrimSpace(gomod)))
		if err != nil || len(bytes.TrimSpace(gomod)) == 0 || string(bytes.TrimSpace(gomod)) == os.DevNull {
			e.kafkaErr = fmt.Errorf("kafka: run from the kbroker module, whose scripts/kafka-ref.sh resolves Kafka (go env GOMOD: %v)", err)
			return
		}
		out, err := exec.Command(filepath.Join(root, "scripts", "kafka-ref.sh"), "classpath").Output()
		if err != nil {
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				err = fmt.Errorf("%w\n%s", err, ee.Stderr)
			}
			e.kafkaErr = fmt.Errorf("kafka: scripts/kafka-ref.sh classpath: %w", err)
			return
		}
		e.kafkaCP = strings.TrimSpace(string(out))
	})
	return e.kafkaCP, e.kafkaErr
}

// kafkaCommand is the command that runs Apache Kafka as a single-node
// KRaft broker listening on addr with its data in dir, formatting dir
// first if it is new (before the clock of the start-up measurement
// starts). Sync flushing is flush.messages=1 (log.flush.interval.messages),
// Kafka's closest equivalent of kbroker --flush sync: an fsync before each
// append is acknowledged.
func kafkaCommand(e *env, spec brokerSpec, addr, dir string) (*exec.Cmd, error) {
	cp, err := e.kafkaClasspath()
	if err != nil {
		return nil, err
	}
	cport, err := freePort()
	if err != nil {
		return nil, err
	}
	var props strings.Builder
	fmt.Fprintf(&props, `process.roles=broker,controller
node.id=1
listeners=PLAINTEXT://%s,CONTROLLER://127.0.0.1:%d
advertised.listeners=PLAINTEXT://%s
controller.listener.names=CONTROLLER
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
controller.quorum.bootstrap.servers=127.0.0.1:%d
log.dirs=%s
num.partitions=1
offsets.topic.replication.factor=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
group.initial.rebalance.delay.ms=0
`, addr, cport, addr, cport, filepath.Join(dir, "data"))
	if spec.flush == "sync" {
		props.WriteString("log.flush.interval.messages=1\n")
	}
	config := filepath.Join(dir, "server.properties")
	if err := os.WriteFile(config, []byte(props.String()), 0o644); err != nil {
		return nil, err
	}
	jvm := []string{"-Xms" + kafkaHeap, "-Xmx" + kafkaHeap, "-XX:+UseG1GC", "-Djava.awt.headless=true",
		"-Dorg.slf4j.simpleLogger.defaultLogLevel=warn", "-cp", cp}
	if _, err := os.Stat(filepath.Join(dir, "data", "meta.properties")); errors.Is(err, os.ErrNotExist) {
		format := exec.Command("java", append(jvm, "kafka.tools.StorageTool", "format", "--standalone",
			"-t", kafkaClusterID, "-c", config)...)
		if out, err := format.CombinedOutput(); err != nil {
			return nil, fmt.Errorf("kafka: format %s: %w\n%s", dir, err, out)
		}
	}
	return exec.Command("java", append(jvm, "kafka.Kafka", config)...), nil
}

// kafkaStopped tells whether err is how the Kafka JVM ends after SIGTERM:
// its shutdown hooks run, then it exits with 128+15.
func kafkaStopped(err error) bool {
	var ee *exec.ExitError
	return errors.As(err, &ee) && ee.ExitCode() == 143
}
