package group

import (
	"bytes"
	"errors"
	"reflect"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// TestRestoreEmpty checks that a record without members restores an Empty
// group with its protocol type, whose generation continues.
func TestRestoreEmpty(t *testing.T) {
	run(t, testConfig(), func(t *testing.T, c *Coordinator) {
		c.Restore(Record{Group: "g", ProtocolType: "consumer", Generation: 7})
		c.Restore(Record{Group: "g", ProtocolType: "other", Generation: 9}) // exists: ignored
		ls, err := c.List(nil)
		if err != nil || len(ls) != 1 || ls[0] != (Overview{Group: "g", ProtocolType: "consumer", State: Empty}) {
			t.Fatalf("list: %+v %v", ls, err)
		}
		if err := c.ValidateCommit("g", "", "", 7); !errors.Is(err, kerr.UnknownMemberID) {
			t.Fatalf("commit of an unknown member: got %v, want UNKNOWN_MEMBER_ID", err)
		}
		d := wantState(t, c, "g", Empty)
		if d.Generation != 7 {
			t.Fatalf("generation: got %d, want 7", d.Generation)
		}
		cl := newClient(t, c, "g", "a")
		if r := cl.join(); r.Generation != 8 {
			t.Fatalf("first generation after the restore: got %d, want 8", r.Generation)
		}
	})
}

// TestRecordRestoreRoundTrip takes a Stable group's record, restores it
// in a fresh coordinator (a restart) and checks that the members carry on
// with their ids and generation: heartbeats and commits pass, SyncGroup
// hands back the assignment, Describe shows the same group, and nothing
// rebalances.
func TestRecordRestoreRoundTrip(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var hooks hookLog
		c1 := newTestCoordinator(t, testConfig(), WithStateHook(hooks.hook))
		a, b := newClient(t, c1, "g", "a"), newClient(t, c1, "g", "b")
		b.instance = "static-b"
		stableGroup(t, a, b)
		rec, ok := c1.Record("g")
		if !ok || len(rec.Members) != 2 || rec.Generation != a.gen || rec.Protocol != "range" || rec.Leader != a.leader {
			t.Fatalf("record: %+v %v", rec, ok)
		}
		for _, m := range rec.Members {
			if m.SessionTimeout != testSession || m.RebalanceTimeout != testRebalance || !bytes.Equal(m.Subscription, []byte("meta-range")) {
				t.Fatalf("member record: %+v", m)
			}
		}
		before, _ := c1.Describe("g")
		c1.Close()

		var hooks2 hookLog
		c2 := newTestCoordinator(t, testConfig(), WithStateHook(hooks2.hook))
		c2.Restore(rec)
		after := wantState(t, c2, "g", Stable)
		if !reflect.DeepEqual(before, after) {
			t.Fatalf("restored group: got %+v, want %+v", after, before)
		}
		for _, cl := range []*client{a, b} {
			cl.c = c2
			if err := cl.heartbeat(); err != nil {
				t.Fatalf("%s: heartbeat after the restart: %v", cl.clientID, err)
			}
			if err := c2.ValidateCommit("g", cl.id, cl.instance, cl.gen); err != nil {
				t.Fatalf("%s: commit after the restart: %v", cl.clientID, err)
			}
			r := cl.sync(nil)
			if r.Err != nil || string(r.Assignment) != "assign-"+cl.clientID || r.ProtocolName != "range" {
				t.Fatalf("%s: sync after the restart: %+v", cl.clientID, r)
			}
		}
		// A static member comes back with its instance id: a fenced old
		// id still fails as it would have before the restart.
		if err := c2.Heartbeat(HeartbeatRequest{Group: "g", MemberID: "other", InstanceID: "static-b", Generation: b.gen}); !errors.Is(err, kerr.FencedInstanceID) {
			t.Fatalf("heartbeat with a stale member id: got %v, want FENCED_INSTANCE_ID", err)
		}
		if err := c2.Heartbeat(HeartbeatRequest{Group: "g", MemberID: a.id, Generation: a.gen - 1}); !errors.Is(err, kerr.IllegalGeneration) {
			t.Fatalf("heartbeat of an older generation: got %v, want ILLEGAL_GENERATION", err)
		}
		// A follower's rejoin with the same metadata keeps the
		// generation (the restored member supports the selected
		// protocol with its subscription).
		if r := b.join(); r.Generation != before.Generation {
			t.Fatalf("a rejoin of a follower: got generation %d, want %d (no rebalance)", r.Generation, before.Generation)
		}
		if ev := hooks2.get(); len(ev) != 0 {
			t.Fatalf("state hook after the restore: %v, want none", ev)
		}
	})
}

