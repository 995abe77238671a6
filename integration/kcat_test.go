package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// kcatPath returns kcat's path, or skips the test when it is missing
// (.ci/run installs it, so CI always runs these tests).
func kcatPath(t *testing.T) string {
	t.Helper()
	path, err := exec.LookPath("kcat")
	if err != nil && os.Getenv("CI") != "" {
		t.Fatal("kcat is not on PATH in CI: .ci/run must install it")
	}
	if err != nil {
		t.Skip("kcat is not on PATH (apt-get install kcat; CI installs it): skipping the librdkafka tests")
	}
	return path
}

// runKcat runs kcat with args and stdin, bounded to 30 s, and returns its
// standard output; a failure or anything on stderr that looks like an
// error fails the test.
func runKcat(t *testing.T, stdin string, args ...string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, kcatPath(t), args...)
	cmd.Stdin = strings.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("kcat %s: %v\nstderr:\n%s", strings.Join(args, " "), err, stderr.String())
	}
	if s := stderr.String(); strings.Contains(s, "ERROR") || strings.Contains(s, "failed") {
		t.Fatalf("kcat %s reported errors:\n%s", strings.Join(args, " "), s)
	}
	return stdout.Bytes()
}

// kcatMetadata is what `kcat -L -J` prints, the parts the tests read.
type kcatMetadata struct {
	Brokers []struct {
		ID   int32  `json:"id"`
		Name string `json:"name"`
	} `json:"brokers"`
	Topics []struct {
		Topic      string `json:"topic"`
		Error      string `json:"error"`
		Partitions []struct {
			Partition int32 `json:"partition"`
			Leader    int32 `json:"leader"`
		} `json:"partitions"`
	} `json:"topics"`
}

// kcatOpts bound librdkafka's waits (its defaults are a minute or more).
var kcatOpts = []string{"-X", "socket.timeout.ms=5000", "-X", "message.timeout.ms=15000", "-m", "10"}

// TestKcat: librdkafka through kcat lists metadata (-L) and produces
// (-P) keyed records with headers, to a topic created with kadm and to a
// new one it auto-creates; end offsets count every line.
func TestKcat(t *testing.T) {
	t.Parallel()
	kcatPath(t)
	eachBroker(t, brokerOpts{}, func(t *testing.T, b testBroker) {
		topic := topicName(t)
		adm := newAdmin(t, b.Addr())
		if _, err := adm.CreateTopic(testCtx(t), 3, 1, nil, topic); err != nil {
			t.Fatalf("CreateTopic: %v", err)
		}

		var md kcatMetadata
		out := runKcat(t, "", append([]string{"-b", b.Addr(), "-L", "-J"}, kcatOpts...)...)
		if err := json.Unmarshal(out, &md); err != nil {
			t.Fatalf("kcat -L -J printed %q: %v", out, err)
		}
		if len(md.Brokers) != 1 || md.Brokers[0].Name != b.Addr() {
			t.Fatalf("kcat -L brokers %+v, want one at %s", md.Brokers, b.Addr())
		}
		found := false
		for _, tp := range md.Topics {
			if tp.Topic == topic {
				found = true
				if tp.Error != "" || len(tp.Partitions) != 3 {
					t.Fatalf("kcat -L topic %s: error %q, %d partitions; want 3", topic, tp.Error, len(tp.Partitions))
				}
			}
		}
		if !found {
			t.Fatalf("kcat -L does not list %s: %s", topic, out)
		}

		const lines = 200
		var in strings.Builder
		for i := range lines {
			fmt.Fprintf(&in, "key-%d:value %d\n", i, i)
		}
		runKcat(t, in.String(), append([]string{"-P", "-b", b.Addr(), "-t", topic, "-K", ":", "-H", "source=kcat"}, kcatOpts...)...)
		var total int64
		for _, o := range endOffsets(t, adm, topic) {
			total += o
		}
		if total != lines {
			t.Fatalf("after kcat -P of %d lines, end offsets add up to %d", lines, total)
		}

		// librdkafka's producer asks for auto-creation by default.
		auto := topic + ".auto"
		runKcat(t, "one\ntwo\nthree\n", append([]string{"-P", "-b", b.Addr(), "-t", auto}, kcatOpts...)...)
		checkEndOffsets(t, adm, auto, map[int32]int64{0: 3})
	})
}
