package consumer

import (
	"iter"

	"github.com/kbroker/kbroker/group/grouperr"
	"github.com/twmb/franz-go/pkg/kerr"
)

// ValidateCommit checks an OffsetCommit (or, with transactional, a
// TxnOffsetCommit) against a consumer group (ConsumerGroup
// .validateOffsetCommit, with KIP-1251's assignment epochs). found is
// false when no consumer group holds the id: the classic coordinator
// decides then. Otherwise err is nil or a *kerr.Error:
//
//   - an epoch below 0 on a group without members is a simple consumer's
//     or the admin client's commit, which may go ahead;
//   - a transactional commit without epoch, member id or instance id
//     (producers before KIP-447) may go ahead;
//   - the member must exist (UNKNOWN_MEMBER_ID); a consumer-protocol
//     member must use OffsetCommit v9+ (UNSUPPORTED_VERSION) outside
//     transactions;
//   - its current epoch may commit any partition; a newer one is
//     STALE_MEMBER_EPOCH; an older one may commit only partitions the
//     member has held (assigned or pending revocation) since that epoch
//     or before, else STALE_MEMBER_EPOCH for the whole request. So a
//     member whose commit crossed the heartbeat that moved it on (a
//     member left and it gained partitions, say) does not lose it, and a
//     zombie's commit of a partition that moved away still fails.
//     TxnOffsetCommit answers ILLEGAL_GENERATION in place of
//     STALE_MEMBER_EPOCH.
//
// partitions yields the partitions of the request's existing topics, by
// topic name and id; it runs, under the group's lock, only for an older
// epoch. nil stands for none.
func (c *Coordinator) ValidateCommit(groupID, memberID string, instanceID *string, epoch int32, transactional bool, version int16, partitions iter.Seq2[string, TopicPartition]) (found bool, err error) {
	if !c.enter() {
		return true, kerr.CoordinatorNotAvailable
	}
	defer c.wg.Done()
	g := c.findGroup(groupID)
	if g == nil {
		return false, nil
	}
	defer g.mu.Unlock()
	if epoch < 0 && len(g.mu.members) == 0 {
		return true, nil
	}
	if transactional && epoch == -1 && memberID == "" && instanceID == nil {
		return true, nil
	}
	m := g.mu.members[memberID]
	if m == nil {
		return true, grouperr.Errorf(kerr.UnknownMemberID, "Member %s is not a member of group %s.", memberID, groupID)
	}
	if !transactional && version < 9 {
		return true, grouperr.Errorf(kerr.UnsupportedVersion, "OffsetCommit version 9 or above must be used by members using the modern group protocol")
	}
	err = validateCommitEpoch(m, epoch, partitions)
	if err != nil && transactional {
		return true, kerr.IllegalGeneration
	}
	return true, err
}

// validateCommitEpoch is the epoch check of ValidateCommit.
func validateCommitEpoch(m *member, epoch int32, partitions iter.Seq2[string, TopicPartition]) error {
	if epoch == m.epoch {
		return nil
	}
	if epoch > m.epoch {
		return grouperr.Errorf(kerr.StaleMemberEpoch, "Received member epoch %d is newer than current member epoch %d.", epoch, m.epoch)
	}
	if partitions == nil {
		return nil
	}
	for name, tp := range partitions {
		since, held := m.assignmentEpoch(tp.TopicID, tp.Partition)
		if !held {
			return grouperr.Errorf(kerr.StaleMemberEpoch, "Partition %s-%d is not assigned or pending revocation for member.", name, tp.Partition)
		}
		if epoch < since {
			return grouperr.Errorf(kerr.StaleMemberEpoch, "Received member epoch %d is older than assignment epoch %d for partition %s-%d.", epoch, since, name, tp.Partition)
		}
	}
	return nil
}

// ValidateFetch checks an OffsetFetch v9+ that names a member
// (ConsumerGroup.validateOffsetFetch). found is false when no consumer
// group holds the id (classic groups do not check). A request without a
// member id and with a negative epoch (the admin client) passes; otherwise
// the member must exist (UNKNOWN_MEMBER_ID) at that epoch
// (STALE_MEMBER_EPOCH).
func (c *Coordinator) ValidateFetch(groupID string, memberID *string, epoch int32) (found bool, err error) {
	if !c.enter() {
		return true, kerr.CoordinatorNotAvailable
	}
	defer c.wg.Done()
	g := c.findGroup(groupID)
	if g == nil {
		return false, nil
	}
	defer g.mu.Unlock()
	if memberID == nil && epoch < 0 {
		return true, nil
	}
	id := ""
	if memberID != nil {
		id = *memberID
	}
	m := g.mu.members[id]
	if m == nil {
		return true, grouperr.Errorf(kerr.UnknownMemberID, "Member %s is not a member of group %s.", id, groupID)
	}
	if epoch != m.epoch {
		return true, grouperr.Errorf(kerr.StaleMemberEpoch, "The received member epoch %d does not match the expected member epoch %d.", epoch, m.epoch)
	}
	return true, nil
}
