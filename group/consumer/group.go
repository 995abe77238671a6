package consumer

import (
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"
)

// State is a consumer group's state (Kafka's ConsumerGroupState). It is
// derived from the members and epochs after every change; doc.go draws it.
type State int8

const (
	// Empty: no members.
	Empty State = iota
	// Assigning: the group epoch moved past the target assignment's
	// epoch; the next heartbeat computes a new target assignment.
	Assigning
	// Reconciling: some member has not reached the target assignment.
	Reconciling
	// Stable: every member owns its target assignment.
	Stable
	// Dead: the group was deleted; it is never in the coordinator's map.
	Dead
)

var stateNames = [...]string{"Empty", "Assigning", "Reconciling", "Stable", "Dead"}

// String returns Kafka's name of the state, as ListGroups and
// ConsumerGroupDescribe report it ("Reconciling").
func (s State) String() string {
	if s < 0 || int(s) >= len(stateNames) {
		return fmt.Sprintf("State(%d)", int8(s))
	}
	return stateNames[s]
}

// States lists every state, for filters.
func States() []State { return []State{Empty, Assigning, Reconciling, Stable, Dead} }

// group is one consumer group. id and c never change; everything under mu
// is guarded by it, and the methods ending in Locked run with it held.
type group struct {
	id string
	c  *Coordinator

	mu struct {
		sync.Mutex

		// deleted is set when the group left the coordinator's map; a
		// caller that waited for the lock looks the group up again.
		deleted bool
		state   State
		// epoch is the group epoch, bumped by every change of members,
		// subscriptions or subscribed topics' metadata.
		epoch int32
		// assignmentEpoch is the epoch of the target assignment.
		assignmentEpoch int32
		members         map[string]*member
		static          map[string]string     // instance id → member id
		target          map[string]Assignment // member id → target assignment
		// owners: the member owning each partition (assigned to it or
		// pending its revocation); Kafka's currentPartitionEpoch.
		owners map[topicPartition]string
		// names counts the members subscribed to each topic by name;
		// regexes those subscribed to each regular expression.
		names   map[string]int
		regexes map[string]int
		// resolved holds the topics each subscribed regular expression
		// matched when last resolved, at lastRefresh.
		resolved    map[string][]string
		lastRefresh time.Time
		// meta is the subscribed topics' metadata as of the last epoch
		// bump (Kafka's metadata hash): a change bumps the epoch.
		meta map[string]Topic
		// assignors counts the members naming each server assignor.
		assignors map[string]int

		// emptyTimer deletes the group after it stayed Empty.
		emptyTimer *time.Timer
		emptySeq   uint64
	}
}

// initialGroupEpoch is a new group's epoch and the epoch of its first,
// empty target assignment: Kafka 4.4 creates every consumer, share and
// streams group at group and assignment epoch 1, so that its first member
// joins at epoch 2 (TestDiffKafka compares the epochs).
const initialGroupEpoch = 1

func newGroup(c *Coordinator, id string) *group {
	g := &group{id: id, c: c}
	g.mu.epoch, g.mu.assignmentEpoch = initialGroupEpoch, initialGroupEpoch
	g.mu.members = map[string]*member{}
	g.mu.static = map[string]string{}
	g.mu.target = map[string]Assignment{}
	g.mu.owners = map[topicPartition]string{}
	g.mu.names = map[string]int{}
	g.mu.regexes = map[string]int{}
	g.mu.resolved = map[string][]string{}
	g.mu.meta = map[string]Topic{}
	g.mu.assignors = map[string]int{}
	return g
}

// staticMemberLocked returns the member holding instance id, or nil.
func (g *group) staticMemberLocked(instanceID string) *member {
	if id, ok := g.mu.static[instanceID]; ok {
		return g.mu.members[id]
	}
	return nil
}

// updateMemberLocked installs a new version of a member (or a new member),
// replacing old (nil for a new member) and keeping every derived index
// right (ConsumerGroup.updateMember).
func (g *group) updateMemberLocked(old, m *member) {
	if old != nil {
		g.unindexLocked(old)
	}
	g.mu.members[m.id] = m
	if m.instanceID != "" {
		g.mu.static[m.instanceID] = m.id
	}
	for _, n := range m.topicNames {
		g.mu.names[n]++
	}
	if m.regex != "" {
		g.mu.regexes[m.regex]++
	}
	if m.serverAssignor != "" {
		g.mu.assignors[m.serverAssignor]++
	}
	g.ownLocked(m.assigned, m.id)
	g.ownLocked(m.pendingRevocation, m.id)
	g.pruneResolvedLocked()
}

// pruneResolvedLocked forgets the resolution of regular expressions no
// member subscribes to any more (maybeDeleteResolvedRegularExpressions).
func (g *group) pruneResolvedLocked() {
	for re := range g.mu.resolved {
		if g.mu.regexes[re] == 0 {
			delete(g.mu.resolved, re)
		}
	}
}

// removeMemberLocked removes a member and its target assignment
// (ConsumerGroup.removeMember with the member's tombstones) and stops its
// timers.
func (g *group) removeMemberLocked(m *member) {
	if g.mu.members[m.id] != m {
		return
	}
	g.unindexLocked(m)
	delete(g.mu.members, m.id)
	delete(g.mu.target, m.id)
	if m.instanceID != "" && g.mu.static[m.instanceID] == m.id {
		delete(g.mu.static, m.instanceID)
	}
	g.stopSessionTimerLocked(m)
	g.stopRebalanceTimerLocked(m)
	g.pruneResolvedLocked()
}

