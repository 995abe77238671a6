package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"flag"
	"io"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/goleak"
	"go.uber.org/zap/zapcore"

	"github.com/kbroker/kbroker/broker"
	"github.com/kbroker/kbroker/internal/testenv"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m, testenv.LeakOptions()...) }

// writeFile writes a config file into a temporary directory.
func writeFile(t *testing.T, text string) string {
	t.Helper()
	name := filepath.Join(t.TempDir(), "server.properties")
	if err := os.WriteFile(name, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return name
}

func TestParseArgs(t *testing.T) {
	file := writeFile(t, `# a server.properties
listeners=PLAINTEXT://127.0.0.1:19092
log.dirs = /var/lib/kbroker
num.partitions=6
kbroker.flush.mode=sync
log.retention.ms=3600000
connections.max.idle.ms=1000

! another comment style
auto.create.topics.enable=false
`)
	// Kafka 4's own config/server.properties (KRaft, combined mode).
	kafkaFile := writeFile(t, `process.roles=broker,controller
node.id=1
controller.quorum.bootstrap.servers=localhost:9093
listeners=PLAINTEXT://:9092,CONTROLLER://:9093
inter.broker.listener.name=PLAINTEXT
advertised.listeners=PLAINTEXT://localhost:9092,CONTROLLER://localhost:9093
controller.listener.names=CONTROLLER
listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL
num.network.threads=3
num.io.threads=8
socket.send.buffer.bytes=102400
socket.receive.buffer.bytes=102400
socket.request.max.bytes=104857600
log.dirs=/tmp/kraft-combined-logs
num.partitions=1
num.recovery.threads.per.data.dir=1
offsets.topic.replication.factor=1
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
log.retention.hours=24
log.segment.bytes=1073741824
log.retention.check.interval.ms=300000
`)
	tests := []struct {
		name string
		args []string
		edit func(*broker.Config) // applied to DefaultConfig for the expected value
		opts func(*options)       // expected logging options, from info/console
	}{
		{name: "defaults", args: nil},
		{
			name: "Kafka's server.properties",
			args: []string{"--config", kafkaFile, "--set", "num.io.threads=16"},
			edit: func(c *broker.Config) {
				c.NodeID, c.Listen = 1, "PLAINTEXT://:9092,CONTROLLER://:9093"
				c.AdvertisedListener = "PLAINTEXT://localhost:9092,CONTROLLER://localhost:9093"
				c.ControllerListenerNames, c.ListenerSecurityProtocolMap = "CONTROLLER", "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL"
				c.DataDir, c.RetentionMs, c.SegmentBytes = "/tmp/kraft-combined-logs", 24*3600*1000, 1<<30
			},
			opts: func(o *options) {
				o.ignored = []string{
					"process.roles=broker,controller (kbroker is one node, broker and controller at once)",
					"controller.quorum.bootstrap.servers=localhost:9093 (no KRaft quorum: kbroker keeps its metadata in its data directory)",
					"inter.broker.listener.name=PLAINTEXT (no other brokers to talk to)",
					"num.network.threads=3 (a goroutine serves each connection)",
					"num.io.threads=8 (a goroutine serves each connection)",
					"socket.send.buffer.bytes=102400 (the kernel's socket buffer sizes apply)",
					"socket.receive.buffer.bytes=102400 (the kernel's socket buffer sizes apply)",
					"num.recovery.threads.per.data.dir=1 (recovery reads one commit log)",
					"offsets.topic.replication.factor=1 (no replication: one node keeps one copy)",
					"share.coordinator.state.topic.replication.factor=1 (no replication: one node keeps one copy)",
					"share.coordinator.state.topic.min.isr=1 (no replication: one node keeps one copy)",
					"transaction.state.log.replication.factor=1 (no replication: one node keeps one copy)",
					"transaction.state.log.min.isr=1 (no replication: one node keeps one copy)",
					"num.io.threads=16 (a goroutine serves each connection)",
				}
			},
		},
		{
			name: "every flag",
			args: []string{
				"--listen", "0.0.0.0:9999", "--advertised-listener", "kafka.example:9999",
				"--data-dir", "/data", "--flush", "pool", "--segment-bytes", "8388608",
				"--default-partitions", "3", "--auto-create-topics=false",
				"--log-level", "debug", "--log-format", "json",
			},
			edit: func(c *broker.Config) {
				c.Listen, c.AdvertisedListener, c.DataDir = "0.0.0.0:9999", "kafka.example:9999", "/data"
				c.FlushMode, c.SegmentBytes, c.DefaultPartitions, c.AutoCreateTopics = "pool", 8<<20, 3, false
			},
			opts: func(o *options) { o.logLevel, o.logJSON = zapcore.DebugLevel, true },
		},
		{
			name: "single dash and equals",
			args: []string{"-listen=127.0.0.1:0", "-flush=sync", "-auto-create-topics"},
			edit: func(c *broker.Config) { c.Listen, c.FlushMode = "127.0.0.1:0", "sync" },
		},
		{
			name: "config file",
			args: []string{"--config", file},
			edit: func(c *broker.Config) {
				c.Listen, c.DataDir, c.DefaultPartitions, c.FlushMode = "127.0.0.1:19092", "/var/lib/kbroker", 6, "sync"
				c.RetentionMs, c.ConnectionsMaxIdle, c.AutoCreateTopics = 3600000, time.Second, false
			},
		},
		{
			name: "flags override the file, wherever they stand",
			args: []string{"--listen", "127.0.0.1:0", "--config", file, "--flush", "async", "--auto-create-topics"},
			edit: func(c *broker.Config) {
				c.Listen, c.DataDir, c.DefaultPartitions, c.FlushMode = "127.0.0.1:0", "/var/lib/kbroker", 6, "async"
				c.RetentionMs, c.ConnectionsMaxIdle, c.AutoCreateTopics = 3600000, time.Second, true
			},
		},
		{
			name: "SASL users and several listeners",
			args: []string{"--listen", "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
				"--sasl-user", "alice:a-pw", "--sasl-user", "bob:b:pw", "--sasl-mechanisms", "SCRAM-SHA-256,PLAIN"},
			edit: func(c *broker.Config) {
				c.Listen = "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0"
				c.SASLEnabledMechanisms = "SCRAM-SHA-256,PLAIN"
				c.SASLUsers = "alice:a-pw,bob:b:pw"
			},
		},
		{
			name: "--set, overridden by a named flag",
			args: []string{"--listen", "SASL_SSL://127.0.0.1:0", "--set", "sasl.enabled.mechanisms=PLAIN",
				"--set", "listener.name.sasl_ssl.ssl.client.auth=required", "--set", "ssl.keystore.location=/k.pem",
				"--set", "ssl.truststore.location=/ca.pem", "--sasl-mechanisms", "SCRAM-SHA-256"},
			edit: func(c *broker.Config) {
				c.Listen, c.SASLEnabledMechanisms = "SASL_SSL://127.0.0.1:0", "SCRAM-SHA-256"
				c.SSLKeystoreLocation, c.SSLTruststoreLocation = "/k.pem", "/ca.pem"
				c.ListenerOverrides = map[string]string{"listener.name.sasl_ssl.ssl.client.auth": "required"}
			},
		},
		{
			name: "log level warn",
			args: []string{"--log-level", "warn"},
			opts: func(o *options) { o.logLevel = zapcore.WarnLevel },
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseArgs(tt.args, io.Discard)
			if err != nil {
				t.Fatalf("parseArgs(%q): %v", tt.args, err)
			}
			want := options{cfg: broker.DefaultConfig(), logLevel: zapcore.InfoLevel, adminControls: "auto"}
			if tt.edit != nil {
				tt.edit(&want.cfg)
			}
			if tt.opts != nil {
				tt.opts(&want)
			}
			if !reflect.DeepEqual(got, want) { // Config holds a map: not comparable with !=
				t.Errorf("parseArgs(%q)\n got %+v\nwant %+v", tt.args, got, want)
			}
		})
	}
}

