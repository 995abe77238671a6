package broker

// AlterShareGroupOffsets v0 (KIP-932), as Kafka 4.2's
// GroupCoordinatorService.alterShareGroupOffsets: sets the start offset of
// share-partitions while the group has no members (NON_EMPTY_GROUP
// otherwise, top-level), creating the share group when there is none. Each
// partition starts over at its offset with a new state epoch; the answer
// waits until that is durable in __share_group_state. An unknown topic or
// partition is UNKNOWN_TOPIC_OR_PARTITION, a negative offset
// INVALID_REQUEST. READ on the group and on each topic are needed.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/group/share"
	"github.com/kbroker/kbroker/partition"
)

func (b *Broker) handleAlterShareGroupOffsets(c *conn, req *kmsg.AlterShareGroupOffsetsRequest) (result, error) {
	resp := req.ResponseKind().(*kmsg.AlterShareGroupOffsetsResponse)
	fail := func(err *kerr.Error, msg string) (result, error) {
		resp.ErrorCode = err.Code
		if msg != "" {
			resp.ErrorMessage = kmsg.StringPtr(msg)
		}
		return respond(resp)
	}
	switch {
	case !b.allowed(c, opRead, resGroup, req.GroupID):
		return fail(kerr.GroupAuthorizationFailed, "")
	case !b.shareGroups():
		return fail(kerr.UnsupportedVersion, "")
	case req.GroupID == "":
		return fail(kerr.InvalidGroupID, "")
	}
	if _, err := b.shareState(true); err != nil {
		return fail(kerr.CoordinatorNotAvailable, "")
	}
	offsets := map[share.TopicIDPartition]int64{}
	for _, rt := range req.Topics {
		t := kmsg.NewAlterShareGroupOffsetsResponseTopic()
		t.Topic = rt.Topic
		meta, exists := b.topics.Get(rt.Topic)
		if exists {
			t.TopicID = meta.ID
		}
		allowed := b.allowed(c, opRead, resTopic, rt.Topic)
		for _, rp := range rt.Partitions {
			p := kmsg.NewAlterShareGroupOffsetsResponseTopicPartition()
			p.Partition = rp.Partition
			switch {
			case !allowed:
				p.ErrorCode = kerr.TopicAuthorizationFailed.Code
			case !exists || b.store.Partition(partition.TopicID(meta.ID), rp.Partition) == nil:
				p.ErrorCode = kerr.UnknownTopicOrPartition.Code
			case rp.StartOffset < 0:
				p.ErrorCode = kerr.InvalidRequest.Code
			default:
				offsets[share.TopicIDPartition{TopicID: meta.ID, Partition: rp.Partition}] = rp.StartOffset
			}
			t.Partitions = append(t.Partitions, p)
		}
		resp.Topics = append(resp.Topics, t)
	}
	ready := make(chan struct{})
	if kerrE := b.shares.AlterOffsets(req.GroupID, offsets, func(err error) {
		if code := coordinatorWriteCode(err); code != 0 {
			for i := range resp.Topics {
				for j := range resp.Topics[i].Partitions {
					if p := &resp.Topics[i].Partitions[j]; p.ErrorCode == 0 {
						p.ErrorCode = code
					}
				}
			}
		}
		close(ready)
	}); kerrE != nil {
		resp.Topics = nil
		return fail(kerrE, "")
	}
	return result{resp: resp, ready: ready}, nil
}
