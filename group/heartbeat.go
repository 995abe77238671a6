package group

import (
	"github.com/twmb/franz-go/pkg/kerr"
)

// HeartbeatRequest is a Heartbeat request in wire-independent form.
type HeartbeatRequest struct {
	Group      string
	MemberID   string
	InstanceID string // "" for a dynamic member
	Generation int32
}

// Heartbeat handles a Heartbeat request and returns nil or a *kerr.Error
// (GroupCoordinator.handleHeartbeat, classicGroupHeartbeatToClassicGroup):
// UNKNOWN_MEMBER_ID or FENCED_INSTANCE_ID for a member the group does not
// know under that id, ILLEGAL_GENERATION for another generation, and
// REBALANCE_IN_PROGRESS while the group prepares a rebalance, which tells
// the member to rejoin. A valid heartbeat restarts the member's session
// timer, also during a rebalance.
func (c *Coordinator) Heartbeat(req HeartbeatRequest) error {
	if !c.enter() {
		return kerr.CoordinatorNotAvailable
	}
	defer c.wg.Done()
	if req.Group == "" {
		return kerr.InvalidGroupID
	}
	g, _ := c.lockGroup(req.Group, false)
	if g == nil {
		return kerr.UnknownMemberID
	}
	defer g.mu.Unlock()
	if err := g.validateMemberLocked(req.MemberID, req.InstanceID); err != nil {
		return err
	}
	if req.Generation != g.mu.generation {
		return kerr.IllegalGeneration
	}
	m := g.mu.byID[req.MemberID]
	switch g.mu.state {
	case PreparingRebalance:
		g.scheduleExpiryLocked(m, m.sessionTimeout)
		return kerr.RebalanceInProgress
	case CompletingRebalance, Stable:
		// A member may heartbeat between its JoinGroup and SyncGroup.
		g.scheduleExpiryLocked(m, m.sessionTimeout)
		return nil
	}
	return kerr.UnknownMemberID // Empty: unreachable, no members
}

// expireMemberLocked runs when a member's session timer fires: the member
// is removed unless it is waiting in a rebalance, which excuses it from
// heartbeating (onExpireHeartbeat / expireClassicGroupMemberHeartbeat).
func (g *group) expireMemberLocked(m *member, e *effects) {
	if m.hasSatisfiedHeartbeat() {
		return
	}
	g.removeMemberAndUpdateLocked(m, e)
}

// removeMemberAndUpdateLocked removes a member and moves the group on: a
// Stable or CompletingRebalance group rebalances, a preparing one may now
// have everybody it waits for (removeMemberAndUpdateGroup).
func (g *group) removeMemberAndUpdateLocked(m *member, e *effects) {
	g.removeLocked(m, e)
	switch g.mu.state {
	case Stable, CompletingRebalance:
		g.maybePrepareRebalanceOrCompleteJoinLocked(e)
	case PreparingRebalance:
		if g.hasAllMembersJoinedLocked() {
			g.completeJoinPhaseLocked(e)
		}
	}
}
