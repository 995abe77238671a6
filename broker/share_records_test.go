package broker

import (
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// describeShare describes one share group over the wire.
func describeShare(t *testing.T, srv *InProcess, group string) kmsg.ShareGroupDescribeResponseGroup {
	t.Helper()
	req := kmsg.NewPtrShareGroupDescribeRequest()
	req.Version = 1
	req.GroupIDs = []string{group}
	resp := dialWire(t, srv).do(req).(*kmsg.ShareGroupDescribeResponse)
	if len(resp.Groups) != 1 || resp.Groups[0].ErrorCode != 0 {
		t.Fatalf("describe %s: %+v", group, resp.Groups)
	}
	return resp.Groups[0]
}

// shareMembers renders a description's members with their epochs and
// assignments, for comparison.
func shareMembers(g kmsg.ShareGroupDescribeResponseGroup) string {
	out := fmt.Sprintf("epoch %d assignment %d:", g.GroupEpoch, g.AssignmentEpoch)
	for _, m := range g.Members {
		out += fmt.Sprintf(" %s@%d%v", m.MemberID, m.MemberEpoch, m.Assignment.TopicPartitions)
	}
	return out
}

// TestShareMembershipSurvivesRestart: two members split a topic's
// partitions; after a kill -9 (RestartCrashed) and after a clean restart
// the group comes back with the same epochs and assignments, both members
// heartbeat at their epochs without rejoining, and nothing moves. A
// member that leaves stays gone after a restart, and a deleted group too.
func TestShareMembershipSurvivesRestart(t *testing.T) {
	srv := newTestServer(t, nil)
	createTopic(t, srv, "q", 4)
	a := joinShare(t, srv, "sg", "a", "q")
	b := joinShare(t, srv, "sg", "b", "q")
	if code := a.heartbeat(); code != 0 {
		t.Fatalf("a heartbeat: %v", kerr.ErrorForCode(code))
	}
	before := shareMembers(describeShare(t, srv, "sg"))
	if len(a.partitions)+len(b.partitions) != 4 || a.epoch != b.epoch {
		t.Fatalf("assignments %v %v at epochs %d %d", a.partitions, b.partitions, a.epoch, b.epoch)
	}
	for i, restart := range []func() error{srv.RestartCrashed, func() error { return srv.Restart(testCtx(t)) }} {
		if err := restart(); err != nil {
			t.Fatal(err)
		}
		if after := shareMembers(describeShare(t, srv, "sg")); after != before {
			t.Fatalf("restart %d: group %s, before %s", i, after, before)
		}
		for _, m := range []*shareMember{a, b} {
			epoch, parts := m.epoch, fmt.Sprint(m.partitions)
			m.w = dialWire(t, srv)
			if code := m.heartbeat(); code != 0 {
				t.Fatalf("restart %d: %s heartbeats at epoch %d: %v", i, m.id, epoch, kerr.ErrorForCode(code))
			}
			if m.epoch != epoch || fmt.Sprint(m.partitions) != parts {
				t.Fatalf("restart %d: %s at epoch %d with %v, before %d with %s", i, m.id, m.epoch, m.partitions, epoch, parts)
			}
		}
	}
	// b leaves: a gets every partition at a new epoch, which a crash
	// keeps.
	leave := kmsg.NewPtrShareGroupHeartbeatRequest()
	leave.Version = 1
	leave.GroupID, leave.MemberID, leave.MemberEpoch = "sg", "b", -1
	if resp := b.w.do(leave).(*kmsg.ShareGroupHeartbeatResponse); resp.ErrorCode != 0 {
		t.Fatalf("b leaves: %v", kerr.ErrorForCode(resp.ErrorCode))
	}
	if code := a.heartbeat(); code != 0 || len(a.partitions) != 4 {
		t.Fatalf("a after b left: %v, partitions %v", kerr.ErrorForCode(code), a.partitions)
	}
	before = shareMembers(describeShare(t, srv, "sg"))
	if err := srv.RestartCrashed(); err != nil {
		t.Fatal(err)
	}
	if after := shareMembers(describeShare(t, srv, "sg")); after != before {
		t.Fatalf("after b left and a crash: group %s, before %s", after, before)
	}
	a.w = dialWire(t, srv)
	leave.MemberID, leave.MemberEpoch = "a", a.epoch
	leave.MemberEpoch = -1
	if resp := a.w.do(leave).(*kmsg.ShareGroupHeartbeatResponse); resp.ErrorCode != 0 {
		t.Fatalf("a leaves: %v", kerr.ErrorForCode(resp.ErrorCode))
	}
	del := kmsg.NewPtrDeleteGroupsRequest()
	del.Version = 2
	del.Groups = []string{"sg"}
	if resp := a.w.do(del).(*kmsg.DeleteGroupsResponse); resp.Groups[0].ErrorCode != 0 {
		t.Fatalf("delete: %v", kerr.ErrorForCode(resp.Groups[0].ErrorCode))
	}
	if err := srv.RestartCrashed(); err != nil {
		t.Fatal(err)
	}
	req := kmsg.NewPtrShareGroupDescribeRequest()
	req.Version = 1
	req.GroupIDs = []string{"sg"}
	if resp := dialWire(t, srv).do(req).(*kmsg.ShareGroupDescribeResponse); resp.Groups[0].ErrorCode != kerr.GroupIDNotFound.Code {
		t.Fatalf("deleted group after a crash: %+v", resp.Groups[0])
	}
}
