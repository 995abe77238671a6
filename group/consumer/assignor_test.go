package consumer

import (
	"fmt"
	"testing"
)

func tid(b byte) TopicID { return TopicID{b} }

// checkValid fails unless out assigns every partition of spec's topics
// exactly once, each to a member subscribed to its topic.
func checkValid(t *testing.T, spec *GroupSpec, out map[string]Assignment) {
	t.Helper()
	owner := map[topicPartition]string{}
	for i := range spec.Members {
		m := &spec.Members[i]
		for id, ps := range out[m.MemberID] {
			if !m.subscribes(id) {
				t.Fatalf("%s got topic %v it does not subscribe to", m.MemberID, id)
			}
			for _, p := range ps {
				tp := topicPartition{id, p}
				if o, dup := owner[tp]; dup {
					t.Fatalf("partition %v to %s and %s", tp, o, m.MemberID)
				}
				owner[tp] = m.MemberID
			}
		}
	}
	for id, n := range spec.Partitions {
		subscribed := false
		for i := range spec.Members {
			subscribed = subscribed || spec.Members[i].subscribes(id)
		}
		for p := range n {
			if _, ok := owner[topicPartition{id, p}]; !ok && subscribed {
				t.Fatalf("partition %v-%d unassigned", id, p)
			}
		}
	}
}

func spread(out map[string]Assignment) (lo, hi int) {
	lo = 1 << 30
	for _, a := range out {
		lo, hi = min(lo, a.size()), max(hi, a.size())
	}
	return lo, hi
}

func specOf(members int, topics map[TopicID]int32) *GroupSpec {
	spec := &GroupSpec{Partitions: topics}
	var ids []TopicID
	for id := range topics {
		ids = append(ids, id)
	}
	for i := range members {
		m := MemberSpec{MemberID: fmt.Sprintf("m%02d", i), Topics: append([]TopicID(nil), ids...)}
		sortIDs(m.Topics)
		spec.Members = append(spec.Members, m)
	}
	return spec
}

func sortIDs(ids []TopicID) {
	for i := 1; i < len(ids); i++ {
		for j := i; j > 0 && compareTopicIDs(ids[j-1], ids[j]) > 0; j-- {
			ids[j-1], ids[j] = ids[j], ids[j-1]
		}
	}
}

// TestUniformHomogeneous: balanced within one partition, and sticky: when
// a member joins, the others keep all they can; when one leaves, nobody
// else loses anything.
func TestUniformHomogeneous(t *testing.T) {
	topics := map[TopicID]int32{tid(1): 7, tid(2): 5}
	spec := specOf(3, topics)
	out := uniformAssignor{}.Assign(spec)
	checkValid(t, spec, out)
	if lo, hi := spread(out); hi-lo > 1 {
		t.Fatalf("unbalanced: %v", out)
	}
	// A fourth member joins.
	prev := out
	spec = specOf(4, topics)
	for i := range spec.Members {
		spec.Members[i].Current = prev[spec.Members[i].MemberID]
	}
	out = uniformAssignor{}.Assign(spec)
	checkValid(t, spec, out)
	if lo, hi := spread(out); hi-lo > 1 {
		t.Fatalf("unbalanced after a join: %v", out)
	}
	moved := 0
	for id, a := range prev {
		for tpid, ps := range a {
			for _, p := range ps {
				if !out[id].has(tpid, p) {
					moved++
				}
			}
		}
	}
	if moved != 3 { // 12 partitions: 4,4,4 → 3,3,3,3
		t.Fatalf("%d partitions moved, want 3: %v → %v", moved, prev, out)
	}
	// m01 leaves: the others keep theirs.
	prev = out
	spec.Members = append(spec.Members[:1:1], spec.Members[2:]...)
	for i := range spec.Members {
		spec.Members[i].Current = prev[spec.Members[i].MemberID]
	}
	out = uniformAssignor{}.Assign(spec)
	checkValid(t, spec, out)
	for _, m := range spec.Members {
		for tpid, ps := range prev[m.MemberID] {
			for _, p := range ps {
				if !out[m.MemberID].has(tpid, p) {
					t.Fatalf("%s lost %v-%d when m01 left", m.MemberID, tpid, p)
				}
			}
		}
	}
	// No topics: empty assignments.
	empty := uniformAssignor{}.Assign(specOf(2, map[TopicID]int32{}))
	if len(empty) != 2 || empty["m00"].size() != 0 {
		t.Fatalf("no topics: %v", empty)
	}
}

// TestUniformHeterogeneous: members subscribed to different topics each
// get only their topics, balanced where their subscriptions allow.
func TestUniformHeterogeneous(t *testing.T) {
	spec := &GroupSpec{
		Partitions: map[TopicID]int32{tid(1): 6, tid(2): 2},
		Members: []MemberSpec{
			{MemberID: "a", Topics: []TopicID{tid(1)}},
			{MemberID: "b", Topics: []TopicID{tid(1), tid(2)}},
			{MemberID: "c", Topics: []TopicID{tid(2)}},
		},
	}
	out := uniformAssignor{}.Assign(spec)
	checkValid(t, spec, out)
	if lo, hi := spread(out); hi-lo > 1 {
		t.Fatalf("unbalanced: %v", out)
	}
	// Sticky: with the result as current, nothing moves.
	for i := range spec.Members {
		spec.Members[i].Current = out[spec.Members[i].MemberID]
	}
	again := uniformAssignor{}.Assign(spec)
	for id, a := range out {
		if !again[id].equal(a) {
			t.Fatalf("%s: %v then %v", id, a, again[id])
		}
	}
}

// TestRange: Kafka's range: static members first by instance id, then by
// member id; per topic consecutive ranges, the first ones one larger.
func TestRange(t *testing.T) {
	spec := &GroupSpec{
		Partitions: map[TopicID]int32{tid(1): 5, tid(2): 2},
		Members: []MemberSpec{
			{MemberID: "a", Topics: []TopicID{tid(1), tid(2)}},
			{MemberID: "b", InstanceID: "z", Topics: []TopicID{tid(1)}},
			{MemberID: "c", Topics: []TopicID{tid(1), tid(2)}},
		},
	}
	out := rangeAssignor{}.Assign(spec)
	checkValid(t, spec, out)
	want := map[string]Assignment{
		"b": {tid(1): {0, 1}},
		"a": {tid(1): {2, 3}, tid(2): {0}},
		"c": {tid(1): {4}, tid(2): {1}},
	}
	for id, a := range want {
		if !out[id].equal(a) {
			t.Fatalf("%s: got %v, want %v", id, out[id], a)
		}
	}
}
