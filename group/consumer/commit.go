package consumer

import (
	"github.com/kbroker/kbroker/group/grouperr"
	"github.com/twmb/franz-go/pkg/kerr"
)

// ValidateCommit checks an OffsetCommit (or, with transactional, a
// TxnOffsetCommit) against a consumer group (ConsumerGroup
// .validateOffsetCommit). found is false when no consumer group holds the
// id: the classic coordinator decides then. Otherwise err is nil or a
// *kerr.Error:
//
//   - an epoch below 0 on a group without members is a simple consumer's
//     or the admin client's commit, which may go ahead;
//   - a transactional commit without epoch, member id or instance id
//     (producers before KIP-447) may go ahead;
//   - the member must exist (UNKNOWN_MEMBER_ID); a consumer-protocol
//     member must use OffsetCommit v9+ (UNSUPPORTED_VERSION) outside
//     transactions; its epoch must be its current one
//     (STALE_MEMBER_EPOCH; TxnOffsetCommit answers ILLEGAL_GENERATION).
func (c *Coordinator) ValidateCommit(groupID, memberID string, instanceID *string, epoch int32, transactional bool, version int16) (found bool, err error) {
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
	if epoch != m.epoch {
		if transactional {
			return true, kerr.IllegalGeneration
		}
		return true, grouperr.Errorf(kerr.StaleMemberEpoch, "The received member epoch %d does not match the expected member epoch %d.", epoch, m.epoch)
	}
	return true, nil
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
