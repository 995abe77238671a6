package integration

import (
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest"

	"github.com/kbroker/kbroker/broker"
)

// recordingBroker is an in-process broker whose log is also read for the
// API of every request (the broker logs each at debug level, and each
// unsupported one at info level before closing the connection).
type recordingBroker struct {
	dir      string
	edit     func(*broker.Config)
	ip       *broker.InProcess
	requests *requestLog
}

// startRecording starts a recordingBroker in a temporary directory, closed
// at cleanup.
func startRecording(t *testing.T, edit func(*broker.Config)) *recordingBroker {
	t.Helper()
	skipIfExternal(t, "reads kbroker's request log")
	b := &recordingBroker{dir: t.TempDir(), edit: edit, requests: &requestLog{apis: map[string]int{}}}
	t.Cleanup(func() { b.close(t) })
	b.start(t)
	return b
}

func (b *recordingBroker) Addr() string { return b.ip.Addr() }

func (b *recordingBroker) Restart(t *testing.T) {
	t.Helper()
	b.close(t)
	b.start(t)
}

func (b *recordingBroker) start(t *testing.T) {
	t.Helper()
	core := zapcore.NewTee(zaptest.NewLogger(t, zaptest.Level(zap.InfoLevel)).Core(), requestCore{b.requests})
	ip, err := broker.StartInProcess(b.dir, b.edit, broker.WithLogger(zap.New(core)))
	if err != nil {
		t.Fatalf("start in-process broker: %v", err)
	}
	b.ip = ip
}

func (b *recordingBroker) close(t *testing.T) {
	t.Helper()
	if b.ip == nil {
		return
	}
	if err := b.ip.Close(); err != nil {
		t.Errorf("close broker: %v", err)
	}
	b.ip = nil
	checkCleanStop(t, b.dir)
}

// requestCore is a zap core that counts the broker's "request" debug
// entries by their api field, and keeps its "unsupported request" ones.
type requestCore struct{ log *requestLog }

func (c requestCore) Enabled(zapcore.Level) bool        { return true }
func (c requestCore) With([]zapcore.Field) zapcore.Core { return c }
func (c requestCore) Sync() error                       { return nil }

func (c requestCore) Check(e zapcore.Entry, ce *zapcore.CheckedEntry) *zapcore.CheckedEntry {
	if e.Message == "request" || strings.Contains(e.Message, "unsupported request") {
		return ce.AddCore(e, c)
	}
	return ce
}

func (c requestCore) Write(e zapcore.Entry, fields []zapcore.Field) error {
	api := "?"
	for _, f := range fields {
		if f.Key == "api" {
			api = f.String
		}
	}
	c.log.mu.Lock()
	defer c.log.mu.Unlock()
	if e.Message == "request" {
		c.log.apis[api]++
	} else {
		c.log.unsupported = append(c.log.unsupported, api)
	}
	return nil
}

// fixedListenAddr returns a free loopback address for a broker that must
// come back on the same address after a restart, so that clients running
// across it reconnect there. The port lies below the ephemeral range, so
// that no client's outgoing connection takes it (or connects to itself
// through it) while the broker is down.
func fixedListenAddr(t *testing.T) string {
	t.Helper()
	low := 32768
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 {
			if n, err := strconv.Atoi(f[0]); err == nil && n > 2048 {
				low = n
			}
		}
	}
	for range 100 {
		addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(1024+rand.IntN(low-1024)))
		if ln, err := net.Listen("tcp", addr); err == nil {
			ln.Close()
			return addr
		}
	}
	t.Fatal("no free port below the ephemeral range")
	return ""
}

// noUnsupportedAPIs fails the test if any client sent b a request it
// does not serve (which also closes the client's connection).
func noUnsupportedAPIs(t *testing.T, b testBroker) {
	t.Helper()
	switch b := b.(type) {
	case *recordingBroker:
		b.requests.mu.Lock()
		defer b.requests.mu.Unlock()
		if len(b.requests.unsupported) > 0 {
			t.Errorf("the broker got unsupported requests: %v", b.requests.unsupported)
		}
		if b.requests.apis["Fetch"] == 0 {
			t.Errorf("no Fetch request was recorded (requests: %v)", b.requests.apis)
		}
	case *binaryBroker:
		if logs := b.logs.String(); strings.Contains(logs, "unsupported request") {
			t.Errorf("a client sent a request kbroker does not serve:\n%s", logLines(logs, "unsupported request"))
		}
	}
}

// logLines returns the lines of s that contain sub.
func logLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// consumeBrokerOpts are the settings of eachConsumeBroker's brokers.
type consumeBrokerOpts struct {
	// fixedAddr: each broker listens on a fixed port, so that it comes
	// back on the same address after a restart.
	fixedAddr bool
}

// eachConsumeBroker is eachBroker for the consume tests: the in-process
// broker records every request's API, and at the end (after f's parallel
// subtests too) no group API may have been asked of either broker.
func eachConsumeBroker(t *testing.T, o consumeBrokerOpts, f func(t *testing.T, b testBroker)) {
	t.Helper()
	t.Run("binary", func(t *testing.T) {
		t.Parallel()
		var args []string
		if o.fixedAddr {
			args = append(args, "--listen", fixedListenAddr(t))
		}
		b := startBinary(t, args...)
		t.Cleanup(func() { noUnsupportedAPIs(t, b) })
		f(t, b)
	})
	t.Run("in-process", func(t *testing.T) {
		t.Parallel()
		var edit func(*broker.Config)
		if o.fixedAddr {
			addr := fixedListenAddr(t)
			edit = func(c *broker.Config) { c.Listen = addr }
		}
		b := startRecording(t, edit)
		t.Cleanup(func() { noUnsupportedAPIs(t, b) })
		f(t, b)
	})
}

// requestLog counts the requests a broker served, by API name.
type requestLog struct {
	mu          sync.Mutex
	apis        map[string]int
	unsupported []string
}
