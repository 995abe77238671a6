package broker

// JoinGroup v0–v9, as Kafka 4's KafkaApis.handleJoinGroupRequest,
// GroupCoordinatorService.joinGroup and GroupMetadataManager.classicGroupJoin;
// the group package holds the rules (see group/doc.go).
//
// The request is translated and handed to the coordinator, which answers
// at once (errors, MEMBER_ID_REQUIRED, a follower rejoining a Stable group)
// or parks the request until the join phase completes. A parked request is
// a pending response: the reader goes on with the connection's next
// request, and the writer sends this answer when the coordinator's done
// callback marks it ready, still in request order. The member's client id
// is the request header's and its client host is "/" and the peer's IP,
// as Kafka's InetAddress.toString for an unresolved address. An error
// answer has generation -1, an empty leader, no members and, as Kafka, the
// member id the client should use next (the one it sent, the one assigned
// with MEMBER_ID_REQUIRED, or "" to start over).
//
// Deviations from Apache Kafka:
//   - group.instance.id must be a legal Kafka name (JoinGroupRequest
//     .validateGroupInstanceId: 1 to 249 characters of [a-zA-Z0-9._-],
//     not "." or ".."), else INVALID_REQUEST. Kafka's broker takes any
//     string (only its Java client checks, at configuration time); kbroker
//     refuses what no Java client could send, because the instance id
//     becomes the prefix of member ids, and because the empty string, a
//     distinct static identity to Kafka, would read as "no instance id".
//   - The client host of an IPv6 peer is Go's short form ("/::1"), where
//     Java writes every group ("/0:0:0:0:0:0:0:1").
//   - The join reason (v8+) is only logged, at debug level.
//
// Versions: v1 rebalance timeout (v0 uses the session timeout, as Kafka);
// v2 throttle; v4 MEMBER_ID_REQUIRED (KIP-394); v5 group.instance.id
// (KIP-345); v6 flexible; v7 protocol type in the response and a null
// protocol name when there is none (KIP-559); v8 reason (KIP-800); v9
// skip_assignment for a static leader rejoining a Stable group (KIP-814).

import (
	"net"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"github.com/kbroker/kbroker/group"
)

func (b *Broker) handleJoinGroup(c *conn, req *kmsg.JoinGroupRequest) (result, error) {
	resp := req.ResponseKind().(*kmsg.JoinGroupResponse)
	if !b.allowed(c, opRead, resGroup, req.Group) {
		fillJoinResponse(resp, group.JoinResponse{Err: kerr.GroupAuthorizationFailed, MemberID: req.MemberID, Generation: -1})
		return respond(resp)
	}
	if req.InstanceID != nil && !validGroupInstanceID(*req.InstanceID) {
		fillJoinResponse(resp, group.JoinResponse{Err: kerr.InvalidRequest, MemberID: req.MemberID, Generation: -1})
		return respond(resp)
	}
	if b.shares.Has(req.Group) || b.streamsCo.Has(req.Group) {
		// A share group holds the id (KIP-932 shares the namespace).
		fillJoinResponse(resp, group.JoinResponse{Err: kerr.InconsistentGroupProtocol, MemberID: req.MemberID, Generation: -1})
		return respond(resp)
	}
	rebalance := req.RebalanceTimeoutMillis
	if req.Version == 0 {
		rebalance = req.SessionTimeoutMillis
	}
	// The coordinator copies the protocols, so they may alias the request.
	protocols := make([]group.Protocol, len(req.Protocols))
	for i, p := range req.Protocols {
		protocols[i] = group.Protocol{Name: p.Name, Metadata: p.Metadata}
	}
	jr := group.JoinRequest{
		Group:                  req.Group,
		MemberID:               req.MemberID,
		ClientID:               c.clientID,
		ClientHost:             c.groupClientHost(),
		SessionTimeout:         time.Duration(req.SessionTimeoutMillis) * time.Millisecond,
		RebalanceTimeout:       time.Duration(rebalance) * time.Millisecond,
		ProtocolType:           req.ProtocolType,
		Protocols:              protocols,
		RequireKnownMemberID:   req.Version >= 4,
		SupportsSkipAssignment: req.Version >= 9,
	}
	if req.InstanceID != nil {
		jr.InstanceID = *req.InstanceID
	}
	if req.Reason != nil {
		if ce := c.lg.Check(zap.DebugLevel, "join group"); ce != nil {
			ce.Write(zap.String("group", req.Group), zap.String("member", req.MemberID), zap.String("reason", *req.Reason))
		}
	}
	ready := make(chan struct{})
	b.groups.Join(jr, func(r group.JoinResponse) {
		// Runs once, maybe on another goroutine; the writer reads resp
		// only after ready is closed.
		fillJoinResponse(resp, r)
		// A record the join caused (a static member replaced) first.
		b.afterGroupWrite(req.Group, func(error) { close(ready) })
	})
	return result{resp: resp, ready: ready}, nil
}

