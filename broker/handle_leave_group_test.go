package broker

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// leaveReq builds a LeaveGroup request: v0–v2 name the first member's id;
// v3+ carry every member.
func leaveReq(v int16, groupID string, members ...kmsg.LeaveGroupRequestMember) *kmsg.LeaveGroupRequest {
	req := kmsg.NewPtrLeaveGroupRequest()
	req.Version = v
	req.Group = groupID
	if v < 3 {
		if len(members) > 0 {
			req.MemberID = members[0].MemberID
		}
		return req
	}
	req.Members = members
	return req
}

func leaving(memberID string, instance *string) kmsg.LeaveGroupRequestMember {
	m := kmsg.NewLeaveGroupRequestMember()
	m.MemberID, m.InstanceID = memberID, instance
	m.Reason = kmsg.StringPtr("test over")
	return m
}

// TestLeaveGroupV0: the single member's error is the top-level error.
func TestLeaveGroupV0(t *testing.T) {
	srv := newTestServer(t, nil)
	w := dialWire(t, srv)
	for _, v := range []int16{0, 2} {
		groupID := "leave-v" + string(rune('0'+v))
		m := joinNew(t, w, 0, groupID)
		if resp := w.do(leaveReq(v, groupID, leaving("stranger", nil))).(*kmsg.LeaveGroupResponse); resp.ErrorCode != kerr.UnknownMemberID.Code {
			t.Fatalf("v%d unknown member: %v", v, kerr.ErrorForCode(resp.ErrorCode))
		}
		if resp := w.do(leaveReq(v, groupID, leaving(m.MemberID, nil))).(*kmsg.LeaveGroupResponse); resp.ErrorCode != 0 {
			t.Fatalf("v%d member: %v", v, kerr.ErrorForCode(resp.ErrorCode))
		}
		waitGroupState(t, srv, groupID, "Empty", 0)
		// Kafka answers a missing group's member UNKNOWN_MEMBER_ID, which
		// v0–v2 carry at the top.
		if resp := w.do(leaveReq(v, "nobody", leaving(m.MemberID, nil))).(*kmsg.LeaveGroupResponse); resp.ErrorCode != kerr.UnknownMemberID.Code {
			t.Fatalf("v%d missing group: %v", v, kerr.ErrorForCode(resp.ErrorCode))
		}
		if resp := w.do(leaveReq(v, "", leaving(m.MemberID, nil))).(*kmsg.LeaveGroupResponse); resp.ErrorCode != kerr.InvalidGroupID.Code {
			t.Fatalf("v%d empty group id: %v", v, kerr.ErrorForCode(resp.ErrorCode))
		}
	}
}

