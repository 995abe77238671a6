package broker

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/internal/testenv"
)

// Newest versions of the group APIs, as served.
var (
	maxJoinVersion      = kmsgMax(int16(kmsg.JoinGroup))
	maxSyncVersion      = kmsgMax(int16(kmsg.SyncGroup))
	maxHeartbeatVersion = kmsgMax(int16(kmsg.Heartbeat))
	maxLeaveVersion     = kmsgMax(int16(kmsg.LeaveGroup))
	maxDescribeVersion  = kmsgMax(int16(kmsg.DescribeGroups))
	maxListVersion      = kmsgMax(int16(kmsg.ListGroups))
)

// testGroupSessionMs is the session and rebalance timeout of test members:
// within Kafka's default bounds and far longer than any test step.
const testGroupSessionMs = 10000

// protocolMeta is the metadata test members send for a protocol.
func protocolMeta(name string) []byte { return []byte("meta-" + name) }

// joinReq builds a JoinGroup request of a "consumer" member supporting the
// given protocols ("range" if none).
func joinReq(v int16, groupID, memberID string, protocols ...string) *kmsg.JoinGroupRequest {
	req := kmsg.NewPtrJoinGroupRequest()
	req.Version = v
	req.Group = groupID
	req.MemberID = memberID
	req.SessionTimeoutMillis = testGroupSessionMs
	req.RebalanceTimeoutMillis = testGroupSessionMs
	req.ProtocolType = "consumer"
	if len(protocols) == 0 {
		protocols = []string{"range"}
	}
	for _, name := range protocols {
		p := kmsg.NewJoinGroupRequestProtocol()
		p.Name, p.Metadata = name, protocolMeta(name)
		req.Protocols = append(req.Protocols, p)
	}
	return req
}

// joinNew joins a new member at version v over w and returns the answer
// once the join phase completes; from v4 it first goes through
// MEMBER_ID_REQUIRED (KIP-394), checking that answer. Only for joins that
// complete without another member's help.
func joinNew(t *testing.T, w *wireConn, v int16, groupID string) *kmsg.JoinGroupResponse {
	t.Helper()
	memberID := ""
	if v >= 4 {
		resp := w.do(joinReq(v, groupID, "")).(*kmsg.JoinGroupResponse)
		checkMemberIDRequired(t, resp)
		memberID = resp.MemberID
	}
	resp := w.do(joinReq(v, groupID, memberID)).(*kmsg.JoinGroupResponse)
	if resp.ErrorCode != 0 {
		t.Fatalf("join v%d: error %v", v, kerr.ErrorForCode(resp.ErrorCode))
	}
	if memberID != "" && resp.MemberID != memberID {
		t.Fatalf("join v%d: member id %q, want %q", v, resp.MemberID, memberID)
	}
	return resp
}

// checkMemberIDRequired checks a first JoinGroup answer under KIP-394.
func checkMemberIDRequired(t *testing.T, resp *kmsg.JoinGroupResponse) {
	t.Helper()
	if resp.ErrorCode != kerr.MemberIDRequired.Code || resp.Generation != -1 || resp.LeaderID != "" || len(resp.Members) != 0 {
		t.Fatalf("first join: %+v", resp)
	}
	// Kafka's member ids are the client id, "-" and a UUID.
	if !strings.HasPrefix(resp.MemberID, "wire-test-") || len(resp.MemberID) != len("wire-test-")+36 {
		t.Fatalf("assigned member id %q", resp.MemberID)
	}
}

// describeOne describes one group at the newest version.
func describeOne(t *testing.T, srv *InProcess, groupID string) kmsg.DescribeGroupsResponseGroup {
	t.Helper()
	req := kmsg.NewPtrDescribeGroupsRequest()
	req.Version = maxDescribeVersion
	req.Groups = []string{groupID}
	resp := adminRequest[*kmsg.DescribeGroupsResponse](t, srv, req)
	if len(resp.Groups) != 1 {
		t.Fatalf("describe %s: %+v", groupID, resp.Groups)
	}
	return resp.Groups[0]
}

