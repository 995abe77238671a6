package group

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kbroker/kbroker/internal/testenv"
)

// TestSingleMemberJoinSyncHeartbeat is the whole life of a one-member
// group: join, sync its own assignment, heartbeat past the session timeout.
func TestSingleMemberJoinSyncHeartbeat(t *testing.T) {
	run(t, testConfig(), func(t *testing.T, c *Coordinator) {
		a := newClient(t, c, "g", "a")
		r := a.join()
		if r.Generation != 1 || r.Leader != r.MemberID || r.ProtocolType != "consumer" || r.ProtocolName != "range" {
			t.Fatalf("join: got %+v, want generation 1, self as leader, consumer/range", r)
		}
		if !strings.HasPrefix(r.MemberID, "a-") || len(r.MemberID) != len("a-")+36 {
			t.Fatalf("member id %q: want client id, dash, UUID", r.MemberID)
		}
		if len(r.Members) != 1 || r.Members[0].MemberID != r.MemberID || string(r.Members[0].Metadata) != "meta-range" {
			t.Fatalf("leader's members: got %+v, want itself with its metadata", r.Members)
		}
		wantState(t, c, "g", CompletingRebalance)
		testenv.WantErr(t, "heartbeat before sync", a.heartbeat(), nil)

		s := a.sync(map[string][]byte{a.id: []byte("p0,p1")})
		if s.Err != nil || string(s.Assignment) != "p0,p1" || s.ProtocolType != "consumer" || s.ProtocolName != "range" {
			t.Fatalf("sync: got %+v, want assignment p0,p1", s)
		}
		wantState(t, c, "g", Stable)
		for range 10 { // 30 s: three session timeouts
			time.Sleep(3 * time.Second)
			testenv.WantErr(t, "heartbeat", a.heartbeat(), nil)
		}
		if s := a.sync(nil); string(s.Assignment) != "p0,p1" {
			t.Fatalf("sync in Stable: got %+v, want the same assignment", s)
		}
		// A follower-style rejoin with the same metadata would answer at
		// once, but the leader's rejoin always rebalances.
		ch := a.joinAsync()
		r = a.await(ch)
		if r.Err != nil || r.Generation != 2 {
			t.Fatalf("leader rejoin: got %+v, want generation 2", r)
		}
	})
}

// TestTwoMembersRebalance: a second member's join rebalances the group; the
// first learns it from its heartbeat, rejoins, both end in the same
// generation and the leader's assignment reaches both.
func TestTwoMembersRebalance(t *testing.T) {
	run(t, testConfig(), func(t *testing.T, c *Coordinator) {
		a, b := newClient(t, c, "g", "a"), newClient(t, c, "g", "b")
		stableGroup(t, a)
		leaderID := a.id

		bJoin := b.joinAsync()
		parked(t, bJoin, "b's join")
		wantState(t, c, "g", PreparingRebalance)
		testenv.WantErr(t, "a's heartbeat", a.heartbeat(), kerr.RebalanceInProgress)
		testenv.WantErr(t, "a's sync", a.sync(nil).Err, kerr.RebalanceInProgress)

		aJoin := a.joinAsync()
		ra, rb := a.await(aJoin), b.await(bJoin)
		if ra.Err != nil || rb.Err != nil {
			t.Fatalf("joins: %v, %v", ra.Err, rb.Err)
		}
		if ra.Generation != 2 || rb.Generation != 2 {
			t.Fatalf("generations: got %d and %d, want 2", ra.Generation, rb.Generation)
		}
		if ra.Leader != leaderID || rb.Leader != leaderID {
			t.Fatalf("leader: got %q/%q, want the old leader %q kept", ra.Leader, rb.Leader, leaderID)
		}
		if len(ra.Members) != 2 || len(rb.Members) != 0 {
			t.Fatalf("members: leader got %d, follower %d; want 2 and 0", len(ra.Members), len(rb.Members))
		}

		bSync := b.syncAsync(nil)
		parked(t, bSync, "follower sync before the leader's")
		sa := a.sync(map[string][]byte{a.id: []byte("pa"), b.id: []byte("pb")})
		sb := recv(t, bSync, "b's sync")
		if string(sa.Assignment) != "pa" || string(sb.Assignment) != "pb" || sa.Err != nil || sb.Err != nil {
			t.Fatalf("assignments: got %+v and %+v, want pa and pb", sa, sb)
		}
		wantState(t, c, "g", Stable)
		testenv.WantErr(t, "a's heartbeat", a.heartbeat(), nil)
		testenv.WantErr(t, "b's heartbeat", b.heartbeat(), nil)
	})
}

