package txn

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kbroker/kbroker/coordlog"
	"github.com/kbroker/kbroker/internal/testenv"
	"github.com/kbroker/kbroker/partition"
)

// producer is a transactional id's producer id and epoch in a test.
type producer struct {
	pid   int64
	epoch int16
}

// TestSurvivesRestart puts transactional ids in every state, restarts
// (cleanly, or dropping the coordinator without its last snapshot) and
// checks that each comes back as it was: completed and empty ones as
// they were, PrepareCommit and PrepareAbort completed (their markers
// written again), Ongoing open until its timeout aborts it.
func TestSurvivesRestart(t *testing.T) {
	for _, mode := range modes {
		for _, crash := range []bool{false, true} {
			name := mode.String() + map[bool]string{false: "/clean", true: "/crash"}[crash]
			t.Run(name, func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) { testSurvivesRestart(t, mode, crash) })
			})
		}
	}
}

func testSurvivesRestart(t *testing.T, mode partition.FlushMode, crash bool) {
	e := newEnv(t, mode, 3)
	ps := map[string]producer{}
	initP := func(id string, timeoutMs int32) producer {
		r := e.init(id, timeoutMs, -1, -1)
		if r.Err != nil {
			t.Fatalf("init %s: %v", id, r.Err)
		}
		p := producer{r.ProducerID, r.Epoch}
		ps[id] = p
		return p
	}
	parts := []TopicPartition{tp("t", 0), tp("t", 1), tp("u", 3)}

	p := initP("empty", testTimeoutMs)
	initP("fenced", testTimeoutMs)
	p = initP("fenced", testTimeoutMs) // epoch 1
	p = initP("ccommit", testTimeoutMs)
	testenv.WantErr(t, "add", e.add("ccommit", p.pid, p.epoch, parts...), nil)
	testenv.WantErr(t, "commit", e.end("ccommit", p.pid, p.epoch, true), nil)
	settle()
	// A snapshot in the middle: the rest is replayed from its cut.
	if err := e.c.Snapshot(); err != nil {
		t.Fatal(err)
	}
	p = initP("cabort", testTimeoutMs)
	testenv.WantErr(t, "add", e.add("cabort", p.pid, p.epoch, parts[:1]...), nil)
	testenv.WantErr(t, "abort", e.end("cabort", p.pid, p.epoch, false), nil)
	settle()
	p = initP("ongoing", 30_000)
	testenv.WantErr(t, "add", e.add("ongoing", p.pid, p.epoch, parts[1:]...), nil)
	ongoingStart := e.describe("ongoing").StartTimeMs

	e.markers.setHold(true)
	p = initP("pcommit", testTimeoutMs)
	testenv.WantErr(t, "add", e.add("pcommit", p.pid, p.epoch, parts...), nil)
	testenv.WantErr(t, "commit", e.end("pcommit", p.pid, p.epoch, true), nil)
	p = initP("pabort", testTimeoutMs)
	testenv.WantErr(t, "add", e.add("pabort", p.pid, p.epoch, parts[2:]...), nil)
	testenv.WantErr(t, "abort", e.end("pabort", p.pid, p.epoch, false), nil)
	settle()
	e.wantState("pcommit", PrepareCommit, ps["pcommit"].pid, ps["pcommit"].epoch)
	e.wantState("pabort", PrepareAbort, ps["pabort"].pid, ps["pabort"].epoch)
	before := len(e.markers.get())

	// The held markers die with the old coordinator.
	e.markers.mu.Lock()
	e.markers.held, e.markers.hold = nil, false
	e.markers.mu.Unlock()
	time.Sleep(time.Second)
	e.restart(crash)
	settle()

	calls := e.markers.get()[before:]
	slices.SortFunc(calls, func(a, b markerCall) int { return int(a.PID - b.PID) })
	want := []markerCall{
		{PID: ps["pcommit"].pid, Epoch: ps["pcommit"].epoch, Commit: true, Partitions: parts},
		{PID: ps["pabort"].pid, Epoch: ps["pabort"].epoch, Commit: false, Partitions: parts[2:]},
	}
	if len(calls) != 2 {
		t.Fatalf("markers after reopen: %v, want %v", calls, want)
	}
	for i := range want {
		if calls[i].PID != want[i].PID || calls[i].Epoch != want[i].Epoch || calls[i].Commit != want[i].Commit || !slices.Equal(calls[i].Partitions, want[i].Partitions) {
			t.Errorf("markers after reopen: %v, want %v", calls[i], want[i])
		}
	}
	check := func() {
		t.Helper()
		for id, s := range map[string]State{
			"empty": Empty, "fenced": Empty, "ccommit": CompleteCommit, "cabort": CompleteAbort,
			"pcommit": CompleteCommit, "pabort": CompleteAbort,
		} {
			e.wantState(id, s, ps[id].pid, ps[id].epoch)
			if d := e.describe(id); len(d.Partitions) != 0 {
				t.Errorf("%s: partitions %v", id, d.Partitions)
			}
		}
	}
	check()
	d := e.describe("ongoing")
	if d.State != Ongoing || d.StartTimeMs != ongoingStart || d.TimeoutMs != 30_000 || !slices.Equal(d.Partitions, parts[1:]) {
		t.Fatalf("ongoing after restart: %+v", d)
	}
	// The fenced epoch stays fenced; the current producer goes on.
	testenv.WantErr(t, "fenced epoch", e.add("fenced", ps["fenced"].pid, 0, parts...), kerr.ProducerFenced)
	testenv.WantErr(t, "ongoing adds", e.add("ongoing", ps["ongoing"].pid, ps["ongoing"].epoch, tp("v", 0)), nil)

	// Ongoing: aborted once its timeout passes, fencing its producer.
	time.Sleep(30 * time.Second)
	settle()
	op := ps["ongoing"]
	e.wantState("ongoing", CompleteAbort, op.pid, op.epoch+1)
	calls = e.markers.get()
	if last := calls[len(calls)-1]; last.PID != op.pid || last.Epoch != op.epoch+1 || last.Commit ||
		!slices.Equal(last.Partitions, []TopicPartition{tp("t", 1), tp("u", 3), tp("v", 0)}) {
		t.Fatalf("timeout markers %v", last)
	}
	ps["ongoing"] = producer{op.pid, op.epoch + 1}

	// Once more: nothing is left to complete, and the states hold.
	n := len(e.markers.get())
	e.restart(crash)
	settle()
	if got := len(e.markers.get()); got != n {
		t.Fatalf("markers written again after the second restart: %v", e.markers.get()[n:])
	}
	check()
	e.wantState("ongoing", CompleteAbort, ps["ongoing"].pid, ps["ongoing"].epoch)
	r := e.init("empty", testTimeoutMs, -1, -1)
	if r.Err != nil || r.ProducerID != ps["empty"].pid || r.Epoch != ps["empty"].epoch+1 {
		t.Fatalf("init after restarts: %+v", r)
	}
}