// waitGroupState waits until the group is in state (and, if members >= 0,
// has that many members).
func waitGroupState(t *testing.T, srv *InProcess, groupID, state string, members int) kmsg.DescribeGroupsResponseGroup {
	t.Helper()
	var g kmsg.DescribeGroupsResponseGroup
	testenv.Eventually(t, 10*time.Second, fmt.Sprintf("group %s in state %s with %d members", groupID, state, members), func() bool {
		g = describeOne(t, srv, groupID)
		return g.State == state && (members < 0 || len(g.Members) == members)
	})
	return g
}

// TestJoinGroupVersions: a lone member joins at every version and becomes
// leader of generation 1, with the fields of that version.
func TestJoinGroupVersions(t *testing.T) {
	srv := newTestServer(t, nil)
	w := dialWire(t, srv)
	for v := int16(0); v <= maxJoinVersion; v++ {
		groupID := "join-v" + string(rune('0'+v))
		resp := joinNew(t, w, v, groupID)
		if resp.Generation != 1 || resp.LeaderID != resp.MemberID || !strings.HasPrefix(resp.MemberID, "wire-test-") {
			t.Fatalf("v%d: %+v", v, resp)
		}
		if resp.Protocol == nil || *resp.Protocol != "range" {
			t.Fatalf("v%d: protocol %v", v, resp.Protocol)
		}
		wantType := v >= 7
		if (resp.ProtocolType != nil) != wantType || wantType && *resp.ProtocolType != "consumer" {
			t.Fatalf("v%d: protocol type %v", v, resp.ProtocolType)
		}
		if len(resp.Members) != 1 || resp.Members[0].MemberID != resp.MemberID ||
			!bytes.Equal(resp.Members[0].ProtocolMetadata, protocolMeta("range")) || resp.Members[0].InstanceID != nil {
			t.Fatalf("v%d: members %+v", v, resp.Members)
		}
		g := describeOne(t, srv, groupID)
		if g.State != "CompletingRebalance" || len(g.Members) != 1 {
			t.Fatalf("v%d: described %+v", v, g)
		}
		// Kafka's client host is InetAddress.toString: "/" and the IP.
		if m := g.Members[0]; m.MemberID != resp.MemberID || m.ClientID != "wire-test" || m.ClientHost != "/127.0.0.1" {
			t.Fatalf("v%d: member %+v", v, m)
		}
	}
}

// TestJoinGroupMemberIDRequired is KIP-394's round trip: from v4 a member
// without an id is given one and must rejoin with it; until then it is not
// a member.
func TestJoinGroupMemberIDRequired(t *testing.T) {
	srv := newTestServer(t, nil)
	w := dialWire(t, srv)
	for _, v := range []int16{4, 7, maxJoinVersion} {
		groupID := "kip394-" + string(rune('0'+v))
		first := w.do(joinReq(v, groupID, "")).(*kmsg.JoinGroupResponse)
		checkMemberIDRequired(t, first)
		if v >= 7 && (first.ProtocolType != nil || first.Protocol != nil) {
			t.Fatalf("v%d: error answer has protocol %v %v", v, first.ProtocolType, first.Protocol)
		}
		if g := describeOne(t, srv, groupID); g.State != "Empty" || len(g.Members) != 0 {
			t.Fatalf("v%d: pending member is a member: %+v", v, g)
		}
		resp := w.do(joinReq(v, groupID, first.MemberID)).(*kmsg.JoinGroupResponse)
		if resp.ErrorCode != 0 || resp.MemberID != first.MemberID || resp.Generation != 1 || resp.LeaderID != first.MemberID {
			t.Fatalf("v%d: rejoin %+v", v, resp)
		}
		// A made-up member id is not a pending one.
		bad := w.do(joinReq(v, groupID, "wire-test-made-up")).(*kmsg.JoinGroupResponse)
		if bad.ErrorCode != kerr.UnknownMemberID.Code || bad.MemberID != "wire-test-made-up" || bad.Generation != -1 {
			t.Fatalf("v%d: made-up id %+v", v, bad)
		}
	}
}

