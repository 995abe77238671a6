package streams

import (
	"errors"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// recorder is a change hook that keeps, per group, the last Record taken
// when the hook ran (nil: the group was gone), as the broker writes them.
type recorder struct {
	c     *Coordinator
	mu    sync.Mutex
	calls []string
	last  map[string]*Record
}

func (r *recorder) hook(id string) {
	rec, found, err := r.c.Record(id)
	r.mu.Lock()
	defer r.mu.Unlock()
	if err != nil {
		return
	}
	r.calls = append(r.calls, id)
	if !found {
		r.last[id] = nil
		return
	}
	r.last[id] = &rec
}

func (r *recorder) get(id string) (*Record, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	rec, ok := r.last[id]
	return rec, ok
}

// recordedCoordinator is a coordinator whose changes go to a recorder.
func recordedCoordinator(t *testing.T, topics *fakeTopics) (*Coordinator, *recorder) {
	rec := &recorder{last: map[string]*Record{}}
	c, err := New(testConfig(), WithTopicCreator(topics.create), WithChangeHook(rec.hook))
	if err != nil {
		t.Fatal(err)
	}
	rec.c = c
	return c, rec
}

// TestRestoreKeepsEpochsAndTasks: a group brought back from its records
// carries on with the same group epoch, member epochs and tasks; its
// members' heartbeats cause no rebalance.
func TestRestoreKeepsEpochsAndTasks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		topics := &fakeTopics{m: map[string]int32{"in": 4}}
		c, rec := recordedCoordinator(t, topics)
		a := newMember(t, c, topics, "a", "p1")
		b := newMember(t, c, topics, "b", "p2")
		a.mustHeartbeat()
		b.mustHeartbeat()
		for range 3 {
			a.mustHeartbeat()
			b.mustHeartbeat()
		}
		before, err := c.Describe("app")
		if err != nil || before.State != Stable {
			t.Fatalf("before: %+v %v", before, err)
		}
		r, ok := rec.get("app")
		if !ok || r == nil || len(r.Members) != 2 || r.Topology == nil {
			t.Fatalf("recorded: %+v", r)
		}
		c.Close()

		c2, rec2 := recordedCoordinator(t, topics)
		defer c2.Close()
		c2.Restore(*r, topics)
		after, err := c2.Describe("app")
		if err != nil || after.State != Stable || after.Epoch != before.Epoch || after.TargetEpoch != before.TargetEpoch || after.TopologyEpoch != before.TopologyEpoch {
			t.Fatalf("restored: %+v %v, want as before %+v", after, err, before)
		}
		a.c, b.c = c2, c2
		epochA, epochB := a.epoch, b.epoch
		ownedA, ownedB := a.owned.clone(), b.owned.clone()
		for range 2 {
			ra, rb := a.mustHeartbeat(), b.mustHeartbeat()
			if ra.MemberEpoch != epochA || rb.MemberEpoch != epochB {
				t.Fatalf("epochs %d %d after the restart, want %d %d", ra.MemberEpoch, rb.MemberEpoch, epochA, epochB)
			}
		}
		if !a.owned.equal(ownedA) || !b.owned.equal(ownedB) {
			t.Fatalf("tasks moved: a %v → %v, b %v → %v", ownedA.Active, a.owned.Active, ownedB.Active, b.owned.Active)
		}
		if d, _ := c2.Describe("app"); d.State != Stable || d.Epoch != before.Epoch {
			t.Fatalf("after heartbeats: %+v, want Stable at epoch %d", d, before.Epoch)
		}
		// The records the restored group writes are those it was
		// restored from.
		if r2, _ := rec2.get("app"); r2 == nil || r2.Epoch != r.Epoch || len(r2.Members) != 2 || !r2.Members[0].Assigned.equal(r.Members[0].Assigned) {
			t.Fatalf("re-recorded %+v, want %+v", r2, r)
		}
	})
}

// TestRestoredMemberTimesOut: a member that does not come back after the
// restart is fenced when its restarted session times out, and the change
// is recorded.
func TestRestoredMemberTimesOut(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		topics := &fakeTopics{m: map[string]int32{"in": 4}}
		c, rec := recordedCoordinator(t, topics)
		a := newMember(t, c, topics, "a", "p1")
		b := newMember(t, c, topics, "b", "p2")
		a.mustHeartbeat()
		b.mustHeartbeat()
		a.mustHeartbeat()
		b.mustHeartbeat()
		r, _ := rec.get("app")
		c.Close()

		c2, rec2 := recordedCoordinator(t, topics)
		defer c2.Close()
		c2.Restore(*r, topics)
		a.c = c2
		for range 12 {
			time.Sleep(time.Second)
			a.mustHeartbeat()
		}
		synctest.Wait()
		d, _ := c2.Describe("app")
		if len(d.Members) != 1 || d.Members[0].MemberID != "a" {
			t.Fatalf("members: %+v, want b fenced", d.Members)
		}
		if len(a.owned.Active) != 8 {
			t.Fatalf("a owns %d tasks, want 8", len(a.owned.Active))
		}
		if r2, _ := rec2.get("app"); r2 == nil || len(r2.Members) != 1 {
			t.Fatalf("recorded after the fence: %+v", r2)
		}
	})
}

// TestDeleteIsRecordedAndUnknownGroupIsNotFound: a deleted group is
// recorded as gone, and a heartbeat at a member epoch to a group that is
// not there is GROUP_ID_NOT_FOUND, as in Kafka.
func TestDeleteIsRecordedAndUnknownGroupIsNotFound(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		topics := &fakeTopics{m: map[string]int32{"in": 4}}
		c, rec := recordedCoordinator(t, topics)
		defer c.Close()
		a := newMember(t, c, topics, "a", "p1")
		a.mustHeartbeat()
		a.epoch = -1
		if r := a.heartbeat(); r.Err != nil {
			t.Fatalf("leave: %v", r.Err)
		}
		if r, _ := rec.get("app"); r == nil || len(r.Members) != 0 {
			t.Fatalf("recorded after the leave: %+v", r)
		}
		if found, err := c.Delete("app"); !found || err != nil {
			t.Fatalf("delete: %v %v", found, err)
		}
		if r, ok := rec.get("app"); !ok || r != nil {
			t.Fatalf("recorded after the delete: %+v %v, want gone", r, ok)
		}
		a.epoch = 3
		if r := a.heartbeat(); !errors.Is(r.Err, kerr.GroupIDNotFound) {
			t.Fatalf("heartbeat to a deleted group: %v", r.Err)
		}
		if !slices.Contains(rec.calls, "app") {
			t.Fatal("no change recorded")
		}
	})
}
