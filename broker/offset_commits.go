package broker

import (
	"iter"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/group/consumer"
	"github.com/kbroker/kbroker/offsets"
	"github.com/kbroker/kbroker/topic"
)

// pendingCommits gathers the partitions of an OffsetCommit or a
// TxnOffsetCommit that pass the checks, with where each one's error code
// goes in the response.
type pendingCommits struct {
	commits []offsets.Commit
	codes   []*int16
}

// add checks one partition of the request (the group's verdict, the
// topic's, the partition index, the metadata size) and either sets *code
// or queues the commit, returned so the caller can adjust its fields.
func (pc *pendingCommits) add(groupErr error, t topic.Topic, topicCode int16, partition int32, offset int64, leaderEpoch int32, metadata *string, code *int16) *offsets.Commit {
	switch {
	case groupErr != nil:
		*code = errorCode(groupErr)
	case topicCode != 0:
		*code = topicCode
	case partition < 0 || partition >= t.Partitions:
		*code = kerr.UnknownTopicOrPartition.Code
	case metadata != nil && len(*metadata) > offsetMetadataMaxBytes:
		*code = kerr.OffsetMetadataTooLarge.Code
	default:
		cm := offsets.Commit{
			TopicPartition:  offsets.TopicPartition{Topic: t.Name, Partition: partition},
			Offset:          offset,
			LeaderEpoch:     leaderEpoch,
			ExpireTimestamp: -1,
		}
		if metadata != nil {
			cm.Metadata = *metadata
		}
		pc.commits = append(pc.commits, cm)
		pc.codes = append(pc.codes, code)
		return &pc.commits[len(pc.commits)-1]
	}
	return nil
}

// write hands the queued commits to the offsets store through write and
// returns resp, pending until the store answers; a failed write sets the
// code Kafka gives for failed coordinator writes on every queued
// partition.
func (b *Broker) writeCommits(resp kmsg.Response, pc *pendingCommits, write func(*offsets.Store, func(error))) (result, error) {
	if len(pc.commits) == 0 {
		return respond(resp)
	}
	fail := func(code int16) {
		for _, c := range pc.codes {
			*c = code
		}
	}
	store, err := b.committedOffsets()
	if err != nil {
		fail(errorCode(err))
		return respond(resp)
	}
	ready := make(chan struct{})
	write(store, func(err error) {
		if code := coordinatorWriteCode(err); code != 0 {
			fail(code)
		}
		close(ready)
	})
	return result{resp: resp, ready: ready}, nil
}

// commitPartitions yields the partitions of an OffsetCommit's or a
// TxnOffsetCommit's topics, by topic name and id, for a consumer group's
// check of an older member epoch (KIP-1251). Topics that do not exist or
// that c may not read, and partitions out of range, are left out: they
// get their own error codes, as Kafka answers them before its group
// coordinator sees the request. topic returns the i-th of n topics of
// the request; it runs only if the check needs the partitions.
func (b *Broker) commitPartitions(c *conn, byID bool, n int, topic func(i int) (name string, id [16]byte, partitions []int32)) iter.Seq2[string, consumer.TopicPartition] {
	return func(yield func(string, consumer.TopicPartition) bool) {
		for i := range n {
			name, id, partitions := topic(i)
			t, code := b.offsetTopic(byID, name, id)
			if code != 0 {
				continue
			}
			// The request's own loop logs a denial; this check is quiet.
			if az := b.security.authz; az != nil && !az.Authorize(c.principal, c.host, opRead, resTopic, t.Name) {
				continue
			}
			for _, p := range partitions {
				if p < 0 || p >= t.Partitions {
					continue
				}
				if !yield(t.Name, consumer.TopicPartition{TopicID: consumer.TopicID(t.ID), Partition: p}) {
					return
				}
			}
		}
	}
}

// byTopicName is partitions by topic name and partition, as a streams
// group's check of an older member epoch (KIP-1251) takes them: streams
// groups know their topics by name.
func byTopicName(partitions iter.Seq2[string, consumer.TopicPartition]) iter.Seq2[string, int32] {
	return func(yield func(string, int32) bool) {
		for name, tp := range partitions {
			if !yield(name, tp.Partition) {
				return
			}
		}
	}
}
