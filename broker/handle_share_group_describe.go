package broker

// ShareGroupDescribe v1 (KIP-932), as Kafka 4.2's
// GroupMetadataManager.shareGroupDescribe: each group's state, epochs,
// assignor ("simple") and members with their subscriptions and
// assignments. A group id that is not a share group is GROUP_ID_NOT_FOUND
// with Kafka's message. Needs DESCRIBE on each group. Authorized
// operations are not computed (the field keeps its "not requested" value).

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// shareAssignorName is the name Kafka gives its share-group assignor.
const shareAssignorName = "simple"

func (b *Broker) handleShareGroupDescribe(c *conn, req *kmsg.ShareGroupDescribeRequest) (result, error) {
	resp := req.ResponseKind().(*kmsg.ShareGroupDescribeResponse)
	for _, id := range req.GroupIDs {
		g := kmsg.NewShareGroupDescribeResponseGroup()
		g.GroupID = id
		switch d, ok := b.shares.Describe(id); {
		case !b.allowed(c, opDescribe, resGroup, id):
			g.ErrorCode = kerr.GroupAuthorizationFailed.Code
		case !b.shareGroups():
			g.ErrorCode = kerr.UnsupportedVersion.Code
		case !ok:
			g.ErrorCode = kerr.GroupIDNotFound.Code
			msg := "Group " + id + " not found."
			if b.groupIDTaken(id) {
				msg = "Group " + id + " is not a share group."
			}
			g.ErrorMessage = kmsg.StringPtr(msg)
		default:
			g.GroupState, g.GroupEpoch, g.AssignmentEpoch, g.Assignor = d.State, d.GroupEpoch, d.AssignmentEpoch, shareAssignorName
			g.Members = make([]kmsg.ShareGroupDescribeResponseGroupMember, 0, len(d.Members))
			for _, m := range d.Members {
				rm := kmsg.NewShareGroupDescribeResponseGroupMember()
				rm.MemberID, rm.MemberEpoch, rm.ClientID, rm.ClientHost = m.MemberID, m.MemberEpoch, m.ClientID, m.ClientHost
				if m.Rack != "" {
					rm.RackID = kmsg.StringPtr(m.Rack)
				}
				rm.SubscribedTopicNames = m.SubscribedTopicNames
				if rm.SubscribedTopicNames == nil {
					rm.SubscribedTopicNames = []string{}
				}
				for _, tp := range m.Assignment {
					t := kmsg.NewShareGroupDescribeResponseGroupMemberAssignmentTopicPartition()
					t.TopicID = tp.TopicID
					if topic, ok := b.topics.ByID(tp.TopicID); ok {
						t.Topic = topic.Name
					}
					t.Partitions = tp.Partitions
					rm.Assignment.TopicPartitions = append(rm.Assignment.TopicPartitions, t)
				}
				g.Members = append(g.Members, rm)
			}
		}
		resp.Groups = append(resp.Groups, g)
	}
	return respond(resp)
}
