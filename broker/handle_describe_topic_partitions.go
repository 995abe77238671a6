package broker

// DescribeTopicPartitions v0 (KIP-966): the Java Admin's describeTopics
// path since Kafka 3.8, Metadata's topic part with paging.
//
// As Kafka's DescribeTopicPartitionsRequestHandler and
// KRaftMetadataCache.getTopicMetadataForDescribeTopicResponse:
//   - An empty topic list means every topic, unknown ones then never
//     reported; otherwise the named topics, each once, an unknown one with
//     UNKNOWN_TOPIC_OR_PARTITION (INVALID_TOPIC_EXCEPTION for a name Kafka
//     refuses) and no partitions. Topics come sorted by name.
//   - At most min(ResponsePartitionLimit, max.request.partition.size.limit)
//     partitions (at least 1) are returned. When a topic does not fit, the
//     response ends with it, holding the partitions that fit, and NextCursor
//     names it and its first partition left out; when the limit is used up
//     exactly at a topic's end, NextCursor names the next topic, partition
//     0. A request with a cursor starts at the cursor's topic and
//     partition; topics sorting before it are skipped.
//   - A cursor whose topic is not among the named topics, or with a
//     negative partition, fails the request with INVALID_REQUEST on every
//     named topic (DescribeTopicPartitionsRequest.getErrorResponse).
//
// Each partition is led by this broker at leader epoch 0, with itself as
// the only replica and in-sync replica and empty eligible-leader-replica
// lists (KIP-966 ELR: a single replica is always in sync); a partition the
// store does not serve yet (a topic being created concurrently) has no
// leader (-1), as Kafka reports a leader that is not alive. Without an
// authorizer every topic reports every operation it supports, as in
// Kafka.

import (
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/partition"
	"github.com/kbroker/kbroker/topic"
)

func (b *Broker) handleDescribeTopicPartitions(c *conn, req *kmsg.DescribeTopicPartitionsRequest) (result, error) {
	resp := req.ResponseKind().(*kmsg.DescribeTopicPartitionsResponse)
	all := len(req.Topics) == 0
	cursorTopic, cursorPart := "", int32(0)
	if req.Cursor != nil {
		cursorTopic, cursorPart = req.Cursor.Topic, req.Cursor.Partition
	}
	var names []string
	if all {
		for _, t := range b.topics.List() {
			if t.Name >= cursorTopic {
				names = append(names, t.Name)
			}
		}
	} else {
		for _, rt := range req.Topics {
			if rt.Topic >= cursorTopic {
				names = append(names, rt.Topic)
			}
		}
	}
	slices.Sort(names)
	names = slices.Compact(names)
	if req.Cursor != nil && ((!all && !slices.Contains(names, cursorTopic)) || cursorPart < 0) {
		for _, rt := range req.Topics {
			st := kmsg.NewDescribeTopicPartitionsResponseTopic()
			st.Topic, st.ErrorCode = kmsg.StringPtr(rt.Topic), kerr.InvalidRequest.Code
			st.Partitions = []kmsg.DescribeTopicPartitionsResponseTopicPartition{}
			resp.Topics = append(resp.Topics, st)
		}
		return respond(resp)
	}

	remaining := max(min(b.cfg.MaxRequestPartitionSizeLimit, req.ResponsePartitionLimit), 1)
	for _, name := range names {
		if remaining == 0 {
			resp.NextCursor = &kmsg.DescribeTopicPartitionsResponseNextCursor{Topic: name, Partition: 0}
			break
		}
		start := int32(0)
		if name == cursorTopic {
			start = cursorPart
		}
		t, ok := b.topics.Get(name)
		if !ok {
			if all {
				continue // deleted since it was listed
			}
			st := kmsg.NewDescribeTopicPartitionsResponseTopic()
			st.Topic, st.IsInternal = kmsg.StringPtr(name), topic.IsInternal(name)
			st.ErrorCode = kerr.UnknownTopicOrPartition.Code
			if topic.ValidateName(name) != nil {
				st.ErrorCode = kerr.InvalidTopicException.Code
			}
			st.AuthorizedOperations = topicAuthorizedOps
			resp.Topics = append(resp.Topics, st)
			continue
		}
		st, next := b.describeTopicPartitions(&t, start, remaining)
		resp.Topics = append(resp.Topics, st)
		if next >= 0 {
			resp.NextCursor = &kmsg.DescribeTopicPartitionsResponseNextCursor{Topic: name, Partition: next}
			break
		}
		remaining -= int32(len(st.Partitions))
	}
	return respond(resp)
}

// describeTopicPartitions describes at most limit partitions of t from
// start on, and returns the first partition left out, or -1.
func (b *Broker) describeTopicPartitions(t *topic.Topic, start, limit int32) (kmsg.DescribeTopicPartitionsResponseTopic, int32) {
	st := kmsg.NewDescribeTopicPartitionsResponseTopic()
	st.Topic, st.TopicID, st.IsInternal = kmsg.StringPtr(t.Name), t.ID, t.Internal
	st.AuthorizedOperations = topicAuthorizedOps
	end := min(t.Partitions, start+limit)
	if start > end {
		start = end
	}
	next := int32(-1)
	if end < t.Partitions {
		next = end
	}
	served := int32(len(b.store.Partitions(partition.TopicID(t.ID))))
	replicas := []int32{b.cfg.NodeID} // shared: encoding only reads it
	st.Partitions = make([]kmsg.DescribeTopicPartitionsResponseTopicPartition, 0, end-start)
	for i := start; i < end; i++ {
		p := kmsg.NewDescribeTopicPartitionsResponseTopicPartition()
		p.Partition, p.Replicas, p.ISR = i, replicas, replicas
		p.EligibleLeaderReplicas, p.LastKnownELR, p.OfflineReplicas = []int32{}, []int32{}, []int32{}
		p.LeaderID, p.LeaderEpoch = b.cfg.NodeID, 0
		if i >= served {
			p.LeaderID = -1
		} else if b.nodes != nil {
			p.LeaderID, p.LeaderEpoch = b.nodes.leader(t.ID, i)
			p.Replicas, p.ISR, p.OfflineReplicas = b.nodes.replicas(p.LeaderID)
		}
		st.Partitions = append(st.Partitions, p)
	}
	return st, next
}
