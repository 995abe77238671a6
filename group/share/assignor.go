package share

import (
	"slices"
	"strings"
)

// assign spreads the partitions of the subscribed topics over the members
// subscribed to each, as Kafka's SimpleAssignor does for share groups:
// with at least as many partitions as members every partition goes to
// exactly one member and the counts differ by at most one; with more
// members than partitions, partitions are shared, each member getting
// one, since share groups let several members consume one partition.
// Members are taken in id order so the result is deterministic.
func assign(topics []Topic, members map[string]*member) map[string][]TopicPartitions {
	ids := make([]string, 0, len(members))
	for id := range members {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	out := make(map[string][]TopicPartitions, len(ids))
	for _, t := range topics {
		var subs []string
		for _, id := range ids {
			if slices.Contains(members[id].subscribed, t.Name) {
				subs = append(subs, id)
			}
		}
		if len(subs) == 0 || t.Partitions <= 0 {
			continue
		}
		add := func(id string, p int32) {
			tps := out[id]
			if n := len(tps); n > 0 && tps[n-1].TopicID == t.ID {
				tps[n-1].Partitions = append(tps[n-1].Partitions, p)
			} else {
				tps = append(tps, TopicPartitions{TopicID: t.ID, Partitions: []int32{p}})
			}
			out[id] = tps
		}
		// Rotate the starting member by topic so that many one-partition
		// topics do not all land on the first member.
		off := int(hashName(t.Name) % uint32(len(subs)))
		if int(t.Partitions) >= len(subs) {
			for p := int32(0); p < t.Partitions; p++ {
				add(subs[(int(p)+off)%len(subs)], p)
			}
		} else {
			for i := range subs {
				add(subs[(i+off)%len(subs)], int32(i)%t.Partitions)
			}
		}
	}
	for id := range out {
		for i := range out[id] {
			slices.Sort(out[id][i].Partitions)
		}
	}
	return out
}

// hashName is FNV-1a of a topic name.
func hashName(s string) uint32 {
	h := uint32(2166136261)
	for i := 0; i < len(s); i++ {
		h ^= uint32(s[i])
		h *= 16777619
	}
	return h
}

// sameAssignment reports whether a and b are equal.
func sameAssignment(a, b []TopicPartitions) bool {
	return slices.EqualFunc(a, b, func(x, y TopicPartitions) bool {
		return x.TopicID == y.TopicID && slices.Equal(x.Partitions, y.Partitions)
	})
}

// sortTopicPartitions orders an assignment by topic id.
func sortTopicPartitions(tps []TopicPartitions) {
	slices.SortFunc(tps, func(a, b TopicPartitions) int { return strings.Compare(string(a.TopicID[:]), string(b.TopicID[:])) })
}
