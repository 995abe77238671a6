package broker

import (
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func describeGroupsAt(t *testing.T, srv *InProcess, v int16, ops bool, groups ...string) *kmsg.DescribeGroupsResponse {
	t.Helper()
	req := kmsg.NewPtrDescribeGroupsRequest()
	req.Version = v
	req.Groups = groups
	req.IncludeAuthorizedOperations = ops
	return adminRequest[*kmsg.DescribeGroupsResponse](t, srv, req)
}

// TestDescribeGroupsMissing: a group that does not exist is Dead without
// error before v6 and GROUP_ID_NOT_FOUND from v6 (KIP-1043).
func TestDescribeGroupsMissing(t *testing.T) {
	srv := newTestServer(t, nil)
	for v := int16(0); v <= maxDescribeVersion; v++ {
		for _, id := range []string{"nobody", ""} {
			resp := describeGroupsAt(t, srv, v, false, id)
			if len(resp.Groups) != 1 {
				t.Fatalf("v%d: %+v", v, resp.Groups)
			}
			g := resp.Groups[0]
			if g.Group != id || g.State != "Dead" || g.ProtocolType != "" || g.Protocol != "" || len(g.Members) != 0 ||
				g.AuthorizedOperations != -2147483648 {
				t.Fatalf("v%d %q: %+v", v, id, g)
			}
			if v < 6 && (g.ErrorCode != 0 || g.ErrorMessage != nil) {
				t.Fatalf("v%d %q: error %v", v, id, kerr.ErrorForCode(g.ErrorCode))
			}
			if v >= 6 && (g.ErrorCode != kerr.GroupIDNotFound.Code || g.ErrorMessage == nil || *g.ErrorMessage != "Group "+id+" not found.") {
				t.Fatalf("v%d %q: error %v %v", v, id, kerr.ErrorForCode(g.ErrorCode), g.ErrorMessage)
			}
		}
	}
	// Authorized operations: only for groups described without error.
	if g := describeGroupsAt(t, srv, 5, true, "nobody").Groups[0]; g.AuthorizedOperations != groupAuthorizedOps {
		t.Fatalf("v5 with operations: %d", g.AuthorizedOperations)
	}
	if g := describeGroupsAt(t, srv, 6, true, "nobody").Groups[0]; g.AuthorizedOperations != -2147483648 {
		t.Fatalf("v6 not found with operations: %d", g.AuthorizedOperations)
	}
	// kadm reports the error.
	described, err := newAdmin(t, srv).DescribeGroups(testCtx(t), "nobody")
	if err != nil || described["nobody"].Err != kerr.GroupIDNotFound {
		t.Fatalf("kadm: %+v, %v", described, err)
	}
}

// TestDescribeGroups: members are described in every state; metadata and
// protocol only while Stable, and a first generation has no assignment
// before its SyncGroup.
func TestDescribeGroups(t *testing.T) {
	srv := newTestServer(t, nil)
	w := dialWire(t, srv)
	req := joinReq(maxJoinVersion, "described", "")
	req.InstanceID = kmsg.StringPtr("host-1")
	leader := w.do(req).(*kmsg.JoinGroupResponse)
	if leader.ErrorCode != 0 {
		t.Fatalf("join: %v", kerr.ErrorForCode(leader.ErrorCode))
	}
	id := leader.MemberID
	for _, v := range []int16{0, 3, 4, maxDescribeVersion} {
		// CompletingRebalance: no protocol, metadata or assignment.
		g := describeGroupsAt(t, srv, v, false, "described").Groups[0]
		if g.ErrorCode != 0 || g.State != "CompletingRebalance" || g.ProtocolType != "consumer" || g.Protocol != "" || len(g.Members) != 1 {
			t.Fatalf("v%d: %+v", v, g)
		}
		m := g.Members[0]
		if m.MemberID != id || m.ClientID != "wire-test" || m.ClientHost != "/127.0.0.1" || len(m.ProtocolMetadata) != 0 || len(m.MemberAssignment) != 0 {
			t.Fatalf("v%d member: %+v", v, m)
		}
		if wantInstance := v >= 4; (m.InstanceID != nil) != wantInstance || wantInstance && *m.InstanceID != "host-1" {
			t.Fatalf("v%d instance id: %v", v, m.InstanceID)
		}
	}
	if resp := w.do(syncReq(maxSyncVersion, "described", id, "host-1", 1, "", map[string]string{id: "assigned"})).(*kmsg.SyncGroupResponse); resp.ErrorCode != 0 {
		t.Fatalf("sync: %v", kerr.ErrorForCode(resp.ErrorCode))
	}
	for _, v := range []int16{0, 3, maxDescribeVersion} {
		resp := describeGroupsAt(t, srv, v, v >= 3, "described", "nobody", "described")
		if len(resp.Groups) != 2 || resp.Groups[0].Group != "described" || resp.Groups[1].Group != "nobody" {
			t.Fatalf("v%d: each group once, in request order: %+v", v, resp.Groups)
		}
		g := resp.Groups[0]
		if g.ErrorCode != 0 || g.State != "Stable" || g.Protocol != "range" || len(g.Members) != 1 {
			t.Fatalf("v%d: %+v", v, g)
		}
		if m := g.Members[0]; string(m.ProtocolMetadata) != string(protocolMeta("range")) || string(m.MemberAssignment) != "assigned" {
			t.Fatalf("v%d member: %+v", v, m)
		}
		if v >= 3 && g.AuthorizedOperations != groupAuthorizedOps {
			t.Fatalf("v%d operations: %d", v, g.AuthorizedOperations)
		}
	}
	// kadm describes through FindCoordinator v4+ and DescribeGroups v6.
	described, err := newAdmin(t, srv).DescribeGroups(testCtx(t), "described")
	if err != nil {
		t.Fatal(err)
	}
	d := described["described"]
	if d.Err != nil || d.State != "Stable" || d.Protocol != "range" || len(d.Members) != 1 || d.Members[0].MemberID != id ||
		d.Coordinator.NodeID != srv.Config().NodeID {
		t.Fatalf("kadm: %+v", d)
	}
	// kadm asks for the operations: a group's, as Kafka without an
	// authorizer reports them.
	ops := d.AuthorizedOperations
	slices.Sort(ops)
	if want := []kadm.ACLOperation{kadm.OpRead, kadm.OpDelete, kadm.OpDescribe, kadm.OpDescribeConfigs, kadm.OpAlterConfigs}; !slices.Equal(ops, want) {
		t.Fatalf("kadm operations %v, want %v", ops, want)
	}
}

func TestDescribeGroupsRoundTrip(t *testing.T) {
	srv := newTestServer(t, nil)
	w := dialWire(t, srv)
	leader := joinNew(t, w, maxJoinVersion, "roundtrip")
	if resp := w.do(syncReq(maxSyncVersion, "roundtrip", leader.MemberID, "", 1, "", nil)).(*kmsg.SyncGroupResponse); resp.ErrorCode != 0 {
		t.Fatalf("sync: %v", kerr.ErrorForCode(resp.ErrorCode))
	}
	checkRoundTrip(t, srv, func(v int16) kmsg.Request {
		req := kmsg.NewPtrDescribeGroupsRequest()
		req.Groups = []string{"roundtrip", "nobody"}
		req.IncludeAuthorizedOperations = true
		return req
	})
}
