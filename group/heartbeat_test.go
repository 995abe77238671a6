package group

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kbroker/kbroker/internal/testenv"
)

// TestSessionExpiry: a member that stops heartbeating is removed after its
// session timeout and the rest of the group rebalances without it.
func TestSessionExpiry(t *testing.T) {
	hooks := &hookLog{}
	runWith(t, testConfig(), []Option{WithStateHook(hooks.hook)}, func(t *testing.T, c *Coordinator) {
		a, b := newClient(t, c, "g", "a"), newClient(t, c, "g", "b")
		b.session = 6 * time.Second // b's own timeout applies to b
		stableGroup(t, a, b)
		start := time.Now()
		for time.Since(start) < 5*time.Second {
			time.Sleep(time.Second)
			testenv.WantErr(t, "a's heartbeat", a.heartbeat(), nil)
		}
		time.Sleep(time.Second + time.Millisecond) // b silent for 6 s
		testenv.WantErr(t, "a's heartbeat after b expired", a.heartbeat(), kerr.RebalanceInProgress)
		testenv.WantErr(t, "expired b's heartbeat", b.heartbeat(), kerr.UnknownMemberID)
		r := a.await(a.joinAsync())
		if r.Err != nil || r.Generation != 3 || len(r.Members) != 1 {
			t.Fatalf("a's rejoin: got %+v, want generation 3 alone", r)
		}
		a.sync(map[string][]byte{a.id: []byte("all")})
		// a goes silent too: the group ends Empty.
		time.Sleep(testSession + time.Millisecond)
		d := wantState(t, c, "g", Empty)
		if len(d.Members) != 0 {
			t.Fatalf("members: got %+v, want none", d.Members)
		}
		if got := hooks.get(); len(got) == 0 || got[len(got)-1] != "g:Empty" || slices.Contains(got[:len(got)-1], "g:Empty") {
			t.Fatalf("state hook: got %v, want Stable generations, then one g:Empty", got)
		}
	})
}

// TestSilentMemberExpiresDuringRebalance: a member that neither rejoins nor
// heartbeats is removed at its session timeout, which ends a rebalance
// that would otherwise wait for the (long) rebalance timeout.
func TestSilentMemberExpiresDuringRebalance(t *testing.T) {
	run(t, testConfig(), func(t *testing.T, c *Coordinator) {
		a, b := newClient(t, c, "g", "a"), newClient(t, c, "g", "b")
		a.rebalance = time.Hour
		stableGroup(t, a)
		start := time.Now()
		r := b.await(b.joinAsync())
		if r.Err != nil || r.Generation != 2 || len(r.Members) != 1 || r.Leader != b.id {
			t.Fatalf("b: got %+v, want generation 2, alone and leading", r)
		}
		if got := time.Since(start); got != testSession {
			t.Fatalf("b waited %v, want a's session timeout %v", got, testSession)
		}
		testenv.WantErr(t, "a's heartbeat", a.heartbeat(), kerr.UnknownMemberID)
	})
}

// TestNewMemberExpiresWhileParked: a new member whose join stays parked
// longer than the 5-minute limit is dropped with UNKNOWN_MEMBER_ID.
func TestNewMemberExpiresWhileParked(t *testing.T) {
	run(t, testConfig(), func(t *testing.T, c *Coordinator) {
		a, b := newClient(t, c, "g", "a"), newClient(t, c, "g", "b")
		a.rebalance = time.Hour
		a.session = 10 * time.Minute
		stableGroup(t, a)
		start := time.Now()
		bJoin := b.joinAsync()
		for range 5 { // a keeps its session but never rejoins
			time.Sleep(time.Minute + time.Second)
			if err := a.heartbeat(); err != nil && !errors.Is(err, kerr.RebalanceInProgress) {
				t.Fatalf("a's heartbeat: %v", err)
			}
		}
		r := recv(t, bJoin, "b's join")
		if !errors.Is(r.Err, kerr.UnknownMemberID) || r.MemberID != "" {
			t.Fatalf("b: got %+v, want UNKNOWN_MEMBER_ID with no member id", r)
		}
		if got := time.Since(start); got < newMemberJoinTimeout || got > newMemberJoinTimeout+time.Minute {
			t.Fatalf("b dropped after %v, want about %v", got, newMemberJoinTimeout)
		}
	})
}

// TestPendingSyncExpiry: a member that got its JoinGroup response but never
// sends SyncGroup is removed after the rebalance timeout.
func TestPendingSyncExpiry(t *testing.T) {
	run(t, testConfig(), func(t *testing.T, c *Coordinator) {
		a, b := newClient(t, c, "g", "a"), newClient(t, c, "g", "b")
		a.join()
		bJoin := b.joinAsync()
		a.await(a.joinAsync())
		b.await(bJoin)
		if a.leader != a.id {
			t.Fatalf("leader: got %q, want a", a.leader)
		}
		a.sync(map[string][]byte{a.id: []byte("x"), b.id: []byte("y")})
		wantState(t, c, "g", Stable)
		for range 11 { // b heartbeats but never syncs
			time.Sleep(testRebalance / 10)
			_ = b.heartbeat()
			_ = a.heartbeat()
		}
		testenv.WantErr(t, "b's heartbeat", b.heartbeat(), kerr.UnknownMemberID)
		testenv.WantErr(t, "a's heartbeat", a.heartbeat(), kerr.RebalanceInProgress)
	})
}

// TestHeartbeatErrors: the errors of Heartbeat, per Kafka's validation order.
func TestHeartbeatErrors(t *testing.T) {
	run(t, testConfig(), func(t *testing.T, c *Coordinator) {
		a := newClient(t, c, "g", "a")
		a.instance = "ia"
		stableGroup(t, a)
		for _, tc := range []struct {
			name string
			req  HeartbeatRequest
			want *kerr.Error
		}{
			{"ok", HeartbeatRequest{"g", a.id, "ia", a.gen}, nil},
			{"empty group id", HeartbeatRequest{"", a.id, "ia", a.gen}, kerr.InvalidGroupID},
			{"unknown group", HeartbeatRequest{"nope", a.id, "ia", a.gen}, kerr.UnknownMemberID},
			{"unknown member", HeartbeatRequest{"g", "x", "", a.gen}, kerr.UnknownMemberID},
			{"unknown instance", HeartbeatRequest{"g", a.id, "ix", a.gen}, kerr.UnknownMemberID},
			{"other member's instance", HeartbeatRequest{"g", "x", "ia", a.gen}, kerr.FencedInstanceID},
			{"old generation", HeartbeatRequest{"g", a.id, "ia", a.gen - 1}, kerr.IllegalGeneration},
			{"future generation", HeartbeatRequest{"g", a.id, "ia", a.gen + 1}, kerr.IllegalGeneration},
		} {
			testenv.WantErr(t, tc.name, c.Heartbeat(tc.req), tc.want)
		}
	})
}
