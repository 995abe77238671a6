package broker

// DeleteRecords v0–v2 (KIP-107; v2 flexible).
//
// Each partition's log start offset moves to the requested offset
// (partition.Partition.DeleteRecords; -1 means the high watermark), and the
// response carries the new log start offset as the low watermark. An offset
// below -1 or above the high watermark is OFFSET_OUT_OF_RANGE, an unknown
// topic or partition UNKNOWN_TOPIC_OR_PARTITION, and internal topics are
// refused with INVALID_TOPIC_EXCEPTION, as Kafka's
// ReplicaManager.deleteRecordsOnLocalLog. A failed partition reports low
// watermark -1 (DeleteRecordsResponse.INVALID_LOW_WATERMARK). A topic whose
// cleanup.policy has compact but not delete is refused with
// POLICY_VIOLATION, as Kafka's Partition.deleteRecordsOnLeader: deleting
// a prefix would drop the latest value of keys that compaction promises
// to keep.
//
// The new log start offset is checkpointed before the response; the data
// itself goes when retention next deletes commit-log files. With one
// replica there is nothing to wait for, so TimeoutMillis is not used.
//
// A partition named more than once is answered once, at the offset named
// last, and a topic named more than once in one entry; a topic naming no
// partitions is left out (mergeDeleteRecords, as Kafka's map of
// partitions). Answers keep the order of first naming.

import (
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"github.com/kbroker/kbroker/partition"
	"github.com/kbroker/kbroker/topic"
)

func (b *Broker) handleDeleteRecords(c *conn, req *kmsg.DeleteRecordsRequest) (result, error) {
	resp := req.ResponseKind().(*kmsg.DeleteRecordsResponse)
	topics := mergeDeleteRecords(req.Topics)
	resp.Topics = make([]kmsg.DeleteRecordsResponseTopic, len(topics))
	for i := range topics {
		rt, st := &topics[i], &resp.Topics[i]
		st.Default()
		st.Topic = rt.Topic
		st.Partitions = make([]kmsg.DeleteRecordsResponseTopicPartition, len(rt.Partitions))
		t, known := b.topics.Get(rt.Topic)
		denied := !b.allowed(c, opDelete, resTopic, rt.Topic)
		for j := range rt.Partitions {
			rp, sp := &rt.Partitions[j], &st.Partitions[j]
			sp.Default()
			sp.Partition, sp.LowWatermark = rp.Partition, -1
			if denied {
				sp.ErrorCode = kerr.TopicAuthorizationFailed.Code
				continue
			}
			if !known {
				sp.ErrorCode = kerr.UnknownTopicOrPartition.Code
				continue
			}
			p := b.store.Partition(partition.TopicID(t.ID), rp.Partition)
			switch {
			case p == nil:
				sp.ErrorCode = kerr.UnknownTopicOrPartition.Code
			case topic.IsInternal(t.Name):
				sp.ErrorCode = kerr.InvalidTopicException.Code
			case t.Configs.CleanupPolicy().Compact && !t.Configs.CleanupPolicy().Delete:
				sp.ErrorCode = kerr.PolicyViolation.Code
			default:
				low, err := p.DeleteRecords(rp.Offset)
				if err != nil {
					sp.ErrorCode = errorCode(err)
					if sp.ErrorCode != kerr.OffsetOutOfRange.Code {
						b.lg.Warn("delete records", zap.String("topic", t.Name), zap.Int32("partition", rp.Partition), zap.Error(err))
					}
					continue
				}
				sp.LowWatermark = low
			}
		}
	}
	return respond(resp)
}

// mergeDeleteRecords folds the topics a request names more than once into
// one entry and the partitions it names more than once into one, at the
// offset named last (mergeRepeated), and drops topics naming no partitions
// first, as Kafka's KafkaApis.handleDeleteRecordsRequest, which keys the
// request by partition.
func mergeDeleteRecords(topics []kmsg.DeleteRecordsRequestTopic) []kmsg.DeleteRecordsRequestTopic {
	topics = slices.DeleteFunc(topics, func(t kmsg.DeleteRecordsRequestTopic) bool { return len(t.Partitions) == 0 })
	return mergeRepeated(topics,
		func(t *kmsg.DeleteRecordsRequestTopic) string { return t.Topic },
		func(t *kmsg.DeleteRecordsRequestTopic) *[]kmsg.DeleteRecordsRequestTopicPartition {
			return &t.Partitions
		},
		func(p *kmsg.DeleteRecordsRequestTopicPartition) int32 { return p.Partition })
}
