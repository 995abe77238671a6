package consumer

import (
	"cmp"
	"slices"
	"strings"
)

// rangeAssignor is Kafka 4's server-side RangeAssignor: for each topic, its
// subscribers, ordered with static members first (by instance id) and then
// dynamic ones (by member id), get consecutive ranges of partitions, the
// first partitions%subscribers of them one partition more. When members
// subscribe to the same topics with equal partition counts, each gets the
// same partition numbers of every topic (co-partitioning). It ignores the
// current assignment, as Kafka's does.
type rangeAssignor struct{}

func (rangeAssignor) Name() string { return RangeAssignorName }

func (rangeAssignor) Assign(spec *GroupSpec) map[string]Assignment {
	out := make(map[string]Assignment, len(spec.Members))
	order := make([]*MemberSpec, len(spec.Members))
	for i := range spec.Members {
		order[i] = &spec.Members[i]
	}
	// RangeAssignor.sortMemberIds.
	slices.SortFunc(order, func(a, b *MemberSpec) int {
		switch {
		case a.InstanceID != "" && b.InstanceID != "":
			return strings.Compare(a.InstanceID, b.InstanceID)
		case a.InstanceID != "":
			return -1
		case b.InstanceID != "":
			return 1
		}
		return cmp.Compare(a.MemberID, b.MemberID)
	})
	type topicState struct {
		partitions, members, minQuota, extra, next int32
	}
	topics := map[TopicID]*topicState{}
	for _, m := range order {
		for _, id := range m.Topics {
			ts := topics[id]
			if ts == nil {
				ts = &topicState{partitions: spec.Partitions[id]}
				topics[id] = ts
			}
			ts.members++
		}
	}
	for _, ts := range topics {
		ts.minQuota = ts.partitions / ts.members
		ts.extra = ts.partitions % ts.members
	}
	for _, m := range order {
		b := assignmentBuilder{}
		for _, id := range m.Topics {
			ts := topics[id]
			quota := ts.minQuota
			if ts.extra > 0 {
				quota++
				ts.extra--
			}
			end := min(ts.next+quota, ts.partitions)
			for p := ts.next; p < end; p++ {
				b.add(id, p)
			}
			ts.next = end
		}
		out[m.MemberID] = b.build()
	}
	return out
}
