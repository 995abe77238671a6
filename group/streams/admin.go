package streams

import (
	"iter"
	"maps"
	"slices"

	"github.com/kbroker/kbroker/group/grouperr"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Has reports whether a streams group holds the id.
func (c *Coordinator) Has(id string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.groups[id] != nil
}

// Overview is a group in ListGroups.
type Overview struct {
	Group string
	State GroupState
}

// List returns every group, sorted by id.
func (c *Coordinator) List() []Overview {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]Overview, 0, len(c.groups))
	for _, id := range slices.Sorted(maps.Keys(c.groups)) {
		out = append(out, Overview{Group: id, State: c.groups[id].state()})
	}
	return out
}

// Delete removes a group without members (DeleteGroups): found is false
// when no streams group holds the id; a group with members is
// NON_EMPTY_GROUP.
// The deletion is recorded (the change hook) before it returns.
func (c *Coordinator) Delete(id string) (found bool, err error) {
	c.mu.Lock()
	g := c.groups[id]
	if g == nil {
		c.mu.Unlock()
		return false, nil
	}
	if len(g.members) > 0 {
		c.mu.Unlock()
		return true, kerr.NonEmptyGroup
	}
	c.stopDelayLocked(g)
	delete(c.groups, id)
	c.mu.Unlock()
	c.changed(id)
	return true, nil
}

// ValidateCommit checks an OffsetCommit (or, with transactional, a
// TxnOffsetCommit) against a streams group (StreamsGroup
// .validateOffsetCommit, with KIP-1251's assignment epochs): found is
// false when no streams group holds the id. A commit without member epoch
// on a group without members (the admin client) passes, as does a
// transactional one without member data (producers before KIP-447);
// otherwise the member must exist (UNKNOWN_MEMBER_ID) and use OffsetCommit
// v9+ outside transactions (UNSUPPORTED_VERSION). Its current epoch may
// commit anything; a newer one is STALE_MEMBER_EPOCH; an older one may
// commit only partitions of the tasks the member has held active
// (assigned or pending revocation) since that epoch or before, else
// STALE_MEMBER_EPOCH for the whole request. So a member whose commit
// crossed the heartbeat that moved it on keeps it, and a zombie's commit
// of a task that moved away still fails. A task is found from the
// committed topic, a source or repartition source topic of its
// subtopology, and the partition. TxnOffsetCommit answers
// ILLEGAL_GENERATION in place of STALE_MEMBER_EPOCH.
//
// partitions yields the request's partitions of existing topics, by
// topic name and partition; it runs, under the coordinator's lock, only
// for an older epoch. nil stands for none.
func (c *Coordinator) ValidateCommit(groupID, memberID string, epoch int32, transactional bool, version int16, partitions iter.Seq2[string, int32]) (found bool, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	g := c.groups[groupID]
	if g == nil {
		return false, nil
	}
	if epoch < 0 && len(g.members) == 0 {
		return true, nil
	}
	if transactional && epoch == -1 && memberID == "" {
		return true, nil
	}
	m := g.members[memberID]
	if m == nil {
		return true, grouperr.Errorf(kerr.UnknownMemberID, "Member %s is not a member of group %s.", memberID, groupID)
	}
	if !transactional && version < 9 {
		return true, grouperr.Errorf(kerr.UnsupportedVersion, "OffsetCommit version 9 or above must be used by members using the streams group protocol")
	}
	err = g.validateCommitEpoch(m, epoch, partitions)
	if err != nil && transactional {
		return true, kerr.IllegalGeneration
	}
	return true, err
}