func TestParseArgsErrors(t *testing.T) {
	badFile := writeFile(t, "num.partitions=0\nno.such.setting=1\njust words\n")
	tests := []struct {
		name string
		args []string
		want string // in the error text
	}{
		{"flush mode", []string{"--flush", "fast"}, `"fast" is not one of sync, async, pool`},
		{"segment bytes not a number", []string{"--segment-bytes", "128MiB"}, "log.segment.bytes"},
		{"segment bytes out of range", []string{"--segment-bytes", "1000"}, "log.segment.bytes 1000 must be a multiple of 4096"},
		{"partitions", []string{"--default-partitions", "0"}, "num.partitions 0 must be at least 1"},
		{"boolean", []string{"--auto-create-topics=maybe"}, "not a boolean"},
		{"listen", []string{"--listen", "no-port"}, "listeners"},
		{"log level", []string{"--log-level", "trace"}, "-log-level"},
		{"log format", []string{"--log-format", "xml"}, "-log-format"},
		{"unknown flag", []string{"--no-such-flag"}, "no-such-flag"},
		{"positional argument", []string{"extra"}, "unexpected arguments"},
		{"missing config file", []string{"--config", filepath.Join(t.TempDir(), "absent")}, "no such file"},
		{"bad config file", []string{"--config", badFile}, "line 2: unknown setting"},
		{"--set unknown", []string{"--set", "no.such.setting=1"}, `unknown setting "no.such.setting"`},
		{"--set without =", []string{"--set", "num.partitions"}, "PROPERTY=VALUE"},
		{"--set per-listener JAAS", []string{"--set", "listener.name.sasl_ssl.plain.sasl.jaas.config=x"}, "cannot be set per listener"},
		{"--set override of no listener", []string{"--set", "listener.name.ssl.ssl.client.auth=required"}, "no listener SSL"},
		{"config file fails validation", []string{"--config", writeFile(t, "num.partitions=0\n")}, "num.partitions 0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parseArgs(tt.args, io.Discard)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("parseArgs(%q): got error %v, want one containing %q", tt.args, err, tt.want)
			}
		})
	}
	t.Run("bad config file lists every line", func(t *testing.T) {
		_, err := parseArgs([]string{"--config", badFile}, io.Discard)
		for _, want := range []string{"line 2", "line 3"} {
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("got %v, want it to mention %s", err, want)
			}
		}
	})
}

