package broker

// DescribeProducers v0 (KIP-664): the idempotent and transactional
// producers a partition knows, with their epoch, last sequence and
// timestamp, the coordinator epoch of their last marker and the first
// offset of their open transaction (-1 when none). A missing topic or
// partition is UNKNOWN_TOPIC_OR_PARTITION, as in Kafka.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/partition"
)

func (b *Broker) handleDescribeProducers(c *conn, req *kmsg.DescribeProducersRequest) (result, error) {
	resp := req.ResponseKind().(*kmsg.DescribeProducersResponse)
	for _, rt := range req.Topics {
		st := kmsg.DescribeProducersResponseTopic{Topic: rt.Topic}
		t, known := b.topics.Get(rt.Topic)
		denied := !b.allowed(c, opRead, resTopic, rt.Topic)
		for _, idx := range rt.Partitions {
			sp := kmsg.NewDescribeProducersResponseTopicPartition()
			sp.Partition = idx
			if denied {
				sp.ErrorCode = kerr.TopicAuthorizationFailed.Code
				st.Partitions = append(st.Partitions, sp)
				continue
			}
			var p *partition.Partition
			if known {
				p = b.store.Partition(partition.TopicID(t.ID), idx)
			}
			if p == nil {
				sp.ErrorCode = kerr.UnknownTopicOrPartition.Code
				st.Partitions = append(st.Partitions, sp)
				continue
			}
			for _, v := range p.Producers() {
				sp.ActiveProducers = append(sp.ActiveProducers, kmsg.DescribeProducersResponseTopicPartitionActiveProducer{
					ProducerID:            v.ProducerID,
					ProducerEpoch:         int32(v.ProducerEpoch),
					LastSequence:          v.LastSequence,
					LastTimestamp:         v.LastTimestamp,
					CoordinatorEpoch:      v.CoordinatorEpoch,
					CurrentTxnStartOffset: v.CurrentTxnStartOffset,
				})
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return respond(resp)
}