// TestJoinGroupBadInput: what the handler and the coordinator refuse.
func TestJoinGroupBadInput(t *testing.T) {
	srv := newTestServer(t, nil)
	w := dialWire(t, srv)
	joinNew(t, w, maxJoinVersion, "consumers")
	for _, tc := range []struct {
		name string
		req  func() *kmsg.JoinGroupRequest
		want *kerr.Error
	}{
		{"empty group id", func() *kmsg.JoinGroupRequest { return joinReq(maxJoinVersion, "", "") }, kerr.InvalidGroupID},
		{"other protocol type", func() *kmsg.JoinGroupRequest {
			r := joinReq(3, "consumers", "")
			r.ProtocolType = "connect"
			return r
		}, kerr.InconsistentGroupProtocol},
		{"no common protocol", func() *kmsg.JoinGroupRequest { return joinReq(3, "consumers", "", "sticky") }, kerr.InconsistentGroupProtocol},
		{"empty protocol type", func() *kmsg.JoinGroupRequest {
			r := joinReq(3, "fresh", "")
			r.ProtocolType = ""
			return r
		}, kerr.InconsistentGroupProtocol},
		{"no protocols", func() *kmsg.JoinGroupRequest {
			r := joinReq(3, "fresh", "")
			r.Protocols = nil
			return r
		}, kerr.InconsistentGroupProtocol},
		{"session timeout too short", func() *kmsg.JoinGroupRequest {
			r := joinReq(maxJoinVersion, "fresh", "")
			r.SessionTimeoutMillis = 10
			return r
		}, kerr.InvalidSessionTimeout},
		{"session timeout too long", func() *kmsg.JoinGroupRequest {
			r := joinReq(0, "fresh", "")
			r.SessionTimeoutMillis = 1 << 30
			return r
		}, kerr.InvalidSessionTimeout},
		{"unknown member of missing group", func() *kmsg.JoinGroupRequest { return joinReq(5, "missing", "someone") }, kerr.UnknownMemberID},
		{"empty instance id", func() *kmsg.JoinGroupRequest {
			r := joinReq(5, "fresh", "")
			r.InstanceID = kmsg.StringPtr("")
			return r
		}, kerr.InvalidRequest},
		{"instance id with a space", func() *kmsg.JoinGroupRequest {
			r := joinReq(maxJoinVersion, "fresh", "")
			r.InstanceID = kmsg.StringPtr("my instance")
			return r
		}, kerr.InvalidRequest},
		{"instance id ..", func() *kmsg.JoinGroupRequest {
			r := joinReq(5, "fresh", "")
			r.InstanceID = kmsg.StringPtr("..")
			return r
		}, kerr.InvalidRequest},
		{"instance id too long", func() *kmsg.JoinGroupRequest {
			r := joinReq(5, "fresh", "")
			r.InstanceID = kmsg.StringPtr(strings.Repeat("i", 250))
			return r
		}, kerr.InvalidRequest},
	} {
		req := tc.req()
		resp := w.do(req).(*kmsg.JoinGroupResponse)
		if resp.ErrorCode != tc.want.Code || resp.Generation != -1 || resp.LeaderID != "" || len(resp.Members) != 0 {
			t.Fatalf("%s: error %v, %+v", tc.name, kerr.ErrorForCode(resp.ErrorCode), resp)
		}
		if tc.want != kerr.InconsistentGroupProtocol && resp.MemberID != req.MemberID {
			t.Fatalf("%s: member id %q, want the request's %q", tc.name, resp.MemberID, req.MemberID)
		}
	}
	// None of them joined anybody.
	if g := describeOne(t, srv, "consumers"); len(g.Members) != 1 {
		t.Fatalf("consumers: %+v", g)
	}
	// The longest legal instance id is accepted.
	r := joinReq(5, "fresh", "")
	r.InstanceID = kmsg.StringPtr(strings.Repeat("i", 249))
	if resp := w.do(r).(*kmsg.JoinGroupResponse); resp.ErrorCode != 0 || !strings.HasPrefix(resp.MemberID, *r.InstanceID+"-") {
		t.Fatalf("249-character instance id: %+v", resp)
	}
}

func TestValidGroupInstanceID(t *testing.T) {
	for id, want := range map[string]bool{
		"a": true, "consumer-1.host_A": true, "...": true, strings.Repeat("x", 249): true,
		"": false, ".": false, "..": false, strings.Repeat("x", 250): false,
		"a b": false, "a/b": false, "é": false, "a\x00": false,
	} {
		if got := validGroupInstanceID(id); got != want {
			t.Errorf("validGroupInstanceID(%q) = %v", id, got)
		}
	}
}

