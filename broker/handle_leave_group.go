package broker

// LeaveGroup v0–v5, as Kafka 4's KafkaApis.handleLeaveGroupRequest,
// GroupCoordinatorService.leaveGroup and
// GroupMetadataManager.classicGroupLeave; the group package holds the rules
// (see group/doc.go).
//
// v0–v2 name one member by id; v3+ (KIP-345) a batch, each by member id
// and instance id, or by instance id alone with an empty member id (an
// administrative removal of a static member). Each member gets its own
// error (UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID) echoing its ids, in request
// order; a v0–v2 answer has only the top-level error, so the member's error
// goes there (LeaveGroupResponse's version conversion). Group-level errors
// (INVALID_GROUP_ID for the empty id, COORDINATOR_NOT_AVAILABLE) are
// top-level with no members. A group that does not exist is, as in Kafka,
// UNKNOWN_MEMBER_ID for every member with no top-level error (v3+). An
// instance id sent as the empty string matches no member.
//
// Deviations from Apache Kafka: none known. Leave reasons (v5+, KIP-800) are
// logged with the departure, as Kafka does.
//
// Versions: v1 throttle; v3 batched members with instance ids (KIP-345);
// v4 flexible; v5 reason (KIP-800).

import (
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"github.com/kbroker/kbroker/group"
)

func (b *Broker) handleLeaveGroup(c *conn, req *kmsg.LeaveGroupRequest) (result, error) {
	resp := req.ResponseKind().(*kmsg.LeaveGroupResponse)
	if !b.allowed(c, opRead, resGroup, req.Group) {
		resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
		return respond(resp)
	}
	var members []group.LeaveMember
	if req.Version < 3 {
		members = []group.LeaveMember{{MemberID: req.MemberID}}
	} else {
		members = make([]group.LeaveMember, len(req.Members))
		for i, m := range req.Members {
			members[i] = group.LeaveMember{MemberID: m.MemberID, InstanceID: groupMemberInstance(m.InstanceID)}
			if m.Reason != nil {
				members[i].Reason = *m.Reason
			}
		}
	}
	errs, err := b.groups.Leave(req.Group, members)
	if errors.Is(err, kerr.UnknownMemberID) {
		// The group does not exist: Kafka answers each member.
		errs = make([]error, len(members))
		for i := range errs {
			errs[i] = err
		}
		err = nil
	}
	if err != nil {
		resp.ErrorCode = errorCode(err)
		return respond(resp)
	}
	for i, m := range members {
		if errs[i] == nil {
			var instance *string
			if req.Version >= 3 {
				instance = req.Members[i].InstanceID
			}
			c.lg.Info("member left group", zap.String("group", req.Group), zap.String("member", m.MemberID),
				zap.Stringp("instance", instance), zap.String("reason", m.Reason))
		}
	}
	if req.Version < 3 {
		resp.ErrorCode = errorCode(errs[0])
		return respond(resp)
	}
	resp.Members = make([]kmsg.LeaveGroupResponseMember, len(req.Members))
	for i, m := range req.Members {
		rm := kmsg.NewLeaveGroupResponseMember()
		rm.MemberID, rm.InstanceID = m.MemberID, m.InstanceID
		rm.ErrorCode = errorCode(errs[i])
		resp.Members[i] = rm
	}
	// The record of a group left empty first (group_writes.go).
	return b.answerAfterGroupWrite(req.Group, resp, func(code int16) { resp.ErrorCode = code })
}