// TestMemberIDRequired is KIP-394: a v4+ join without a member id gets an
// id to rejoin with; the pending id holds up a rebalance but does not start
// one, and is forgotten after a session timeout.
func TestMemberIDRequired(t *testing.T) {
	run(t, testConfig(), func(t *testing.T, c *Coordinator) {
		a := newClient(t, c, "g", "a")
		a.requireID = true
		r := recv(t, a.joinAsync(), "first join")
		if !errors.Is(r.Err, kerr.MemberIDRequired) || !strings.HasPrefix(r.MemberID, "a-") || r.Generation != -1 {
			t.Fatalf("first join: got %+v, want MEMBER_ID_REQUIRED with an id", r)
		}
		a.id = r.MemberID
		r = a.await(a.joinAsync())
		if r.Err != nil || r.MemberID != a.id || r.Generation != 1 {
			t.Fatalf("second join: got %+v, want generation 1 with the given id", r)
		}
		a.sync(map[string][]byte{a.id: []byte("x")})

		// A new pending member does not disturb the Stable group...
		b := newClient(t, c, "g", "b")
		b.requireID = true
		r = recv(t, b.joinAsync(), "b's first join")
		testenv.WantErr(t, "b's first join", r.Err, kerr.MemberIDRequired)
		testenv.WantErr(t, "a's heartbeat", a.heartbeat(), nil)
		wantState(t, c, "g", Stable)
		// ...and a stale one is forgotten after its session timeout.
		for range 4 {
			time.Sleep(testSession / 3)
			testenv.WantErr(t, "a's heartbeat", a.heartbeat(), nil)
		}
		b.id = r.MemberID
		r = recv(t, b.joinAsync(), "b's late join")
		testenv.WantErr(t, "b's join after its pending id expired", r.Err, kerr.UnknownMemberID)

		// An id the group never issued is unknown, in a group that does
		// not exist as well.
		for _, g := range []string{"g", "nope"} {
			r = recv(t, c.joinAsync(JoinRequest{Group: g, MemberID: "made-up", SessionTimeout: testSession,
				RebalanceTimeout: testRebalance, ProtocolType: "consumer", Protocols: protocols("range")}), "join")
			testenv.WantErr(t, "join with a made-up id in "+g, r.Err, kerr.UnknownMemberID)
		}
	})
}

// joinAsync lets tests send raw requests.
func (c *Coordinator) joinAsync(req JoinRequest) <-chan JoinResponse {
	ch := make(chan JoinResponse, 1)
	c.Join(req, func(r JoinResponse) { ch <- r })
	return ch
}

// TestPendingMemberHoldsRebalance: a rebalance waits for an id handed out
// with MEMBER_ID_REQUIRED until the member rejoins with it.
func TestPendingMemberHoldsRebalance(t *testing.T) {
	run(t, testConfig(), func(t *testing.T, c *Coordinator) {
		a, b := newClient(t, c, "g", "a"), newClient(t, c, "g", "b")
		stableGroup(t, a)
		b.requireID = true
		r := recv(t, b.joinAsync(), "b's first join")
		testenv.WantErr(t, "b's first join", r.Err, kerr.MemberIDRequired)
		b.id = r.MemberID
		// The leader rejoins: everybody known has joined, but b's id is
		// outstanding.
		aJoin := a.joinAsync()
		parked(t, aJoin, "leader's rejoin with a pending member")
		bJoin := b.joinAsync()
		ra, rb := a.await(aJoin), b.await(bJoin)
		if ra.Generation != 2 || rb.Generation != 2 || len(ra.Members) != 2 {
			t.Fatalf("got %+v and %+v, want both in generation 2", ra, rb)
		}
	})
}