// TestRestoredMembersExpire checks that session timers start at the
// restore: a member that never comes back expires one session timeout
// later and the group rebalances without it, while one that heartbeats
// stays.
func TestRestoredMembersExpire(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c1 := newTestCoordinator(t, testConfig())
		a, b := newClient(t, c1, "g", "a"), newClient(t, c1, "g", "b")
		stableGroup(t, a, b)
		rec, _ := c1.Record("g")
		c1.Close()

		var hooks hookLog
		c2 := newTestCoordinator(t, testConfig(), WithStateHook(hooks.hook))
		c2.Restore(rec)
		a.c = c2
		start := time.Now()
		for time.Since(start) < testSession+time.Second {
			time.Sleep(testSession / 3)
			if err := a.heartbeat(); err != nil {
				if !errors.Is(err, kerr.RebalanceInProgress) {
					t.Fatalf("heartbeat: %v", err)
				}
				break
			}
		}
		if got := time.Since(start); got < testSession || got > testSession+testSession/3+time.Second {
			t.Fatalf("rebalance after %v, want it once b's session (%v) ran out", got, testSession)
		}
		d := wantState(t, c2, "g", PreparingRebalance)
		if len(d.Members) != 1 || d.Members[0].MemberID != a.id {
			t.Fatalf("members after b expired: %+v", d.Members)
		}
		r := a.join()
		if r.Generation != rec.Generation+1 {
			t.Fatalf("generation after the rebalance: got %d, want %d", r.Generation, rec.Generation+1)
		}
	})
}

// TestRestoreEmptyRecordOfDeadMembers checks that a group whose record has
// members all of whom never return ends Empty, with the state hook told,
// so that its emptiness is recorded.
func TestRestoreEmptyAfterExpiry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var hooks hookLog
		c := newTestCoordinator(t, testConfig(), WithStateHook(hooks.hook))
		c.Restore(Record{Group: "g", ProtocolType: "consumer", Generation: 4, Protocol: "range", Leader: "m1",
			Members: []RecordMember{{MemberID: "m1", ClientID: "c", SessionTimeout: testSession, RebalanceTimeout: testRebalance, Subscription: []byte("s"), Assignment: []byte("x")}}})
		wantState(t, c, "g", Stable)
		time.Sleep(testSession + time.Second)
		synctest.Wait()
		d := wantState(t, c, "g", Empty)
		if d.Generation != 5 {
			t.Fatalf("generation: got %d, want 5", d.Generation)
		}
		if ev := hooks.get(); !slices.Equal(ev, []string{"g:Empty"}) {
			t.Fatalf("hook: %v", ev)
		}
		if r, ok := c.Record("g"); !ok || len(r.Members) != 0 || r.Generation != 5 {
			t.Fatalf("record after expiry: %+v %v", r, ok)
		}
	})
}

// TestRecordOfStaticReplacement checks that replacing a static member of a
// Stable group, which keeps the generation, is reported to the state hook
// so that the new member id is persisted.
func TestRecordOfStaticReplacement(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var hooks hookLog
		c := newTestCoordinator(t, testConfig(), WithStateHook(hooks.hook))
		a := newClient(t, c, "g", "a")
		a.instance = "ia"
		stableGroup(t, a)
		n := len(hooks.get())
		old := a.id
		a.id = ""
		r := a.join()
		if r.MemberID == old || r.Generation != a.gen {
			t.Fatalf("replacement: %+v", r)
		}
		if ev := hooks.get()[n:]; !slices.Equal(ev, []string{"g:Stable"}) {
			t.Fatalf("hook after the replacement: %v", ev)
		}
		rec, _ := c.Record("g")
		if len(rec.Members) != 1 || rec.Members[0].MemberID != r.MemberID || rec.Leader != r.MemberID {
			t.Fatalf("record: %+v", rec)
		}
	})
}

// TestRecordDuringRebalance checks that no record is taken of a group in
// a rebalance.
func TestRecordDuringRebalance(t *testing.T) {
	run(t, testConfig(), func(t *testing.T, c *Coordinator) {
		if _, ok := c.Record("none"); ok {
			t.Fatal("record of a missing group")
		}
		a := newClient(t, c, "g", "a")
		a.join()
		if _, ok := c.Record("g"); ok {
			t.Fatal("record of a group in CompletingRebalance")
		}
	})
}