// fillJoinResponse writes the coordinator's answer into resp. Empty strings
// are Kafka's nulls; before v7 the protocol name is not nullable and the
// encoder writes a null one as "", as Kafka's JoinGroupResponse does.
func fillJoinResponse(resp *kmsg.JoinGroupResponse, r group.JoinResponse) {
	resp.ErrorCode = errorCode(r.Err)
	resp.Generation = r.Generation
	resp.ProtocolType = groupNullable(r.ProtocolType)
	resp.Protocol = groupNullable(r.ProtocolName)
	resp.LeaderID = r.Leader
	resp.SkipAssignment = r.SkipAssignment
	resp.MemberID = r.MemberID
	resp.Members = make([]kmsg.JoinGroupResponseMember, 0, len(r.Members))
	for _, m := range r.Members {
		rm := kmsg.NewJoinGroupResponseMember()
		rm.MemberID = m.MemberID
		rm.InstanceID = groupNullable(m.InstanceID)
		rm.ProtocolMetadata = m.Metadata
		resp.Members = append(resp.Members, rm)
	}
}

// maxGroupInstanceIDLen is the longest legal group.instance.id, Kafka's
// topic name limit (Topic.MAX_NAME_LENGTH), whose rules it borrows.
const maxGroupInstanceIDLen = 249

// validGroupInstanceID applies Kafka's JoinGroupRequest
// .validateGroupInstanceId (Topic.validate): not empty, not "." or "..",
// at most 249 characters, each ASCII alphanumeric, '.', '_' or '-'.
func validGroupInstanceID(id string) bool {
	if id == "" || id == "." || id == ".." || len(id) > maxGroupInstanceIDLen {
		return false
	}
	for i := 0; i < len(id); i++ {
		switch ch := id[i]; {
		case 'a' <= ch && ch <= 'z', 'A' <= ch && ch <= 'Z', '0' <= ch && ch <= '9', ch == '.', ch == '_', ch == '-':
		default:
			return false
		}
	}
	return true
}

// unmatchableInstanceID stands in for an instance id sent as the empty
// string (not null) to SyncGroup, Heartbeat and LeaveGroup. To Kafka that
// is a static identity no member has (JoinGroup refuses it here), so the
// request fails as for any unknown instance id; the group package reads ""
// as "no instance id", so it gets this id instead, which JoinGroup refuses
// as well and so also matches no member.
const unmatchableInstanceID = "\x00"

// groupMemberInstance is the group package's form of a request's
// group.instance.id: "" for null.
func groupMemberInstance(id *string) string {
	switch {
	case id == nil:
		return ""
	case *id == "":
		return unmatchableInstanceID
	}
	return *id
}

// groupNullable is the wire form of a group package string whose empty
// value stands for Kafka's null.
func groupNullable(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// groupClientHost is the member's client host as Kafka reports it:
// InetAddress.toString of the peer, "/" and the IP.
func (c *conn) groupClientHost() string {
	if c.nc == nil {
		return ""
	}
	switch a := c.nc.RemoteAddr().(type) {
	case *net.TCPAddr:
		return "/" + a.IP.String()
	case nil:
		return ""
	default:
		return "/" + a.String()
	}
}