// TestStaticMemberRejoin is KIP-345: a static member that rejoins without
// its member id takes a new id, keeps its assignment without a rebalance,
// and its old id is fenced.
func TestStaticMemberRejoin(t *testing.T) {
	run(t, testConfig(), func(t *testing.T, c *Coordinator) {
		a, b := newClient(t, c, "g", "a"), newClient(t, c, "g", "b")
		a.instance, b.instance = "ia", "ib"
		stableGroup(t, a, b)
		leaderID, oldB, gen := a.leader, b.id, b.gen
		if leaderID != a.id {
			t.Fatalf("leader: got %q, want a (%q)", leaderID, a.id)
		}

		// b restarts: same instance id, no member id.
		b2 := newClient(t, c, "g", "b")
		b2.instance = "ib"
		r := b2.await(b2.joinAsync())
		if r.Err != nil || r.MemberID == oldB || !strings.HasPrefix(r.MemberID, "ib-") || r.Generation != gen || r.Leader != leaderID {
			t.Fatalf("static rejoin: got %+v, want a new ib- id in generation %d", r, gen)
		}
		wantState(t, c, "g", Stable)
		if s := b2.sync(nil); s.Err != nil || string(s.Assignment) != "assign-b" {
			t.Fatalf("sync after static rejoin: got %+v, want the kept assignment", s)
		}
		testenv.WantErr(t, "a's heartbeat", a.heartbeat(), nil)
		testenv.WantErr(t, "old id's heartbeat", b.heartbeat(), kerr.FencedInstanceID)
		testenv.WantErr(t, "old id's sync", b.sync(nil).Err, kerr.FencedInstanceID)
		testenv.WantErr(t, "old id's commit", c.ValidateCommit("g", oldB, "ib", gen), kerr.FencedInstanceID)
		b.instance = ""
		testenv.WantErr(t, "old id's heartbeat as dynamic", b.heartbeat(), kerr.UnknownMemberID)
		testenv.WantErr(t, "new id's heartbeat", b2.heartbeat(), nil)
		d := wantState(t, c, "g", Stable)
		if len(d.Members) != 2 {
			t.Fatalf("members: got %+v, want 2", d.Members)
		}
	})
}

// TestStaticLeaderRejoin: a static leader that restarts keeps leading. Before
// JoinGroup v9 it is told the old leader id, so it does not assign; from v9
// it is told it leads but to skip the assignment.
func TestStaticLeaderRejoin(t *testing.T) {
	for _, skip := range []bool{false, true} {
		name := "v5-8"
		if skip {
			name = "v9"
		}
		t.Run(name, func(t *testing.T) {
			run(t, testConfig(), func(t *testing.T, c *Coordinator) {
				a, b := newClient(t, c, "g", "a"), newClient(t, c, "g", "b")
				a.instance = "ia"
				stableGroup(t, a, b)
				oldA := a.id
				req := a.joinRequest()
				req.MemberID = ""
				req.SupportsSkipAssignment = skip
				r := recv(t, c.joinAsync(req), "static leader rejoin")
				if r.Err != nil || r.MemberID == oldA {
					t.Fatalf("rejoin: got %+v", r)
				}
				if skip {
					if r.Leader != r.MemberID || !r.SkipAssignment || len(r.Members) != 2 {
						t.Fatalf("v9 rejoin: got %+v, want leader itself, skip assignment, members", r)
					}
				} else if r.Leader != oldA || r.SkipAssignment || len(r.Members) != 0 {
					t.Fatalf("old rejoin: got %+v, want the old leader id and no members", r)
				}
				wantState(t, c, "g", Stable)
			})
		})
	}
}

// TestStaticRejoinFencesParkedJoin: a static member's JoinGroup parked under
// its old id is answered FENCED_INSTANCE_ID when the instance rejoins.
func TestStaticRejoinFencesParkedJoin(t *testing.T) {
	run(t, testConfig(), func(t *testing.T, c *Coordinator) {
		a, b := newClient(t, c, "g", "a"), newClient(t, c, "g", "b")
		b.instance = "ib"
		stableGroup(t, a, b)
		c2 := newClient(t, c, "g", "c")
		cJoin := c2.joinAsync() // rebalance
		bJoin := b.joinAsync()  // b rejoins under its id and waits for a
		parked(t, bJoin, "b's rejoin")
		b2 := newClient(t, c, "g", "b")
		b2.instance = "ib"
		b2Join := b2.joinAsync()
		testenv.WantErr(t, "parked join of the old id", recv(t, bJoin, "b's old join").Err, kerr.FencedInstanceID)
		aJoin := a.joinAsync()
		for _, r := range []JoinResponse{a.await(aJoin), b2.await(b2Join), c2.await(cJoin)} {
			if r.Err != nil || r.Generation != 3 {
				t.Fatalf("join: got %+v, want generation 3", r)
			}
		}
	})
}

