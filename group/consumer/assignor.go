package consumer

import "slices"

// MemberSpec is one member as a server-side assignor sees it (Kafka's
// MemberSubscriptionSpec).
type MemberSpec struct {
	MemberID   string
	InstanceID string // "" for a dynamic member
	RackID     string
	// Topics are the ids of the existing topics the member subscribes to
	// (by name or regular expression), sorted.
	Topics []TopicID
	// Current is the member's target assignment before this computation
	// (not what it owns now): assignors keep it where they can.
	Current Assignment
}

// subscribes reports whether the member subscribes to topic id.
func (m *MemberSpec) subscribes(id TopicID) bool {
	_, ok := slices.BinarySearchFunc(m.Topics, id, compareTopicIDs)
	return ok
}

// GroupSpec is an assignor's input (Kafka's GroupSpec and
// SubscribedTopicDescriber).
type GroupSpec struct {
	// Members are sorted by member id.
	Members []MemberSpec
	// Partitions are the partition counts of the subscribed topics.
	Partitions map[TopicID]int32
}

// Assignor computes a target assignment (ConsumerGroupPartitionAssignor):
// every partition of every subscribed topic to exactly one member that
// subscribes to its topic. It returns an assignment for each member id,
// possibly empty. It must not modify spec.
type Assignor interface {
	Name() string
	Assign(spec *GroupSpec) map[string]Assignment
}

// builtinAssignor returns the assignor named name, or nil.
func builtinAssignor(name string) Assignor {
	switch name {
	case UniformAssignorName:
		return uniformAssignor{}
	case RangeAssignorName:
		return rangeAssignor{}
	}
	return nil
}

// topicPartition is one partition of one topic.
type topicPartition struct {
	topic     TopicID
	partition int32
}

// homogeneous reports whether every member subscribes to the same topics
// (Kafka's SubscriptionType.HOMOGENEOUS).
func (s *GroupSpec) homogeneous() bool {
	for i := 1; i < len(s.Members); i++ {
		if !slices.Equal(s.Members[i].Topics, s.Members[0].Topics) {
			return false
		}
	}
	return true
}
