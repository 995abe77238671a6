package integration

// Differential steps for share groups (KIP-932, keys 76–79 and 90–92):
// heartbeat join, fencing and leave, describe, share fetch and acknowledge
// on their error paths, and the share-group offsets admin keys.

import (
	"regexp"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// shareMemberID is the member id both sides get: share members choose
// their own (KIP-1082), a UUID string.
const shareMemberID = "Ymcnw9cxQ3m5sX2yqvE9zA"

// shareHeartbeatReq is a ShareGroupHeartbeat; epoch -2 means "the epoch
// the side last answered" (kept in diffSide.generation).
func shareHeartbeatReq(group, member string, epoch int32, topics ...string) func(*diffSide, int16) kmsg.Request {
	return func(s *diffSide, _ int16) kmsg.Request {
		r := kmsg.NewPtrShareGroupHeartbeatRequest()
		r.GroupID, r.MemberID, r.MemberEpoch = group, member, epoch
		if epoch == -2 {
			r.MemberEpoch = s.generation
		}
		if len(topics) > 0 {
			r.SubscribedTopicNames = topics
		}
		return r
	}
}

// rememberShareEpoch keeps a successful heartbeat's member epoch.
func rememberShareEpoch(s *diffSide, resp kmsg.Response) {
	if r := resp.(*kmsg.ShareGroupHeartbeatResponse); r.ErrorCode == 0 {
		s.generation = r.MemberEpoch
	}
}

func shareDescribeReq(groups ...string) func(*diffSide, int16) kmsg.Request {
	return func(_ *diffSide, _ int16) kmsg.Request {
		r := kmsg.NewPtrShareGroupDescribeRequest()
		r.GroupIDs = groups
		return r
	}
}

// shareFetchReq opens (epoch 0) or continues a share session on topic's
// partition 0; an unknown topic gets a made-up id.
func shareFetchReq(group, member, topic string, sessionEpoch int32) func(*diffSide, int16) kmsg.Request {
	return func(s *diffSide, _ int16) kmsg.Request {
		r := kmsg.NewPtrShareFetchRequest()
		r.GroupID, r.MemberID, r.ShareSessionEpoch = &group, &member, sessionEpoch
		r.MaxWaitMillis, r.MinBytes, r.MaxBytes, r.MaxRecords, r.BatchSize = 0, 1, 1<<20, 100, 100
		id, ok := s.topicIDs[topic]
		if !ok {
			id = [16]byte{0xde, 0xad, 0xbe, 0xef}
		}
		t := kmsg.NewShareFetchRequestTopic()
		t.TopicID = id
		p := kmsg.NewShareFetchRequestTopicPartition()
		p.Partition, p.PartitionMaxBytes = 0, 1<<20
		t.Partitions = append(t.Partitions, p)
		r.Topics = append(r.Topics, t)
		return r
	}
}

// shareAckReq acknowledges [first, last] of topic's partition 0 with typ
// in share session epoch sessionEpoch.
func shareAckReq(group, member, topic string, sessionEpoch int32, first, last int64, typ int8) func(*diffSide, int16) kmsg.Request {
	return func(s *diffSide, _ int16) kmsg.Request {
		r := kmsg.NewPtrShareAcknowledgeRequest()
		r.GroupID, r.MemberID, r.ShareSessionEpoch = &group, &member, sessionEpoch
		t := kmsg.NewShareAcknowledgeRequestTopic()
		t.TopicID = s.topicIDs[topic]
		p := kmsg.NewShareAcknowledgeRequestTopicPartition()
		p.Partition = 0
		b := kmsg.NewShareAcknowledgeRequestTopicPartitionAcknowledgementBatch()
		b.FirstOffset, b.LastOffset, b.AcknowledgeTypes = first, last, []int8{typ}
		p.AcknowledgementBatches = append(p.AcknowledgementBatches, b)
		t.Partitions = append(t.Partitions, p)
		r.Topics = append(r.Topics, t)
		return r
	}
}

func describeShareOffsetsReq(group, topic string) func(*diffSide, int16) kmsg.Request {
	return func(_ *diffSide, _ int16) kmsg.Request {
		r := kmsg.NewPtrDescribeShareGroupOffsetsRequest()
		g := kmsg.NewDescribeShareGroupOffsetsRequestGroup()
		g.GroupID = group
		t := kmsg.NewDescribeShareGroupOffsetsRequestGroupTopic()
		t.Topic, t.Partitions = topic, []int32{0}
		g.Topics = append(g.Topics, t)
		r.Groups = append(r.Groups, g)
		return r
	}
}

func alterShareOffsetsReq(group, topic string, offset int64) func(*diffSide, int16) kmsg.Request {
	return func(_ *diffSide, _ int16) kmsg.Request {
		r := kmsg.NewPtrAlterShareGroupOffsetsRequest()
		r.GroupID = group
		t := kmsg.NewAlterShareGroupOffsetsRequestTopic()
		t.Topic = topic
		p := kmsg.NewAlterShareGroupOffsetsRequestTopicPartition()
		p.Partition, p.StartOffset = 0, offset
		t.Partitions = append(t.Partitions, p)
		r.Topics = append(r.Topics, t)
		return r
	}
}

func deleteShareOffsetsReq(group, topic string) func(*diffSide, int16) kmsg.Request {
	return func(_ *diffSide, _ int16) kmsg.Request {
		r := kmsg.NewPtrDeleteShareGroupOffsetsRequest()
		r.GroupID = group
		t := kmsg.NewDeleteShareGroupOffsetsRequestTopic()
		t.Topic = topic
		r.Topics = append(r.Topics, t)
		return r
	}
}

// shareInitTiming are the fields of share fetch and acknowledge answers
// that depend on whether Kafka has initialized the share-partition yet.
var shareInitTiming = regexp.MustCompile(`^Topics(\.|$)`)

// shareSteps is the share-group sequence.
func shareSteps(run string) []diffStep {
	topic, group, missing := "sq-"+run, "sg-"+run, "missing-"+run
	// The assignment depends on when each side's share state is
	// initialized (Kafka initializes it asynchronously), and so do the
	// epochs after the join: Kafka bumps the group once the
	// share-partition is initialized.
	assignment := regexp.MustCompile(`(Assignment|HeartbeatIntervalMillis)(\.|$)`)
	initialized := regexp.MustCompile(`(Assignment|MemberEpoch|GroupEpoch|AssignmentEpoch|HeartbeatIntervalMillis)(\.|$)`)
	return []diffStep{
		{name: "create", req: createTopicsReq(topic, 1, nil, false), versions: newest,
			ignore: regexp.MustCompile(`Topics\.0\.Configs\.`)},
		awaitTopic(topic, 1),
		awaitCoordinator(group, 0),
		awaitGroupLoaded(group),
		{name: "produce 3 records", req: produceReq(topic, 0, -1, plainBatch("a", "b", "c")), versions: newest,
			until: func(resp kmsg.Response) bool {
				return resp.(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode == 0
			}},
		{name: "heartbeat without topics at epoch 0", req: shareHeartbeatReq(group, shareMemberID, 0), versions: newest},
		{name: "heartbeat with an empty member id", req: shareHeartbeatReq(group, "", 0, topic)},
		{name: "heartbeat of an unknown member", req: shareHeartbeatReq(group, "unknown", 3)},
		{name: "join", req: shareHeartbeatReq(group, shareMemberID, 0, topic), after: rememberShareEpoch, versions: newest, ignore: assignment},
		{name: "heartbeat at a future epoch", req: shareHeartbeatReq(group, shareMemberID, 99), versions: newest},
		{name: "heartbeat at the epoch", req: shareHeartbeatReq(group, shareMemberID, -2), after: rememberShareEpoch, versions: newest, ignore: initialized},
		{name: "describe", req: shareDescribeReq(group), versions: newest, ignore: initialized},
		{name: "describe unknown group", req: shareDescribeReq(missing)},
		{name: "share fetch, session not opened", req: shareFetchReq(group, shareMemberID, topic, 1), versions: newest},
		// Kafka initializes a share-partition's state asynchronously after
		// the assignment names it: until then its answers to these two
		// leave the partition out or give it no error, after it they
		// match kbroker's. The top-level answer is compared.
		{name: "share fetch, unknown member", req: shareFetchReq(group, "unknown", topic, 0), versions: newest,
			ignore: shareInitTiming},
		{name: "share fetch, unknown topic", req: shareFetchReq(group, shareMemberID, missing, 0)},
		{name: "share acknowledge, no session", req: shareAckReq(group, shareMemberID, topic, 1, 0, 0, 1), versions: newest,
			ignore: shareInitTiming},
		{name: "share acknowledge, bad type", req: shareAckReq(group, shareMemberID, topic, 1, 0, 0, 9)},
		{name: "describe share offsets", req: describeShareOffsetsReq(group, topic), versions: newest,
			ignore: regexp.MustCompile(`(StartOffset|Lag)$`)},
		{name: "describe share offsets, unknown group", req: describeShareOffsetsReq(missing, topic)},
		{name: "alter share offsets of a group with members", req: alterShareOffsetsReq(group, topic, 0), versions: newest},
		{name: "delete share offsets of a group with members", req: deleteShareOffsetsReq(group, topic), versions: newest},
		{name: "leave", req: shareHeartbeatReq(group, shareMemberID, -1), versions: newest},
		{name: "alter share offsets, unknown topic", req: alterShareOffsetsReq(group, missing, 0)},
		{name: "delete share offsets, unknown group", req: deleteShareOffsetsReq(missing, topic)},
	}
}
