package broker

// DescribeGroups v0–v6, as Kafka 4's KafkaApis.handleDescribeGroupsRequest
// and GroupMetadataManager.describeGroups without an authorizer.
//
// Each group asked for, in request order: its state, protocol type and
// members (member and instance id, client id and host, and the assignment
// of the member's last SyncGroup, which a rebalance keeps until it
// abandons the generation). The selected protocol and each member's
// metadata are reported only while the group is Stable (Kafka's
// describeNoMetadata otherwise). A group that does not exist, the empty id
// included, is Dead with no members and no error, except in v6+
// (KIP-1043), where it is GROUP_ID_NOT_FOUND with Kafka's message. A
// consumer group (KIP-848) is not described here either, as in Kafka 4:
// Dead, and from v6 GROUP_ID_NOT_FOUND ("Group ... is not a classic
// group."); clients describe it with ConsumerGroupDescribe. Authorized
// operations (v3+, KIP-430) are -2147483648 unless asked for; when asked
// for, a group described without error gets what Kafka reports without an
// authorizer: every operation a group supports (READ, DESCRIBE, DELETE
// and, since group configs, DESCRIBE_CONFIGS and ALTER_CONFIGS).
//
// Deviations from Apache Kafka:
//   - A group asked for more than once is described once, at its first
//     place, as Metadata does with topics here: Kafka describes every
//     copy, so a request repeating the id of a large group would get a
//     response many times its size. Clients ask for distinct groups.
//
// Versions: v1 throttle; v3 authorized operations; v4 group.instance.id of
// members (KIP-345); v5 flexible; v6 GROUP_ID_NOT_FOUND and error message
// (KIP-1043).

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/group"
)

// groupAuthorizedOps is what Kafka reports for a group without an
// authorizer (AuthHelper.authorizedOperations): every operation
// AclEntry.supportedOperations lists for a group.
const groupAuthorizedOps = 1<<aclRead | 1<<aclDescribe | 1<<aclDelete | 1<<aclDescribeConfigs | 1<<aclAlterConfigs

func (b *Broker) handleDescribeGroups(c *conn, req *kmsg.DescribeGroupsRequest) (result, error) {
	resp := req.ResponseKind().(*kmsg.DescribeGroupsResponse)
	resp.Groups = make([]kmsg.DescribeGroupsResponseGroup, 0, len(req.Groups))
	seen := make(map[string]bool, len(req.Groups))
	for _, id := range req.Groups {
		if seen[id] {
			continue
		}
		seen[id] = true
		if !b.allowed(c, opDescribe, resGroup, id) {
			g := kmsg.NewDescribeGroupsResponseGroup()
			g.Group, g.ErrorCode = id, kerr.GroupAuthorizationFailed.Code
			resp.Groups = append(resp.Groups, g)
			continue
		}
		g := b.describeGroup(req.Version, id)
		if g.ErrorCode == 0 && req.Version >= 3 && req.IncludeAuthorizedOperations {
			g.AuthorizedOperations = b.authorizedOps(c, resGroup, id)
		}
		resp.Groups = append(resp.Groups, g)
	}
	return respond(resp)
}

// describeGroup describes one group for a response of the given version.
func (b *Broker) describeGroup(version int16, id string) kmsg.DescribeGroupsResponseGroup {
	g := kmsg.NewDescribeGroupsResponseGroup() // authorized operations: not requested
	g.Group = id
	d, err := b.groups.Describe(id)
	if err != nil {
		// Kafka's DescribeGroupsResponse.groupError: empty state and
		// protocol, no members.
		g.ErrorCode = errorCode(err)
		return g
	}
	g.State = d.State.String()
	if d.State == group.Dead {
		// A Dead group is never held, so this one does not exist, or
		// it is a consumer group, which DescribeGroups does not describe
		// (classicGroup(groupId)).
		if version >= 6 {
			g.ErrorCode = kerr.GroupIDNotFound.Code
			msg := fmt.Sprintf("Group %s not found.", id)
			if b.groups.Consumer().Exists(id) || b.streamsCo.Has(id) {
				msg = fmt.Sprintf("Group %s is not a classic group.", id)
			}
			g.ErrorMessage = kmsg.StringPtr(msg)
		}
		return g
	}
	g.ProtocolType = d.ProtocolType
	g.Protocol = d.Protocol
	g.Members = make([]kmsg.DescribeGroupsResponseGroupMember, 0, len(d.Members))
	for _, m := range d.Members {
		rm := kmsg.NewDescribeGroupsResponseGroupMember()
		rm.MemberID = m.MemberID
		rm.InstanceID = groupNullable(m.InstanceID)
		rm.ClientID = m.ClientID
		rm.ClientHost = m.ClientHost
		rm.ProtocolMetadata = m.Metadata
		rm.MemberAssignment = m.Assignment
		g.Members = append(g.Members, rm)
	}
	return g
}