// validateCommitEpoch is the epoch check of ValidateCommit
// (createAssignmentEpochValidator for an older epoch).
func (g *group) validateCommitEpoch(m *member, epoch int32, partitions iter.Seq2[string, int32]) error {
	switch {
	case epoch == m.epoch:
		return nil
	case epoch > m.epoch:
		return grouperr.Errorf(kerr.StaleMemberEpoch, "Received member epoch %d is newer than current member epoch %d.", epoch, m.epoch)
	case g.topology == nil:
		return grouperr.Errorf(kerr.StaleMemberEpoch, "Topology is not available for offset commit validation.")
	case partitions == nil:
		return nil
	}
	subtopologies := g.topology.sourceTopics()
	for topic, p := range partitions {
		s, ok := subtopologies[topic]
		if !ok {
			return grouperr.Errorf(kerr.StaleMemberEpoch, "Topic %s is not in the topology.", topic)
		}
		since, held := m.activeSince[Task{s, p}]
		if !held {
			return grouperr.Errorf(kerr.StaleMemberEpoch, "Task %s-%d is not assigned or pending revocation for member.", s, p)
		}
		if epoch < since {
			return grouperr.Errorf(kerr.StaleMemberEpoch, "Received member epoch %d is older than assignment epoch %d for task %s-%d.", epoch, since, s, p)
		}
	}
	return nil
}

// ValidateFetch checks an OffsetFetch v9+ naming a member
// (StreamsGroup.validateOffsetFetch), as for consumer groups.
func (c *Coordinator) ValidateFetch(groupID string, memberID *string, epoch int32) (found bool, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	g := c.groups[groupID]
	if g == nil {
		return false, nil
	}
	if memberID == nil && epoch < 0 {
		return true, nil
	}
	id := ""
	if memberID != nil {
		id = *memberID
	}
	m := g.members[id]
	if m == nil {
		return true, grouperr.Errorf(kerr.UnknownMemberID, "Member %s is not a member of group %s.", id, groupID)
	}
	if epoch != m.epoch {
		return true, grouperr.Errorf(kerr.StaleMemberEpoch, "The received member epoch %d does not match the expected member epoch %d.", epoch, m.epoch)
	}
	return true, nil
}

// MemberDescription is one member in StreamsGroupDescribe.
type MemberDescription struct {
	MemberID, InstanceID, RackID string
	MemberEpoch                  int32
	ClientID, ClientHost         string
	TopologyEpoch                int32
	ProcessID                    string
	UserEndpoint                 *Endpoint
	ClientTags                   []KV
	Assignment, TargetAssignment Tasks
	IsClassic                    bool
}

// Description is a group in StreamsGroupDescribe.
type Description struct {
	Group              string
	State              GroupState
	Epoch, TargetEpoch int32
	Topology           *Topology
	TopologyEpoch      int32
	Members            []MemberDescription
}

// Describe describes a group: GROUP_ID_NOT_FOUND when no streams group
// holds the id.
func (c *Coordinator) Describe(id string) (Description, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	g := c.groups[id]
	if g == nil {
		return Description{}, grouperr.Errorf(kerr.GroupIDNotFound, "Group %s not found.", id)
	}
	d := Description{Group: id, State: g.state(), Epoch: g.epoch, TargetEpoch: g.targetEpoch, TopologyEpoch: -1}
	if g.topology != nil {
		t := *g.topology
		d.Topology = &t
		d.TopologyEpoch = t.Epoch
	}
	for _, mid := range slices.Sorted(maps.Keys(g.members)) {
		m := g.members[mid]
		target, ok := g.target[mid]
		if !ok {
			target = emptyTasks()
		}
		md := MemberDescription{
			MemberID: m.id, InstanceID: m.instanceID, RackID: m.rackID, MemberEpoch: m.epoch,
			ClientID: m.clientID, ClientHost: m.clientHost, TopologyEpoch: m.topologyEpoch,
			ProcessID: m.processID, UserEndpoint: m.userEndpoint, ClientTags: slices.Clone(m.clientTags),
			Assignment: m.assigned.clone(), TargetAssignment: target.clone(),
		}
		d.Members = append(d.Members, md)
	}
	return d, nil
}

// SubscribedTopics returns the topics a group with members reads (its
// topology's source and repartition source topics), for OffsetDelete's
// GROUP_SUBSCRIBED_TO_TOPIC (StreamsGroup.isSubscribedToTopic); found is
// false when no streams group holds the id.
func (c *Coordinator) SubscribedTopics(groupID string) (topics map[string]bool, found bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	g := c.groups[groupID]
	if g == nil {
		return nil, false
	}
	topics = make(map[string]bool)
	if len(g.members) == 0 || g.topology == nil {
		return topics, true
	}
	for t := range g.topology.sourceTopics() {
		topics[t] = true
	}
	return topics, true
}
