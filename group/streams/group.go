package streams

import (
	"slices"
	"time"
)

// GroupState is a streams group's state (StreamsGroup.StreamsGroupState).
type GroupState string

// The states, as ListGroups and StreamsGroupDescribe name them.
const (
	Empty       GroupState = "Empty"
	NotReady    GroupState = "NotReady"
	Assigning   GroupState = "Assigning"
	Reconciling GroupState = "Reconciling"
	Stable      GroupState = "Stable"
	Dead        GroupState = "Dead"
)

// MemberState is where a member is in converging on its target tasks
// (streams MemberState).
type MemberState int8

// Member states.
const (
	MemberStable MemberState = iota
	MemberUnrevokedTasks
	MemberUnreleasedTasks
)

// String names the state as Kafka does.
func (s MemberState) String() string {
	switch s {
	case MemberStable:
		return "STABLE"
	case MemberUnrevokedTasks:
		return "UNREVOKED_TASKS"
	case MemberUnreleasedTasks:
		return "UNRELEASED_TASKS"
	}
	return "UNKNOWN"
}

// Endpoint is a member's user endpoint for Interactive Queries
// (application.server).
type Endpoint struct {
	Host string
	Port uint16
}

// KV is a client tag.
type KV struct {
	Key, Value string
}

// member is one member of a group; its group's lock guards it.
type member struct {
	id, instanceID, rackID string
	clientID, clientHost   string
	processID              string
	userEndpoint           *Endpoint
	clientTags             []KV
	topologyEpoch          int32
	// epoch is the member epoch; prevEpoch the one before the last
	// change, which a heartbeat whose answer was lost still carries.
	epoch, prevEpoch int32
	state            MemberState
	rebalanceTimeout time.Duration
	// assigned are the tasks the member was given; pendingRevocation
	// those it must give up before it gets more.
	assigned, pendingRevocation Tasks
	// activeSince holds, for each of the member's active tasks (assigned
	// or pending revocation) and for no other task, the member epoch at
	// which it was given the task: KIP-1251's assignment epochs
	// (TasksTupleWithEpochs). A commit with an older member epoch than
	// the member's passes for the tasks held since (ValidateCommit).
	// Standby and warm-up tasks commit nothing and carry no epoch.
	activeSince              TaskEpochs
	session, rebalance       *time.Timer
	sessionSeq, rebalanceSeq uint64
}

// group is one streams group; Coordinator.mu guards it.
type group struct {
	id       string
	epoch    int32
	topology *Topology
	conf     configured
	// target is the target assignment by member id, computed at
	// targetEpoch.
	target      map[string]Tasks
	targetEpoch int32
	// endpointEpoch is bumped with every target assignment, so members
	// learn the new endpoint-to-partitions map.
	endpointEpoch int32
	members       map[string]*member
	// shutdown is set when a member asked the whole application to shut
	// down; every member is told so.
	shutdown bool
	created  time.Time
	// delayed is set from the group's creation until the initial
	// rebalance delay passed: target assignments have no tasks meanwhile,
	// and at its end the group epoch moves so the next heartbeat assigns.
	delayed    bool
	delayTimer *time.Timer
	// endpoints is the last endpoint-to-partitions map members were
	// given, rendered; endpointEpoch moves when it changes.
	endpoints string
}

// initialGroupEpoch is a new group's epoch and the epoch of its first,
// empty target assignment: Kafka 4.4 creates every streams, consumer and
// share group at group and assignment epoch 1, so that its first member
// joins at epoch 2 (TestDiffKafka compares the epochs).
const initialGroupEpoch = 1

func newGroup(id string, now time.Time) *group {
	return &group{id: id, epoch: initialGroupEpoch, targetEpoch: initialGroupEpoch, members: make(map[string]*member), target: make(map[string]Tasks), created: now, endpoints: "[]"}
}

// state derives the group state as StreamsGroup.maybeUpdateGroupState.
func (g *group) state() GroupState {
	switch {
	case len(g.members) == 0:
		return Empty
	case g.topology == nil || !g.conf.ready():
		return NotReady
	case g.epoch > g.targetEpoch:
		return Assigning
	}
	for _, m := range g.members {
		if m.epoch != g.targetEpoch || m.state != MemberStable {
			return Reconciling
		}
	}
	return Stable
}

// owners are who currently holds each task, by process (the inputs of
// CurrentAssignmentBuilder's "unreleased" checks).
type owners struct {
	active          map[Task]string // process id
	standby, warmup map[Task][]string
}

func (g *group) owners(except string) owners {
	o := owners{active: make(map[Task]string), standby: make(map[Task][]string), warmup: make(map[Task][]string)}
	for _, m := range g.members {
		if m.id == except {
			continue
		}
		for _, ts := range []Tasks{m.assigned, m.pendingRevocation} {
			for t := range ts.Active {
				o.active[t] = m.processID
			}
			for t := range ts.Standby {
				o.standby[t] = append(o.standby[t], m.processID)
			}
			for t := range ts.Warmup {
				o.warmup[t] = append(o.warmup[t], m.processID)
			}
		}
	}
	return o
}

