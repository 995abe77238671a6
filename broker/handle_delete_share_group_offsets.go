package broker

// DeleteShareGroupOffsets v0 (KIP-932), as Kafka 4.2's
// GroupCoordinatorService.deleteShareGroupOffsets: deletes the
// share-partition states of the named topics while the group has no
// members (NON_EMPTY_GROUP otherwise, GROUP_ID_NOT_FOUND without the
// group, both top-level); consumption of those partitions later starts
// over by share.auto.offset.reset. An unknown topic is
// UNKNOWN_TOPIC_OR_PARTITION. The answer waits until the tombstones are
// durable. DELETE on the group and READ on each topic are needed.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/group/share"
)

func (b *Broker) handleDeleteShareGroupOffsets(c *conn, req *kmsg.DeleteShareGroupOffsetsRequest) (result, error) {
	resp := req.ResponseKind().(*kmsg.DeleteShareGroupOffsetsResponse)
	fail := func(err *kerr.Error) (result, error) {
		resp.ErrorCode = err.Code
		resp.Topics = nil
		return respond(resp)
	}
	switch {
	case !b.allowed(c, opDelete, resGroup, req.GroupID):
		return fail(kerr.GroupAuthorizationFailed)
	case !b.shareGroups():
		return fail(kerr.UnsupportedVersion)
	}
	var ids []share.TopicID
	for _, rt := range req.Topics {
		t := kmsg.NewDeleteShareGroupOffsetsResponseTopic()
		t.Topic = rt.Topic
		meta, exists := b.topics.Get(rt.Topic)
		switch {
		case !b.allowed(c, opRead, resTopic, rt.Topic):
			t.ErrorCode = kerr.TopicAuthorizationFailed.Code
		case !exists:
			t.ErrorCode = kerr.UnknownTopicOrPartition.Code
		default:
			t.TopicID = meta.ID
			ids = append(ids, meta.ID)
		}
		resp.Topics = append(resp.Topics, t)
	}
	ready := make(chan struct{})
	if kerrE := b.shares.DeleteOffsets(req.GroupID, ids, func(err error) {
		if code := coordinatorWriteCode(err); code != 0 {
			for i := range resp.Topics {
				if resp.Topics[i].ErrorCode == 0 {
					resp.Topics[i].ErrorCode = code
				}
			}
		}
		close(ready)
	}); kerrE != nil {
		return fail(kerrE)
	}
	return result{resp: resp, ready: ready}, nil
}
