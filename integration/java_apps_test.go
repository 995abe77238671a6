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
// restarted with its compacted config, offset and status topics. The
// broker runs with the cleaner acting within a second, so the applications
// read back compacted topics. Skipped without java and mvn on PATH, in
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