// TestJoinGroupStaticMember: a static member (KIP-345) joins without
// MEMBER_ID_REQUIRED; when it rejoins with its instance id and no member
// id, it gets a new member id in the same generation, and the old one is
// fenced. v9 tells the rejoining leader to skip the assignment (KIP-814).
func TestJoinGroupStaticMember(t *testing.T) {
	srv := newTestServer(t, nil)
	w := dialWire(t, srv)
	for _, v := range []int16{5, maxJoinVersion} {
		groupID := "static-" + string(rune('0'+v))
		req := joinReq(v, groupID, "")
		req.InstanceID = kmsg.StringPtr("host-1")
		first := w.do(req).(*kmsg.JoinGroupResponse)
		if first.ErrorCode != 0 || !strings.HasPrefix(first.MemberID, "host-1-") || first.Generation != 1 ||
			len(first.Members) != 1 || first.Members[0].InstanceID == nil || *first.Members[0].InstanceID != "host-1" {
			t.Fatalf("v%d: first join %+v", v, first)
		}
		sync := w.do(syncReq(maxSyncVersion, groupID, first.MemberID, "host-1", 1, "range", map[string]string{first.MemberID: "a"})).(*kmsg.SyncGroupResponse)
		if sync.ErrorCode != 0 || string(sync.MemberAssignment) != "a" {
			t.Fatalf("v%d: sync %+v", v, sync)
		}
		again := w.do(req).(*kmsg.JoinGroupResponse)
		if again.ErrorCode != 0 || again.MemberID == first.MemberID || !strings.HasPrefix(again.MemberID, "host-1-") || again.Generation != 1 {
			t.Fatalf("v%d: rejoin %+v", v, again)
		}
		if v >= 9 {
			if !again.SkipAssignment || again.LeaderID != again.MemberID || len(again.Members) != 1 {
				t.Fatalf("v%d: rejoin of the leader %+v", v, again)
			}
		} else if again.LeaderID != first.MemberID || len(again.Members) != 0 {
			// Before v9 the old leader id keeps it from assigning.
			t.Fatalf("v%d: rejoin of the leader %+v", v, again)
		}
		hb := heartbeatReq(maxHeartbeatVersion, groupID, first.MemberID, 1)
		hb.InstanceID = kmsg.StringPtr("host-1")
		if resp := w.do(hb).(*kmsg.HeartbeatResponse); resp.ErrorCode != kerr.FencedInstanceID.Code {
			t.Fatalf("v%d: heartbeat of the replaced id: %v", v, kerr.ErrorForCode(resp.ErrorCode))
		}
		hb.MemberID = again.MemberID
		if resp := w.do(hb).(*kmsg.HeartbeatResponse); resp.ErrorCode != 0 {
			t.Fatalf("v%d: heartbeat of the new id: %v", v, kerr.ErrorForCode(resp.ErrorCode))
		}
		if g := describeOne(t, srv, groupID); g.State != "Stable" || len(g.Members) != 1 || string(g.Members[0].MemberAssignment) != "a" {
			t.Fatalf("v%d: described %+v", v, g)
		}
	}
}

// TestJoinGroupParkedDoesNotBlockConnection: a parked JoinGroup leaves its
// connection's reader free; the responses still come in request order.
func TestJoinGroupParkedDoesNotBlockConnection(t *testing.T) {
	srv := newTestServer(t, nil)
	wa, wb := dialWire(t, srv), dialWire(t, srv)
	a := joinNew(t, wa, 5, "busy")
	if resp := wa.do(syncReq(3, "busy", a.MemberID, "", 1, "", nil)).(*kmsg.SyncGroupResponse); resp.ErrorCode != 0 {
		t.Fatalf("sync: %v", kerr.ErrorForCode(resp.ErrorCode))
	}
	// B's join parks until A rejoins; behind it on the same connection,
	// a v0 member joins another group.
	parked := joinReq(3, "busy", "")
	corrParked := wb.send(parked)
	other := joinReq(0, "other", "")
	corrOther := wb.send(other)
	// The second request was handled while the first is parked.
	waitGroupState(t, srv, "other", "CompletingRebalance", 1)
	if g := describeOne(t, srv, "busy"); g.State != "PreparingRebalance" {
		t.Fatalf("busy: %+v", g)
	}
	if resp := wa.do(joinReq(5, "busy", a.MemberID)).(*kmsg.JoinGroupResponse); resp.ErrorCode != 0 || resp.Generation != 2 || len(resp.Members) != 2 {
		t.Fatalf("rejoin of the leader: %+v", resp)
	}
	pr := parked.ResponseKind().(*kmsg.JoinGroupResponse)
	wb.recv(corrParked, pr)
	if pr.ErrorCode != 0 || pr.Generation != 2 || pr.LeaderID != a.MemberID {
		t.Fatalf("parked join: %+v", pr)
	}
	or := other.ResponseKind().(*kmsg.JoinGroupResponse)
	wb.recv(corrOther, or)
	if or.ErrorCode != 0 || or.Generation != 1 {
		t.Fatalf("other join: %+v", or)
	}
}

