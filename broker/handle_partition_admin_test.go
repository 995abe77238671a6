package broker

import (
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestElectLeaders checks the single-node answers: every existing
// partition already has its preferred leader.
func TestElectLeaders(t *testing.T) {
	srv := newTestServer(t, nil)
	createTopic(t, srv, "e", 2)
	adm := newAdmin(t, srv)
	ctx := testCtx(t)
	for _, how := range []kadm.ElectLeadersHow{kadm.ElectPreferredReplica, kadm.ElectLiveReplica} {
		res, err := adm.ElectLeaders(ctx, how, kadm.TopicsSet{"e": {0: {}, 1: {}, 5: {}}})
		if err != nil {
			t.Fatal(err)
		}
		for p, want := range map[int32]*kerr.Error{0: kerr.ElectionNotNeeded, 1: kerr.ElectionNotNeeded, 5: kerr.UnknownTopicOrPartition} {
			if got := res["e"][p]; !errors.Is(got.Err, want) || got.ErrMessage == "" {
				t.Errorf("election type %d, e-%d: %v (%q), want %v with a message", how, p, got.Err, got.ErrMessage, want)
			}
		}
	}

	w := dialWire(t, srv)
	all := kmsg.NewPtrElectLeadersRequest()
	all.Version = 2
	resp := w.do(all).(*kmsg.ElectLeadersResponse)
	if resp.ErrorCode != 0 || len(resp.Topics) != 1 || resp.Topics[0].Topic != "e" || len(resp.Topics[0].Partitions) != 0 {
		t.Fatalf("every partition: %+v, want topic e without results (no election needed is left out)", resp)
	}
	bad := kmsg.NewPtrElectLeadersRequest()
	bad.Version, bad.ElectionType = 1, 7
	bad.Topics = []kmsg.ElectLeadersRequestTopic{{Topic: "e", Partitions: []int32{0}}}
	resp = w.do(bad).(*kmsg.ElectLeadersResponse)
	if resp.ErrorCode != kerr.InvalidRequest.Code || resp.Topics[0].Partitions[0].ErrorCode != kerr.InvalidRequest.Code {
		t.Fatalf("unknown election type: %+v, want INVALID_REQUEST", resp)
	}
}

// TestPartitionReassignments checks AlterPartitionReassignments'
// validation and that no reassignment is ever listed.
func TestPartitionReassignments(t *testing.T) {
	srv := newTestServer(t, nil)
	createTopic(t, srv, "r", 2)
	adm := newAdmin(t, srv)
	ctx := testCtx(t)
	var req kadm.AlterPartitionAssignmentsReq
	req.Assign("r", 0, []int32{0})
	req.Assign("r", 1, []int32{0, 0})
	req.Assign("nope", 0, []int32{0})
	req.CancelAssign("r", 1)
	res, err := adm.AlterPartitionAssignments(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if got := res["r"][0]; got.Err != nil {
		t.Errorf("r-0 to this broker: %v", got.Err)
	}
	if got := res["r"][1]; !errors.Is(got.Err, kerr.NoReassignmentInProgress) {
		t.Errorf("cancel r-1: %v, want NO_REASSIGNMENT_IN_PROGRESS", got.Err)
	}
	if got := res["nope"][0]; !errors.Is(got.Err, kerr.UnknownTopicOrPartition) {
		t.Errorf("unknown topic: %v", got.Err)
	}

	w := dialWire(t, srv)
	for _, c := range []struct {
		replicas []int32
		want     string
	}{
		{[]int32{}, "The manual partition assignment includes an empty replica list."},
		{[]int32{0, 0}, "The manual partition assignment includes the broker 0 more than once."},
		{[]int32{3, 0}, "The manual partition assignment includes broker 3, but no such broker is registered."},
	} {
		r := kmsg.NewPtrAlterPartitionAssignmentsRequest()
		r.Version = 1
		r.Topics = []kmsg.AlterPartitionAssignmentsRequestTopic{{Topic: "r", Partitions: []kmsg.AlterPartitionAssignmentsRequestTopicPartition{{Partition: 0, Replicas: c.replicas}}}}
		rp := w.do(r).(*kmsg.AlterPartitionAssignmentsResponse).Topics[0].Partitions[0]
		if rp.ErrorCode != kerr.InvalidReplicaAssignment.Code || rp.ErrorMessage == nil || *rp.ErrorMessage != c.want {
			t.Errorf("replicas %v: code %d message %v, want INVALID_REPLICA_ASSIGNMENT %q", c.replicas, rp.ErrorCode, rp.ErrorMessage, c.want)
		}
	}

	listed, err := adm.ListPartitionReassignments(ctx, nil)
	if err != nil || len(listed) != 0 {
		t.Fatalf("list every reassignment: %v, %v; want none", listed, err)
	}
	listed, err = adm.ListPartitionReassignments(ctx, kadm.TopicsSet{"r": {0: {}}})
	if err != nil || len(listed) != 0 {
		t.Fatalf("list r-0: %v, %v; want none", listed, err)
	}
}