// TestRebalanceTimeoutRemovesMember: a member that keeps heartbeating but
// does not rejoin within the rebalance timeout is dropped.
func TestRebalanceTimeoutRemovesMember(t *testing.T) {
	run(t, testConfig(), func(t *testing.T, c *Coordinator) {
		a, b, cc := newClient(t, c, "g", "a"), newClient(t, c, "g", "b"), newClient(t, c, "g", "c")
		stableGroup(t, a, b)
		start := time.Now()
		cJoin := cc.joinAsync()
		aJoin := a.joinAsync()
		for range 5 { // b heartbeats through the rebalance timeout
			testenv.WantErr(t, "b's heartbeat", b.heartbeat(), kerr.RebalanceInProgress)
			parked(t, aJoin, "a's join")
			time.Sleep(testRebalance / 5)
		}
		ra, rc := a.await(aJoin), cc.await(cJoin)
		if waited := time.Since(start); waited != testRebalance {
			t.Fatalf("join phase took %v, want the rebalance timeout %v", waited, testRebalance)
		}
		if ra.Err != nil || rc.Err != nil || ra.Generation != 3 || len(ra.Members) != 2 {
			t.Fatalf("got %+v and %+v, want generation 3 with a and c", ra, rc)
		}
		testenv.WantErr(t, "dropped member's heartbeat", b.heartbeat(), kerr.UnknownMemberID)
	})
}

// TestRebalanceTimeoutElectsNewLeader: when the leader does not rejoin, the
// first member that did leads the next generation.
func TestRebalanceTimeoutElectsNewLeader(t *testing.T) {
	run(t, testConfig(), func(t *testing.T, c *Coordinator) {
		a, b, cc := newClient(t, c, "g", "a"), newClient(t, c, "g", "b"), newClient(t, c, "g", "c")
		stableGroup(t, a, b)
		cJoin := cc.joinAsync()
		bJoin := b.joinAsync()
		rb, rc := b.await(bJoin), cc.await(cJoin)
		if rb.Leader != b.id || rc.Leader != b.id || len(rb.Members) != 2 {
			t.Fatalf("got %+v and %+v, want b leading b and c", rb, rc)
		}
		testenv.WantErr(t, "old leader's heartbeat", a.heartbeat(), kerr.UnknownMemberID)
	})
}

// TestInitialRebalanceDelay: the first rebalance of a new group waits the
// delay, extended while members keep joining, but not past the rebalance
// timeout (InitialDelayedJoin).
func TestInitialRebalanceDelay(t *testing.T) {
	for _, tc := range []struct {
		name      string
		rebalance time.Duration
		joins     []time.Duration // when each member joins
		want      time.Duration   // when all get their response
	}{
		// Timer at 3 s: b came, wait min(3, 10-3=7)=3 more, 4 s left;
		// at 6 s: c came, wait min(3, 4)=3, 1 s left; at 9 s: done.
		{"extended", 10 * time.Second, []time.Duration{0, 2 * time.Second, 4 * time.Second}, 9 * time.Second},
		// 2 s remain after the first 3 s: wait 2, none remain; at 5 s
		// the delay cannot grow any more although c came at 4 s.
		{"capped by rebalance timeout", 5 * time.Second, []time.Duration{0, time.Second, 4 * time.Second}, 5 * time.Second},
		{"alone", 10 * time.Second, []time.Duration{0}, 3 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig()
			cfg.InitialRebalanceDelay = 3 * time.Second
			run(t, cfg, func(t *testing.T, c *Coordinator) {
				start := time.Now()
				var cls []*client
				var chs []<-chan JoinResponse
				for i, at := range tc.joins {
					time.Sleep(at - time.Since(start))
					cl := newClient(t, c, "g", string(rune('a'+i)))
					cl.rebalance = tc.rebalance
					cls = append(cls, cl)
					chs = append(chs, cl.joinAsync())
				}
				for i, cl := range cls {
					r := cl.await(chs[i])
					if r.Err != nil || r.Generation != 1 {
						t.Fatalf("%s: got %+v, want generation 1", cl.clientID, r)
					}
				}
				if got := time.Since(start); got != tc.want {
					t.Fatalf("joins completed after %v, want %v", got, tc.want)
				}
			})
		})
	}
}