// TestJoinGroupParkedAtShutdown: shutting down answers a parked JoinGroup
// with NOT_COORDINATOR, so that its client looks for the coordinator again.
func TestJoinGroupParkedAtShutdown(t *testing.T) {
	srv := newTestServer(t, func(c *Config) { c.GroupInitialRebalanceDelay = time.Minute })
	w := dialWire(t, srv)
	req := joinReq(1, "slow", "")
	corr := w.send(req)
	waitGroupState(t, srv, "slow", "PreparingRebalance", 1)
	closed := make(chan error, 1)
	go func() { closed <- srv.Close() }()
	resp := req.ResponseKind().(*kmsg.JoinGroupResponse)
	w.recv(corr, resp)
	if resp.ErrorCode != kerr.NotCoordinator.Code || resp.Generation != -1 {
		t.Fatalf("parked join at shutdown: %+v", resp)
	}
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
}

func TestJoinGroupRoundTrip(t *testing.T) {
	srv := newTestServer(t, nil)
	w := dialWire(t, srv)
	leader := joinNew(t, w, maxJoinVersion, "roundtrip")
	checkRoundTrip(t, srv, func(v int16) kmsg.Request {
		if v >= 5 {
			// The leader of a CompletingRebalance group with unchanged
			// metadata gets the generation again, with every member.
			req := joinReq(v, "roundtrip", leader.MemberID)
			return req
		}
		// A new member of its own group, answered after the (zero)
		// initial delay.
		return joinReq(v, "roundtrip-v"+string(rune('0'+v)), "")
	})
}

// TestGroupLifecycleWithKgo drives one member through kgo's Request, which
// finds the coordinator with FindCoordinator and negotiates the newest
// versions: join (KIP-394 round trip), sync, heartbeat, leave.
func TestGroupLifecycleWithKgo(t *testing.T) {
	srv := newTestServer(t, nil)
	cl := newClient(t, srv, kgo.ClientID("lifecycle"))
	ctx := testCtx(t)
	join := joinReq(maxJoinVersion, "kgo-group", "")
	first, err := join.RequestWith(ctx, cl)
	if err != nil || first.ErrorCode != kerr.MemberIDRequired.Code || !strings.HasPrefix(first.MemberID, "lifecycle-") {
		t.Fatalf("first join: %+v, %v", first, err)
	}
	join.MemberID = first.MemberID
	joined, err := join.RequestWith(ctx, cl)
	if err != nil || joined.ErrorCode != 0 || joined.Generation != 1 || joined.LeaderID != first.MemberID {
		t.Fatalf("join: %+v, %v", joined, err)
	}
	id := joined.MemberID
	synced, err := syncReq(maxSyncVersion, "kgo-group", id, "", 1, "", map[string]string{id: "all"}).RequestWith(ctx, cl)
	if err != nil || synced.ErrorCode != 0 || string(synced.MemberAssignment) != "all" {
		t.Fatalf("sync: %+v, %v", synced, err)
	}
	hb, err := heartbeatReq(maxHeartbeatVersion, "kgo-group", id, 1).RequestWith(ctx, cl)
	if err != nil || hb.ErrorCode != 0 {
		t.Fatalf("heartbeat: %+v, %v", hb, err)
	}
	left, err := leaveReq(maxLeaveVersion, "kgo-group", leaving(id, nil)).RequestWith(ctx, cl)
	if err != nil || left.ErrorCode != 0 || len(left.Members) != 1 || left.Members[0].ErrorCode != 0 {
		t.Fatalf("leave: %+v, %v", left, err)
	}
	waitGroupState(t, srv, "kgo-group", "Empty", 0)
}
