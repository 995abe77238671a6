package broker

// DescribeShareGroupOffsets v0–v1 (KIP-932; v1 adds the lag, KIP-1226),
// as Kafka 4.2's GroupCoordinatorService.describeShareGroupOffsets: per
// group, the start offset (SPSO) of each share-partition asked for, or of
// every share-partition the group has when topics is null. A partition
// the group never consumed, or of a group id nobody uses, has start offset
// -1 (and lag -1). The lag is
// the records from SPSO to the high watermark that are not acknowledged
// or archived yet. A group that is not a share group is
// GROUP_ID_NOT_FOUND; DESCRIBE on the group is needed, and DESCRIBE on a
// topic for its partitions (TOPIC_AUTHORIZATION_FAILED).
//
// The leader epoch is 0 (this broker's only leader epoch, and Kafka's
// default for a partition never consumed).

import (
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/group/share"
	"github.com/kbroker/kbroker/partition"
)

func (b *Broker) handleDescribeShareGroupOffsets(c *conn, req *kmsg.DescribeShareGroupOffsetsRequest) (result, error) {
	resp := req.ResponseKind().(*kmsg.DescribeShareGroupOffsetsResponse)
	for _, rg := range req.Groups {
		g := kmsg.NewDescribeShareGroupOffsetsResponseGroup()
		g.GroupID = rg.GroupID
		offsets, ok := b.shares.Offsets(rg.GroupID)
		switch {
		case !b.allowed(c, opDescribe, resGroup, rg.GroupID):
			g.ErrorCode = kerr.GroupAuthorizationFailed.Code
		case !b.shareGroups():
			g.ErrorCode = kerr.UnsupportedVersion.Code
		case !ok && !b.groupIDTaken(rg.GroupID):
			// No group of that id: Kafka answers its partitions as
			// never consumed (start offset -1), not an error.
			g.Topics = b.describeShareOffsets(c, rg.Topics, nil)
		case !ok:
			g.ErrorCode = kerr.GroupIDNotFound.Code
			g.ErrorMessage = kmsg.StringPtr("Group " + rg.GroupID + " is not a share group.")
		default:
			g.Topics = b.describeShareOffsets(c, rg.Topics, offsets)
		}
		resp.Groups = append(resp.Groups, g)
	}
	return respond(resp)
}

// describeShareOffsets answers one group's topics; nil topics means every
// share-partition it has.
func (b *Broker) describeShareOffsets(c *conn, topics []kmsg.DescribeShareGroupOffsetsRequestGroupTopic, offsets []share.PartitionOffsets) []kmsg.DescribeShareGroupOffsetsResponseGroupTopic {
	byTP := make(map[share.TopicIDPartition]share.PartitionOffsets, len(offsets))
	for _, o := range offsets {
		byTP[o.TopicIDPartition] = o
	}
	if topics == nil {
		names := map[string][]int32{}
		for _, o := range offsets {
			if t, ok := b.topics.ByID(o.TopicID); ok {
				names[t.Name] = append(names[t.Name], o.Partition)
			}
		}
		for name, ps := range names {
			slices.Sort(ps)
			topics = append(topics, kmsg.DescribeShareGroupOffsetsRequestGroupTopic{Topic: name, Partitions: ps})
		}
		slices.SortFunc(topics, func(x, y kmsg.DescribeShareGroupOffsetsRequestGroupTopic) int {
			return strings.Compare(x.Topic, y.Topic)
		})
	}
	out := make([]kmsg.DescribeShareGroupOffsetsResponseGroupTopic, 0, len(topics))
	for _, rt := range topics {
		t := kmsg.NewDescribeShareGroupOffsetsResponseGroupTopic()
		t.Topic = rt.Topic
		meta, exists := b.topics.Get(rt.Topic)
		allowed := b.allowed(c, opDescribe, resTopic, rt.Topic)
		if exists {
			t.TopicID = meta.ID
		}
		for _, idx := range rt.Partitions {
			p := kmsg.NewDescribeShareGroupOffsetsResponseGroupTopicPartition()
			p.Partition, p.StartOffset, p.LeaderEpoch, p.Lag = idx, -1, 0, -1
			var part *partition.Partition
			if exists {
				part = b.store.Partition(partition.TopicID(meta.ID), idx)
			}
			switch {
			case !allowed:
				p.ErrorCode = kerr.TopicAuthorizationFailed.Code
			case part == nil:
				p.ErrorCode = kerr.UnknownTopicOrPartition.Code
			default:
				if o, ok := byTP[share.TopicIDPartition{TopicID: meta.ID, Partition: idx}]; ok {
					p.StartOffset, p.LeaderEpoch = o.StartOffset, 0
					p.Lag = max(part.HighWatermark()-o.StartOffset-int64(o.Done), 0)
				}
			}
			t.Partitions = append(t.Partitions, p)
		}
		out = append(out, t)
	}
	return out
}
