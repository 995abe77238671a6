package broker

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func heartbeatReq(v int16, groupID, memberID string, gen int32) *kmsg.HeartbeatRequest {
	req := kmsg.NewPtrHeartbeatRequest()
	req.Version = v
	req.Group = groupID
	req.MemberID = memberID
	req.Generation = gen
	return req
}

func TestHeartbeat(t *testing.T) {
	srv := newTestServer(t, nil)
	w := dialWire(t, srv)
	leader := joinNew(t, w, maxJoinVersion, "beating")
	id := leader.MemberID
	for _, v := range []int16{0, 2, maxHeartbeatVersion} {
		for _, tc := range []struct {
			name string
			req  *kmsg.HeartbeatRequest
			want *kerr.Error // nil: no error
		}{
			// Between JoinGroup and SyncGroup a member may heartbeat.
			{"member", heartbeatReq(v, "beating", id, 1), nil},
			{"empty group id", heartbeatReq(v, "", id, 1), kerr.InvalidGroupID},
			// Kafka 4: a missing group is UNKNOWN_MEMBER_ID.
			{"missing group", heartbeatReq(v, "nobody", id, 1), kerr.UnknownMemberID},
			{"unknown member", heartbeatReq(v, "beating", "stranger", 1), kerr.UnknownMemberID},
			{"illegal generation", heartbeatReq(v, "beating", id, 2), kerr.IllegalGeneration},
			{"no generation", heartbeatReq(v, "beating", id, -1), kerr.IllegalGeneration},
		} {
			resp := w.do(tc.req).(*kmsg.HeartbeatResponse)
			want := int16(0)
			if tc.want != nil {
				want = tc.want.Code
			}
			if resp.ErrorCode != want {
				t.Fatalf("v%d %s: %v", v, tc.name, kerr.ErrorForCode(resp.ErrorCode))
			}
		}
	}
	// v3+: instance ids the group does not know, the empty one included,
	// match no member.
	for _, instance := range []string{"unknown-instance", ""} {
		req := heartbeatReq(3, "beating", id, 1)
		req.InstanceID = kmsg.StringPtr(instance)
		if resp := w.do(req).(*kmsg.HeartbeatResponse); resp.ErrorCode != kerr.UnknownMemberID.Code {
			t.Fatalf("instance id %q: %v", instance, kerr.ErrorForCode(resp.ErrorCode))
		}
	}
}

// TestHeartbeatSessionExpiry: a member that stops heartbeating is removed
// after its session timeout; its next heartbeat is UNKNOWN_MEMBER_ID.
func TestHeartbeatSessionExpiry(t *testing.T) {
	t.Parallel()
	// 3 s, not less: a heartbeat delayed by a loaded machine under -race
	// must not expire the member while the test means it to stay.
	const session = 3 * time.Second
	srv := newTestServer(t, func(c *Config) { c.GroupMinSessionTimeout = 100 * time.Millisecond })
	w := dialWire(t, srv)
	req := joinReq(maxJoinVersion, "expiring", "")
	first := w.do(req).(*kmsg.JoinGroupResponse)
	checkMemberIDRequired(t, first)
	req.MemberID = first.MemberID
	req.SessionTimeoutMillis = int32(session.Milliseconds())
	joined := w.do(req).(*kmsg.JoinGroupResponse)
	if joined.ErrorCode != 0 {
		t.Fatalf("join: %v", kerr.ErrorForCode(joined.ErrorCode))
	}
	id := joined.MemberID
	if resp := w.do(syncReq(maxSyncVersion, "expiring", id, "", 1, "", nil)).(*kmsg.SyncGroupResponse); resp.ErrorCode != 0 {
		t.Fatalf("sync: %v", kerr.ErrorForCode(resp.ErrorCode))
	}
	// Heartbeats keep it in the group beyond its session timeout.
	for start := time.Now(); time.Since(start) < session+session/2; {
		time.Sleep(200 * time.Millisecond)
		if resp := w.do(heartbeatReq(maxHeartbeatVersion, "expiring", id, 1)).(*kmsg.HeartbeatResponse); resp.ErrorCode != 0 {
			t.Fatalf("heartbeat: %v", kerr.ErrorForCode(resp.ErrorCode))
		}
	}
	waitGroupState(t, srv, "expiring", "Empty", 0)
	if resp := w.do(heartbeatReq(maxHeartbeatVersion, "expiring", id, 1)).(*kmsg.HeartbeatResponse); resp.ErrorCode != kerr.UnknownMemberID.Code {
		t.Fatalf("heartbeat after expiry: %v", kerr.ErrorForCode(resp.ErrorCode))
	}
}

func TestHeartbeatRoundTrip(t *testing.T) {
	srv := newTestServer(t, nil)
	w := dialWire(t, srv)
	leader := joinNew(t, w, maxJoinVersion, "roundtrip")
	checkRoundTrip(t, srv, func(v int16) kmsg.Request {
		return heartbeatReq(v, "roundtrip", leader.MemberID, 1)
	})
}
