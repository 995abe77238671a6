package offsets

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kbroker/kbroker/coordlog"
	"github.com/kbroker/kbroker/flush"
	klog "github.com/kbroker/kbroker/log"
	"github.com/kbroker/kbroker/partition"
)

// env is a partition store with an offsets topic, reopened as a broker
// restart would reopen it.
type env struct {
	t     *testing.T
	dir   string
	mode  partition.FlushMode
	parts int32
	now   atomic.Int64 // ms
	ps    *partition.Store
	s     *Store
	hooks Hooks
}

var offsetsTopic = partition.TopicID{1, 2, 3}

func newEnv(t *testing.T, mode partition.FlushMode, parts int32) *env {
	e := &env{t: t, dir: t.TempDir(), mode: mode, parts: parts}
	e.now.Store(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli())
	e.open()
	t.Cleanup(func() {
		if e.s != nil {
			e.s.Close()
		}
		if e.ps != nil {
			e.ps.Close()
		}
	})
	return e
}

func (e *env) clock() time.Time { return time.UnixMilli(e.now.Load()) }

func (e *env) open() {
	e.t.Helper()
	cfg := partition.DefaultTopicConfig()
	ps, _, err := partition.Open(partition.Config{
		Dir:       e.dir,
		Log:       klog.Config{FileSize: 1 << 20},
		FlushMode: e.mode,
		Now:       e.clock,
	}, []partition.TopicSpec{{ID: offsetsTopic, Name: "__consumer_offsets", Partitions: e.parts, Config: cfg}})
	if err != nil {
		e.t.Fatalf("open partition store: %v", err)
	}
	e.ps = ps
	meta := filepath.Join(e.dir, "metadata")
	os.MkdirAll(meta, 0o755)
	s, err := Open(Config{
		Dir: meta, Retention: time.Hour, CheckInterval: time.Hour, SnapshotInterval: time.Hour, Now: e.clock,
	}, ps, ps.Partitions(offsetsTopic), e.hooks, nil)
	if err != nil {
		e.t.Fatalf("open offsets: %v", err)
	}
	e.s = s
}

// restart closes cleanly (with a snapshot) or, with crash, drops the
// offsets store without its final snapshot, and reopens.
func (e *env) restart(crash bool) {
	e.t.Helper()
	if crash {
		e.s.Abandon()
	} else if err := e.s.Close(); err != nil {
		e.t.Fatal(err)
	}
	if err := e.ps.Close(); err != nil {
		e.t.Fatal(err)
	}
	e.open()
}

func (e *env) commit(group string, cs ...Commit) {
	e.t.Helper()
	ch := make(chan error, 1)
	e.s.Commit(group, cs, func(err error) { ch <- err })
	if err := <-ch; err != nil {
		e.t.Fatalf("commit: %v", err)
	}
}

func c(topic string, p int32, off int64) Commit {
	return Commit{TopicPartition: TopicPartition{topic, p}, Offset: off, LeaderEpoch: 3, Metadata: "m", ExpireTimestamp: -1}
}

func (e *env) want(group string, want map[TopicPartition]int64) {
	e.t.Helper()
	got := e.s.Fetch(group)
	if len(got) != len(want) {
		e.t.Fatalf("group %s: got %v, want %v", group, got, want)
	}
	for tp, off := range want {
		if o, ok := got[tp]; !ok || o.Offset != off || o.LeaderEpoch != 3 || o.Metadata != "m" {
			e.t.Fatalf("group %s %v: got %+v (%t), want %d", group, tp, o, ok, off)
		}
	}
}

var modes = []partition.FlushMode{partition.FlushSync, partition.FlushAsync, partition.FlushAsyncPool}

func TestCommitSurvivesRestart(t *testing.T) {
	for _, mode := range modes {
		for _, crash := range []bool{false, true} {
			t.Run(mode.String()+map[bool]string{false: "/clean", true: "/nosnapshot"}[crash], func(t *testing.T) {
				t.Parallel()
				e := newEnv(t, mode, 3)
				for i := range 50 {
					e.commit("g1", c("t", 0, int64(i)), c("t", 1, int64(2*i)))
					e.commit("g2", c("u", 0, int64(i)))
				}
				want1 := map[TopicPartition]int64{{"t", 0}: 49, {"t", 1}: 98}
				want2 := map[TopicPartition]int64{{"u", 0}: 49}
				e.want("g1", want1)
				e.want("g2", want2)
				e.restart(crash)
				e.want("g1", want1)
				e.want("g2", want2)
				e.commit("g1", c("t", 0, 100))
				want1[TopicPartition{"t", 0}] = 100
				e.restart(crash)
				e.want("g1", want1)
				e.want("g2", want2)
			})
		}
	}
}

