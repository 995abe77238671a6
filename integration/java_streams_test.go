package integration

import (
	"context"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/kbroker/kbroker/internal/testenv"
)

// TestJavaStreamsProtocol runs the Maven module integration/java-streams
// against the kbroker binary: two instances of a Kafka Streams 4.4
// application with group.protocol=streams (KIP-1071), whose tasks the
// broker assigns after creating the repartition and changelog topics, then
// one instance after the other stops. Heartbeats are every second so
// rebalances settle quickly. Skipped like TestJavaApps: without java and
// mvn on PATH, in -short mode, or with KBROKER_SKIP_JAVA=1.
func TestJavaStreamsProtocol(t *testing.T) {
	t.Parallel()
	if testing.Short() || testenv.Flag(t, "KBROKER_SKIP_JAVA") {
		t.Skip("the Java streams application takes half a minute or more: not in -short mode or with KBROKER_SKIP_JAVA=1")
	}
	mvn, err := exec.LookPath("mvn")
	if err == nil {
		_, err = exec.LookPath("java")
	}
	if err != nil {
		t.Skipf("no Java toolchain: %v", err)
	}
	b := startBinary(t, "--config", writeProps(t, map[string]string{
		"group.streams.min.heartbeat.interval.ms":  "500",
		"group.streams.heartbeat.interval.ms":      "1000",
		"group.streams.min.session.timeout.ms":     "6000",
		"group.streams.session.timeout.ms":         "10000",
		"group.streams.initial.rebalance.delay.ms": "1000",
	}))
	module, err := filepath.Abs("java-streams")
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
