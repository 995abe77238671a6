package integration

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestBinaryConfigFile: settings come from --config, and an explicit flag
// overrides the file wherever it stands on the command line.
func TestBinaryConfigFile(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "server.properties")
	conf := "# kbroker test\nnum.partitions=4\nauto.create.topics.enable=false\nkbroker.flush.mode=sync\n"
	if err := os.WriteFile(file, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	b := startBinary(t, "--auto-create-topics", "--config", file)
	topic := topicName(t)
	produceKgo(t, b.Addr(), topic, 50, nil, kgo.AllowAutoTopicCreation())
	topics, err := newAdmin(t, b.Addr()).ListTopics(testCtx(t), topic)
	if err != nil {
		t.Fatal(err)
	}
	if got := len(topics[topic].Partitions); got != 4 {
		t.Fatalf("auto-created topic has %d partitions, want num.partitions=4 from the file", got)
	}
}

// TestBinaryAdvertisedListener: Metadata names the advertised address,
// not the one listened on.
func TestBinaryAdvertisedListener(t *testing.T) {
	t.Parallel()
	b := startBinary(t, "--advertised-listener", "kafka.invalid:19092")
	cl := newKgo(t, b.Addr())
	req := kmsg.NewPtrMetadataRequest()
	resp, err := cl.SeedBrokers()[0].Request(testCtx(t), req)
	if err != nil {
		t.Fatal(err)
	}
	md := resp.(*kmsg.MetadataResponse)
	if len(md.Brokers) != 1 || md.Brokers[0].Host != "kafka.invalid" || md.Brokers[0].Port != 19092 {
		t.Fatalf("Metadata brokers %+v, want kafka.invalid:19092", md.Brokers)
	}
}

// runBinary runs kbroker to completion (at most 30 s) and returns its exit
// code, stdout and stderr.
func runBinary(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, kbrokerBinary(t), args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("kbroker %s did not exit within 30 s", strings.Join(args, " "))
	}
	if err != nil && cmd.ProcessState == nil {
		t.Fatal(err)
	}
	return cmd.ProcessState.ExitCode(), stdout.String(), stderr.String()
}

// TestBinaryStartErrors: a bad flag, a bad config file and a data
// directory already in use each end the process at once with status 1, a
// message on stderr and nothing on stdout.
func TestBinaryStartErrors(t *testing.T) {
	t.Parallel()
	running := startBinary(t, "--segment-bytes", "134217728") // the command's default size
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"bad flush mode", []string{"--flush", "never"}, "flush"},
		{"bad segment size", []string{"--segment-bytes", "12345"}, "log.segment.bytes"},
		{"unknown flag", []string{"--no-such-flag"}, "no-such-flag"},
		{"missing config file", []string{"--config", filepath.Join(t.TempDir(), "absent.properties")}, "absent.properties"},
		{"data directory in use", []string{"--listen", "127.0.0.1:0", "--data-dir", running.dir}, running.dir},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := runBinary(t, tt.args...)
			if code != 1 {
				t.Errorf("exit status %d, want 1", code)
			}
			if stdout != "" {
				t.Errorf("stdout %q, want nothing", stdout)
			}
			if !strings.Contains(stderr, "kbroker: ") || !strings.Contains(stderr, tt.want) {
				t.Errorf("stderr does not say what is wrong (%q):\n%s", tt.want, stderr)
			}
		})
	}
	// The running broker was not disturbed.
	produceKgo(t, running.Addr(), topicName(t), 10, nil, kgo.AllowAutoTopicCreation())
}