// unindexLocked takes a member's version out of the derived indexes.
func (g *group) unindexLocked(m *member) {
	for _, n := range m.topicNames {
		if g.mu.names[n]--; g.mu.names[n] <= 0 {
			delete(g.mu.names, n)
		}
	}
	if m.regex != "" {
		if g.mu.regexes[m.regex]--; g.mu.regexes[m.regex] <= 0 {
			delete(g.mu.regexes, m.regex)
		}
	}
	if m.serverAssignor != "" {
		if g.mu.assignors[m.serverAssignor]--; g.mu.assignors[m.serverAssignor] <= 0 {
			delete(g.mu.assignors, m.serverAssignor)
		}
	}
	for id, ps := range m.assigned {
		g.disownLocked(id, ps, m.id)
	}
	for id, ps := range m.pendingRevocation {
		g.disownLocked(id, ps, m.id)
	}
}

func (g *group) ownLocked(a Assignment, memberID string) {
	for id, ps := range a {
		for _, p := range ps {
			g.mu.owners[topicPartition{id, p}] = memberID
		}
	}
}

func (g *group) disownLocked(id TopicID, ps []int32, memberID string) {
	for _, p := range ps {
		tp := topicPartition{id, p}
		if g.mu.owners[tp] == memberID {
			delete(g.mu.owners, tp)
		}
	}
}

// ownedByAnyone reports whether some member owns the partition
// (currentPartitionEpoch != -1).
func (g *group) ownedByAnyoneLocked(id TopicID, p int32) bool {
	_, ok := g.mu.owners[topicPartition{id, p}]
	return ok
}

// updateStateLocked derives the group's state (maybeUpdateGroupState) and
// starts or stops the timer that deletes a group left Empty.
func (g *group) updateStateLocked() {
	s := Stable
	switch {
	case len(g.mu.members) == 0:
		s = Empty
	case g.mu.epoch > g.mu.assignmentEpoch:
		s = Assigning
	default:
		for _, m := range g.mu.members {
			if !m.reconciledTo(g.mu.assignmentEpoch) {
				s = Reconciling
				break
			}
		}
	}
	prev := g.mu.state
	g.mu.state = s
	switch {
	case s == Empty && prev != Empty:
		g.scheduleEmptyCheckLocked()
	case s != Empty:
		g.stopEmptyCheckLocked()
	}
}

// subscribedNamesLocked is the set of topic names the group subscribes to,
// by name or through a resolved regular expression, with the members as
// given: every current member except those in skip, plus extra (Kafka's
// computeSubscribedTopicNames).
func (g *group) subscribedNamesLocked(resolved map[string][]string, skip []string, extra *member) map[string]bool {
	out := map[string]bool{}
	add := func(m *member) {
		for _, n := range m.topicNames {
			out[n] = true
		}
		if m.regex != "" {
			for _, n := range resolved[m.regex] {
				out[n] = true
			}
		}
	}
	for id, m := range g.mu.members {
		if !slices.Contains(skip, id) {
			add(m)
		}
	}
	if extra != nil {
		add(extra)
	}
	return out
}

// subscribedRegexesLocked is the set of regular expressions the members
// subscribe to, with the members given as for subscribedNamesLocked.
func (g *group) subscribedRegexesLocked(skip []string, extra *member) map[string]bool {
	out := map[string]bool{}
	for id, m := range g.mu.members {
		if m.regex != "" && !slices.Contains(skip, id) {
			out[m.regex] = true
		}
	}
	if extra != nil && extra.regex != "" {
		out[extra.regex] = true
	}
	return out
}

// metadataOf looks the subscribed topics up: those that exist, by name.
func metadataOf(names map[string]bool, md Metadata) map[string]Topic {
	out := make(map[string]Topic, len(names))
	for n := range names {
		if t, ok := md.TopicByName(n); ok {
			out[n] = t
		}
	}
	return out
}

// metadataCurrentLocked reports whether the subscribed topics still look
// as they did at the last epoch bump: same ids and partition counts, none
// created or deleted. It is checked on every heartbeat, which is how
// CreatePartitions, DeleteTopics and a re-created topic reach the group
// (Kafka refreshes the metadata hash when its metadata image changes).
// Without regular expressions it allocates nothing.
func (g *group) metadataCurrentLocked(md Metadata) bool {
	existing := 0
	same := func(n string) bool {
		t, ok := md.TopicByName(n)
		old, had := g.mu.meta[n]
		if ok {
			existing++
		}
		return ok == had && (!ok || (t.ID == old.ID && t.Partitions == old.Partitions))
	}
	if len(g.mu.regexes) == 0 {
		for n := range g.mu.names {
			if !same(n) {
				return false
			}
		}
	} else {
		for n := range g.subscribedNamesLocked(g.mu.resolved, nil, nil) {
			if !same(n) {
				return false
			}
		}
	}
	return existing == len(g.mu.meta)
}

// preferredAssignorLocked is the server assignor most members name, with
// old replaced by m (ConsumerGroup.computePreferredServerAssignor); ties go
// to the one listed first in group.consumer.assignors, and with none named
// the default (the first listed) applies.
func (g *group) preferredAssignorLocked(skip []string, m *member) string {
	counts := maps.Clone(g.mu.assignors)
	for _, id := range skip {
		if old := g.mu.members[id]; old != nil && old.serverAssignor != "" {
			counts[old.serverAssignor]--
		}
	}
	if m != nil && m.serverAssignor != "" {
		counts[m.serverAssignor]++
	}
	best, bestN := g.c.cfg.Assignors[0], 0
	for _, name := range g.c.cfg.Assignors {
		if counts[name] > bestN {
			best, bestN = name, counts[name]
		}
	}
	return best
}
