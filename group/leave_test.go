package group

import (
	"errors"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kbroker/kbroker/internal/testenv"
)

// TestLeaveLastMember: the only member leaves; the group becomes Empty in a
// new generation and the hook hears of it.
func TestLeaveLastMember(t *testing.T) {
	hooks := &hookLog{}
	runWith(t, testConfig(), []Option{WithStateHook(hooks.hook)}, func(t *testing.T, c *Coordinator) {
		a := newClient(t, c, "g", "a")
		stableGroup(t, a)
		errs, err := c.Leave("g", []LeaveMember{{MemberID: a.id, Reason: "bye"}})
		if err != nil || len(errs) != 1 || errs[0] != nil {
			t.Fatalf("leave: got %v %v, want success", errs, err)
		}
		wantState(t, c, "g", Empty)
		if got := hooks.get(); !slices.Equal(got, []string{"g:Stable", "g:Empty"}) {
			t.Fatalf("hook: got %v, want [g:Stable g:Empty]", got)
		}
		testenv.WantErr(t, "heartbeat after leaving", a.heartbeat(), kerr.UnknownMemberID)
		// Offsets may still be committed by a simple consumer.
		testenv.WantErr(t, "commit with generation -1", c.ValidateCommit("g", "", "", -1), nil)
		// A new member starts generation 3 (the leave made generation 2).
		b := newClient(t, c, "g", "b")
		if r := b.join(); r.Generation != 3 {
			t.Fatalf("join after leave: got generation %d, want 3", r.Generation)
		}
	})
}

// TestLeaveBatch is LeaveGroup v3+: several members, with per-member errors,
// and static members removed by instance id alone (KIP-345).
func TestLeaveBatch(t *testing.T) {
	run(t, testConfig(), func(t *testing.T, c *Coordinator) {
		a, b, cc, s := newClient(t, c, "g", "a"), newClient(t, c, "g", "b"), newClient(t, c, "g", "c"), newClient(t, c, "g", "s")
		s.instance = "is"
		stableGroup(t, a, b, cc, s)
		errs, err := c.Leave("g", []LeaveMember{
			{MemberID: b.id},
			{MemberID: "stranger"},
			{InstanceID: "is"},                 // administrative removal
			{InstanceID: "unknown-instance"},   // no such static member
			{MemberID: cc.id, InstanceID: "x"}, // instance mismatch
			{},                                 // neither id
		})
		if err != nil {
			t.Fatal(err)
		}
		want := []*kerr.Error{nil, kerr.UnknownMemberID, nil, kerr.UnknownMemberID, kerr.UnknownMemberID, kerr.UnknownMemberID}
		for i, w := range want {
			testenv.WantErr(t, "member "+string(rune('0'+i)), errs[i], w)
		}
		wantState(t, c, "g", PreparingRebalance)
		testenv.WantErr(t, "a's heartbeat", a.heartbeat(), kerr.RebalanceInProgress)
		testenv.WantErr(t, "static leaver's heartbeat", s.heartbeat(), kerr.UnknownMemberID)
		// a and c rejoin; b and s are gone.
		cJoin := cc.joinAsync()
		ra, rc := a.await(a.joinAsync()), cc.await(cJoin)
		if ra.Err != nil || rc.Err != nil || len(ra.Members)+len(rc.Members) != 2 {
			t.Fatalf("rejoin: got %+v and %+v, want a generation of a and c", ra, rc)
		}
		// A static member's leave with a stale member id is fenced.
		s2 := newClient(t, c, "g2", "s")
		s2.instance = "is2"
		stableGroup(t, s2)
		errs, _ = c.Leave("g2", []LeaveMember{{MemberID: "old-id", InstanceID: "is2"}})
		testenv.WantErr(t, "stale static leave", errs[0], kerr.FencedInstanceID)
	})
}

// TestLeaveWhileJoinParked: a member that leaves while its JoinGroup is
// parked gets UNKNOWN_MEMBER_ID for it; once the last member the join phase
// waits for leaves, the phase completes with the others.
func TestLeaveWhileJoinParked(t *testing.T) {
	run(t, testConfig(), func(t *testing.T, c *Coordinator) {
		a, b, cc := newClient(t, c, "g", "a"), newClient(t, c, "g", "b"), newClient(t, c, "g", "c")
		stableGroup(t, a, b)
		cc.requireID = true
		r := recv(t, cc.joinAsync(), "c's first join")
		testenv.WantErr(t, "c's first join", r.Err, kerr.MemberIDRequired)
		cc.id = r.MemberID
		cJoin := cc.joinAsync()
		aJoin := a.joinAsync()
		parked(t, cJoin, "c's join, waiting for b")
		if errs, err := c.Leave("g", []LeaveMember{{MemberID: cc.id}}); err != nil || errs[0] != nil {
			t.Fatalf("c's leave: %v %v", err, errs)
		}
		if r := recv(t, cJoin, "c"); !errors.Is(r.Err, kerr.UnknownMemberID) || r.MemberID != "" {
			t.Fatalf("c's parked join: got %+v, want UNKNOWN_MEMBER_ID with no member id", r)
		}
		parked(t, aJoin, "a's join, waiting for b")
		if errs, err := c.Leave("g", []LeaveMember{{MemberID: b.id}}); err != nil || errs[0] != nil {
			t.Fatalf("b's leave: %v %v", err, errs)
		}
		if r := a.await(aJoin); r.Err != nil || r.Generation != 3 || len(r.Members) != 1 {
			t.Fatalf("a: got %+v, want generation 3 alone", r)
		}
	})
}

// TestLeaveGroupErrors: group-level errors.
func TestLeaveGroupErrors(t *testing.T) {
	run(t, testConfig(), func(t *testing.T, c *Coordinator) {
		_, err := c.Leave("", []LeaveMember{{MemberID: "m"}})
		testenv.WantErr(t, "empty group id", err, kerr.InvalidGroupID)
		_, err = c.Leave("nope", []LeaveMember{{MemberID: "m"}})
		testenv.WantErr(t, "unknown group", err, kerr.UnknownMemberID)
	})
}

// TestLeavePendingMember: an id handed out with MEMBER_ID_REQUIRED may
// leave, and its leaving rebalances a Stable group, as in Kafka 4
// (classicGroupLeaveToClassicGroup counts it among the members that left).
func TestLeavePendingMember(t *testing.T) {
	run(t, testConfig(), func(t *testing.T, c *Coordinator) {
		a, b := newClient(t, c, "g", "a"), newClient(t, c, "g", "b")
		stableGroup(t, a)
		b.requireID = true
		r := recv(t, b.joinAsync(), "b")
		errs, err := c.Leave("g", []LeaveMember{{MemberID: r.MemberID}})
		if err != nil || errs[0] != nil {
			t.Fatalf("pending leave: %v %v", err, errs)
		}
		wantState(t, c, "g", PreparingRebalance)
		testenv.WantErr(t, "a's heartbeat", a.heartbeat(), kerr.RebalanceInProgress)
		b.id = r.MemberID
		testenv.WantErr(t, "join with the forgotten id", recv(t, b.joinAsync(), "b").Err, kerr.UnknownMemberID)
		if r := a.join(); r.Generation != 2 || len(r.Members) != 1 {
			t.Fatalf("a's rejoin: got %+v, want generation 2 alone", r)
		}
	})
}
