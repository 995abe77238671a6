package consumer

import (
	"errors"
	"reflect"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// changeLog records the change hook's calls.
type changeLog struct {
	mu     sync.Mutex
	groups []string
}

func (l *changeLog) hook(id string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.groups = append(l.groups, id)
}

func (l *changeLog) n() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.groups)
}

// newPersistCoordinator is a coordinator with a change hook, closed at
// the end of the test; call it inside a bubble.
func newPersistCoordinator(t *testing.T, log *changeLog) *Coordinator {
	t.Helper()
	c, err := New(testConfig(), WithChangeHook(log.hook))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// stableTwo brings two members of group "g" on topic "t" (4 partitions)
// to a Stable split.
func stableTwo(t *testing.T, c *Coordinator, md *fakeMetadata) (a, b *client) {
	t.Helper()
	a, b = newClient(t, c, md, "g", "a", "t"), newClient(t, c, md, "g", "b", "t")
	a.join()
	b.join()
	for range 5 {
		a.beat()
		b.beat()
	}
	if d := describe(t, c, md, "g"); d.State != Stable {
		t.Fatalf("group not Stable: %+v", d)
	}
	return a, b
}

// TestRecordRestoreRoundTrip takes a Stable group's record, restores it
// in a fresh coordinator (a restart) and checks that the members carry on
// with their epochs and partitions: heartbeats and commits pass, the
// group epoch does not move, the description is the same and nothing is
// written (no change).
func TestRecordRestoreRoundTrip(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var log1 changeLog
		md := newMetadata()
		md.add("t", 4)
		c1 := newPersistCoordinator(t, &log1)
		a, b := stableTwo(t, c1, md)
		if log1.n() == 0 {
			t.Fatal("no change reported while the group formed")
		}
		n := log1.n()
		a.beat()
		if log1.n() != n {
			t.Fatalf("an idle heartbeat reported %d changes", log1.n()-n)
		}
		rec, ok, _ := c1.Record("g")
		if !ok || len(rec.Members) != 2 || rec.Epoch != rec.AssignmentEpoch || len(rec.Topics) != 1 {
			t.Fatalf("record: %+v %v", rec, ok)
		}
		before := describe(t, c1, md, "g")
		c1.Close()

		var log2 changeLog
		c2 := newPersistCoordinator(t, &log2)
		c2.Restore(rec)
		c2.Restore(Record{Group: "g", Epoch: 99}) // exists: ignored
		if after := describe(t, c2, md, "g"); !reflect.DeepEqual(before, after) {
			t.Fatalf("restored group: got %+v, want %+v", after, before)
		}
		for _, cl := range []*client{a, b} {
			cl.c = c2
			epoch, owned := cl.epoch, cl.owned
			r := cl.beat()
			if r.MemberEpoch != epoch || !cl.owned.equal(owned) {
				t.Fatalf("%s after the restart: epoch %d owning %v, want %d owning %v", cl.id, r.MemberEpoch, cl.owned, epoch, owned)
			}
			if found, err := c2.ValidateCommit("g", cl.id, nil, cl.epoch, false, 9, partitionsOf(cl.owned)); !found || err != nil {
				t.Fatalf("%s: commit after the restart: %v %v", cl.id, found, err)
			}
		}
		if d := describe(t, c2, md, "g"); d.Epoch != rec.Epoch || d.State != Stable {
			t.Fatalf("after heartbeats: %+v, want Stable at epoch %d", d, rec.Epoch)
		}
		if log2.n() != 0 {
			t.Fatalf("restore and idle heartbeats reported %d changes", log2.n())
		}
		// Round trip: the record of the restored group is the same.
		if again, _, _ := c2.Record("g"); !reflect.DeepEqual(again, rec) {
			t.Fatalf("record after the restore: got %+v, want %+v", again, rec)
		}
	})
}

// TestRestoredMemberFenced checks that session timers start at the
// restore: a member that never comes back is fenced one session timeout
// later (the change is reported), and the one that heartbeats gets its
// partitions.
func TestRestoredMemberFenced(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var log1, log2 changeLog
		md := newMetadata()
		id := md.add("t", 4)
		c1 := newPersistCoordinator(t, &log1)
		a, _ := stableTwo(t, c1, md)
		rec, _, _ := c1.Record("g")
		c1.Close()

		c2 := newPersistCoordinator(t, &log2)
		c2.Restore(rec)
		a.c = c2
		session := testConfig().SessionTimeout
		start := time.Now()
		for time.Since(start) < session+time.Second {
			time.Sleep(testConfig().HeartbeatInterval)
			a.beat()
		}
		if log2.n() == 0 {
			t.Fatal("the fencing of b was not reported")
		}
		d := describe(t, c2, md, "g")
		if len(d.Members) != 1 || d.Epoch <= rec.Epoch {
			t.Fatalf("after b's session: %+v, want a alone at an epoch past %d", d, rec.Epoch)
		}
		for range 3 {
			a.beat()
		}
		if !slices.Equal(a.owned[id], []int32{0, 1, 2, 3}) {
			t.Fatalf("a owns %v, want every partition", a.owned)
		}
	})
}

// TestChangeHookOnDelete checks that leaving and deleting are reported,
// and that a deleted group has no record.
func TestChangeHookOnDelete(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var log changeLog
		md := newMetadata()
		md.add("t", 2)
		c := newPersistCoordinator(t, &log)
		a := newClient(t, c, md, "g", "a", "t")
		a.join()
		n := log.n()
		if r := a.leave(); r.Err != nil {
			t.Fatal(r.Err)
		}
		if log.n() != n+1 {
			t.Fatalf("leave reported %d changes, want 1", log.n()-n)
		}
		if found, err := c.Delete("g"); !found || err != nil {
			t.Fatalf("delete: %v %v", found, err)
		}
		if log.n() != n+2 {
			t.Fatalf("delete reported %d changes, want 1", log.n()-n-1)
		}
		if _, ok, _ := c.Record("g"); ok {
			t.Fatal("record of a deleted group")
		}
		if found, err := c.Delete("g"); found || err != nil {
			t.Fatalf("second delete: %v %v", found, err)
		}
	})
}

// TestRecordAfterClose: a closed coordinator says it is not available
// rather than that the group is gone, so the broker's change hook never
// tombstones a live group during shutdown.
func TestRecordAfterClose(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var log changeLog
		md := newMetadata()
		md.add("t", 4)
		c := newPersistCoordinator(t, &log)
		stableTwo(t, c, md)
		c.Close()
		if _, found, err := c.Record("g"); found || !errors.Is(err, kerr.CoordinatorNotAvailable) {
			t.Fatalf("Record after Close: found %v, err %v; want COORDINATOR_NOT_AVAILABLE", found, err)
		}
	})
}
