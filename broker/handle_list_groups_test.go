package broker

import (
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func listGroupsAt(t *testing.T, srv *InProcess, v int16, states, types []string) *kmsg.ListGroupsResponse {
	t.Helper()
	req := kmsg.NewPtrListGroupsRequest()
	req.Version = v
	req.StatesFilter = states
	req.TypesFilter = types
	return adminRequest[*kmsg.ListGroupsResponse](t, srv, req)
}

// groupStates is a list response as group id → state (or protocol type
// before v4).
func groupStates(t *testing.T, resp *kmsg.ListGroupsResponse) map[string]string {
	t.Helper()
	if resp.ErrorCode != 0 {
		t.Fatalf("list groups: %v", kerr.ErrorForCode(resp.ErrorCode))
	}
	out := map[string]string{}
	for _, g := range resp.Groups {
		if resp.Version >= 4 {
			out[g.Group] = g.GroupState
		} else {
			out[g.Group] = g.ProtocolType
		}
		if resp.Version >= 5 && g.GroupType != "classic" {
			t.Fatalf("group type %q", g.GroupType)
		}
	}
	return out
}

// TestListGroups: an Empty and a Stable group, listed at every version,
// with the states (v4+) and types (v5+) filters.
func TestListGroups(t *testing.T) {
	srv := newTestServer(t, nil)
	w := dialWire(t, srv)
	if got := groupStates(t, listGroupsAt(t, srv, 0, nil, nil)); len(got) != 0 {
		t.Fatalf("no groups yet: %v", got)
	}
	stable := joinNew(t, w, maxJoinVersion, "stable")
	if resp := w.do(syncReq(maxSyncVersion, "stable", stable.MemberID, "", 1, "", nil)).(*kmsg.SyncGroupResponse); resp.ErrorCode != 0 {
		t.Fatalf("sync: %v", kerr.ErrorForCode(resp.ErrorCode))
	}
	gone := joinNew(t, w, 0, "empty")
	if resp := w.do(leaveReq(0, "empty", leaving(gone.MemberID, nil))).(*kmsg.LeaveGroupResponse); resp.ErrorCode != 0 {
		t.Fatalf("leave: %v", kerr.ErrorForCode(resp.ErrorCode))
	}
	waitGroupState(t, srv, "empty", "Empty", 0)

	for v := int16(0); v < 4; v++ {
		// Before v4 there are no states; both keep their protocol type.
		if got := groupStates(t, listGroupsAt(t, srv, v, nil, nil)); len(got) != 2 || got["stable"] != "consumer" || got["empty"] != "consumer" {
			t.Fatalf("v%d: %v", v, got)
		}
	}
	for _, tc := range []struct {
		v      int16
		states []string
		types  []string
		want   []string
	}{
		{4, nil, nil, []string{"empty", "stable"}},
		{4, []string{"stable"}, nil, []string{"stable"}},
		{4, []string{" EMPTY ", "Dead"}, nil, []string{"empty"}},
		{4, []string{"Dead"}, nil, nil},
		{4, []string{""}, nil, nil},
		{maxListVersion, []string{"Stable", "Empty"}, nil, []string{"empty", "stable"}},
		{maxListVersion, nil, []string{"Classic"}, []string{"empty", "stable"}},
		{maxListVersion, nil, []string{"consumer", "share"}, nil},
		{maxListVersion, []string{"Empty"}, []string{"classic", "consumer"}, []string{"empty"}},
	} {
		got := groupStates(t, listGroupsAt(t, srv, tc.v, tc.states, tc.types))
		names := make([]string, 0, len(got))
		for name := range got {
			names = append(names, name)
		}
		slices.Sort(names)
		if !slices.Equal(names, tc.want) || got["stable"] != "" && got["stable"] != "Stable" || got["empty"] != "" && got["empty"] != "Empty" {
			t.Fatalf("v%d states %q types %q: %v", tc.v, tc.states, tc.types, got)
		}
	}

	// kadm lists through the newest version.
	listed, err := newAdmin(t, srv).ListGroups(testCtx(t), "Stable")
	if err != nil || len(listed) != 1 || listed["stable"].State != "Stable" || listed["stable"].ProtocolType != "consumer" ||
		listed["stable"].Coordinator != srv.Config().NodeID {
		t.Fatalf("kadm: %+v, %v", listed, err)
	}
}

func TestListGroupsRoundTrip(t *testing.T) {
	srv := newTestServer(t, nil)
	w := dialWire(t, srv)
	joinNew(t, w, maxJoinVersion, "roundtrip")
	checkRoundTrip(t, srv, func(v int16) kmsg.Request {
		req := kmsg.NewPtrListGroupsRequest()
		req.Version = v
		return req
	})
}