func TestHelp(t *testing.T) {
	var out bytes.Buffer
	err := run(context.Background(), []string{"-h"}, io.Discard, &out)
	if !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("got %v, want flag.ErrHelp", err)
	}
	for _, want := range []string{"-listen", "(default localhost:9092)", "-data-dir", "-flush", "-config", "-log-level"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("usage lacks %q:\n%s", want, out.String())
		}
	}
}

// syncBuffer is a bytes.Buffer safe for the logger and the test at once.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// running is run() started in the background.
type running struct {
	addr   string
	cancel context.CancelFunc
	done   chan error
	logs   *syncBuffer
}

// startRun starts run with args, waits (at most 30 s) for the listening
// line and returns the address in it. At cleanup the context is canceled
// and run must return nil.
func startRun(t *testing.T, args ...string) *running {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	r := &running{cancel: cancel, done: make(chan error, 1), logs: &syncBuffer{}}
	go func() {
		err := run(ctx, args, pw, r.logs)
		pw.CloseWithError(errors.New("run returned"))
		r.done <- err
	}()
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-r.done:
			if err != nil {
				t.Errorf("run returned %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Errorf("run did not return 30 s after its context ended")
		}
	})
	select {
	case line, ok := <-lines:
		if !ok {
			t.Fatalf("run printed no listening line; logs:\n%s", r.logs)
		}
		addr, ok := strings.CutPrefix(line, "kbroker listening on ")
		if !ok {
			t.Fatalf("first line %q, want %q", line, "kbroker listening on <addr>")
		}
		r.addr = addr
	case <-time.After(30 * time.Second):
		t.Fatalf("no listening line within 30 s; logs:\n%s", r.logs)
	}
	// stdout must carry nothing but kbroker's own lines (listeners,
	// nodes, admin address): drain it so run never blocks on it.
	go func() {
		for line := range lines {
			if !strings.HasPrefix(line, "kbroker ") {
				t.Errorf("unexpected line on stdout: %q", line)
			}
		}
	}()
	return r
}

