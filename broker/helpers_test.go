package broker

import (
	"context"
	"encoding/binary"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/goleak"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"

	"github.com/kbroker/kbroker/internal/testenv"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m, testenv.LeakOptions()...) }

// newTestServer starts an in-process broker on 127.0.0.1:0 with a
// temporary data directory, closed at cleanup. edit may change settings.
// Tests log at debug level; benchmarks at info, as the broker runs, so
// that -benchmem counts the broker's allocations and not a debug line
// per request.
func newTestServer(t testing.TB, edit func(*Config)) *InProcess {
	t.Helper()
	var opts []zaptest.LoggerOption
	if _, ok := t.(*testing.B); ok {
		opts = append(opts, zaptest.Level(zap.InfoLevel))
	}
	ip, err := StartInProcess(t.TempDir(), edit, WithLogger(zaptest.NewLogger(t, opts...)))
	if err != nil {
		t.Fatalf("start broker: %v", err)
	}
	t.Cleanup(func() {
		if err := ip.Close(); err != nil {
			t.Errorf("close broker: %v", err)
		}
	})
	return ip
}

// newClient returns a kgo client for srv, closed at cleanup.
func newClient(t testing.TB, srv *InProcess, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	opts = append([]kgo.Opt{
		kgo.SeedBrokers(srv.Addr()),
		kgo.RequestTimeoutOverhead(5 * time.Second),
		kgo.RetryTimeout(10 * time.Second),
	}, opts...)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// newAdmin returns a kadm client for srv.
func newAdmin(t testing.TB, srv *InProcess) *kadm.Client {
	t.Helper()
	return kadm.NewClient(newClient(t, srv))
}

// testCtx is a context that ends with the test or after 30 s.
func testCtx(t testing.TB) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// requestFrame encodes req at version as a whole request frame: size,
// header (null client id; tagged fields when flexible) and body.
func requestFrame(req kmsg.Request, version int16, corr int32) []byte {
	req.SetVersion(version)
	frame := binary.BigEndian.AppendUint32(nil, 0)
	frame = binary.BigEndian.AppendUint16(frame, uint16(req.Key()))
	frame = binary.BigEndian.AppendUint16(frame, uint16(version))
	frame = binary.BigEndian.AppendUint32(frame, uint32(corr))
	frame = binary.BigEndian.AppendUint16(frame, 0xffff)
	if req.IsFlexible() {
		frame = append(frame, 0)
	}
	frame = req.AppendTo(frame)
	binary.BigEndian.PutUint32(frame, uint32(len(frame)-4))
	return frame
}

// restartable is an in-process broker over a data directory that a test
// stops and starts again; the running one is closed at cleanup.
type restartable struct {
	t       testing.TB
	dir     string
	edit    func(*Config)
	running *InProcess
}

// newRestartable starts a broker on a fresh directory.
func newRestartable(t testing.TB, edit func(*Config)) *restartable {
	t.Helper()
	r := &restartable{t: t, dir: t.TempDir(), edit: edit}
	t.Cleanup(func() {
		if r.running != nil {
			if err := r.running.Close(); err != nil {
				t.Errorf("close broker: %v", err)
			}
		}
	})
	r.start()
	return r
}

func (r *restartable) start() *InProcess {
	r.t.Helper()
	ip, err := StartInProcess(r.dir, r.edit, WithLogger(zaptest.NewLogger(r.t)))
	if err != nil {
		r.t.Fatalf("start broker: %v", err)
	}
	r.running = ip
	return ip
}

// restart stops the running broker and starts a new one on the same data.
func (r *restartable) restart() *InProcess {
	r.t.Helper()
	if err := r.running.Close(); err != nil {
		r.t.Fatalf("close broker: %v", err)
	}
	r.running = nil
	return r.start()
}
