package streams

import (
	"cmp"
	"maps"
	"slices"
)

// Task is one task of a subtopology: the one that reads partition
// Partition of its source topics.
type Task struct {
	Subtopology string
	Partition   int32
}

func compareTasks(a, b Task) int {
	return cmp.Or(cmp.Compare(a.Subtopology, b.Subtopology), cmp.Compare(a.Partition, b.Partition))
}

// TaskSet is a set of tasks.
type TaskSet map[Task]struct{}

// SubtopologyTasks are the partitions of one subtopology's tasks, the wire
// form of a task set (TaskIDs).
type SubtopologyTasks struct {
	Subtopology string
	Partitions  []int32
}

// NewTaskSet builds a set from the wire form.
func NewTaskSet(ts []SubtopologyTasks) TaskSet {
	s := make(TaskSet)
	for _, t := range ts {
		for _, p := range t.Partitions {
			s[Task{t.Subtopology, p}] = struct{}{}
		}
	}
	return s
}

// List returns the set in the wire form, sorted.
func (s TaskSet) List() []SubtopologyTasks {
	out := []SubtopologyTasks{}
	for _, t := range s.sorted() {
		if n := len(out); n > 0 && out[n-1].Subtopology == t.Subtopology {
			out[n-1].Partitions = append(out[n-1].Partitions, t.Partition)
			continue
		}
		out = append(out, SubtopologyTasks{Subtopology: t.Subtopology, Partitions: []int32{t.Partition}})
	}
	return out
}

func (s TaskSet) sorted() []Task {
	ts := slices.Collect(maps.Keys(s))
	slices.SortFunc(ts, compareTasks)
	return ts
}

func (s TaskSet) has(t Task) bool { _, ok := s[t]; return ok }

func (s TaskSet) clone() TaskSet { return maps.Clone(s) }

// intersects reports whether s and o share a task.
func (s TaskSet) intersects(o TaskSet) bool {
	for t := range o {
		if s.has(t) {
			return true
		}
	}
	return false
}

func (s TaskSet) equal(o TaskSet) bool {
	if len(s) != len(o) {
		return false
	}
	for t := range s {
		if !o.has(t) {
			return false
		}
	}
	return true
}

// TaskEpochs are, for each active task a member holds (assigned or
// pending revocation), the member epoch at which it was given the task
// (KIP-1251's assignment epochs).
type TaskEpochs map[Task]int32

// Tasks are a member's tasks by role (Kafka's TasksTuple).
type Tasks struct {
	Active, Standby, Warmup TaskSet
}

func emptyTasks() Tasks { return Tasks{Active: TaskSet{}, Standby: TaskSet{}, Warmup: TaskSet{}} }

func (t Tasks) clone() Tasks {
	return Tasks{Active: t.Active.clone(), Standby: t.Standby.clone(), Warmup: t.Warmup.clone()}
}

func (t Tasks) empty() bool { return len(t.Active)+len(t.Standby)+len(t.Warmup) == 0 }

func (t Tasks) equal(o Tasks) bool {
	return t.Active.equal(o.Active) && t.Standby.equal(o.Standby) && t.Warmup.equal(o.Warmup)
}

// intersects reports whether t holds any task of o in the same role.
func (t Tasks) intersects(o Tasks) bool {
	return t.Active.intersects(o.Active) || t.Standby.intersects(o.Standby) || t.Warmup.intersects(o.Warmup)
}
