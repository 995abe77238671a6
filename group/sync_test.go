package group

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kbroker/kbroker/internal/testenv"
)

// TestSyncErrors: the errors of SyncGroup, per Kafka's validation order,
// including the v5 protocol type and name checks (KIP-559).
func TestSyncErrors(t *testing.T) {
	run(t, testConfig(), func(t *testing.T, c *Coordinator) {
		a := newClient(t, c, "g", "a")
		a.instance = "ia"
		stableGroup(t, a)
		ok := a.syncRequest(nil)
		for _, tc := range []struct {
			name string
			edit func(*SyncRequest)
			want *kerr.Error
		}{
			{"ok", func(*SyncRequest) {}, nil},
			{"ok with protocol type and name", func(r *SyncRequest) { r.ProtocolType, r.ProtocolName = "consumer", "range" }, nil},
			{"empty group id", func(r *SyncRequest) { r.Group = "" }, kerr.InvalidGroupID},
			{"unknown group", func(r *SyncRequest) { r.Group = "nope" }, kerr.UnknownMemberID},
			{"unknown member", func(r *SyncRequest) { r.MemberID, r.InstanceID = "x", "" }, kerr.UnknownMemberID},
			{"fenced instance", func(r *SyncRequest) { r.MemberID = "x" }, kerr.FencedInstanceID},
			{"old generation", func(r *SyncRequest) { r.Generation-- }, kerr.IllegalGeneration},
			{"other protocol type", func(r *SyncRequest) { r.ProtocolType = "connect" }, kerr.InconsistentGroupProtocol},
			{"other protocol name", func(r *SyncRequest) { r.ProtocolName = "sticky" }, kerr.InconsistentGroupProtocol},
		} {
			req := ok
			tc.edit(&req)
			ch := make(chan SyncResponse, 1)
			c.Sync(req, func(r SyncResponse) { ch <- r })
			r := recv(t, ch, tc.name)
			testenv.WantErr(t, tc.name, r.Err, tc.want)
			if tc.want != nil && (r.Assignment != nil || r.ProtocolType != "" || r.ProtocolName != "") {
				t.Fatalf("%s: got %+v, want no assignment or protocol with an error", tc.name, r)
			}
		}
		// During a rebalance a current member's sync is refused.
		b := newClient(t, c, "g", "b")
		bJoin := b.joinAsync()
		testenv.WantErr(t, "sync while preparing", a.sync(nil).Err, kerr.RebalanceInProgress)
		a.await(a.joinAsync())
		b.await(bJoin)
	})
}

// TestSyncMissingAssignment: members the leader leaves out get an empty
// assignment; ids that are not members are ignored.
func TestSyncMissingAssignment(t *testing.T) {
	run(t, testConfig(), func(t *testing.T, c *Coordinator) {
		a, b := newClient(t, c, "g", "a"), newClient(t, c, "g", "b")
		a.join()
		bJoin := b.joinAsync()
		a.await(a.joinAsync())
		b.await(bJoin)
		bSync := b.syncAsync(nil)
		sa := a.sync(map[string][]byte{a.id: []byte("all"), "stranger": []byte("x")})
		sb := recv(t, bSync, "b's sync")
		if string(sa.Assignment) != "all" || sb.Err != nil || sb.Assignment == nil || len(sb.Assignment) != 0 {
			t.Fatalf("got %+v and %+v, want all for a, empty (not null) for b", sa, sb)
		}
		d := wantState(t, c, "g", Stable)
		for _, m := range d.Members {
			if m.MemberID == "stranger" {
				t.Fatal("a non-member got into the group")
			}
		}
	})
}

// TestSecondSyncSupersedesParked: a member's second parked SyncGroup
// answers the first with REBALANCE_IN_PROGRESS (Kafka would drop it).
func TestSecondSyncSupersedesParked(t *testing.T) {
	run(t, testConfig(), func(t *testing.T, c *Coordinator) {
		a, b := newClient(t, c, "g", "a"), newClient(t, c, "g", "b")
		a.join()
		bJoin := b.joinAsync()
		a.await(a.joinAsync())
		b.await(bJoin)
		first := b.syncAsync(nil)
		second := b.syncAsync(nil)
		testenv.WantErr(t, "superseded sync", recv(t, first, "first").Err, kerr.RebalanceInProgress)
		a.sync(map[string][]byte{b.id: []byte("pb")})
		if r := recv(t, second, "second"); r.Err != nil || string(r.Assignment) != "pb" {
			t.Fatalf("second sync: got %+v, want pb", r)
		}
	})
}

// TestLeaveAnswersParkedSync: a member removed while its SyncGroup is
// parked gets an answer (UNKNOWN_MEMBER_ID) rather than none.
func TestLeaveAnswersParkedSync(t *testing.T) {
	run(t, testConfig(), func(t *testing.T, c *Coordinator) {
		a, b := newClient(t, c, "g", "a"), newClient(t, c, "g", "b")
		a.join()
		bJoin := b.joinAsync()
		a.await(a.joinAsync())
		b.await(bJoin)
		bSync := b.syncAsync(nil)
		parked(t, bSync, "b's sync")
		errs, err := c.Leave("g", []LeaveMember{{MemberID: b.id}})
		if err != nil || errs[0] != nil {
			t.Fatalf("leave: %v %v", err, errs)
		}
		testenv.WantErr(t, "parked sync of the leaver", recv(t, bSync, "b's sync").Err, kerr.UnknownMemberID)
	})
}