// TestSnapshotFreesLog checks that a snapshot moves the log start of the
// offsets partitions and that recovery replays only what follows it.
func TestSnapshotFreesLog(t *testing.T) {
	e := newEnv(t, partition.FlushSync, 1)
	for i := range 100 {
		e.commit("g", c("t", 0, int64(i)))
	}
	if err := e.s.Snapshot(); err != nil {
		t.Fatal(err)
	}
	p := e.ps.Partitions(offsetsTopic)[0]
	if p.LogStartOffset() != 100 {
		t.Fatalf("log start %d after snapshot, want 100", p.LogStartOffset())
	}
	e.commit("g", c("t", 1, 7))
	e.restart(true)
	e.want("g", map[TopicPartition]int64{{"t", 0}: 99, {"t", 1}: 7})
}

func TestDeletesSurviveRestart(t *testing.T) {
	e := newEnv(t, partition.FlushSync, 2)
	e.commit("a", c("t", 0, 1), c("t", 1, 2))
	e.commit("b", c("t", 0, 5))
	e.s.RecordGroup(GroupRecord{Group: "b", ProtocolType: "consumer", Generation: 4}, nil)
	done := make(chan error, 2)
	e.s.DeleteOffsets("a", []TopicPartition{{"t", 1}, {"nope", 0}}, func(err error) { done <- err })
	e.s.DeleteGroup("b", func(err error) { done <- err })
	for range 2 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	for _, crash := range []bool{true, false} {
		e.restart(crash)
		e.want("a", map[TopicPartition]int64{{"t", 0}: 1})
		e.want("b", nil)
		if gs := e.s.Groups(); len(gs) != 1 || gs[0].Group != "a" {
			t.Fatalf("groups %+v", gs)
		}
	}
}

func TestGroupMetadataRestored(t *testing.T) {
	e := newEnv(t, partition.FlushAsync, 1)
	want := GroupRecord{Group: "g", ProtocolType: "consumer", Generation: 7, Protocol: "range", Leader: "m1",
		Members: []Member{
			{MemberID: "m1", ClientID: "c", ClientHost: "/127.0.0.1", SessionTimeoutMs: 10000, RebalanceTimeoutMs: 60000, Subscription: []byte{1}, Assignment: []byte{2}},
			{MemberID: "m2", InstanceID: "i2", ClientID: "c2", ClientHost: "/127.0.0.2", SessionTimeoutMs: 45000, RebalanceTimeoutMs: 300000, Subscription: []byte{3}, Assignment: []byte{}},
		}}
	e.s.RecordGroup(want, nil)
	for _, crash := range []bool{true, false} {
		e.restart(crash)
		gs := e.s.Groups()
		if len(gs) != 1 || !reflect.DeepEqual(gs[0], GroupInfo{Group: "g", ProtocolType: "consumer", Generation: 7, Record: want, HasRecord: true}) {
			t.Fatalf("groups: got %+v, want %+v", gs, want)
		}
		// A restart keeps a group with members non-empty: expiry
		// leaves its offsets alone however old.
		e.s.mu.Lock()
		empty := e.s.mu.groups["g"].empty
		e.s.mu.Unlock()
		if empty {
			t.Fatal("a group with members is empty after the restart")
		}
	}
	// A later record without members empties it, through a restart too.
	e.s.RecordGroup(GroupRecord{Group: "g", ProtocolType: "consumer", Generation: 8}, nil)
	e.restart(true)
	if gs := e.s.Groups(); len(gs) != 1 || len(gs[0].Record.Members) != 0 || gs[0].Generation != 8 {
		t.Fatalf("groups after emptying: %+v", gs)
	}
}

func TestExpiry(t *testing.T) {
	var active sync.Map
	var expired sync.Map
	e := &env{t: t, dir: t.TempDir(), mode: partition.FlushSync, parts: 1}
	e.hooks = Hooks{
		Active:  func(g string) bool { _, ok := active.Load(g); return ok },
		Expired: func(g string) { expired.Store(g, true) },
	}
	e.now.Store(1_000_000_000)
	e.open()
	t.Cleanup(func() { e.s.Close(); e.ps.Close() })

	// A standalone group: each offset expires an hour after its commit.
	e.commit("solo", c("t", 0, 1))
	e.now.Add(30 * 60 * 1000)
	e.commit("solo", c("t", 1, 2))
	// A managed group, empty since now: all offsets go an hour later,
	// however old the commits.
	e.commit("managed", c("t", 0, 3))
	e.s.RecordGroup(GroupRecord{Group: "managed", ProtocolType: "consumer", Generation: 2}, nil)
	// An active group is never expired.
	e.commit("busy", c("t", 0, 4))
	active.Store("busy", true)

	expire := func() {
		e.s.Expire()
		// The writes apply once durable; a commit after them is
		// applied after them.
		e.commit("sync-point", c("x", 0, 0))
	}
	e.now.Add(31 * 60 * 1000) // 61 min after the first commit
	expire()
	e.want("solo", map[TopicPartition]int64{{"t", 1}: 2})
	e.want("managed", map[TopicPartition]int64{{"t", 0}: 3})
	e.now.Add(30 * 60 * 1000)
	expire()
	e.want("solo", nil)
	e.want("managed", nil)
	e.want("busy", map[TopicPartition]int64{{"t", 0}: 4})
	if _, ok := expired.Load("solo"); !ok {
		t.Error("solo not reported expired")
	}
	if _, ok := expired.Load("managed"); !ok {
		t.Error("managed not reported expired")
	}
	if _, ok := expired.Load("busy"); ok {
		t.Error("busy reported expired")
	}
	e.restart(true)
	for _, g := range e.s.Groups() {
		if g.Group != "busy" && g.Group != "sync-point" {
			t.Errorf("group %s survived expiry", g.Group)
		}
	}
}