// TestLeaveGroupBatched: v3+ (KIP-345) members leave in a batch, by member
// id or, for a static member, by instance id alone; each gets its own
// error, echoing its ids.
func TestLeaveGroupBatched(t *testing.T) {
	srv := newTestServer(t, nil)
	for _, v := range []int16{3, maxLeaveVersion} {
		groupID := "batch-v" + string(rune('0'+v))
		wa, wb := dialWire(t, srv), dialWire(t, srv)
		// A dynamic leader, then a static member that parks until the
		// leader rejoins.
		a := joinNew(t, wa, maxJoinVersion, groupID)
		if resp := wa.do(syncReq(maxSyncVersion, groupID, a.MemberID, "", 1, "", nil)).(*kmsg.SyncGroupResponse); resp.ErrorCode != 0 {
			t.Fatalf("sync: %v", kerr.ErrorForCode(resp.ErrorCode))
		}
		joinB := joinReq(maxJoinVersion, groupID, "")
		joinB.InstanceID = kmsg.StringPtr("static-b")
		corrB := wb.send(joinB)
		waitGroupState(t, srv, groupID, "PreparingRebalance", 2)
		if resp := wa.do(joinReq(maxJoinVersion, groupID, a.MemberID)).(*kmsg.JoinGroupResponse); resp.ErrorCode != 0 || len(resp.Members) != 2 {
			t.Fatalf("rejoin: %+v", resp)
		}
		jb := joinB.ResponseKind().(*kmsg.JoinGroupResponse)
		wb.recv(corrB, jb)
		if jb.ErrorCode != 0 {
			t.Fatalf("static join: %v", kerr.ErrorForCode(jb.ErrorCode))
		}

		members := []kmsg.LeaveGroupRequestMember{
			leaving(a.MemberID, nil),
			leaving("", kmsg.StringPtr("static-b")),
			leaving("stranger", nil),
			leaving(jb.MemberID, kmsg.StringPtr("")), // the empty instance id matches nobody
			leaving("", kmsg.StringPtr("unknown-instance")),
		}
		resp := wa.do(leaveReq(v, groupID, members...)).(*kmsg.LeaveGroupResponse)
		want := []int16{0, 0, kerr.UnknownMemberID.Code, kerr.UnknownMemberID.Code, kerr.UnknownMemberID.Code}
		if resp.ErrorCode != 0 || len(resp.Members) != len(want) {
			t.Fatalf("v%d: %+v", v, resp)
		}
		for i, rm := range resp.Members {
			sent := members[i]
			if rm.ErrorCode != want[i] || rm.MemberID != sent.MemberID || (rm.InstanceID == nil) != (sent.InstanceID == nil) ||
				rm.InstanceID != nil && *rm.InstanceID != *sent.InstanceID {
				t.Fatalf("v%d member %d: %+v, sent %+v", v, i, rm, sent)
			}
		}
		waitGroupState(t, srv, groupID, "Empty", 0)

		// A missing group: each member UNKNOWN_MEMBER_ID, no top-level
		// error (Kafka's GroupCoordinatorService.leaveGroup).
		resp = wa.do(leaveReq(v, "nobody", members[:2]...)).(*kmsg.LeaveGroupResponse)
		if resp.ErrorCode != 0 || len(resp.Members) != 2 ||
			resp.Members[0].ErrorCode != kerr.UnknownMemberID.Code || resp.Members[1].ErrorCode != kerr.UnknownMemberID.Code ||
			resp.Members[1].InstanceID == nil || *resp.Members[1].InstanceID != "static-b" {
			t.Fatalf("v%d missing group: %+v", v, resp)
		}
		// The empty group id is a top-level error.
		resp = wa.do(leaveReq(v, "", members[:2]...)).(*kmsg.LeaveGroupResponse)
		if resp.ErrorCode != kerr.InvalidGroupID.Code || len(resp.Members) != 0 {
			t.Fatalf("v%d empty group id: %+v", v, resp)
		}
	}
}

// TestLeaveGroupPendingMember: a member id handed out with
// MEMBER_ID_REQUIRED may leave before it ever joined.
func TestLeaveGroupPendingMember(t *testing.T) {
	srv := newTestServer(t, nil)
	w := dialWire(t, srv)
	first := w.do(joinReq(maxJoinVersion, "pending", "")).(*kmsg.JoinGroupResponse)
	checkMemberIDRequired(t, first)
	resp := w.do(leaveReq(maxLeaveVersion, "pending", leaving(first.MemberID, nil))).(*kmsg.LeaveGroupResponse)
	if resp.ErrorCode != 0 || len(resp.Members) != 1 || resp.Members[0].ErrorCode != 0 {
		t.Fatalf("pending member leaves: %+v", resp)
	}
	// The id is forgotten.
	if j := w.do(joinReq(maxJoinVersion, "pending", first.MemberID)).(*kmsg.JoinGroupResponse); j.ErrorCode != kerr.UnknownMemberID.Code {
		t.Fatalf("join with the forgotten id: %v", kerr.ErrorForCode(j.ErrorCode))
	}
}

func TestLeaveGroupRoundTrip(t *testing.T) {
	srv := newTestServer(t, nil)
	checkRoundTrip(t, srv, func(v int16) kmsg.Request {
		return leaveReq(v, "nobody", leaving("m", nil), leaving("", kmsg.StringPtr("i")))
	})
}
