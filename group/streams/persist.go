package streams

import (
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// WithChangeHook sets fn to be called with a group's id after a change
// its records hold (GroupMetadataManager writes the StreamsGroup* records
// with the heartbeat that made it): a heartbeat, a member fenced by a
// timer, the end of the initial rebalance delay, a deletion. fn runs on
// the goroutine that made the change, with no lock of the Coordinator
// held, before a heartbeat's answer goes out; it should take the group's
// state with Record, which may have moved on since, so the call is a hint
// to record the group as it is now. It must not block for long.
func WithChangeHook(fn func(groupID string)) Option {
	return func(c *Coordinator) { c.onChange = fn }
}

// changed calls the change hook, if any.
func (c *Coordinator) changed(groupID string) {
	if c.onChange != nil {
		c.onChange(groupID)
	}
}

// Record is a streams group as Kafka persists it in __consumer_offsets
// (the StreamsGroup* records): what a restart needs to bring it back.
type Record struct {
	Group string
	// Epoch is the group epoch (StreamsGroupMetadata).
	Epoch int32
	// Topology is the group's topology (StreamsGroupTopology), nil
	// before a member sent one. It is shared: do not modify it.
	Topology *Topology
	// AssignmentEpoch is the target assignment's epoch
	// (StreamsGroupTargetAssignmentMetadata).
	AssignmentEpoch int32
	// Members are sorted by member id.
	Members []MemberRecord
}

// MemberRecord is one member of a Record: its metadata
// (StreamsGroupMemberMetadata), its target tasks
// (StreamsGroupTargetAssignmentMember) and its current tasks
// (StreamsGroupCurrentMemberAssignment).
type MemberRecord struct {
	MemberID, InstanceID, RackID, ClientID, ClientHost, ProcessID string
	// UserEndpoint is nil when the member has none.
	UserEndpoint  *Endpoint
	ClientTags    []KV
	TopologyEpoch int32
	// RebalanceTimeout is 0 when the member never gave one.
	RebalanceTimeout            time.Duration
	Epoch, PreviousEpoch        int32
	State                       MemberState
	Assigned, PendingRevocation Tasks
	// AssignmentEpochs are the epochs at which the member was given the
	// active tasks of Assigned and PendingRevocation (KIP-1251); a task
	// without one (records from before it) counts as given at Epoch.
	AssignmentEpochs TaskEpochs
	Target           Tasks
}

// Record returns the group's state as its records hold it; found is false
// when no streams group holds the id (it was deleted, or never was). After
// Close it answers COORDINATOR_NOT_AVAILABLE, so that a closing broker
// does not take its groups for deleted.
func (c *Coordinator) Record(groupID string) (r Record, found bool, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return Record{}, false, kerr.CoordinatorNotAvailable
	}
	g := c.groups[groupID]
	if g == nil {
		return Record{}, false, nil
	}
	r = Record{Group: groupID, Epoch: g.epoch, Topology: g.topology, AssignmentEpoch: g.targetEpoch}
	for _, id := range slices.Sorted(maps.Keys(g.members)) {
		m := g.members[id]
		mr := MemberRecord{
			MemberID: m.id, InstanceID: m.instanceID, RackID: m.rackID, ClientID: m.clientID, ClientHost: m.clientHost,
			ProcessID: m.processID, ClientTags: slices.Clone(m.clientTags), TopologyEpoch: m.topologyEpoch,
			RebalanceTimeout: m.rebalanceTimeout,
			Epoch:            m.epoch, PreviousEpoch: m.prevEpoch, State: m.state,
			Assigned: m.assigned.clone(), PendingRevocation: m.pendingRevocation.clone(),
			AssignmentEpochs: maps.Clone(m.activeSince),
			Target:           emptyTasks(),
		}
		if m.userEndpoint != nil {
			e := *m.userEndpoint
			mr.UserEndpoint = &e
		}
		if t, ok := g.target[m.id]; ok {
			mr.Target = t.clone()
		}
		r.Members = append(r.Members, mr)
	}
	return r, true, nil
}

// Restore recreates, at start-up, a streams group from its records
// (GroupMetadataManager's replay): its group epoch, topology, target
// assignment and every member with its process, endpoint, epochs, state
// and tasks, so that members carry on heartbeating at their member epochs
// without a rebalance. md is the broker's topics now: the topology is
// configured against them as the last heartbeat did, so the first
// heartbeat after the restart moves the group epoch only if the topics
// changed while the broker was down. Each member's session timer starts
// afresh, and the rebalance timer of a member that was revoking tasks; a
// member that does not come back is fenced when its session times out, as
// in Kafka. A group id already held is left alone.
func (c *Coordinator) Restore(r Record, md Metadata) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed || c.groups[r.Group] != nil || r.Group == "" {
		return
	}
	gc := c.groupConfig(r.Group)
	g := newGroup(r.Group, c.now())
	g.epoch, g.targetEpoch = r.Epoch, r.AssignmentEpoch
	if r.Topology != nil {
		t := *r.Topology
		g.topology = &t
		g.conf = configure(g.topology, md)
	}
	for _, mr := range r.Members {
		if mr.MemberID == "" || g.members[mr.MemberID] != nil {
			continue // a damaged record: keep what makes sense
		}
		if mr.InstanceID != "" && g.staticMember(mr.InstanceID) != nil {
			continue
		}
		m := &member{
			id: mr.MemberID, instanceID: mr.InstanceID, rackID: mr.RackID, clientID: mr.ClientID, clientHost: mr.ClientHost,
			processID: mr.ProcessID, clientTags: slices.Clone(mr.ClientTags), topologyEpoch: mr.TopologyEpoch,
			rebalanceTimeout: mr.RebalanceTimeout,
			epoch:            mr.Epoch, prevEpoch: mr.PreviousEpoch, state: mr.State,
			assigned: orEmpty(mr.Assigned), pendingRevocation: orEmpty(mr.PendingRevocation),
		}
		// Every active task gets its epoch, the member epoch where the
		// records have none (TasksTupleWithEpochs
		// .fromCurrentAssignmentRecord): then only the current epoch
		// commits them, the rule before KIP-1251.
		m.activeSince = make(TaskEpochs)
		for _, ts := range []TaskSet{m.assigned.Active, m.pendingRevocation.Active} {
			for t := range ts {
				e, ok := mr.AssignmentEpochs[t]
				if !ok {
					e = mr.Epoch
				}
				m.activeSince[t] = e
			}
		}
		if mr.UserEndpoint != nil {
			e := *mr.UserEndpoint
			m.userEndpoint = &e
		}
		g.members[m.id] = m
		g.target[m.id] = orEmpty(mr.Target)
	}
	// The endpoint map as the members last had it, so that the first
	// heartbeat does not take it for a change. Its epoch, which Kafka
	// does not persist either, starts again: members that hold another
	// one get the map again.
	g.endpoints = fmt.Sprint(g.endpointPartitions())
	c.groups[g.id] = g
	for _, m := range g.members {
		c.scheduleSessionLocked(g, m, gc.SessionTimeout)
		if m.state == MemberUnrevokedTasks {
			c.scheduleRebalanceLocked(g, m)
		}
	}
}

// orEmpty is t with every nil set made empty.
func orEmpty(t Tasks) Tasks {
	if t.Active == nil {
		t.Active = TaskSet{}
	}
	if t.Standby == nil {
		t.Standby = TaskSet{}
	}
	if t.Warmup == nil {
		t.Warmup = TaskSet{}
	}
	return t
}
