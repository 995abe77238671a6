package group

import (
	"github.com/twmb/franz-go/pkg/kerr"
)

// LeaveMember is one member leaving: by member id, or (v3+, KIP-345) an
// administrative removal of a static member by instance id alone, with
// MemberID "".
type LeaveMember struct {
	MemberID   string
	InstanceID string
	Reason     string // KIP-800; informational
}

// Leave removes members from the group (GroupCoordinator.handleLeaveGroup,
// classicGroupLeaveToClassicGroup). It returns one error per member, in
// order (nil or a *kerr.Error: UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID), and
// a group-level error (COORDINATOR_NOT_AVAILABLE, INVALID_GROUP_ID, or
// UNKNOWN_MEMBER_ID for a group that does not exist) with no member
// errors. Kafka (GroupCoordinatorService.leaveGroup) answers a missing
// group with UNKNOWN_MEMBER_ID for each member and no top-level error; the
// handler does that. LeaveGroup v0-2 name one member and have only the
// top-level error: the handler reports that member's error there.
//
// If any member left, a Stable or CompletingRebalance group rebalances (or
// becomes Empty when nobody is left) and a preparing one completes its
// join phase if it no longer waits for anybody. A member whose JoinGroup
// is parked gets UNKNOWN_MEMBER_ID for it.
func (c *Coordinator) Leave(groupID string, members []LeaveMember) ([]error, error) {
	if !c.enter() {
		return nil, kerr.CoordinatorNotAvailable
	}
	defer c.wg.Done()
	if groupID == "" {
		return nil, kerr.InvalidGroupID
	}
	g, _ := c.lockGroup(groupID, false)
	if g == nil {
		return nil, kerr.UnknownMemberID
	}
	var e effects
	errs := make([]error, len(members))
	left := false
	for i, lm := range members {
		errs[i] = g.leaveOneLocked(lm, &left, &e)
	}
	if left {
		switch g.mu.state {
		case Stable, CompletingRebalance:
			g.maybePrepareRebalanceOrCompleteJoinLocked(&e)
		case PreparingRebalance:
			g.maybeCompleteJoinPhaseLocked(&e)
		}
	}
	g.mu.Unlock()
	e.run()
	return errs, nil
}

// leaveOneLocked removes one leaving member and sets *left when a member
// went. A pending member (KIP-394) is only forgotten, yet counts as one
// that left: Kafka 4 (classicGroupLeaveToClassicGroup) rebalances a Stable
// group for it, where Kafka 3.x did not, and clients see the difference
// (Heartbeat answers REBALANCE_IN_PROGRESS).
func (g *group) leaveOneLocked(lm LeaveMember, left *bool, e *effects) error {
	if lm.MemberID == "" {
		id, ok := g.mu.static[lm.InstanceID]
		if lm.InstanceID == "" || !ok {
			return kerr.UnknownMemberID
		}
		g.removeLocked(g.mu.byID[id], e)
		*left = true
		return nil
	}
	if _, ok := g.mu.pending[lm.MemberID]; ok {
		g.removePendingLocked(lm.MemberID)
		*left = true
		return nil
	}
	if err := g.validateMemberLocked(lm.MemberID, lm.InstanceID); err != nil {
		return err
	}
	g.removeLocked(g.mu.byID[lm.MemberID], e)
	*left = true
	return nil
}
