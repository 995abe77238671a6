package consumer

import (
	"bytes"
	"maps"
	"slices"
)

// TopicID is a topic's id (KIP-516), as assignments name topics.
type TopicID [16]byte

// Assignment is a set of partitions by topic id: each topic's partitions
// sorted, distinct, never empty. Kafka's Map<Uuid, Set<Integer>>.
//
// An Assignment is immutable once built: members, the target assignment
// and responses share them, so every operation returns a new one (or its
// argument, unchanged).
type Assignment map[TopicID][]int32

// TopicPartitions is one topic's partitions in a request or response.
type TopicPartitions struct {
	TopicID    TopicID
	Partitions []int32
}

// assignmentOf builds an Assignment from the lists a request carries,
// sorting and deduplicating; empty lists are dropped.
func assignmentOf(tps []TopicPartitions) Assignment {
	out := Assignment{}
	for _, tp := range tps {
		if len(tp.Partitions) == 0 {
			continue
		}
		out[tp.TopicID] = append(out[tp.TopicID], tp.Partitions...)
	}
	for id, ps := range out {
		slices.Sort(ps)
		out[id] = slices.Compact(ps)
	}
	return out
}

// has reports whether partition p of topic id is in a.
func (a Assignment) has(id TopicID, p int32) bool {
	_, ok := slices.BinarySearch(a[id], p)
	return ok
}

// size is the number of partitions in a.
func (a Assignment) size() int {
	n := 0
	for _, ps := range a {
		n += len(ps)
	}
	return n
}

// equal reports whether a and b hold the same partitions.
func (a Assignment) equal(b Assignment) bool {
	return maps.EqualFunc(a, b, slices.Equal)
}

// list is a as sorted TopicPartitions (by topic id), for responses.
func (a Assignment) list() []TopicPartitions {
	out := make([]TopicPartitions, 0, len(a))
	for _, id := range a.topics() {
		out = append(out, TopicPartitions{TopicID: id, Partitions: a[id]})
	}
	return out
}

// topics are a's topic ids, sorted.
func (a Assignment) topics() []TopicID {
	ids := slices.Collect(maps.Keys(a))
	slices.SortFunc(ids, compareTopicIDs)
	return ids
}

func compareTopicIDs(a, b TopicID) int { return bytes.Compare(a[:], b[:]) }

// TopicPartition is one partition, its topic named by id.
type TopicPartition struct {
	TopicID   TopicID
	Partition int32
}

// AssignmentEpochs are, for each partition a member holds (assigned or
// pending revocation), the member epoch at which it was given to the
// member: KIP-1251's assignment epochs. A commit that carries an older
// member epoch than the member's is still the member's own for a
// partition it has held since that epoch. Immutable like Assignment.
type AssignmentEpochs map[TopicPartition]int32

// assignmentBuilder accumulates partitions into a new Assignment.
type assignmentBuilder map[TopicID][]int32

func (b assignmentBuilder) add(id TopicID, p int32) { b[id] = append(b[id], p) }

// build returns the Assignment, sorted and without duplicates.
func (b assignmentBuilder) build() Assignment {
	out := make(Assignment, len(b))
	for id, ps := range b {
		if len(ps) == 0 {
			continue
		}
		ps = slices.Clone(ps)
		slices.Sort(ps)
		out[id] = slices.Compact(ps)
	}
	return out
}