// reconcile moves a member toward its target assignment
// (CurrentAssignmentBuilder.build). owned are the tasks its heartbeat
// reported, nil when it did not report them.
func (g *group) reconcile(m *member, owned *Tasks) {
	target, ok := g.target[m.id]
	if !ok {
		target = emptyTasks()
	}
	switch m.state {
	case MemberStable:
		if m.epoch == g.targetEpoch {
			return
		}
		g.nextAssignment(m, m.epoch, target, owned)
	case MemberUnrevokedTasks:
		if owned == nil || owned.intersects(m.pendingRevocation) {
			return
		}
		g.nextAssignment(m, m.epoch+1, target, owned)
	case MemberUnreleasedTasks:
		g.nextAssignment(m, m.epoch, target, owned)
	}
}

// nextAssignment is CurrentAssignmentBuilder.computeNextAssignment: keep
// current ∩ target, revoke current − target, add what of the target is
// free. A task is free for an active copy when no other member holds it
// active and the member's own process has no standby or warm-up copy of it
// left; for a standby or warm-up copy when the member's process holds no
// copy of it.
func (g *group) nextAssignment(m *member, epoch int32, target Tasks, owned *Tasks) {
	o := g.owners(m.id)
	onProcess := func(t Task) bool {
		return o.active[t] == m.processID && o.active[t] != "" ||
			slices.Contains(o.standby[t], m.processID) || slices.Contains(o.warmup[t], m.processID)
	}
	unreleasedActive := func(t Task) bool {
		_, held := o.active[t]
		return held || slices.Contains(o.standby[t], m.processID) || slices.Contains(o.warmup[t], m.processID)
	}
	kept, revoke, add := emptyTasks(), emptyTasks(), emptyTasks()
	unreleased := false
	diff := func(cur, tgt, kept, revoke, add TaskSet, busy func(Task) bool) {
		for t := range cur {
			if tgt.has(t) {
				kept[t] = struct{}{}
			} else {
				revoke[t] = struct{}{}
			}
		}
		for t := range tgt {
			if kept.has(t) {
				continue
			}
			if busy(t) {
				unreleased = true
				continue
			}
			add[t] = struct{}{}
		}
	}
	diff(m.assigned.Active, target.Active, kept.Active, revoke.Active, add.Active, unreleasedActive)
	diff(m.assigned.Standby, target.Standby, kept.Standby, revoke.Standby, add.Standby, onProcess)
	diff(m.assigned.Warmup, target.Warmup, kept.Warmup, revoke.Warmup, add.Warmup, onProcess)

	prevActive, prevSince := m.assigned.Active, m.activeSince
	setEpoch := func(e int32) {
		if e != m.epoch {
			m.prevEpoch = m.epoch
			m.epoch = e
		}
	}
	switch {
	case !revoke.empty() && (owned == nil || owned.intersects(revoke)):
		m.state = MemberUnrevokedTasks
		setEpoch(epoch)
		m.assigned = kept
		m.pendingRevocation = revoke
	case !add.empty():
		m.state = MemberStable
		if unreleased {
			m.state = MemberUnreleasedTasks
		}
		setEpoch(g.targetEpoch)
		for t := range add.Active {
			kept.Active[t] = struct{}{}
		}
		for t := range add.Standby {
			kept.Standby[t] = struct{}{}
		}
		for t := range add.Warmup {
			kept.Warmup[t] = struct{}{}
		}
		m.assigned = kept
		m.pendingRevocation = emptyTasks()
	default:
		m.state = MemberStable
		if unreleased {
			m.state = MemberUnreleasedTasks
		}
		setEpoch(g.targetEpoch)
		m.assigned = kept
		m.pendingRevocation = emptyTasks()
	}
	m.activeSince = nextEpochs(prevActive, prevSince, g.targetEpoch, m.assigned.Active, m.pendingRevocation.Active)
}

// nextEpochs are the assignment epochs of a member's next active tasks,
// held (assigned and pending revocation), as computeNextAssignment gives
// them: a task the member had assigned (prev, with the epochs since) keeps
// its epoch, whether kept or now being revoked; any other one, new or
// taken back from those it was revoking, is given at the target epoch.
func nextEpochs(prev TaskSet, since TaskEpochs, targetEpoch int32, held ...TaskSet) TaskEpochs {
	out := make(TaskEpochs)
	for _, ts := range held {
		for t := range ts {
			e, ok := since[t]
			if !ok || !prev.has(t) {
				e = targetEpoch
			}
			out[t] = e
		}
	}
	return out
}

// computeTarget computes a new target assignment at the group epoch
// (TargetAssignmentBuilder with the sticky assignor).
func (g *group) computeTarget(numStandby int) {
	spec := assignSpec{tasks: map[string]int32{}, stateful: map[string]bool{}, numStandby: numStandby}
	if g.topology != nil && g.conf.ready() {
		spec.tasks = g.conf.tasks
		for _, s := range g.topology.Subtopologies {
			if len(s.StateChangelogTopics) > 0 {
				spec.stateful[s.ID] = true
			}
		}
	}
	for _, m := range g.members {
		prev := m.assigned.clone()
		for t := range m.pendingRevocation.Active {
			prev.Active[t] = struct{}{}
		}
		for t := range m.pendingRevocation.Standby {
			prev.Standby[t] = struct{}{}
		}
		spec.members = append(spec.members, assignMember{id: m.id, process: m.processID, prev: prev})
	}
	g.target = assign(spec)
	g.targetEpoch = g.epoch
}
