package broker

// OffsetDelete (key 47), v0: removes committed offsets of a group
// (KIP-496). As in Kafka: a missing group is GROUP_ID_NOT_FOUND; an Empty
// group loses the offsets asked; a group with members may lose only the
// offsets of topics it is not subscribed to (GROUP_SUBSCRIBED_TO_TOPIC per
// partition), and only if it uses the consumer protocol (otherwise
// NON_EMPTY_GROUP). Subscriptions are read from the members' metadata,
// which the coordinator shows while the group is Stable; during a
// rebalance every topic counts as subscribed, where Kafka uses the
// subscriptions of the last generation. Unknown topics or partitions are
// UNKNOWN_TOPIC_OR_PARTITION. A consumer group (KIP-848) may always lose
// the offsets of topics its members do not subscribe to, by name or
// through a regular expression (ConsumerGroup.isSubscribedToTopic). The
// response waits until the deletion is durable.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/group"
	"github.com/kbroker/kbroker/offsets"
)

func (b *Broker) handleOffsetDelete(c *conn, req *kmsg.OffsetDeleteRequest) (result, error) {
	resp := req.ResponseKind().(*kmsg.OffsetDeleteResponse)
	if !b.allowed(c, opDelete, resGroup, req.Group) {
		resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
		return respond(resp)
	}
	subscribed, found := b.groups.Consumer().SubscribedTopics(req.Group)
	if !found {
		subscribed, found = b.streamsCo.SubscribedTopics(req.Group)
	}
	everything := false
	if !found {
		d, err := b.groups.Describe(req.Group)
		switch {
		case err != nil:
			resp.ErrorCode = errorCode(err)
			return respond(resp)
		case d.State == group.Dead:
			resp.ErrorCode = kerr.GroupIDNotFound.Code
			return respond(resp)
		case d.State != group.Empty && d.ProtocolType != "consumer":
			resp.ErrorCode = kerr.NonEmptyGroup.Code
			return respond(resp)
		}
		subscribed, everything = subscribedTopics(d)
	}
	var tps []offsets.TopicPartition
	var slots []*int16
	resp.Topics = make([]kmsg.OffsetDeleteResponseTopic, len(req.Topics))
	for i, rt := range req.Topics {
		st := &resp.Topics[i]
		st.Topic = rt.Topic
		st.Partitions = make([]kmsg.OffsetDeleteResponseTopicPartition, len(rt.Partitions))
		t, code := b.offsetTopic(false, rt.Topic, [16]byte{})
		if !b.allowed(c, opRead, resTopic, rt.Topic) {
			code = kerr.TopicAuthorizationFailed.Code
		}
		for j, rp := range rt.Partitions {
			sp := &st.Partitions[j]
			sp.Partition = rp.Partition
			switch {
			case code != 0:
				sp.ErrorCode = code
			case rp.Partition < 0 || rp.Partition >= t.Partitions:
				sp.ErrorCode = kerr.UnknownTopicOrPartition.Code
			case everything || subscribed[rt.Topic]:
				sp.ErrorCode = kerr.GroupSubscribedToTopic.Code
			default:
				tps = append(tps, offsets.TopicPartition{Topic: rt.Topic, Partition: rp.Partition})
				slots = append(slots, &sp.ErrorCode)
			}
		}
	}
	store, _ := b.groupOffsets(false)
	if len(tps) == 0 || store == nil {
		return respond(resp) // no offsets topic: nothing was committed
	}
	ready := make(chan struct{})
	store.DeleteOffsets(req.Group, tps, func(err error) {
		if code := coordinatorWriteCode(err); code != 0 {
			for _, s := range slots {
				*s = code
			}
		}
		close(ready)
	})
	return result{resp: resp, ready: ready}, nil
}

// subscribedTopics returns the topics the members of a consumer-protocol
// group subscribe to, or everything when the group has members whose
// subscriptions cannot be known now (a rebalance, or metadata that does
// not decode).
func subscribedTopics(d group.Description) (map[string]bool, bool) {
	if d.State == group.Empty {
		return nil, false
	}
	if d.State != group.Stable {
		return nil, true
	}
	topics := map[string]bool{}
	for _, m := range d.Members {
		var md kmsg.ConsumerMemberMetadata
		if err := md.ReadFrom(m.Metadata); err != nil {
			return nil, true
		}
		for _, t := range md.Topics {
			topics[t] = true
		}
	}
	return topics, false
}
