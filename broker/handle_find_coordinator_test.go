package broker

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func findCoordinatorAt(t *testing.T, srv *InProcess, v int16, keyType int8, keys ...string) *kmsg.FindCoordinatorResponse {
	t.Helper()
	req := kmsg.NewPtrFindCoordinatorRequest()
	req.Version = v
	req.CoordinatorType = keyType
	if v < 4 {
		req.CoordinatorKey = keys[0]
	} else {
		req.CoordinatorKeys = keys
	}
	return adminRequest[*kmsg.FindCoordinatorResponse](t, srv, req)
}

// TestFindCoordinatorSingle: v0–v3 name one key; this broker coordinates
// every group and transactional id, the empty one included (Kafka hashes
// any key to a partition).
func TestFindCoordinatorSingle(t *testing.T) {
	srv := newTestServer(t, func(c *Config) { c.NodeID = 3 })
	for v := int16(0); v < 4; v++ {
		types := []int8{coordinatorGroup}
		if v >= 1 {
			types = append(types, coordinatorTransaction)
		}
		for _, keyType := range types {
			for _, key := range []string{"my-group", ""} {
				resp := findCoordinatorAt(t, srv, v, keyType, key)
				if resp.ErrorCode != 0 || resp.ErrorMessage != nil || resp.NodeID != 3 || resp.Host != srv.listeners[0].advHost || resp.Port != srv.listeners[0].advPort {
					t.Fatalf("v%d type %d %q: %+v", v, keyType, key, resp)
				}
			}
		}
	}
	// Share groups (type 2) and unknown types: INVALID_REQUEST, no node.
	for _, keyType := range []int8{2, 9, -1} {
		resp := findCoordinatorAt(t, srv, 1, keyType, "g")
		if resp.ErrorCode != kerr.InvalidRequest.Code || resp.ErrorMessage == nil || resp.NodeID != -1 || resp.Host != "" || resp.Port != -1 {
			t.Fatalf("type %d: %+v", keyType, resp)
		}
	}
}

// TestFindCoordinatorBatched: v4+ (KIP-699) answer each key.
func TestFindCoordinatorBatched(t *testing.T) {
	srv := newTestServer(t, func(c *Config) { c.NodeID = 3 })
	for v := int16(4); v <= kmsgMax(int16(kmsg.FindCoordinator)); v++ {
		keys := []string{"a", "", "b"}
		for _, keyType := range []int8{coordinatorGroup, coordinatorTransaction} {
			// A repeated key is answered once.
			resp := findCoordinatorAt(t, srv, v, keyType, "a", "", "a", "b", "", "a")
			if len(resp.Coordinators) != len(keys) {
				t.Fatalf("v%d type %d: %+v", v, keyType, resp.Coordinators)
			}
			for i, rc := range resp.Coordinators {
				if rc.Key != keys[i] || rc.ErrorCode != 0 || rc.ErrorMessage != nil || rc.NodeID != 3 || rc.Host != srv.listeners[0].advHost || rc.Port != srv.listeners[0].advPort {
					t.Fatalf("v%d type %d key %d: %+v", v, keyType, i, rc)
				}
			}
		}
		for _, keyType := range []int8{2, 3} {
			resp := findCoordinatorAt(t, srv, v, keyType, "x", "y")
			if len(resp.Coordinators) != 2 {
				t.Fatalf("v%d type %d: %+v", v, keyType, resp.Coordinators)
			}
			for i, rc := range resp.Coordinators {
				if rc.Key != []string{"x", "y"}[i] || rc.ErrorCode != kerr.InvalidRequest.Code || rc.NodeID != -1 || rc.Host != "" || rc.Port != -1 {
					t.Fatalf("v%d type %d: %+v", v, keyType, rc)
				}
			}
		}
		if resp := findCoordinatorAt(t, srv, v, coordinatorGroup); len(resp.Coordinators) != 0 {
			t.Fatalf("v%d no keys: %+v", v, resp.Coordinators)
		}
	}
	// kadm finds coordinators through the newest version.
	adm := newAdmin(t, srv)
	ctx := testCtx(t)
	for _, rs := range []interface {
		Error() error
	}{adm.FindGroupCoordinators(ctx, "g1", "g2"), adm.FindTxnCoordinators(ctx, "t1")} {
		if err := rs.Error(); err != nil {
			t.Fatal(err)
		}
	}
	for _, r := range adm.FindGroupCoordinators(ctx, "g1", "g2") {
		if r.NodeID != 3 || r.Host != srv.listeners[0].advHost || r.Port != srv.listeners[0].advPort {
			t.Fatalf("kadm: %+v", r)
		}
	}
}

func TestFindCoordinatorRoundTrip(t *testing.T) {
	srv := newTestServer(t, nil)
	checkRoundTrip(t, srv, func(v int16) kmsg.Request {
		req := kmsg.NewPtrFindCoordinatorRequest()
		req.CoordinatorKey = "g"
		req.CoordinatorKeys = []string{"g", "h"}
		req.CoordinatorType = 2 // an error answer: every field set
		if v%2 == 0 {
			req.CoordinatorType = coordinatorGroup
		}
		return req
	})
}
