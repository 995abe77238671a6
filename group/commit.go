package group

import (
	"iter"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kbroker/kbroker/group/consumer"
)

// ValidateCommit checks whether an OffsetCommit from this member may store
// offsets for the group, and returns nil or a *kerr.Error. It is Kafka's
// non-transactional validateOffsetCommit (GroupCoordinator.scala;
// ClassicGroup.validateOffsetCommit and OffsetMetadataManager in 4.x):
//
//   - generation < 0 on an Empty group: a simple consumer or the admin
//     client, which may commit. A missing group is created Empty for it
//     ("simple consumer group"), so that ListGroups shows it.
//   - a missing group otherwise: ILLEGAL_GENERATION (OffsetCommit v9+ in
//     Kafka 4 answers GROUP_ID_NOT_FOUND instead; the handler maps it).
//   - a generation ≥ 0, or a member id, or an instance id: the member must
//     exist (UNKNOWN_MEMBER_ID; FENCED_INSTANCE_ID for a replaced static
//     member id) and be of the current generation (ILLEGAL_GENERATION).
//   - neither (v0-style commit) on a group with members: UNKNOWN_MEMBER_ID.
//   - a valid member while CompletingRebalance: REBALANCE_IN_PROGRESS; it
//     has its new generation but not its assignment yet.
//
// A valid commit from a member of a Stable or PreparingRebalance group
// counts as a heartbeat, as in Kafka: commits during a rebalance are
// allowed, since the heartbeat tells the member to rejoin.
func (c *Coordinator) ValidateCommit(groupID, memberID, instanceID string, generation int32) error {
	return c.validateCommit(groupID, memberID, instanceID, generation, false)
}

// ValidateTxnCommit is ValidateCommit for TxnOffsetCommit, with Kafka's
// looser transactional rules (validateOffsetCommit with isTransactional):
// a commit without generation and member (producers before KIP-447 send
// none) is accepted whatever the group's state, and a member may commit
// while the group completes a rebalance. A missing group is created for a
// commit with generation < 0, as for a simple consumer.
//
// A consumer group (KIP-848) holding the id applies its own rules
// (consumer.Coordinator.ValidateCommit: UNKNOWN_MEMBER_ID, and
// ILLEGAL_GENERATION for a member epoch that may not commit partitions,
// as Kafka answers a TxnOffsetCommit); partitions yields the request's,
// by topic name and id.
func (c *Coordinator) ValidateTxnCommit(groupID, memberID, instanceID string, generation int32, partitions iter.Seq2[string, consumer.TopicPartition]) error {
	var instance *string
	if instanceID != "" {
		instance = &instanceID
	}
	if found, err := c.consumer.ValidateCommit(groupID, memberID, instance, generation, true, 0, partitions); found {
		return err
	}
	return c.validateCommit(groupID, memberID, instanceID, generation, true)
}

func (c *Coordinator) validateCommit(groupID, memberID, instanceID string, generation int32, transactional bool) error {
	if !c.enter() {
		return kerr.CoordinatorNotAvailable
	}
	defer c.wg.Done()
	g, err := c.lockGroup(groupID, generation < 0)
	if err != nil {
		// A consumer group with members holds the id: this is no member
		// of it (the caller routes its members' commits there).
		return kerr.UnknownMemberID
	}
	if g == nil {
		return kerr.IllegalGeneration
	}
	defer g.mu.Unlock()
	state := g.mu.state
	if generation < 0 && state == Empty {
		return nil
	}
	if generation >= 0 || memberID != "" || instanceID != "" {
		if err := g.validateMemberLocked(memberID, instanceID); err != nil {
			return err
		}
		if generation != g.mu.generation {
			return kerr.IllegalGeneration
		}
	} else if state != Empty && !transactional {
		return kerr.UnknownMemberID
	}
	switch state {
	case CompletingRebalance:
		if transactional {
			return nil
		}
		return kerr.RebalanceInProgress
	case Stable, PreparingRebalance:
		if m := g.mu.byID[memberID]; m != nil {
			g.scheduleExpiryLocked(m, m.sessionTimeout)
		}
	}
	return nil
}
