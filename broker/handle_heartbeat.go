package broker

// Heartbeat v0–v4, as Kafka 4's KafkaApis.handleHeartbeatRequest,
// GroupCoordinatorService.heartbeat and
// GroupMetadataManager.classicGroupHeartbeat; the group package holds the
// rules (see group/doc.go).
//
// Answered at once: INVALID_GROUP_ID for the empty group id;
// UNKNOWN_MEMBER_ID for a group that does not exist or a member it does
// not know (an instance id sent as the empty string matches no member);
// FENCED_INSTANCE_ID for a static member id replaced by a newer one;
// ILLEGAL_GENERATION for another generation; REBALANCE_IN_PROGRESS, which
// tells the member to rejoin, while the group prepares a rebalance. A valid
// heartbeat restarts the member's session timer.
//
// Deviations from Apache Kafka: none known.
//
// Versions: v1 throttle; v3 group.instance.id (KIP-345); v4 flexible.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/group"
)

func (b *Broker) handleHeartbeat(c *conn, req *kmsg.HeartbeatRequest) (result, error) {
	resp := req.ResponseKind().(*kmsg.HeartbeatResponse)
	if !b.allowed(c, opRead, resGroup, req.Group) {
		resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
		return respond(resp)
	}
	err := b.groups.Heartbeat(group.HeartbeatRequest{
		Group:      req.Group,
		MemberID:   req.MemberID,
		InstanceID: groupMemberInstance(req.InstanceID),
		Generation: req.Generation,
	})
	resp.ErrorCode = errorCode(err)
	return respond(resp)
}