// TestSnapshotFreesLog: a snapshot moves the log start of the
// __transaction_state partitions to its cut, and a restart replays only
// what follows.
func TestSnapshotFreesLog(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, partition.FlushSync, 1)
		pid, epoch := e.mustInit("a")
		for i := range 20 {
			testenv.WantErr(t, "add", e.add("a", pid, epoch, tp("t", int32(i))), nil)
			testenv.WantErr(t, "commit", e.end("a", pid, epoch, true), nil)
			settle()
		}
		p := e.ps.Partitions(txnTopic)[0]
		hw := p.HighWatermark()
		if hw != 1+3*20 {
			t.Fatalf("high watermark %d, want %d", hw, 1+3*20)
		}
		if err := e.c.Snapshot(); err != nil {
			t.Fatal(err)
		}
		if got := p.LogStartOffset(); got != hw {
			t.Fatalf("log start %d after the snapshot, want %d", got, hw)
		}
		testenv.WantErr(t, "add", e.add("a", pid, epoch, tp("x", 0)), nil)
		e.restart(true)
		d := e.describe("a")
		if d.State != Ongoing || !slices.Equal(d.Partitions, []TopicPartition{tp("x", 0)}) || d.ProducerID != pid || d.Epoch != epoch {
			t.Fatalf("after restart: %+v", d)
		}
	})
}

