package streams

import (
	"fmt"
	"testing"
)

// FuzzTopology builds a topology from fuzz bytes, as a hostile client
// could send one, and runs it through validation, configuration and the
// assignor: nothing may panic, and a configured topology's tasks must be
// assigned exactly once.
func FuzzTopology(f *testing.F) {
	f.Add([]byte{2, 0, 1, 3, 1, 0, 0, 2})
	f.Add([]byte{1, 1, 0, 255, 0, 1, 1, 1, 1})
	f.Fuzz(func(t *testing.T, data []byte) {
		next := func() int {
			if len(data) == 0 {
				return 0
			}
			b := int(data[0])
			data = data[1:]
			return b
		}
		topics := &fakeTopics{m: map[string]int32{"a": 3, "b": 1}}
		names := []string{"a", "b", "c", "r0", "r1", "ch0"}
		top := &Topology{Epoch: int32(next() % 3)}
		for i := range next()%4 + 1 {
			s := Subtopology{ID: fmt.Sprint(i)}
			for range next() % 3 {
				s.SourceTopics = append(s.SourceTopics, names[next()%3])
			}
			for range next() % 2 {
				s.RepartitionSourceTopics = append(s.RepartitionSourceTopics, TopicInfo{Name: names[3+next()%2], Partitions: int32(next()%5) - 1})
			}
			for range next() % 2 {
				s.RepartitionSinkTopics = append(s.RepartitionSinkTopics, names[3+next()%2])
			}
			if next()%2 == 1 {
				s.StateChangelogTopics = append(s.StateChangelogTopics, TopicInfo{Name: fmt.Sprint("ch", i), Partitions: int32(next() % 2)})
			}
			if next()%2 == 1 {
				s.CopartitionGroups = append(s.CopartitionGroups, CopartitionGroup{
					SourceTopics: []int16{int16(next()%4) - 1}, RepartitionSourceTopics: []int16{int16(next() % 2)}})
			}
			top.Subtopologies = append(top.Subtopologies, s)
		}
		if err := top.validate(); err != nil {
			return
		}
		conf := configure(top, topics)
		if !conf.ready() {
			_ = topics.create(conf.missing)
			conf = configure(top, topics)
		}
		if conf.tasks == nil {
			return
		}
		members := []assignMember{{id: "x", process: "p", prev: emptyTasks()}, {id: "y", process: "q", prev: emptyTasks()}}
		out := assign(assignSpec{members: members, tasks: conf.tasks, numStandby: 1, stateful: map[string]bool{"0": true}})
		seen := map[Task]bool{}
		for _, ts := range out {
			for tk := range ts.Active {
				if seen[tk] {
					t.Fatalf("task %v assigned twice", tk)
				}
				seen[tk] = true
			}
		}
		want := 0
		for _, n := range conf.tasks {
			want += int(n)
		}
		if len(seen) != want {
			t.Fatalf("%d tasks assigned, want %d", len(seen), want)
		}
	})
}
