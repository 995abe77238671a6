package consumer

import (
	"maps"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Record is a consumer group as Kafka persists it in __consumer_offsets
// (the ConsumerGroup* records of GroupMetadataManager): what a restart
// needs to bring it back with its epochs and assignments.
type Record struct {
	Group string
	// Epoch is the group epoch (ConsumerGroupMetadata).
	Epoch int32
	// Topics is the subscribed topics' metadata as of the last epoch
	// bump (ConsumerGroupPartitionMetadata), sorted by name.
	Topics []Topic
	// AssignmentEpoch is the target assignment's epoch
	// (ConsumerGroupTargetAssignmentMetadata).
	AssignmentEpoch int32
	// Members are sorted by member id.
	Members []MemberRecord
}

// MemberRecord is one member of a Record: its metadata
// (ConsumerGroupMemberMetadata), its target assignment
// (ConsumerGroupTargetAssignmentMember) and its current assignment
// (ConsumerGroupCurrentMemberAssignment). The assignments are shared:
// do not modify them.
type MemberRecord struct {
	MemberID, InstanceID, RackID, ClientID, ClientHost string
	TopicNames                                         []string
	Regex, ServerAssignor                              string
	// RebalanceTimeout is -1 when the member never gave one.
	RebalanceTimeout            time.Duration
	Epoch, PreviousEpoch        int32
	State                       MemberState
	Assigned, PendingRevocation Assignment
	// AssignmentEpochs are the epochs at which the member was given
	// the partitions of Assigned and PendingRevocation (KIP-1251); nil
	// in records from before it.
	AssignmentEpochs AssignmentEpochs
	Target           Assignment
}

// Record returns the group's state as its records hold it; found is false
// when no consumer group holds the id (it was deleted, or never was).
// After Close it answers COORDINATOR_NOT_AVAILABLE, so that a heartbeat
// racing with shutdown does not have its group taken for deleted and its
// records tombstoned.
func (c *Coordinator) Record(groupID string) (r Record, found bool, err error) {
	if !c.enter() {
		return Record{}, false, kerr.CoordinatorNotAvailable
	}
	defer c.wg.Done()
	g := c.findGroup(groupID)
	if g == nil {
		return Record{}, false, nil
	}
	defer g.mu.Unlock()
	r = Record{Group: groupID, Epoch: g.mu.epoch, AssignmentEpoch: g.mu.assignmentEpoch}
	for _, n := range slices.Sorted(maps.Keys(g.mu.meta)) {
		r.Topics = append(r.Topics, g.mu.meta[n])
	}
	for _, id := range slices.Sorted(maps.Keys(g.mu.members)) {
		m := g.mu.members[id]
		r.Members = append(r.Members, MemberRecord{
			MemberID: m.id, InstanceID: m.instanceID, RackID: m.rackID, ClientID: m.clientID, ClientHost: m.clientHost,
			TopicNames: m.topicNames, Regex: m.regex, ServerAssignor: m.serverAssignor,
			RebalanceTimeout: m.rebalanceTimeout,
			Epoch:            m.epoch, PreviousEpoch: m.previousEpoch, State: m.state,
			Assigned: m.assigned, PendingRevocation: m.pendingRevocation,
			AssignmentEpochs: m.assignedAt,
			Target:           g.mu.target[m.id],
		})
	}
	return r, true, nil
}

// Restore recreates, at start-up, a consumer group from its records
// (GroupMetadataManager's replay and onLoaded): its group epoch, the
// subscribed topics' metadata of that epoch, the target assignment and
// every member with its subscription, epochs, state and partitions, so
// that members carry on heartbeating with their member epochs. Each
// member's session timer starts afresh now, and the rebalance timer of a
// member that was revoking partitions (UNREVOKED_PARTITIONS); a member
// that does not come back is fenced when its session times out, as in
// Kafka. Regular expressions are resolved again by the next heartbeat;
// if the topics changed while the broker was down, that heartbeat bumps
// the group epoch. A group id already held (by either protocol) is left
// alone.
func (c *Coordinator) Restore(r Record) {
	if !c.enter() {
		return
	}
	defer c.wg.Done()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.mu.groups[r.Group] != nil || (c.classic != nil && c.classic.Exists(r.Group)) {
		return
	}
	g := newGroup(c, r.Group)
	c.mu.groups[r.Group] = g
	g.mu.Lock()
	defer g.mu.Unlock()
	g.mu.epoch, g.mu.assignmentEpoch = r.Epoch, r.AssignmentEpoch
	for _, t := range r.Topics {
		g.mu.meta[t.Name] = t
	}
	for _, mr := range r.Members {
		if mr.MemberID == "" || g.mu.members[mr.MemberID] != nil {
			continue // a damaged record: keep what makes sense
		}
		if mr.InstanceID != "" && g.mu.static[mr.InstanceID] != "" {
			continue
		}
		m := newMember(mr.MemberID)
		m.instanceID, m.rackID, m.clientID, m.clientHost = mr.InstanceID, mr.RackID, mr.ClientID, mr.ClientHost
		m.topicNames = sortedNames(mr.TopicNames)
		m.regex, m.serverAssignor = mr.Regex, mr.ServerAssignor
		m.rebalanceTimeout = mr.RebalanceTimeout
		m.epoch, m.previousEpoch, m.state = mr.Epoch, mr.PreviousEpoch, mr.State
		m.assigned, m.pendingRevocation = orEmpty(mr.Assigned), orEmpty(mr.PendingRevocation)
		m.assignedAt = mr.AssignmentEpochs
		if mr.Target != nil {
			g.mu.target[m.id] = mr.Target
		}
		g.updateMemberLocked(nil, m)
	}
	for _, m := range g.mu.members {
		g.scheduleSessionTimerLocked(m)
		if m.state == MemberUnrevokedPartitions {
			g.scheduleRebalanceTimerLocked(m)
		}
	}
	// Empty → Empty does not start the timer that deletes an unused
	// group: start it here.
	g.mu.state = Dead
	g.updateStateLocked()
}

// orEmpty is a, or an empty Assignment for nil.
func orEmpty(a Assignment) Assignment {
	if a == nil {
		return Assignment{}
	}
	return a
}