func TestCorruptSnapshotRefused(t *testing.T) {
	e := newEnv(t, partition.FlushAsync, 1)
	e.commit("g", c("t", 0, 1))
	if err := e.s.Close(); err != nil {
		t.Fatal(err)
	}
	path := e.s.snapshotPath()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)/2] ^= 0xff
	os.WriteFile(path, b, 0o644)
	e.ps.Close()
	_, err = Open(Config{Dir: filepath.Dir(path), Retention: time.Hour, CheckInterval: time.Hour, SnapshotInterval: time.Hour}, e.ps, e.ps.Partitions(offsetsTopic), Hooks{}, nil)
	if !errors.Is(err, coordlog.ErrCorrupt) {
		t.Fatalf("open with a corrupt snapshot: %v", err)
	}
	e.s, e.ps = nil, nil
}

func TestWriteAfterClose(t *testing.T) {
	e := newEnv(t, partition.FlushAsync, 1)
	e.s.Close()
	ch := make(chan error, 1)
	e.s.Commit("g", []Commit{c("t", 0, 1)}, func(err error) { ch <- err })
	if err := <-ch; !errors.Is(err, kerr.CoordinatorNotAvailable) {
		t.Fatalf("got %v", err)
	}
	e.s = nil
}

// TestSnapshotNotAheadOfDisk: in the async flush modes a commit is
// applied (and answered) once appended, before the disk has it; a
// snapshot holding it must not be written before its record is durable,
// or a crash that loses the record (pool mode's buffers at a kill, the
// page cache at a power loss) would leave the snapshot ahead of the log.
// The flush services here would not get to it for an hour.
func TestSnapshotNotAheadOfDisk(t *testing.T) {
	for _, mode := range []partition.FlushMode{partition.FlushAsync, partition.FlushAsyncPool} {
		t.Run(mode.String(), func(t *testing.T) {
			dir := t.TempDir()
			ps, _, err := partition.Open(partition.Config{
				Dir:            dir,
				Log:            klog.Config{FileSize: 1 << 20},
				FlushMode:      mode,
				FlushRealTime:  flush.FlushRealTimeConfig{Interval: time.Hour, LeastPages: 1 << 20, ThoroughInterval: time.Hour},
				CommitRealTime: flush.CommitRealTimeConfig{Interval: time.Hour, LeastPages: 1 << 20, ThoroughInterval: time.Hour},
			}, []partition.TopicSpec{{ID: offsetsTopic, Name: "__consumer_offsets", Partitions: 1, Config: partition.DefaultTopicConfig()}})
			if err != nil {
				t.Fatal(err)
			}
			defer ps.Close()
			meta := filepath.Join(dir, "metadata")
			s, err := Open(Config{Dir: meta, Retention: time.Hour, CheckInterval: time.Hour, SnapshotInterval: time.Hour}, ps, ps.Partitions(offsetsTopic), Hooks{}, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			done := make(chan error, 1)
			s.Commit("g", []Commit{c("t", 0, 42)}, func(err error) { done <- err })
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			wrote := ps.CommitLog().WrotePosition()
			if ps.CommitLog().FlushedPosition() >= wrote {
				t.Fatalf("the commit is durable before any flush: the test cannot tell")
			}
			if err := s.Snapshot(); err != nil {
				t.Fatal(err)
			}
			if _, err := os.Stat(s.snapshotPath()); err != nil {
				t.Fatalf("no snapshot: %v", err)
			}
			if f := ps.CommitLog().FlushedPosition(); f < wrote {
				t.Fatalf("snapshot written with the commit log durable up to %d, its commit's record ends at %d", f, wrote)
			}
		})
	}
}
