package consumer

import (
	"fmt"
	"maps"
	"slices"
	"time"
)

// MemberState is a member's reconciliation state (Kafka's MemberState).
// doc.go draws the transitions.
type MemberState int8

const (
	// MemberStable: the member owns its whole target assignment at the
	// target assignment epoch (or is waiting for nothing).
	MemberStable MemberState = iota
	// MemberUnrevokedPartitions: the member must give up partitions that
	// its target assignment no longer has; it stays at its epoch until a
	// heartbeat's owned partitions show they are gone.
	MemberUnrevokedPartitions
	// MemberUnreleasedPartitions: the member reached the target epoch but
	// some of its target partitions are still owned by other members,
	// which have not revoked them yet.
	MemberUnreleasedPartitions
	// MemberUnknown is Kafka's state for a state it does not know (a
	// newer coordinator's); members are never put in it here, but the
	// reconciliation handles it as Kafka does (fence unless the member
	// owns nothing).
	MemberUnknown MemberState = 127
)

// String returns Kafka's name of the state.
func (s MemberState) String() string {
	switch s {
	case MemberStable:
		return "STABLE"
	case MemberUnrevokedPartitions:
		return "UNREVOKED_PARTITIONS"
	case MemberUnreleasedPartitions:
		return "UNRELEASED_PARTITIONS"
	case MemberUnknown:
		return "UNKNOWN"
	}
	return fmt.Sprintf("MemberState(%d)", int8(s))
}

// Member epochs with a meaning (ConsumerGroupHeartbeatRequest).
const (
	// JoinEpoch: a heartbeat with epoch 0 joins or rejoins the group.
	JoinEpoch int32 = 0
	// LeaveEpoch: a heartbeat with epoch -1 leaves the group.
	LeaveEpoch int32 = -1
	// StaticLeaveEpoch: a static member's heartbeat with epoch -2 leaves
	// for now; the member keeps its partitions until its session times
	// out or a member with its instance id joins.
	StaticLeaveEpoch int32 = -2
)

// member is one member of a group. The fields before the timers are its
// state as Kafka's ConsumerGroupMember holds it; a heartbeat works on a
// copy (see clone) and the group installs the result with updateMember.
type member struct {
	id         string
	instanceID string // "" for a dynamic member
	rackID     string
	clientID   string
	clientHost string

	epoch         int32
	previousEpoch int32
	state         MemberState

	rebalanceTimeout time.Duration // -1 until the first heartbeat sets it
	topicNames       []string      // sorted, distinct
	regex            string        // "" for none
	serverAssignor   string        // "" for none

	assigned          Assignment
	pendingRevocation Assignment
	// assignedAt are the epochs at which the member was given the
	// partitions it holds; a partition missing from it (a record from
	// before KIP-1251) counts as given at the member's current epoch.
	assignedAt AssignmentEpochs

	// timers are shared between the copies of a member; only the group
	// (under its lock) starts and stops them.
	timers *memberTimers
}

// memberTimers are a member's session and rebalance timers. A sequence
// number per timer makes a callback that lost the race with its own Stop
// a no-op.
type memberTimers struct {
	session      *time.Timer
	sessionSeq   uint64
	rebalance    *time.Timer
	rebalanceSeq uint64
}

// newMember is a member as Kafka's ConsumerGroupMember.Builder creates it.
func newMember(id string) *member {
	return &member{
		id:                id,
		previousEpoch:     -1,
		rebalanceTimeout:  -1,
		assigned:          Assignment{},
		pendingRevocation: Assignment{},
		timers:            &memberTimers{},
	}
}

// clone returns a copy to modify (Builder(member)); assignments are
// immutable and shared.
func (m *member) clone() *member {
	c := *m
	return &c
}

// updateEpoch moves the member to epoch, remembering the one it leaves
// (Builder.updateMemberEpoch).
func (m *member) updateEpoch(epoch int32) {
	m.previousEpoch = m.epoch
	m.epoch = epoch
}

// reconciledTo reports whether the member is Stable at the target
// assignment epoch (ModernGroupMember.isReconciledTo).
func (m *member) reconciledTo(assignmentEpoch int32) bool {
	return m.state == MemberStable && m.epoch == assignmentEpoch
}

// sameAs reports whether two versions of a member are equal in every
// field Kafka's ConsumerGroupMember.equals compares.
func (m *member) sameAs(o *member) bool {
	return m.id == o.id && m.instanceID == o.instanceID && m.rackID == o.rackID &&
		m.clientID == o.clientID && m.clientHost == o.clientHost &&
		m.epoch == o.epoch && m.previousEpoch == o.previousEpoch && m.state == o.state &&
		m.rebalanceTimeout == o.rebalanceTimeout && slices.Equal(m.topicNames, o.topicNames) &&
		m.regex == o.regex && m.serverAssignor == o.serverAssignor &&
		m.assigned.equal(o.assigned) && m.pendingRevocation.equal(o.pendingRevocation) &&
		maps.Equal(m.assignedAt, o.assignedAt)
}

// assignmentEpoch is the member epoch at which m was given partition p of
// topic id (ConsumerGroupMember.assignmentEpoch, or pendingRevocationEpoch
// for a partition it is revoking); held is false when m holds neither.
func (m *member) assignmentEpoch(id TopicID, p int32) (epoch int32, held bool) {
	if !m.assigned.has(id, p) && !m.pendingRevocation.has(id, p) {
		return 0, false
	}
	if e, ok := m.assignedAt[TopicPartition{id, p}]; ok {
		return e, true
	}
	return m.epoch, true
}

// sortedNames returns names sorted and without duplicates, never nil.
func sortedNames(names []string) []string {
	out := slices.Clone(names)
	slices.Sort(out)
	out = slices.Compact(out)
	if out == nil {
		out = []string{}
	}
	return out
}
