package broker

// OffsetForLeaderEpoch v0–v4 (KIP-101; v1 LeaderEpoch in the response,
// KIP-279; v2 CurrentLeaderEpoch, KIP-320, which clients use to detect log
// truncation after a leader change; v3 ReplicaID; v4 flexible).
//
// One node, one leader epoch: 0, forever. Answers follow Kafka's
// Partition.lastOffsetForLeaderEpoch and LeaderEpochFileCache.endOffsetFor
// for a cache holding the single epoch 0:
//
//	requested epoch 0               epoch 0, end offset = the log end offset
//	                                (the current epoch's end, as Kafka)
//	requested epoch -1 or above 0   epoch -1, end offset -1 (UNDEFINED), no error
//	requested epoch below -1        that epoch, end offset = the log start offset
//	                                (epoch 0's start after retention)
//
// CurrentLeaderEpoch (v2+) is checked first as in Kafka's
// checkCurrentLeaderEpoch: -1 skips the check, above 0 is
// UNKNOWN_LEADER_EPOCH, below -1 FENCED_LEADER_EPOCH. An unknown topic or
// partition is UNKNOWN_TOPIC_OR_PARTITION. ReplicaID is not checked: Kafka
// uses it only to choose between cluster and topic authorization.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/partition"
)

func (b *Broker) handleOffsetForLeaderEpoch(c *conn, req *kmsg.OffsetForLeaderEpochRequest) (result, error) {
	resp := req.ResponseKind().(*kmsg.OffsetForLeaderEpochResponse)
	resp.Topics = make([]kmsg.OffsetForLeaderEpochResponseTopic, len(req.Topics))
	for i := range req.Topics {
		rt, st := &req.Topics[i], &resp.Topics[i]
		st.Default()
		st.Topic = rt.Topic
		st.Partitions = make([]kmsg.OffsetForLeaderEpochResponseTopicPartition, len(rt.Partitions))
		t, known := b.topics.Get(rt.Topic)
		denied := !b.allowedCluster(c, opClusterAction) && !b.allowed(c, opDescribe, resTopic, rt.Topic)
		for j := range rt.Partitions {
			rp, sp := &rt.Partitions[j], &st.Partitions[j]
			sp.Default()
			sp.Partition = rp.Partition
			var p *partition.Partition
			if known {
				p = b.store.Partition(partition.TopicID(t.ID), rp.Partition)
			}
			switch {
			case denied:
				sp.ErrorCode = kerr.TopicAuthorizationFailed.Code
			case p == nil:
				sp.ErrorCode = kerr.UnknownTopicOrPartition.Code
			case b.nodes != nil:
				b.offsetForLeaderEpochNode(c, sp, t.ID, p, rp, req.Version)
			case req.Version >= 2 && currentLeaderEpochCode(rp.CurrentLeaderEpoch, 0) != 0:
				sp.ErrorCode = currentLeaderEpochCode(rp.CurrentLeaderEpoch, 0)
			case rp.LeaderEpoch == 0:
				sp.LeaderEpoch, sp.EndOffset = 0, p.LogEndOffset()
			case rp.LeaderEpoch < -1:
				sp.LeaderEpoch, sp.EndOffset = rp.LeaderEpoch, p.LogStartOffset()
			}
		}
	}
	return respond(resp)
}