// TestProtocolSelection: the group's protocol is one all members support,
// chosen by the members' votes (each votes for its most preferred one).
func TestProtocolSelection(t *testing.T) {
	for _, tc := range []struct {
		name    string
		members [][]string
		want    string
	}{
		{"single", [][]string{{"range", "roundrobin"}}, "range"},
		{"only common one", [][]string{{"range", "roundrobin"}, {"roundrobin", "range"}, {"roundrobin"}}, "roundrobin"},
		{"most votes", [][]string{{"range", "sticky"}, {"range", "sticky"}, {"sticky", "range"}}, "range"},
		{"tie goes to the first voter", [][]string{{"sticky", "range"}, {"range", "sticky"}}, "sticky"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			run(t, testConfig(), func(t *testing.T, c *Coordinator) {
				var cls []*client
				for i, ps := range tc.members {
					cl := newClient(t, c, "g", string(rune('a'+i)))
					cl.protocols = protocols(ps...)
					cls = append(cls, cl)
				}
				stableGroup(t, cls...)
				d := wantState(t, c, "g", Stable)
				if d.Protocol != tc.want {
					t.Fatalf("protocol: got %q, want %q", d.Protocol, tc.want)
				}
				for _, m := range d.Members {
					if string(m.Metadata) != "meta-"+tc.want {
						t.Fatalf("member %s metadata: got %q, want the %s metadata", m.MemberID, m.Metadata, tc.want)
					}
				}
			})
		})
	}
}

// TestInconsistentGroupProtocol: a member must share the group's protocol
// type and at least one protocol with every member.
func TestInconsistentGroupProtocol(t *testing.T) {
	run(t, testConfig(), func(t *testing.T, c *Coordinator) {
		a := newClient(t, c, "g", "a")
		a.protocols = protocols("range", "roundrobin")
		stableGroup(t, a)
		base := JoinRequest{Group: "g", ClientID: "b", SessionTimeout: testSession, RebalanceTimeout: testRebalance}
		for _, tc := range []struct {
			name         string
			group        string
			protocolType string
			protocols    []Protocol
		}{
			{"no common protocol", "g", "consumer", protocols("sticky")},
			{"other protocol type", "g", "connect", protocols("range")},
			{"empty protocol type in a new group", "new", "", protocols("range")},
			{"no protocols in a new group", "new", "consumer", nil},
		} {
			req := base
			req.Group, req.ProtocolType, req.Protocols = tc.group, tc.protocolType, tc.protocols
			r := recv(t, c.joinAsync(req), tc.name)
			if !errors.Is(r.Err, kerr.InconsistentGroupProtocol) || r.MemberID != "" || r.Generation != -1 {
				t.Fatalf("%s: got %+v, want INCONSISTENT_GROUP_PROTOCOL", tc.name, r)
			}
		}
		// The existing member may not switch to a protocol the group
		// cannot use either.
		req := a.joinRequest()
		req.Protocols = protocols("sticky")
		testenv.WantErr(t, "member switching protocol", recv(t, c.joinAsync(req), "join").Err, kerr.InconsistentGroupProtocol)
		testenv.WantErr(t, "a's heartbeat", a.heartbeat(), nil)
		// A shared protocol is fine and rebalances.
		b := newClient(t, c, "g", "b")
		b.protocols = protocols("roundrobin")
		bJoin := b.joinAsync()
		a.await(a.joinAsync())
		if r := b.await(bJoin); r.Err != nil || r.ProtocolName != "roundrobin" {
			t.Fatalf("b's join: got %+v, want roundrobin", r)
		}
	})
}

