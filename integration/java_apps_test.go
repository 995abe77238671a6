package integration

import (
	"context"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/kbroker/kbroker/internal/testenv"
)

// TestJavaApps runs the Maven module integration/java-apps against the
// kbroker binary: a Kafka Streams application under exactly_once_v2 whose
// count store is restored from its compacted changelog, and a Kafka
// Connect distributed worker (FileStreamSource -> topic -> FileStreamSink)
// restarted with its compacted config, offset and status topics; and two
// instances of a Kafka Streams application with group.protocol=streams
// (KIP-1071), whose tasks the broker assigns after creating the
// repartition and changelog topics, then one after the other stops. The
// broker runs with the cleaner acting within a second, so the applications
// read back compacted topics, and with streams-group heartbeats every
// second, so rebalances settle quickly. Skipped without java and mvn on PATH, in
// -short mode, or with KBROKER_SKIP_JAVA=1 (as test.sh's Java client
// tests); Maven resolves its dependencies from Central into ~/.m2 (the
// first run downloads them).
func TestJavaApps(t *testing.T) {
	t.Parallel()
	if testing.Short() || testenv.Flag(t, "KBROKER_SKIP_JAVA") {
		t.Skip("the Java applications take a minute or more: not in -short mode or with KBROKER_SKIP_JAVA=1")
	}
	mvn, err := exec.LookPath("mvn")
	if err == nil {
		_, err = exec.LookPath("java")
	}
	if err != nil {
		t.Skipf("no Java toolchain: %v", err)
	}
	b := startBinary(t, "--config", writeProps(t, map[string]string{
		"log.cleaner.backoff.ms":          "200",
		"log.cleaner.min.cleanable.ratio": "0.01",
		"log.roll.ms":                     "100",

		"group.streams.min.heartbeat.interval.ms":  "500",
		"group.streams.heartbeat.interval.ms":      "1000",
		"group.streams.min.session.timeout.ms":     "6000",
		"group.streams.session.timeout.ms":         "10000",
		"group.streams.initial.rebalance.delay.ms": "1000",
	}))
	module, err := filepath.Abs("java-apps")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, mvn, "-q", "-B", "-f", filepath.Join(module, "pom.xml"), "test", "-Dkbroker.bootstrap="+b.Addr())
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("mvn test in %s: %v\n%s", module, err, out)
	}
}
