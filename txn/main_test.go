package txn

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/goleak"

	"github.com/kbroker/kbroker/internal/testenv"
	klog "github.com/kbroker/kbroker/log"
	"github.com/kbroker/kbroker/partition"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, testenv.LeakOptions()...)
}

// Test timeouts: short and explicit.
const (
	testTimeoutMs = 60_000
	testAbortTick = time.Second
)

var txnTopic = partition.TopicID{7, 7, 7}

// markerCall is one Deps.WriteMarkers call.
type markerCall struct {
	PID        int64
	Epoch      int16
	Commit     bool
	TV         int8 // the markers' transaction version
	Partitions []TopicPartition
	At         time.Time
}

// fakeMarkers records WriteMarkers calls. By default each succeeds at
// once; fail makes the next calls fail; hold keeps the done callbacks
// until release.
type fakeMarkers struct {
	mu      sync.Mutex
	calls   []markerCall
	fail    int
	failErr error
	hold    bool
	held    []func(error)
}

func (f *fakeMarkers) write(pid int64, epoch int16, commit bool, tv int8, parts []TopicPartition, done func(error)) {
	f.mu.Lock()
	f.calls = append(f.calls, markerCall{pid, epoch, commit, tv, slices.Clone(parts), time.Now()})
	var err error
	if f.fail > 0 {
		f.fail--
		err = f.failErr
		if err == nil {
			err = errors.New("marker write failed")
		}
	}
	if f.hold && err == nil {
		f.held = append(f.held, done)
		f.mu.Unlock()
		return
	}
	f.mu.Unlock()
	done(err)
}

func (f *fakeMarkers) get() []markerCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.calls)
}

// release completes the held calls and stops holding.
func (f *fakeMarkers) release() {
	f.mu.Lock()
	held := f.held
	f.held, f.hold = nil, false
	f.mu.Unlock()
	for _, done := range held {
		done(nil)
	}
}

func (f *fakeMarkers) setHold(h bool) {
	f.mu.Lock()
	f.hold = h
	f.mu.Unlock()
}

// env is a partition store with a __transaction_state topic and a
// coordinator over it, reopened as a broker restart would reopen them.
// Create it inside a synctest bubble.
type env struct {
	t       *testing.T
	dir     string
	mode    partition.FlushMode
	parts   int32
	cfg     Config
	topic   partition.TopicConfig
	ps      *partition.Store
	c       *Coordinator
	markers *fakeMarkers
	nextPID atomic.Int64
	// pidErr, when set, is returned by NextProducerID.
	pidErr atomic.Pointer[error]
	// pidGate, when set, is waited on by NextProducerID.
	pidGate chan struct{}
	// v2 is Deps.V2: the broker's transaction.version is 2.
	v2 atomic.Bool
}

// txnTopicConfig is the topic's configuration as the broker creates it:
// kept forever (snapshots move its log start).
func txnTopicConfig() partition.TopicConfig {
	cfg := partition.DefaultTopicConfig()
	cfg.RetentionMs = -1
	return cfg
}

func testConfig() Config {
	cfg := DefaultConfig()
	cfg.AbortCheckInterval = testAbortTick
	cfg.SnapshotInterval = time.Hour
	return cfg
}

func newEnv(t *testing.T, mode partition.FlushMode, parts int32) *env {
	return newEnvWith(t, mode, parts, testConfig())
}

func newEnvWith(t *testing.T, mode partition.FlushMode, parts int32, cfg Config) *env {
	t.Helper()
	e := &env{t: t, dir: t.TempDir(), mode: mode, parts: parts, cfg: cfg, markers: &fakeMarkers{}, topic: txnTopicConfig()}
	e.nextPID.Store(1000)
	e.open()
	t.Cleanup(func() {
		if e.c != nil {
			e.c.Close()
		}
		if e.ps != nil {
			e.ps.Close()
		}
	})
	return e
}