// apiVersions asks the broker at addr for its API versions with kgo,
// straight to the seed broker (nothing that needs Metadata).
func apiVersions(t *testing.T, addr string) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.RetryTimeout(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req := kmsg.NewPtrApiVersionsRequest()
	req.ClientSoftwareName, req.ClientSoftwareVersion = "kbroker-test", "1.0"
	resp, err := cl.SeedBrokers()[0].Request(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if av := resp.(*kmsg.ApiVersionsResponse); av.ErrorCode != 0 || len(av.ApiKeys) == 0 {
		t.Fatalf("ApiVersions: error %d, %d keys", av.ErrorCode, len(av.ApiKeys))
	}
}

func TestRunListensAndStops(t *testing.T) {
	dir := t.TempDir()
	r := startRun(t, "--listen", "127.0.0.1:0", "--data-dir", dir, "--segment-bytes", "1048576")
	host, port, err := net.SplitHostPort(r.addr)
	if err != nil || host != "127.0.0.1" || port == "0" {
		t.Fatalf("listening on %q: want 127.0.0.1 and a real port (%v)", r.addr, err)
	}
	apiVersions(t, r.addr)
	r.cancel()
	select {
	case err := <-r.done:
		if err != nil {
			t.Fatalf("run: %v", err)
		}
		r.done <- nil // for the cleanup
	case <-time.After(30 * time.Second):
		t.Fatal("run did not return after cancel")
	}
	if _, err := os.Stat(filepath.Join(dir, "abort")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("abort marker after a clean stop: %v", err)
	}
	// The data directory is free again: a second run opens it cleanly.
	r2 := startRun(t, "--listen", "127.0.0.1:0", "--data-dir", dir, "--segment-bytes", "1048576")
	apiVersions(t, r2.addr)
}

func TestRunLogLevel(t *testing.T) {
	r := startRun(t, "--listen", "127.0.0.1:0", "--data-dir", t.TempDir(), "--log-level", "warn")
	apiVersions(t, r.addr)
	if logs := r.logs.String(); strings.Contains(logs, "INFO") {
		t.Errorf("info lines at level warn:\n%s", logs)
	}
}

func TestRunJSONLogs(t *testing.T) {
	r := startRun(t, "--listen", "127.0.0.1:0", "--data-dir", t.TempDir(), "--log-format", "json")
	if logs := r.logs.String(); !strings.Contains(logs, `"msg":"starting kbroker"`) || !strings.Contains(logs, `"log.dirs":`) {
		t.Errorf("want JSON start-up line with the configuration, got:\n%s", logs)
	}
}

// TestRunStopsOnSIGTERM sends SIGTERM to the test process itself: run
// catches it (so the process lives) and stops cleanly.
func TestRunStopsOnSIGTERM(t *testing.T) {
	r := startRun(t, "--listen", "127.0.0.1:0", "--data-dir", t.TempDir())
	if err := syscall.Kill(os.Getpid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-r.done:
		if err != nil {
			t.Fatalf("run after SIGTERM: %v", err)
		}
		r.done <- nil
	case <-time.After(30 * time.Second):
		t.Fatal("run did not return after SIGTERM")
	}
	if !strings.Contains(r.logs.String(), "terminated") {
		t.Errorf("logs do not mention the signal:\n%s", r.logs)
	}
}

func TestRunStartError(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var stdout bytes.Buffer
	err = run(ctx, []string{"--listen", ln.Addr().String(), "--data-dir", dir}, &stdout, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "address already in use") {
		t.Fatalf("got %v, want address already in use", err)
	}
	if stdout.Len() != 0 {
		t.Errorf("stdout %q after a failed start, want nothing", stdout.String())
	}
	// The failed start released the data directory.
	r := startRun(t, "--listen", "127.0.0.1:0", "--data-dir", dir)
	apiVersions(t, r.addr)
}

func TestRunBadArgs(t *testing.T) {
	var stdout bytes.Buffer
	err := run(context.Background(), []string{"--flush", "never"}, &stdout, io.Discard)
	if err == nil {
		t.Fatal("run accepted --flush never")
	}
	if stdout.Len() != 0 {
		t.Errorf("stdout %q, want nothing", stdout.String())
	}
}
