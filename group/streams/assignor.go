package streams

import (
	"cmp"
	"slices"
)

// assignMember is what the assignor knows of a member.
type assignMember struct {
	id      string
	process string
	// prev are the tasks the member holds or is still revoking, which
	// the assignor keeps where they are when balance allows.
	prev Tasks
}

// assignSpec is the input of one assignment.
type assignSpec struct {
	members []assignMember
	// tasks is the number of tasks per subtopology.
	tasks map[string]int32
	// stateful lists the subtopologies with state stores (changelog
	// topics): only their tasks get standby replicas.
	stateful   map[string]bool
	numStandby int
}

// assign computes a target assignment: Kafka's sticky task assignor
// (StickyTaskAssignor) in spirit, with its own algorithm. Active tasks are
// spread so that member loads differ by at most one; a task stays with
// the member that had it as long as that member is within its share,
// else goes preferably to a member that kept a standby or warm-up copy
// of it (its state is there), else to the least loaded member. Standby
// replicas of stateful tasks go to members of other processes than the
// active copy and the other replicas (never two copies on one process),
// preferring previous holders, then the least loaded member; a task gets
// fewer replicas when there are not enough processes, as in Kafka. No
// warm-up tasks are assigned. Deterministic for a given input.
func assign(spec assignSpec) map[string]Tasks {
	out := make(map[string]Tasks, len(spec.members))
	if len(spec.members) == 0 {
		return out
	}
	members := slices.Clone(spec.members)
	slices.SortFunc(members, func(a, b assignMember) int { return cmp.Compare(a.id, b.id) })
	for _, m := range members {
		out[m.id] = emptyTasks()
	}
	var all []Task
	for sub, n := range spec.tasks {
		for p := int32(0); p < n; p++ {
			all = append(all, Task{sub, p})
		}
	}
	slices.SortFunc(all, compareTasks)

	// Active tasks.
	byID := make(map[string]*assignMember, len(members))
	for i := range members {
		byID[members[i].id] = &members[i]
	}
	floor, extra := len(all)/len(members), len(all)%len(members)
	atCeil := 0
	canTake := func(id string) bool {
		n := len(out[id].Active)
		if n < floor {
			return true
		}
		return n == floor && atCeil < extra
	}
	give := func(id string, t Task) {
		if len(out[id].Active) == floor {
			atCeil++
		}
		out[id].Active[t] = struct{}{}
	}
	prevActive := make(map[Task]string)
	for _, m := range members {
		for t := range m.prev.Active {
			prevActive[t] = m.id
		}
	}
	var rest []Task
	for _, t := range all {
		if id, ok := prevActive[t]; ok && canTake(id) {
			give(id, t)
			continue
		}
		rest = append(rest, t)
	}
	leastLoaded := func(ok func(m *assignMember) bool, load func(id string) int) *assignMember {
		var best *assignMember
		for i := range members {
			m := &members[i]
			if !ok(m) {
				continue
			}
			if best == nil || load(m.id) < load(best.id) {
				best = m
			}
		}
		return best
	}
	activeLoad := func(id string) int { return len(out[id].Active) }
	for _, t := range rest {
		m := leastLoaded(func(m *assignMember) bool {
			return canTake(m.id) && (m.prev.Standby.has(t) || m.prev.Warmup.has(t))
		}, activeLoad)
		if m == nil {
			m = leastLoaded(func(m *assignMember) bool { return canTake(m.id) }, activeLoad)
		}
		give(m.id, t)
	}

	// Standby replicas.
	if spec.numStandby <= 0 {
		return out
	}
	activeOwner := make(map[Task]*assignMember)
	for id, ts := range out {
		for t := range ts.Active {
			activeOwner[t] = byID[id]
		}
	}
	totalLoad := func(id string) int { return len(out[id].Active) + len(out[id].Standby) }
	for _, t := range all {
		if !spec.stateful[t.Subtopology] {
			continue
		}
		used := map[string]bool{activeOwner[t].process: true}
		for r := 0; r < spec.numStandby; r++ {
			free := func(m *assignMember) bool { return !used[m.process] }
			m := leastLoaded(func(m *assignMember) bool {
				return free(m) && (m.prev.Standby.has(t) || m.prev.Active.has(t) || m.prev.Warmup.has(t))
			}, totalLoad)
			if m == nil {
				m = leastLoaded(free, totalLoad)
			}
			if m == nil {
				break // not enough processes
			}
			used[m.process] = true
			out[m.id].Standby[t] = struct{}{}
		}
	}
	return out
}
