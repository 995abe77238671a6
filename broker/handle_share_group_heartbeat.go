package broker

// ShareGroupHeartbeat v1 (KIP-932), as Kafka 4.2's
// GroupMetadataManager.shareGroupHeartbeat: members join at epoch 0 with
// the topics they subscribe to, heartbeat with their epoch, and leave at
// epoch -1; the broker assigns partitions (group/share's assignor) and
// sends a member its assignment when it changed. The group id is shared
// with classic and consumer groups: an id one of those holds is
// GROUP_ID_NOT_FOUND ("is not a share group"), and JoinGroup and
// ConsumerGroupHeartbeat refuse a share group's id in turn. Needs READ on
// the group.
//
// A heartbeat that changed the group (a join, a leave, new subscriptions,
// a new assignment) is answered once the group's records
// (broker/share_records.go) are durable in __consumer_offsets, as Kafka
// answers after its append, so that after a restart or a kill -9 members
// keep their epochs and assignments and need not rejoin.
//
// Deviations from Apache Kafka: when that write fails the error goes back
// but the change stays in memory (Kafka's coordinator rolls it back);
// topic authorization of the subscribed topics is not checked here
// (ShareFetch checks READ on each topic).

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"github.com/kbroker/kbroker/group/share"
)

func (b *Broker) handleShareGroupHeartbeat(c *conn, req *kmsg.ShareGroupHeartbeatRequest) (result, error) {
	resp := req.ResponseKind().(*kmsg.ShareGroupHeartbeatResponse)
	if !b.allowed(c, opRead, resGroup, req.GroupID) {
		resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
		return respond(resp)
	}
	if !b.shareGroups() {
		resp.ErrorCode = kerr.UnsupportedVersion.Code
		return respond(resp)
	}
	if _, err := b.shareState(true); err != nil {
		b.lg.Warn("share group state not available", zap.Error(err))
		resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
		return respond(resp)
	}
	r := b.shares.Heartbeat(share.HeartbeatRequest{
		Group: req.GroupID, MemberID: req.MemberID, MemberEpoch: req.MemberEpoch, Rack: req.RackID,
		SubscribedTopicNames: req.SubscribedTopicNames, ClientID: c.clientID, ClientHost: c.groupClientHost(),
	}, shareTopics{b.topics})
	if r.Err != nil {
		resp.ErrorCode = r.Err.Code
		if r.ErrMessage != "" {
			resp.ErrorMessage = kmsg.StringPtr(r.ErrMessage)
		}
		return respond(resp)
	}
	resp.MemberID = kmsg.StringPtr(r.MemberID)
	resp.MemberEpoch = r.MemberEpoch
	resp.HeartbeatIntervalMillis = int32(r.HeartbeatInterval.Milliseconds())
	if r.HasAssignment {
		a := kmsg.NewShareGroupHeartbeatResponseAssignment()
		a.TopicPartitions = make([]kmsg.ShareGroupHeartbeatResponseAssignmentTopicPartition, len(r.Assignment))
		for i, tp := range r.Assignment {
			t := kmsg.NewShareGroupHeartbeatResponseAssignmentTopicPartition()
			t.TopicID, t.Partitions = tp.TopicID, tp.Partitions
			a.TopicPartitions[i] = t
		}
		resp.Assignment = &a
	}
	if !r.Changed {
		return respond(resp)
	}
	ready := make(chan struct{})
	b.recordShareGroup(req.GroupID, func(err error) {
		if code := groupWriteCode(err); code != 0 {
			*resp = *req.ResponseKind().(*kmsg.ShareGroupHeartbeatResponse)
			resp.ErrorCode = code
		}
		close(ready)
	})
	return result{resp: resp, ready: ready}, nil
}

// groupWriteCode is the code of a failed write of group records for a
// membership request (Kafka's appendRecordsErrorMapping without the
// offset-commit case: a record too large is UNKNOWN_SERVER_ERROR).
func groupWriteCode(err error) int16 {
	code := coordinatorWriteCode(err)
	if code == kerr.InvalidCommitOffsetSize.Code {
		return kerr.UnknownServerError.Code
	}
	return code
}

// groupIDTaken reports whether a classic or consumer group holds id, which
// a share group then cannot use.
func (b *Broker) groupIDTaken(id string) bool {
	if b.groups.Consumer().Exists(id) || b.streamsCo.Has(id) {
		return true
	}
	d, err := b.groups.Describe(id)
	return err == nil && d.State.String() != "Dead"
}
