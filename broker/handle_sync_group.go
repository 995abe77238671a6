package broker

// SyncGroup v0–v5, as Kafka 4's KafkaApis.handleSyncGroupRequest,
// GroupCoordinatorService.syncGroup and GroupMetadataManager.classicGroupSync;
// the group package holds the rules (see group/doc.go).
//
// The leader's SyncGroup carries the assignment of every member and is
// answered at once with its own; a follower that syncs before the leader
// is parked as a pending response (see handle_join_group.go) until the
// leader's assignment arrives or the rebalance is abandoned
// (REBALANCE_IN_PROGRESS). v5+ must give both the protocol type and name
// (KIP-559): a null one is INCONSISTENT_GROUP_PROTOCOL before anything else,
// as in Kafka, and a given one must match the group's. An assignment named
// twice keeps the last, as Kafka's map does; assignments for non-members are
// ignored. An instance id sent as the empty string matches no member
// (UNKNOWN_MEMBER_ID), as in Kafka.
//
// Deviations from Apache Kafka:
//   - A v5 protocol type or name given as the empty string counts as not
//     given (the group package's convention); Kafka compares it and
//     answers INCONSISTENT_GROUP_PROTOCOL unless the group's is empty too.
//     No client sends one.
//
// Versions: v1 throttle; v3 group.instance.id (KIP-345); v4 flexible; v5
// protocol type and name in request and response (KIP-559).

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/group"
)

func (b *Broker) handleSyncGroup(c *conn, req *kmsg.SyncGroupRequest) (result, error) {
	resp := req.ResponseKind().(*kmsg.SyncGroupResponse)
	if !b.allowed(c, opRead, resGroup, req.Group) {
		resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
		return respond(resp)
	}
	if req.Version >= 5 && (req.ProtocolType == nil || req.Protocol == nil) {
		resp.ErrorCode = kerr.InconsistentGroupProtocol.Code
		return respond(resp)
	}
	// The coordinator copies the assignments, so they may alias the request.
	assignments := make(map[string][]byte, len(req.GroupAssignment))
	for _, a := range req.GroupAssignment {
		assignments[a.MemberID] = a.MemberAssignment
	}
	sr := group.SyncRequest{
		Group:       req.Group,
		MemberID:    req.MemberID,
		InstanceID:  groupMemberInstance(req.InstanceID),
		Generation:  req.Generation,
		Assignments: assignments,
	}
	if req.ProtocolType != nil {
		sr.ProtocolType = *req.ProtocolType
	}
	if req.Protocol != nil {
		sr.ProtocolName = *req.Protocol
	}
	ready := make(chan struct{})
	b.groups.Sync(sr, func(r group.SyncResponse) {
		// Runs once, maybe on another goroutine; the writer reads resp
		// only after ready is closed.
		resp.ErrorCode = errorCode(r.Err)
		resp.ProtocolType = groupNullable(r.ProtocolType)
		resp.Protocol = groupNullable(r.ProtocolName)
		resp.MemberAssignment = r.Assignment
		if r.Err != nil {
			close(ready)
			return
		}
		// The generation's record first (group_writes.go).
		b.afterGroupWrite(req.Group, func(err error) {
			if code := groupWriteCode(err); code != 0 {
				resp.ErrorCode, resp.MemberAssignment = code, []byte{}
			}
			close(ready)
		})
	})
	return result{resp: resp, ready: ready}, nil
}
