package broker

import (
	"bytes"
	"fmt"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// syncReq builds a SyncGroup request. From v5 it names the protocol type
// "consumer" and the protocol ("range" if empty); instance "" is null.
func syncReq(v int16, groupID, memberID, instance string, gen int32, protocol string, assignments map[string]string) *kmsg.SyncGroupRequest {
	req := kmsg.NewPtrSyncGroupRequest()
	req.Version = v
	req.Group = groupID
	req.MemberID = memberID
	req.Generation = gen
	if instance != "" {
		req.InstanceID = kmsg.StringPtr(instance)
	}
	if protocol == "" {
		protocol = "range"
	}
	if v >= 5 {
		req.ProtocolType = kmsg.StringPtr("consumer")
		req.Protocol = kmsg.StringPtr(protocol)
	}
	ids := make([]string, 0, len(assignments))
	for id := range assignments {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		a := kmsg.NewSyncGroupRequestGroupAssignment()
		a.MemberID, a.MemberAssignment = id, []byte(assignments[id])
		req.GroupAssignment = append(req.GroupAssignment, a)
	}
	return req
}

// groupVersions is one combination of JoinGroup, SyncGroup and Heartbeat
// versions a client might use together.
type groupVersions struct{ join, sync, heartbeat int16 }

var rebalanceVersions = []groupVersions{
	{0, 0, 0},
	{5, 3, 3},
	{maxJoinVersion, maxSyncVersion, maxHeartbeatVersion},
}

// TestGroupRebalanceTwoMembers: a second member joins a Stable group; the
// leader learns of it from its heartbeat, rejoins, and distributes the
// assignment through SyncGroup, for which the follower waits.
func TestGroupRebalanceTwoMembers(t *testing.T) {
	srv := newTestServer(t, nil)
	for _, vs := range rebalanceVersions {
		t.Run(fmt.Sprintf("join-v%d-sync-v%d", vs.join, vs.sync), func(t *testing.T) {
			groupID := t.Name()
			wa, wb := dialWire(t, srv), dialWire(t, srv)
			a := joinNew(t, wa, vs.join, groupID)
			sa := wa.do(syncReq(vs.sync, groupID, a.MemberID, "", 1, "", map[string]string{a.MemberID: "a1"})).(*kmsg.SyncGroupResponse)
			if sa.ErrorCode != 0 || string(sa.MemberAssignment) != "a1" {
				t.Fatalf("first sync: %+v", sa)
			}
			if vs.sync >= 5 && (sa.ProtocolType == nil || *sa.ProtocolType != "consumer" || sa.Protocol == nil || *sa.Protocol != "range") {
				t.Fatalf("first sync protocol: %v %v", sa.ProtocolType, sa.Protocol)
			}
			if vs.sync < 5 && (sa.ProtocolType != nil || sa.Protocol != nil) {
				t.Fatalf("v%d sync has protocol: %v %v", vs.sync, sa.ProtocolType, sa.Protocol)
			}
			waitGroupState(t, srv, groupID, "Stable", 1)

			// B joins; its JoinGroup parks until A rejoins.
			bid := ""
			if vs.join >= 4 {
				first := wb.do(joinReq(vs.join, groupID, "")).(*kmsg.JoinGroupResponse)
				checkMemberIDRequired(t, first)
				bid = first.MemberID
			}
			joinB := joinReq(vs.join, groupID, bid)
			corrB := wb.send(joinB)
			waitGroupState(t, srv, groupID, "PreparingRebalance", 2)
			if hb := wa.do(heartbeatReq(vs.heartbeat, groupID, a.MemberID, 1)).(*kmsg.HeartbeatResponse); hb.ErrorCode != kerr.RebalanceInProgress.Code {
				t.Fatalf("heartbeat during the rebalance: %v", kerr.ErrorForCode(hb.ErrorCode))
			}
			ja := wa.do(joinReq(vs.join, groupID, a.MemberID)).(*kmsg.JoinGroupResponse)
			jb := joinB.ResponseKind().(*kmsg.JoinGroupResponse)
			wb.recv(corrB, jb)
			if bid == "" {
				bid = jb.MemberID
			}
			if ja.ErrorCode != 0 || ja.Generation != 2 || ja.LeaderID != a.MemberID || len(ja.Members) != 2 {
				t.Fatalf("leader's rejoin: %+v", ja)
			}
			for _, m := range ja.Members {
				if m.MemberID != a.MemberID && m.MemberID != bid || !bytes.Equal(m.ProtocolMetadata, protocolMeta("range")) {
					t.Fatalf("leader's members: %+v", ja.Members)
				}
			}
			if jb.ErrorCode != 0 || jb.MemberID != bid || jb.Generation != 2 || jb.LeaderID != a.MemberID || len(jb.Members) != 0 {
				t.Fatalf("follower's join: %+v", jb)
			}

			// B syncs first and waits for the leader's assignment.
			syncB := syncReq(vs.sync, groupID, bid, "", 2, "", nil)
			corrSyncB := wb.send(syncB)
			sa = wa.do(syncReq(vs.sync, groupID, a.MemberID, "", 2, "", map[string]string{a.MemberID: "a2", bid: "b2", "stranger": "x"})).(*kmsg.SyncGroupResponse)
			if sa.ErrorCode != 0 || string(sa.MemberAssignment) != "a2" {
				t.Fatalf("leader's sync: %+v", sa)
			}
			sb := syncB.ResponseKind().(*kmsg.SyncGroupResponse)
			wb.recv(corrSyncB, sb)
			if sb.ErrorCode != 0 || string(sb.MemberAssignment) != "b2" {
				t.Fatalf("follower's sync: %+v", sb)
			}
			for _, hb := range []*kmsg.HeartbeatRequest{
				heartbeatReq(vs.heartbeat, groupID, a.MemberID, 2),
				heartbeatReq(vs.heartbeat, groupID, bid, 2),
			} {
				if resp := wa.do(hb).(*kmsg.HeartbeatResponse); resp.ErrorCode != 0 {
					t.Fatalf("heartbeat of %s: %v", hb.MemberID, kerr.ErrorForCode(resp.ErrorCode))
				}
			}
			g := waitGroupState(t, srv, groupID, "Stable", 2)
			got := map[string]string{}
			for _, m := range g.Members {
				got[m.MemberID] = string(m.MemberAssignment)
			}
			if got[a.MemberID] != "a2" || got[bid] != "b2" || g.Protocol != "range" {
				t.Fatalf("described: %+v", g)
			}
			// A follower that syncs again in a Stable group gets its
			// assignment at once.
			if resp := wb.do(syncReq(vs.sync, groupID, bid, "", 2, "", nil)).(*kmsg.SyncGroupResponse); resp.ErrorCode != 0 || string(resp.MemberAssignment) != "b2" {
				t.Fatalf("second sync of the follower: %+v", resp)
			}
		})
	}
}

// TestSyncGroupErrors: what SyncGroup refuses, at v0, a middle version and
// the newest.
func TestSyncGroupErrors(t *testing.T) {
	srv := newTestServer(t, nil)
	w := dialWire(t, srv)
	leader := joinNew(t, w, maxJoinVersion, "sync-errors")
	id := leader.MemberID
	for _, v := range []int16{0, 3, maxSyncVersion} {
		for _, tc := range []struct {
			name string
			req  *kmsg.SyncGroupRequest
			want *kerr.Error
		}{
			{"empty group id", syncReq(v, "", id, "", 1, "", nil), kerr.InvalidGroupID},
			{"missing group", syncReq(v, "nobody", id, "", 1, "", nil), kerr.UnknownMemberID},
			{"unknown member", syncReq(v, "sync-errors", "stranger", "", 1, "", nil), kerr.UnknownMemberID},
			{"illegal generation", syncReq(v, "sync-errors", id, "", 7, "", nil), kerr.IllegalGeneration},
		} {
			resp := w.do(tc.req).(*kmsg.SyncGroupResponse)
			if resp.ErrorCode != tc.want.Code || len(resp.MemberAssignment) != 0 || resp.Protocol != nil || resp.ProtocolType != nil {
				t.Fatalf("v%d %s: %v %+v", v, tc.name, kerr.ErrorForCode(resp.ErrorCode), resp)
			}
		}
	}
	// v3+: an instance id the group does not know, or the empty one.
	for _, instance := range []string{"unknown-instance", ""} {
		req := syncReq(3, "sync-errors", id, "", 1, "", nil)
		req.InstanceID = kmsg.StringPtr(instance)
		if resp := w.do(req).(*kmsg.SyncGroupResponse); resp.ErrorCode != kerr.UnknownMemberID.Code {
			t.Fatalf("instance id %q: %v", instance, kerr.ErrorForCode(resp.ErrorCode))
		}
	}
	// v5 (KIP-559): protocol type and name are mandatory and must match.
	for _, tc := range []struct {
		name      string
		edit      func(*kmsg.SyncGroupRequest)
		wantError bool
	}{
		{"null protocol type", func(r *kmsg.SyncGroupRequest) { r.ProtocolType = nil }, true},
		{"null protocol name", func(r *kmsg.SyncGroupRequest) { r.Protocol = nil }, true},
		{"other protocol type", func(r *kmsg.SyncGroupRequest) { r.ProtocolType = kmsg.StringPtr("connect") }, true},
		{"other protocol name", func(r *kmsg.SyncGroupRequest) { r.Protocol = kmsg.StringPtr("sticky") }, true},
	} {
		req := syncReq(5, "sync-errors", id, "", 1, "", nil)
		tc.edit(req)
		if resp := w.do(req).(*kmsg.SyncGroupResponse); resp.ErrorCode != kerr.InconsistentGroupProtocol.Code {
			t.Fatalf("%s: %v", tc.name, kerr.ErrorForCode(resp.ErrorCode))
		}
	}
	// Refused syncs changed nothing: the leader's sync still works.
	if g := describeOne(t, srv, "sync-errors"); g.State != "CompletingRebalance" {
		t.Fatalf("described: %+v", g)
	}
	resp := w.do(syncReq(5, "sync-errors", id, "", 1, "", map[string]string{id: "mine"})).(*kmsg.SyncGroupResponse)
	if resp.ErrorCode != 0 || string(resp.MemberAssignment) != "mine" {
		t.Fatalf("leader's sync: %+v", resp)
	}
}

func TestSyncGroupRoundTrip(t *testing.T) {
	srv := newTestServer(t, nil)
	w := dialWire(t, srv)
	leader := joinNew(t, w, maxJoinVersion, "roundtrip")
	if resp := w.do(syncReq(maxSyncVersion, "roundtrip", leader.MemberID, "", 1, "", map[string]string{leader.MemberID: "x"})).(*kmsg.SyncGroupResponse); resp.ErrorCode != 0 {
		t.Fatalf("sync: %v", kerr.ErrorForCode(resp.ErrorCode))
	}
	checkRoundTrip(t, srv, func(v int16) kmsg.Request {
		// A Stable group answers its member's SyncGroup at once.
		return syncReq(v, "roundtrip", leader.MemberID, "", 1, "", nil)
	})
}