func (e *env) deps() Deps {
	return Deps{
		NextProducerID: func() (int64, error) {
			if e.pidGate != nil {
				<-e.pidGate
			}
			if p := e.pidErr.Load(); p != nil {
				return -1, *p
			}
			return e.nextPID.Add(1), nil
		},
		WriteMarkers: e.markers.write,
		GroupPartition: func(group string) TopicPartition {
			return TopicPartition{"__consumer_offsets", int32(len(group) % 50)}
		},
		V2: e.v2.Load,
	}
}

func (e *env) open() {
	e.t.Helper()
	ps, _, err := partition.Open(partition.Config{
		Dir:       e.dir,
		Log:       klog.Config{FileSize: 1 << 20},
		FlushMode: e.mode,
	}, []partition.TopicSpec{{ID: txnTopic, Name: topicName, Partitions: e.parts, Config: e.topic}})
	if err != nil {
		e.t.Fatalf("open partition store: %v", err)
	}
	e.ps = ps
	meta := filepath.Join(e.dir, "metadata")
	if err := os.MkdirAll(meta, 0o755); err != nil {
		e.t.Fatal(err)
	}
	cfg := e.cfg
	cfg.Dir = meta
	c, err := Open(cfg, ps, ps.Partitions(txnTopic), e.deps(), nil)
	if err != nil {
		e.t.Fatalf("open coordinator: %v", err)
	}
	e.c = c
}

// restart closes cleanly (with the last snapshot) or, with crash, drops
// the coordinator without it, then reopens the partition store and the
// coordinator.
func (e *env) restart(crash bool) {
	e.t.Helper()
	if err := e.c.close(!crash); err != nil {
		e.t.Fatal(err)
	}
	if err := e.ps.Close(); err != nil {
		e.t.Fatal(err)
	}
	e.open()
}

func (e *env) init(id string, timeoutMs int32, pid int64, epoch int16) InitResult {
	e.t.Helper()
	ch := make(chan InitResult, 2)
	e.c.InitProducerID(InitRequest{TransactionalID: id, TimeoutMs: timeoutMs, ProducerID: pid, Epoch: epoch}, func(r InitResult) { ch <- r })
	return <-ch
}

// mustInit is a plain InitProducerId (no KIP-360 fields) that must work.
func (e *env) mustInit(id string) (int64, int16) {
	e.t.Helper()
	r := e.init(id, testTimeoutMs, -1, -1)
	if r.Err != nil {
		e.t.Fatalf("init %s: %v", id, r.Err)
	}
	return r.ProducerID, r.Epoch
}

func (e *env) add(id string, pid int64, epoch int16, tps ...TopicPartition) error {
	ch := make(chan error, 2)
	e.c.AddPartitions(id, pid, epoch, tps, func(err error) { ch <- err })
	return <-ch
}

func (e *env) end(id string, pid int64, epoch int16, commit bool) error {
	ch := make(chan error, 2)
	e.c.EndTxn(id, pid, epoch, commit, func(err error) { ch <- err })
	return <-ch
}

// describe returns the description of id.
func (e *env) describe(id string) Description {
	return e.c.Describe([]string{id})[0]
}

// wantState checks id's state, producer id and epoch.
func (e *env) wantState(id string, s State, pid int64, epoch int16) {
	e.t.Helper()
	d := e.describe(id)
	if d.Err != nil || d.State != s || d.ProducerID != pid || d.Epoch != epoch {
		e.t.Fatalf("%s: got %s pid %d epoch %d (err %v), want %s pid %d epoch %d", id, d.State, d.ProducerID, d.Epoch, d.Err, s, pid, epoch)
	}
}

// settle lets every write, marker and completion in flight finish.
func settle() {
	synctest.Wait()
}

func tp(topic string, p int32) TopicPartition { return TopicPartition{topic, p} }

// run runs f in a synctest bubble with a fresh env.
func run(t *testing.T, mode partition.FlushMode, f func(t *testing.T, e *env)) {
	t.Helper()
	synctest.Test(t, func(t *testing.T) {
		f(t, newEnv(t, mode, 3))
	})
}

var modes = []partition.FlushMode{partition.FlushSync, partition.FlushAsync, partition.FlushAsyncPool}

func (m markerCall) String() string {
	return fmt.Sprintf("pid %d epoch %d commit %t %v", m.PID, m.Epoch, m.Commit, m.Partitions)
}