func TestCorruptSnapshotRefused(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, partition.FlushAsync, 1)
		e.mustInit("a")
		if err := e.c.Close(); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(e.dir, "metadata", snapshotFile)
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		b[len(b)/2] ^= 0xff
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		_, err = Open(Config{Dir: filepath.Dir(path)}, e.ps, e.ps.Partitions(txnTopic), e.deps(), nil)
		if !errors.Is(err, coordlog.ErrCorrupt) {
			t.Fatalf("open with a corrupt snapshot: %v", err)
		}
		e.c = nil
	})
}

// TestFailedFence: when the PrepareAbort of a fence cannot be written,
// the bumped epoch stays (the old producer stays fenced) and the next
// fence does not bump it again (Kafka's hasFailedEpochFence).
func TestFailedFence(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, partition.FlushAsync, 1)
		pid, epoch := e.mustInit("a")
		testenv.WantErr(t, "add", e.add("a", pid, epoch, tp("t", 0)), nil)
		p := e.ps.Partitions(txnTopic)[0]
		small := p.Config()
		small.MaxMessageBytes = 64
		p.SetConfig(small)
		testenv.WantErr(t, "fence that fails", e.init("a", testTimeoutMs, -1, -1).Err, kerr.UnknownServerError)
		e.wantState("a", Ongoing, pid, epoch+1)
		testenv.WantErr(t, "fenced producer", e.end("a", pid, epoch, true), kerr.ProducerFenced)
		p.SetConfig(txnTopicConfig())
		testenv.WantErr(t, "fence again", e.init("a", testTimeoutMs, -1, -1).Err, kerr.ConcurrentTransactions)
		settle()
		e.wantState("a", CompleteAbort, pid, epoch+1)
		if calls := e.markers.get(); len(calls) != 1 || calls[0].Epoch != epoch+1 {
			t.Fatalf("markers %v", calls)
		}
		r := e.init("a", testTimeoutMs, -1, -1)
		if r.Err != nil || r.Epoch != epoch+2 {
			t.Fatalf("init after the abort: %+v", r)
		}
	})
}

// TestNeverWrittenID: an id whose first write failed is in memory (as in
// Kafka) but not in snapshots, and expires without a tombstone.
func TestNeverWrittenID(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := testConfig()
		cfg.IDExpiration = time.Hour
		cfg.ExpirationCheckInterval = time.Minute
		e := newEnvWith(t, partition.FlushAsync, 1, cfg)
		p := e.ps.Partitions(txnTopic)[0]
		small := p.Config()
		small.MaxMessageBytes = 64
		p.SetConfig(small)
		testenv.WantErr(t, "init that fails", e.init("a", testTimeoutMs, -1, -1).Err, kerr.UnknownServerError)
		if d := e.describe("a"); d.Err != nil || d.Epoch != -1 {
			t.Fatalf("after a failed first write: %+v", d)
		}
		p.SetConfig(txnTopicConfig())
		e.restart(false)
		if d := e.describe("a"); !errors.Is(d.Err, kerr.TransactionalIDNotFound) {
			t.Fatalf("never-written id after restart: %+v", d)
		}
		p = e.ps.Partitions(txnTopic)[0]
		p.SetConfig(small)
		testenv.WantErr(t, "init that fails", e.init("a", testTimeoutMs, -1, -1).Err, kerr.UnknownServerError)
		p.SetConfig(txnTopicConfig())
		hw := p.HighWatermark()
		time.Sleep(61 * time.Minute)
		settle()
		if d := e.describe("a"); !errors.Is(d.Err, kerr.TransactionalIDNotFound) {
			t.Fatalf("never-written id not expired: %+v", d)
		}
		if p.HighWatermark() != hw {
			t.Fatalf("a tombstone was written for a never-written id")
		}
	})
}