// TestJoinValidation: group id, session timeout bounds and group.max.size.
func TestJoinValidation(t *testing.T) {
	cfg := testConfig()
	cfg.MaxSize = 2
	run(t, cfg, func(t *testing.T, c *Coordinator) {
		base := newClient(t, c, "g", "x").joinRequest()
		for _, tc := range []struct {
			name    string
			edit    func(*JoinRequest)
			want    *kerr.Error
			wantMID string
		}{
			{"empty group id", func(r *JoinRequest) { r.Group = "" }, kerr.InvalidGroupID, "m"},
			{"session below min", func(r *JoinRequest) { r.SessionTimeout = cfg.MinSessionTimeout - time.Millisecond }, kerr.InvalidSessionTimeout, "m"},
			{"session above max", func(r *JoinRequest) { r.SessionTimeout = cfg.MaxSessionTimeout + time.Millisecond }, kerr.InvalidSessionTimeout, "m"},
		} {
			req := base
			req.MemberID = "m"
			tc.edit(&req)
			r := recv(t, c.joinAsync(req), tc.name)
			if !errors.Is(r.Err, tc.want) || r.MemberID != tc.wantMID {
				t.Fatalf("%s: got %+v, want %s", tc.name, r, tc.want.Message)
			}
		}
		a, b, x := newClient(t, c, "g", "a"), newClient(t, c, "g", "b"), newClient(t, c, "g", "x")
		stableGroup(t, a, b)
		r := recv(t, x.joinAsync(), "third member")
		testenv.WantErr(t, "third member of a group of at most 2", r.Err, kerr.GroupMaxSizeReached)
		wantState(t, c, "g", Stable)
		testenv.WantErr(t, "a's heartbeat", a.heartbeat(), nil)
	})
}

// TestRejoinDuringCompletingRebalance: a member that lost its JoinGroup
// response rejoins with the same metadata and gets the same generation; a
// changed metadata rebalances instead, and parked syncs are told so.
func TestRejoinDuringCompletingRebalance(t *testing.T) {
	cfg := testConfig()
	cfg.InitialRebalanceDelay = time.Second // a and b meet in generation 1
	run(t, cfg, func(t *testing.T, c *Coordinator) {
		a, b := newClient(t, c, "g", "a"), newClient(t, c, "g", "b")
		aJoin, bJoin := a.joinAsync(), b.joinAsync()
		ra, rb := a.await(aJoin), b.await(bJoin)
		if ra.Generation != 1 || rb.Generation != 1 {
			t.Fatalf("got %+v, %+v", ra, rb)
		}
		wantState(t, c, "g", CompletingRebalance)
		leader, follower := a, b
		if a.leader != a.id {
			leader, follower = b, a
		}
		r := follower.await(follower.joinAsync())
		if r.Err != nil || r.Generation != 1 || len(r.Members) != 0 {
			t.Fatalf("follower rejoin: got %+v, want generation 1 again", r)
		}
		r = leader.await(leader.joinAsync())
		if r.Err != nil || r.Generation != 1 || len(r.Members) != 2 {
			t.Fatalf("leader rejoin: got %+v, want generation 1 with members", r)
		}
		fSync := follower.syncAsync(nil)
		parked(t, fSync, "follower sync")
		follower.protocols = protocols("range", "sticky")
		fJoin := follower.joinAsync()
		testenv.WantErr(t, "parked sync after a metadata change", recv(t, fSync, "sync").Err, kerr.RebalanceInProgress)
		lJoin := leader.joinAsync()
		if rl, rf := leader.await(lJoin), follower.await(fJoin); rl.Generation != 2 || rf.Generation != 2 {
			t.Fatalf("got %+v, %+v, want generation 2", rl, rf)
		}
	})
}

// TestSecondJoinSupersedesParked: two JoinGroups parked for one member: the
// first is answered (Kafka would drop it), the second gets the generation.
func TestSecondJoinSupersedesParked(t *testing.T) {
	run(t, testConfig(), func(t *testing.T, c *Coordinator) {
		a, b := newClient(t, c, "g", "a"), newClient(t, c, "g", "b")
		stableGroup(t, a, b)
		first := a.joinAsync() // the leader's rejoin parks
		second := a.joinAsync()
		testenv.WantErr(t, "superseded join", recv(t, first, "first").Err, kerr.RebalanceInProgress)
		bJoin := b.joinAsync()
		if ra, rb := a.await(second), b.await(bJoin); ra.Err != nil || rb.Err != nil || ra.Generation != 3 {
			t.Fatalf("got %+v, %+v, want generation 3", ra, rb)
		}
	})
}

// TestJoinCopiesMetadata: the group does not alias the caller's buffers.
func TestJoinCopiesMetadata(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newTestCoordinator(t, testConfig())
		buf := []byte("meta")
		req := newClient(t, c, "g", "a").joinRequest()
		req.Protocols = []Protocol{{Name: "range", Metadata: buf}}
		r := recv(t, c.joinAsync(req), "join")
		copy(buf, "XXXX")
		if !bytes.Equal(r.Members[0].Metadata, []byte("meta")) {
			t.Fatalf("metadata: got %q after the caller reused its buffer", r.Members[0].Metadata)
		}
	})
}
