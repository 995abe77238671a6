package broker

import (
	"bytes"
	"cmp"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// A produce request may name a topic, or a topic's partition, more than
// once. Kafka collects the request's partitions into a map
// (KafkaApis.handleProduceRequest), so a partition named twice is written
// and answered once, with its last naming's records, and the partitions of
// a topic named twice are answered under one topic entry. kbroker reads
// such a request the same way: it answers a partition where first named.
// Clients do not send such requests; checking costs no allocation.

// produceTopicKey is how a produce request names a topic: by name, or
// (v13+) by id.
type produceTopicKey struct {
	name string
	id   [16]byte
}

func compareTopicKeys(a, b produceTopicKey) int {
	return cmp.Or(strings.Compare(a.name, b.name), bytes.Compare(a.id[:], b.id[:]))
}

// hasRepeats reports whether req names a topic, or a topic's partition,
// more than once.
func (sc *produceScratch) hasRepeats(req *kmsg.ProduceRequest) bool {
	topics := sc.topicKeys[:0]
	for i := range req.Topics {
		topics = append(topics, produceTopicKey{req.Topics[i].Topic, req.Topics[i].TopicID})
	}
	sc.topicKeys = topics
	defer clear(sc.topicKeys) // the names are the request's
	if hasRepeat(topics, compareTopicKeys) {
		return true
	}
	for i := range req.Topics {
		parts := sc.partitionKeys[:0]
		for j := range req.Topics[i].Partitions {
			parts = append(parts, req.Topics[i].Partitions[j].Partition)
		}
		sc.partitionKeys = parts
		if hasRepeat(parts, cmp.Compare[int32]) {
			return true
		}
	}
	return false
}

// hasRepeat reports whether s holds a value twice, reordering s: pairwise
// for a short s, sorted for a longer one.
func hasRepeat[T any](s []T, compare func(a, b T) int) bool {
	if len(s) <= 8 {
		for i := range s {
			for j := range i {
				if compare(s[i], s[j]) == 0 {
					return true
				}
			}
		}
		return false
	}
	slices.SortFunc(s, compare)
	for i := 1; i < len(s); i++ {
		if compare(s[i-1], s[i]) == 0 {
			return true
		}
	}
	return false
}

// mergeRepeats rewrites a request with repeats (hasRepeats) into one topic
// entry per topic, where the topic is first named, and one partition entry
// per partition, where first named, carrying its last naming's records.
func mergeRepeats(req *kmsg.ProduceRequest) {
	req.Topics = mergeRepeated(req.Topics,
		func(t *kmsg.ProduceRequestTopic) produceTopicKey { return produceTopicKey{t.Topic, t.TopicID} },
		func(t *kmsg.ProduceRequestTopic) *[]kmsg.ProduceRequestTopicPartition { return &t.Partitions },
		func(p *kmsg.ProduceRequestTopicPartition) int32 { return p.Partition })
}
