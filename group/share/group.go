package share

import (
	"slices"
	"time"
)

// TopicID is a topic's id.
type TopicID = [16]byte

// Topic is what the coordinator needs of a topic.
type Topic struct {
	Name       string
	ID         TopicID
	Partitions int32
}

// Metadata resolves topics; the broker's registry implements it.
type Metadata interface {
	TopicByName(name string) (Topic, bool)
	TopicByID(id TopicID) (Topic, bool)
}

// TopicPartitions are the partitions of one topic, as assignments carry
// them.
type TopicPartitions struct {
	TopicID    TopicID
	Partitions []int32
}

// Group states, as Kafka's ShareGroup.ShareGroupState names them.
const (
	StateEmpty  = "Empty"
	StateStable = "Stable"
)

// initialGroupEpoch is a new group's epoch and the epoch of its first,
// empty assignment: Kafka 4.4 creates every share, consumer and streams
// group at group and assignment epoch 1, so that its first member joins
// at epoch 2 (TestDiffKafka compares the epochs).
const initialGroupEpoch = 1

// newGroup is a new, empty group.
func newGroup(id string) *group {
	return &group{id: id, epoch: initialGroupEpoch, assignmentEpoch: initialGroupEpoch, members: map[string]*member{}}
}

// group is one share group.
type group struct {
	id string
	// epoch is the group epoch, bumped by every change of membership,
	// subscriptions or subscribed topics; assignmentEpoch is the epoch of
	// the current assignment.
	epoch, assignmentEpoch int32
	members                map[string]*member
	// topics is what the last assignment was computed from: the
	// subscribed topics' ids and partition counts, sorted by name.
	topics []Topic
	// changes counts the changes of what the group's records hold, so
	// that a heartbeat knows whether it must record the group.
	changes uint64
}

// member is one member of a share group.
type member struct {
	id, rack, clientID, clientHost string
	epoch                          int32
	// previousEpoch is the epoch before the last bump (Kafka's
	// PreviousMemberEpoch), stored with the member.
	previousEpoch int32
	subscribed    []string
	assignment    []TopicPartitions
	// sent is whether the member has been sent its current assignment.
	sent bool
	// expires is when the member is removed without a heartbeat.
	expires time.Time
}

// state is the group's state name.
func (g *group) state() string {
	if len(g.members) == 0 {
		return StateEmpty
	}
	return StateStable
}

// subscribedTopics resolves the union of the members' subscriptions,
// sorted by name; topics that do not exist are left out.
func (g *group) subscribedTopics(md Metadata) []Topic {
	var names []string
	for _, m := range g.members {
		names = append(names, m.subscribed...)
	}
	slices.Sort(names)
	names = slices.Compact(names)
	out := make([]Topic, 0, len(names))
	for _, n := range names {
		if t, ok := md.TopicByName(n); ok {
			out = append(out, t)
		}
	}
	return out
}
