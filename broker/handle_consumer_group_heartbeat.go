package broker

// ConsumerGroupHeartbeat (key 68) v0–v1: the consumer group protocol of
// KIP-848, as Kafka 4's KafkaApis.handleConsumerGroupHeartbeat,
// GroupCoordinatorService.consumerGroupHeartbeat and
// GroupMetadataManager.consumerGroupHeartbeat; the group/consumer package
// holds the rules (see group/consumer/doc.go).
//
// Answered at once. With group.coordinator.rebalance.protocols lacking
// consumer the API is not advertised and the answer is
// UNSUPPORTED_VERSION, as Kafka's (clients then fall back to the classic
// protocol). Errors carry Kafka's message. Topic ids in assignments are
// the topic registry's; the member's client id is the request header's and
// its client host "/" and the peer's IP, as for JoinGroup.
//
// Deviations from Apache Kafka: those of the group/consumer package (no
// persistence of groups across restarts, no online migration between the
// classic and consumer protocols, synchronous regular-expression
// resolution); no ACLs, so no GROUP_ or TOPIC_AUTHORIZATION_FAILED.
//
// Versions: v1 requires the client to generate its member id (KIP-1082)
// and adds the subscribed topic regex; v0 members join with an empty
// member id and get one.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/group/consumer"
)

func (b *Broker) handleConsumerGroupHeartbeat(c *conn, req *kmsg.ConsumerGroupHeartbeatRequest) (result, error) {
	resp := req.ResponseKind().(*kmsg.ConsumerGroupHeartbeatResponse)
	if !b.allowed(c, opRead, resGroup, req.Group) {
		resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
		return respond(resp)
	}
	if !b.consumerProtocol() {
		resp.ErrorCode = kerr.UnsupportedVersion.Code
		return respond(resp)
	}
	if b.shares.Has(req.Group) || b.streamsCo.Has(req.Group) {
		// A share group holds the id (KIP-932 shares the namespace).
		resp.ErrorCode = kerr.GroupIDNotFound.Code
		resp.ErrorMessage = kmsg.StringPtr("Group " + req.Group + " is not a consumer group.")
		return respond(resp)
	}
	hr := consumer.HeartbeatRequest{
		Version:                req.Version,
		Group:                  req.Group,
		MemberID:               req.MemberID,
		MemberEpoch:            req.MemberEpoch,
		InstanceID:             req.InstanceID,
		RackID:                 req.RackID,
		RebalanceTimeoutMillis: req.RebalanceTimeoutMillis,
		SubscribedTopicNames:   req.SubscribedTopicNames,
		SubscribedTopicRegex:   req.SubscribedTopicRegex,
		ServerAssignor:         req.ServerAssignor,
		ClientID:               c.clientID,
		ClientHost:             c.groupClientHost(),
	}
	if req.Topics != nil {
		hr.Topics = make([]consumer.TopicPartitions, len(req.Topics))
		for i, t := range req.Topics {
			hr.Topics[i] = consumer.TopicPartitions{TopicID: consumer.TopicID(t.TopicID), Partitions: t.Partitions}
		}
	}
	r := b.groups.Consumer().Heartbeat(hr, b.consumerMetadata())
	if r.Err != nil {
		resp.ErrorCode = errorCode(r.Err)
		resp.ErrorMessage = errorMessage(r.Err)
		return respond(resp)
	}
	resp.MemberID = kmsg.StringPtr(r.MemberID)
	resp.MemberEpoch = r.MemberEpoch
	resp.HeartbeatIntervalMillis = int32(r.HeartbeatInterval.Milliseconds())
	if r.HasAssignment {
		a := kmsg.NewConsumerGroupHeartbeatResponseAssignment()
		a.Topics = make([]kmsg.ConsumerGroupHeartbeatResponseAssignmentTopic, len(r.Assignment))
		for i, tp := range r.Assignment {
			t := kmsg.NewConsumerGroupHeartbeatResponseAssignmentTopic()
			t.TopicID = tp.TopicID
			t.Partitions = tp.Partitions
			a.Topics[i] = t
		}
		resp.Assignment = &a
	}
	// Answered once the records the heartbeat changed are durable
	// (group_writes.go), as Kafka answers after its append.
	return b.answerAfterGroupWrite(req.Group, resp, func(code int16) {
		*resp = *req.ResponseKind().(*kmsg.ConsumerGroupHeartbeatResponse)
		resp.ErrorCode = code
	})
}
