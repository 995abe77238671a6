package broker

// CreatePartitions v0–v3, as Kafka 4's ControllerApis.createPartitions and
// ReplicationControlManager.createPartitions on a cluster of one broker.
//
// Per topic: a name given more than once is INVALID_REQUEST ("duplicate
// topic name", answered once); then the registry's rules: an unknown topic
// is UNKNOWN_TOPIC_OR_PARTITION, a count that does not grow the topic
// INVALID_PARTITIONS, an internal topic INVALID_REQUEST. A manual
// assignment (non-null) must have one entry per new partition, each placing
// it on exactly this broker, else INVALID_REPLICA_ASSIGNMENT with Kafka's
// messages. ValidateOnly checks everything and changes nothing. The new
// partitions are served as soon as the response is sent.
//
// A request that would add more than 10,000 partitions in all is refused
// as a whole with POLICY_VIOLATION (Kafka's controller refuses an
// operation of more than 10,000 records).
//
// Deviations from Apache Kafka:
//   - TimeoutMillis is ignored: the change is synchronous on one node.
//   - Internal topics cannot grow (INVALID_REQUEST): more partitions would
//     move groups and transactional ids to other coordinator partitions.
//   - Responses keep request order (Kafka answers duplicates first).
//
// Versions: v1 nothing new for the broker; v2 flexible; v3 quota errors
// (KIP-599, none here).

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"github.com/kbroker/kbroker/topic"
)

func (b *Broker) handleCreatePartitions(c *conn, req *kmsg.CreatePartitionsRequest) (result, error) {
	resp := req.ResponseKind().(*kmsg.CreatePartitionsResponse)
	if b.addedPartitions(req) > maxPartitionsPerRequest {
		for _, rt := range req.Topics {
			st := kmsg.NewCreatePartitionsResponseTopic()
			st.Topic = rt.Topic
			st.ErrorCode, st.ErrorMessage = kerr.PolicyViolation.Code, kmsg.StringPtr(errTooManyPartitions)
			resp.Topics = append(resp.Topics, st)
		}
		return respond(resp)
	}
	resp.Topics = answerTopics(req.Topics,
		func(t *kmsg.CreatePartitionsRequestTopic) string { return t.Topic },
		func(name string) kmsg.CreatePartitionsResponseTopic {
			st := kmsg.NewCreatePartitionsResponseTopic()
			st.Topic = name
			st.ErrorCode, st.ErrorMessage = kerr.InvalidRequest.Code, kmsg.StringPtr("Duplicate topic name.")
			return st
		},
		func(rt *kmsg.CreatePartitionsRequestTopic) kmsg.CreatePartitionsResponseTopic {
			if !b.allowed(c, opAlter, resTopic, rt.Topic) {
				st := kmsg.NewCreatePartitionsResponseTopic()
				st.Topic = rt.Topic
				st.ErrorCode = kerr.TopicAuthorizationFailed.Code
				return st
			}
			return b.createPartitions(c, rt, req.ValidateOnly)
		})
	return respond(resp)
}

// addedPartitions is how many partitions req would add to existing topics
// in all (Kafka caps the records of one controller operation at 10,000).
func (b *Broker) addedPartitions(req *kmsg.CreatePartitionsRequest) int64 {
	var n int64
	for _, rt := range req.Topics {
		if t, ok := b.topics.Get(rt.Topic); ok && rt.Count > t.Partitions {
			n += int64(rt.Count - t.Partitions)
		}
	}
	return n
}

// createPartitions grows (or with validateOnly checks growing) one topic.
func (b *Broker) createPartitions(c *conn, rt *kmsg.CreatePartitionsRequestTopic, validateOnly bool) kmsg.CreatePartitionsResponseTopic {
	st := kmsg.NewCreatePartitionsResponseTopic()
	st.Topic = rt.Topic
	err := b.checkNewAssignment(rt)
	var t topic.Topic
	if err == nil {
		t, err = b.topics.CreatePartitions(rt.Topic, rt.Count, validateOnly)
	}
	if err != nil {
		st.ErrorCode, st.ErrorMessage = adminError(c, "create partitions of "+rt.Topic, err)
		return st
	}
	if !validateOnly {
		c.lg.Info("added partitions", zap.String("topic", t.Name), zap.Int32("partitions", t.Partitions))
	}
	return st
}

// checkNewAssignment checks a manual assignment of the new partitions.
// The registry's errors (unknown topic, no increase, internal topic) come
// first in Kafka, so a topic they apply to is left for the registry.
func (b *Broker) checkNewAssignment(rt *kmsg.CreatePartitionsRequestTopic) error {
	if rt.Assignment == nil {
		return nil
	}
	t, ok := b.topics.Get(rt.Topic)
	if !ok || t.Internal || rt.Count <= t.Partitions {
		return nil
	}
	if add := rt.Count - t.Partitions; int(add) != len(rt.Assignment) {
		return &topic.Error{Code: kerr.InvalidReplicaAssignment, Detail: fmt.Sprintf(
			"Attempted to add %d additional partition(s), but only %d assignment(s) were specified.", add, len(rt.Assignment))}
	}
	for _, a := range rt.Assignment {
		// Existing partitions have one replica, this broker.
		if err := b.checkReplicas(a.Replicas, 1); err != nil {
			return err
		}
	}
	return nil
}
