package consumer

import (
	"cmp"
	"slices"
)

// uniformAssignor is Kafka's UniformAssignor, the default: a balanced
// assignment (member partition counts differ by at most one when all
// members subscribe to the same topics) that keeps each member's current
// partitions where balance allows, so that a rebalance moves as few
// partitions as possible.
//
// The homogeneous case follows UniformHomogeneousAssignmentBuilder step for
// step, with members taken in member-id order (Kafka's is its hash map's).
// The heterogeneous case (members subscribe to different topics) has the
// same goals but its own algorithm: keep current partitions, hand out the
// rest starting with the topics that have the fewest subscribers to the
// least loaded subscriber, then move partitions from the most to the least
// loaded eligible members while that narrows the spread. Kafka's
// UniformHeterogeneousAssignmentBuilder may place partitions differently.
type uniformAssignor struct{}

func (uniformAssignor) Name() string { return UniformAssignorName }

func (uniformAssignor) Assign(spec *GroupSpec) map[string]Assignment {
	out := make(map[string]Assignment, len(spec.Members))
	if len(spec.Members) == 0 {
		return out
	}
	if spec.homogeneous() {
		uniformHomogeneous(spec, out)
	} else {
		uniformHeterogeneous(spec, out)
	}
	return out
}

// uniformHomogeneous is UniformHomogeneousAssignmentBuilder.build: every
// member gets floor(total/members) partitions and the first remainder
// members one more, keeping what they have up to that quota; the rest goes
// to members below their quota.
func uniformHomogeneous(spec *GroupSpec, out map[string]Assignment) {
	topics := spec.Members[0].Topics
	if len(topics) == 0 {
		for _, m := range spec.Members {
			out[m.MemberID] = Assignment{}
		}
		return
	}
	assigned := map[topicPartition]bool{}
	for i := range spec.Members {
		for id, ps := range spec.Members[i].Current {
			for _, p := range ps {
				assigned[topicPartition{id, p}] = true
			}
		}
	}
	var unassigned []topicPartition
	total := 0
	for _, id := range topics {
		n := spec.Partitions[id]
		for p := range n {
			if !assigned[topicPartition{id, p}] {
				unassigned = append(unassigned, topicPartition{id, p})
			}
		}
		total += int(n)
	}
	members := len(spec.Members)
	minQuota := total / members
	extra := total % members

	type unfilled struct {
		b     assignmentBuilder
		id    string
		quota int
	}
	var fill []unfilled
	builders := make([]assignmentBuilder, members)
	for i := range spec.Members {
		m := &spec.Members[i]
		b := assignmentBuilder{}
		builders[i] = b
		quota, hasExtra := minQuota, false
		if extra > 0 {
			quota++
			hasExtra = true
		}
		for _, id := range m.Current.topics() {
			if !m.subscribes(id) {
				continue // the topic is revoked entirely
			}
			for _, p := range m.Current[id] {
				if p >= spec.Partitions[id] {
					continue
				}
				if quota > 0 {
					b.add(id, p)
					quota--
				} else {
					unassigned = append(unassigned, topicPartition{id, p})
				}
			}
		}
		// Give up the extra partition for a later member to claim, unless
		// this member is one of the last that must take one.
		if quota > 0 && hasExtra && members-i > extra {
			quota--
			hasExtra = false
		}
		if quota > 0 {
			fill = append(fill, unfilled{b: b, id: m.MemberID, quota: quota})
		}
		if hasExtra {
			extra--
		}
	}
	next := 0
	for _, f := range fill {
		for i := 0; i < f.quota && next < len(unassigned); i++ {
			f.b.add(unassigned[next].topic, unassigned[next].partition)
			next++
		}
	}
	for i := range spec.Members {
		out[spec.Members[i].MemberID] = builders[i].build()
	}
}

// uniformHeterogeneous balances partitions among members subscribed to
// different topics; see uniformAssignor.
func uniformHeterogeneous(spec *GroupSpec, out map[string]Assignment) {
	members := spec.Members
	// subscribers[t]: indexes of the members subscribed to t, in member order.
	subscribers := map[TopicID][]int{}
	for i := range members {
		for _, id := range members[i].Topics {
			subscribers[id] = append(subscribers[id], i)
		}
	}
	topics := make([]TopicID, 0, len(subscribers))
	for id := range subscribers {
		topics = append(topics, id)
	}
	// Topics with the fewest subscribers first: they have the least
	// freedom.
	slices.SortFunc(topics, func(a, b TopicID) int {
		return cmp.Or(cmp.Compare(len(subscribers[a]), len(subscribers[b])), compareTopicIDs(a, b))
	})
	owner := map[topicPartition]int{}
	load := make([]int, len(members))
	for i := range members {
		m := &members[i]
		for _, id := range m.Current.topics() {
			if !m.subscribes(id) {
				continue
			}
			for _, p := range m.Current[id] {
				tp := topicPartition{id, p}
				if _, taken := owner[tp]; taken || p >= spec.Partitions[id] {
					continue
				}
				owner[tp] = i
				load[i]++
			}
		}
	}
	leastLoaded := func(candidates []int) int {
		best := candidates[0]
		for _, i := range candidates[1:] {
			if load[i] < load[best] {
				best = i
			}
		}
		return best
	}
	for _, id := range topics {
		for p := range spec.Partitions[id] {
			tp := topicPartition{id, p}
			if _, ok := owner[tp]; ok {
				continue
			}
			i := leastLoaded(subscribers[id])
			owner[tp] = i
			load[i]++
		}
	}
	// Move partitions from more to less loaded eligible members while a
	// move narrows the gap by two. Each move lowers the sum of squared
	// loads, so this ends; the pass bound is a safety net.
	for pass := 0; pass <= len(owner); pass++ {
		moved := false
		for _, id := range topics {
			for p := range spec.Partitions[id] {
				tp := topicPartition{id, p}
				from := owner[tp]
				to := leastLoaded(subscribers[id])
				if load[from]-load[to] > 1 {
					owner[tp] = to
					load[from]--
					load[to]++
					moved = true
				}
			}
		}
		if !moved {
			break
		}
	}
	builders := make([]assignmentBuilder, len(members))
	for i := range builders {
		builders[i] = assignmentBuilder{}
	}
	for tp, i := range owner {
		builders[i].add(tp.topic, tp.partition)
	}
	for i := range members {
		out[members[i].MemberID] = builders[i].build()
	}
}
