package broker

// OffsetCommit (key 8), v0–v10. Offsets go to the group's partition of
// __consumer_offsets (package offsets) and the response waits until they
// are durable by the flush mode, so an acknowledged commit survives a
// kill -9 in sync mode. The rules are Kafka 4's OffsetMetadataManager:
//
//   - membership of a consumer group (KIP-848): its member must exist
//     (UNKNOWN_MEMBER_ID), commit with v9+ (UNSUPPORTED_VERSION) and carry
//     its current member epoch, or an older one for partitions it has
//     held since (KIP-1251), else STALE_MEMBER_EPOCH; a commit with a
//     negative epoch passes while the group has no members
//     (consumer.Coordinator.ValidateCommit). Streams groups (KIP-1071) have
//     the same rules, with the tasks the member holds for partitions
//     (streams.Coordinator.ValidateCommit).
//   - membership of a classic group: group.Coordinator.ValidateCommit; a commit with
//     generation -1 and no member id is a simple consumer's (or the admin
//     client's) and creates an Empty group when there is none. From v9 a
//     member's commit to a missing group is GROUP_ID_NOT_FOUND, before it
//     ILLEGAL_GENERATION, as in Kafka.
//   - each partition must exist (UNKNOWN_TOPIC_OR_PARTITION; v10 names
//     topics by id: UNKNOWN_TOPIC_ID); metadata longer than
//     offset.metadata.max.bytes (4096) is OFFSET_METADATA_TOO_LARGE.
//   - v2–v4 retention_time_ms other than -1 sets an explicit expiry.
//   - write failures map as Kafka maps them for coordinator writes
//     (NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE, ...), so clients retry.
//
// v0–v1 are below Kafka 4's floor; served for old clients with the same
// rules (v1's per-partition commit timestamp is ignored, as Kafka 2.1+
// ignores it for expiry).

import (
	"cmp"
	"errors"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/group"
	"github.com/kbroker/kbroker/offsets"
	"github.com/kbroker/kbroker/topic"
)

// offsetMetadataMaxBytes is Kafka's offset.metadata.max.bytes default.
const offsetMetadataMaxBytes = 4096

func (b *Broker) handleOffsetCommit(c *conn, req *kmsg.OffsetCommitRequest) (result, error) {
	resp := req.ResponseKind().(*kmsg.OffsetCommitResponse)
	resp.Topics = make([]kmsg.OffsetCommitResponseTopic, len(req.Topics))
	var pc pendingCommits
	groupErr := b.validateOffsetCommit(c, req)
	if !b.allowed(c, opRead, resGroup, req.Group) {
		groupErr = kerr.GroupAuthorizationFailed
	}
	nowMs := time.Now().UnixMilli()
	for i := range req.Topics {
		rt := &req.Topics[i]
		st := &resp.Topics[i]
		st.Topic, st.TopicID = rt.Topic, rt.TopicID
		st.Partitions = make([]kmsg.OffsetCommitResponseTopicPartition, len(rt.Partitions))
		t, topicCode := b.offsetTopic(req.Version >= 10, rt.Topic, rt.TopicID)
		if topicCode != kerr.UnknownTopicID.Code && !b.allowed(c, opRead, resTopic, cmp.Or(t.Name, rt.Topic)) {
			topicCode = kerr.TopicAuthorizationFailed.Code
		}
		for j := range rt.Partitions {
			rp := &rt.Partitions[j]
			sp := &st.Partitions[j]
			sp.Partition = rp.Partition
			cm := pc.add(groupErr, t, topicCode, rp.Partition, rp.Offset, rp.LeaderEpoch, rp.Metadata, &sp.ErrorCode)
			if cm == nil {
				continue
			}
			if req.Version < 6 {
				cm.LeaderEpoch = -1
			}
			if req.Version >= 2 && req.Version <= 4 && req.RetentionTimeMillis != -1 {
				cm.ExpireTimestamp = nowMs + req.RetentionTimeMillis
			}
		}
	}
	return b.writeCommits(resp, &pc, func(s *offsets.Store, done func(error)) { s.Commit(req.Group, pc.commits, done) })
}

// validateOffsetCommit checks the committing member against the group:
// a consumer group's rules when a consumer group (KIP-848) holds the id,
// else the classic ones.
func (b *Broker) validateOffsetCommit(c *conn, req *kmsg.OffsetCommitRequest) error {
	partitions := b.commitPartitions(c, req.Version >= 10, len(req.Topics), func(i int) (string, [16]byte, []int32) {
		rt := &req.Topics[i]
		ps := make([]int32, len(rt.Partitions))
		for j := range rt.Partitions {
			ps[j] = rt.Partitions[j].Partition
		}
		return rt.Topic, rt.TopicID, ps
	})
	if found, err := b.groups.Consumer().ValidateCommit(req.Group, req.MemberID, req.InstanceID, req.Generation, false, req.Version, partitions); found {
		return err
	}
	if found, err := b.streamsCo.ValidateCommit(req.Group, req.MemberID, req.Generation, false, req.Version, byTopicName(partitions)); found {
		return err
	}
	instance := ""
	if req.InstanceID != nil {
		instance = *req.InstanceID
	}
	err := b.groups.ValidateCommit(req.Group, req.MemberID, instance, req.Generation)
	if errors.Is(err, kerr.IllegalGeneration) && req.Version >= 9 {
		if d, derr := b.groups.Describe(req.Group); derr == nil && d.State == group.Dead {
			return kerr.GroupIDNotFound
		}
	}
	return err
}

// offsetTopic finds a topic named in an offsets request, by id (byID) or
// by name, or returns the error code for its partitions.
func (b *Broker) offsetTopic(byID bool, name string, id [16]byte) (topic.Topic, int16) {
	if byID {
		t, ok := b.topics.ByID(topic.ID(id))
		if !ok {
			return t, kerr.UnknownTopicID.Code
		}
		return t, 0
	}
	t, ok := b.topics.Get(name)
	if !ok {
		return t, kerr.UnknownTopicOrPartition.Code
	}
	return t, 0
}
