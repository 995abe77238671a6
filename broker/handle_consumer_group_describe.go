package broker

// ConsumerGroupDescribe (key 69) v0–v1: consumer-protocol (KIP-848) groups,
// as Kafka 4's KafkaApis.handleConsumerGroupDescribe and
// GroupMetadataManager.consumerGroupDescribe without an authorizer.
//
// Each group asked for: its state, group epoch, target assignment epoch,
// the server assignor most members prefer (or the default), and every
// member with its ids, epoch, client, subscription, current and target
// assignment (topics by id and name; topics deleted since are left out)
// and, from v1, its type (1: a consumer-protocol member; kbroker has no
// classic members in consumer groups). The empty group id is
// INVALID_GROUP_ID; a group that does not exist, or is a classic group,
// GROUP_ID_NOT_FOUND with Kafka's message. Authorized operations are
// -2147483648 unless asked for, then what Kafka reports without an
// authorizer. With group.coordinator.rebalance.protocols lacking consumer,
// every group is UNSUPPORTED_VERSION, as in Kafka.
//
// Deviations from Apache Kafka:
//   - A group asked for more than once is described once, at its first
//     place, as DescribeGroups does here (Kafka describes every copy).
//   - Members are listed by member id (Kafka: hash order).

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/group/consumer"
)

// consumerMemberType is ConsumerGroupDescribe v1's member type of a member
// using the consumer protocol (0 is a classic-protocol member).
const consumerMemberType = 1

func (b *Broker) handleConsumerGroupDescribe(c *conn, req *kmsg.ConsumerGroupDescribeRequest) (result, error) {
	resp := req.ResponseKind().(*kmsg.ConsumerGroupDescribeResponse)
	resp.Groups = make([]kmsg.ConsumerGroupDescribeResponseGroup, 0, len(req.Groups))
	on := b.consumerProtocol()
	md := b.consumerMetadata()
	seen := make(map[string]bool, len(req.Groups))
	for _, id := range req.Groups {
		if seen[id] {
			continue
		}
		seen[id] = true
		g := kmsg.NewConsumerGroupDescribeResponseGroup()
		g.Group = id
		switch {
		case !on:
			g.ErrorCode = kerr.UnsupportedVersion.Code
		case id == "":
			g.ErrorCode = kerr.InvalidGroupID.Code
		case !b.allowed(c, opDescribe, resGroup, id):
			g.ErrorCode = kerr.GroupAuthorizationFailed.Code
		default:
			d, err := b.groups.Consumer().Describe(id, md)
			if err != nil {
				g.ErrorCode = errorCode(err)
				g.ErrorMessage = errorMessage(err)
				if b.streamsCo.Has(id) {
					g.ErrorMessage = kmsg.StringPtr("Group " + id + " is not a consumer group.")
				}
				break
			}
			fillConsumerGroupDescription(&g, &d)
			if req.IncludeAuthorizedOperations {
				g.AuthorizedOperations = b.authorizedOps(c, resGroup, id)
			}
		}
		resp.Groups = append(resp.Groups, g)
	}
	return respond(resp)
}

func fillConsumerGroupDescription(g *kmsg.ConsumerGroupDescribeResponseGroup, d *consumer.Description) {
	g.State = d.State.String()
	g.Epoch = d.Epoch
	g.AssignmentEpoch = d.AssignmentEpoch
	g.AssignorName = d.Assignor
	g.Members = make([]kmsg.ConsumerGroupDescribeResponseGroupMember, 0, len(d.Members))
	for _, m := range d.Members {
		rm := kmsg.NewConsumerGroupDescribeResponseGroupMember()
		rm.MemberID = m.MemberID
		rm.InstanceID = groupNullable(m.InstanceID)
		rm.RackID = groupNullable(m.RackID)
		rm.MemberEpoch = m.MemberEpoch
		rm.ClientID = m.ClientID
		rm.ClientHost = m.ClientHost
		rm.SubscribedTopics = m.SubscribedTopicNames
		rm.SubscribedTopicRegex = kmsg.StringPtr(m.SubscribedTopicRegex)
		rm.Assignment = describedAssignment(m.Assignment)
		rm.TargetAssignment = describedAssignment(m.TargetAssignment)
		rm.MemberType = consumerMemberType
		g.Members = append(g.Members, rm)
	}
}

func describedAssignment(ts []consumer.DescribedTopic) kmsg.Assignment {
	a := kmsg.NewAssignment()
	a.TopicPartitions = make([]kmsg.AssignmentTopicPartition, len(ts))
	for i, t := range ts {
		tp := kmsg.NewAssignmentTopicPartition()
		tp.TopicID = t.ID
		tp.Topic = t.Name
		tp.Partitions = t.Partitions
		a.TopicPartitions[i] = tp
	}
	return a
}
