package group

import (
	"bytes"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
)

// SyncRequest is a SyncGroup request in wire-independent form.
type SyncRequest struct {
	Group      string
	MemberID   string
	InstanceID string // "" for a dynamic member
	Generation int32
	// ProtocolType and ProtocolName (v5+, KIP-559) must match the group's
	// when given; "" means not given (null on the wire).
	ProtocolType string
	ProtocolName string
	// Assignments is the leader's assignment, member id → bytes; members
	// it leaves out get an empty assignment, ids that are not members are
	// ignored. Followers send none.
	Assignments map[string][]byte
}

// SyncResponse is the answer to a SyncRequest: the member's assignment, or
// Err (nil or a *kerr.Error). Empty strings stand for Kafka's nulls.
// Assignment is shared with the group: do not modify it.
type SyncResponse struct {
	Err          error
	ProtocolType string
	ProtocolName string
	Assignment   []byte
}

// Sync handles a SyncGroup request. done is called exactly once, under the
// same rules as Join's: at once for errors, for the leader and for a Stable
// group; a follower that syncs before the leader waits until the leader's
// assignment arrives or the rebalance is abandoned (REBALANCE_IN_PROGRESS).
func (c *Coordinator) Sync(req SyncRequest, done func(SyncResponse)) {
	if !c.enter() {
		done(SyncResponse{Err: kerr.CoordinatorNotAvailable})
		return
	}
	defer c.wg.Done()
	if req.Group == "" {
		done(SyncResponse{Err: kerr.InvalidGroupID})
		return
	}
	g, _ := c.lockGroup(req.Group, false)
	if g == nil {
		done(SyncResponse{Err: kerr.UnknownMemberID})
		return
	}
	var e effects
	g.syncLocked(&req, done, &e)
	g.mu.Unlock()
	e.run()
}

// syncLocked is doSyncGroup / classicGroupSyncToClassicGroup.
func (g *group) syncLocked(req *SyncRequest, done func(SyncResponse), e *effects) {
	reply := func(resp SyncResponse) { e.add(func() { done(resp) }) }
	if err := g.validateSyncLocked(req); err != nil {
		reply(SyncResponse{Err: err})
		return
	}
	m := g.mu.byID[req.MemberID]
	switch g.mu.state {
	case PreparingRebalance:
		reply(SyncResponse{Err: kerr.RebalanceInProgress})
	case CompletingRebalance:
		// A SyncGroup already parked for the member is superseded.
		g.completeSyncLocked(m, SyncResponse{Err: kerr.RebalanceInProgress}, e)
		m.syncDone = done
		g.removePendingSyncLocked(m.id)
		if g.mu.leader != m.id {
			return // wait for the leader
		}
		// Kafka writes the assignment to __consumer_offsets first and
		// completes in the append callback; here the broker's answers
		// wait for the append the state hook makes.
		for _, x := range g.mu.members {
			x.assignment = bytes.Clone(req.Assignments[x.id])
			if x.assignment == nil {
				x.assignment = []byte{}
			}
		}
		// The state hook first: it appends the group's record, which
		// the answers then wait for (broker/group_writes.go).
		g.transitionLocked(Stable, e)
		g.propagateAssignmentLocked(nil, e)
	case Stable:
		g.removePendingSyncLocked(m.id)
		reply(SyncResponse{ProtocolType: g.mu.protocolType, ProtocolName: g.mu.protocolName, Assignment: m.assignment})
		g.scheduleExpiryLocked(m, m.sessionTimeout)
	default:
		// Empty: validation fails first, as an Empty group has no members.
		reply(SyncResponse{Err: kerr.UnknownMemberID})
	}
}

// validateSyncLocked checks member, generation and, for v5+, protocol type
// and name (validateSyncGroup).
func (g *group) validateSyncLocked(req *SyncRequest) error {
	if err := g.validateMemberLocked(req.MemberID, req.InstanceID); err != nil {
		return err
	}
	if req.Generation != g.mu.generation {
		return kerr.IllegalGeneration
	}
	if req.ProtocolType != "" && g.mu.protocolType != "" && req.ProtocolType != g.mu.protocolType ||
		req.ProtocolName != "" && g.mu.protocolName != "" && req.ProtocolName != g.mu.protocolName {
		return kerr.InconsistentGroupProtocol
	}
	return nil
}

// propagateAssignmentLocked answers every parked SyncGroup: with the
// member's assignment, or with err (and no assignment, all assignments
// being reset) when the rebalance is abandoned
// (setAndPropagateAssignment, resetAndPropagateAssignmentError). A member
// answered gets a fresh session timeout: its expiry was ignored while it
// waited.
func (g *group) propagateAssignmentLocked(err error, e *effects) {
	for _, m := range g.mu.members {
		resp := SyncResponse{Err: err}
		if err == nil {
			resp = SyncResponse{ProtocolType: g.mu.protocolType, ProtocolName: g.mu.protocolName, Assignment: m.assignment}
		} else {
			m.assignment = nil
		}
		if g.completeSyncLocked(m, resp, e) {
			g.scheduleExpiryLocked(m, m.sessionTimeout)
		}
	}
}

// removePendingSyncLocked notes the member's SyncGroup; once every member
// of the generation synced, the sync timer is no longer needed.
func (g *group) removePendingSyncLocked(id string) {
	delete(g.mu.pendingSync, id)
	if len(g.mu.pendingSync) == 0 {
		g.stopSyncTimerLocked()
	}
}

// schedulePendingSyncLocked gives the members of a new generation one
// rebalance timeout to send SyncGroup; those that do not are removed and
// the group rebalances (schedulePendingSync, expirePendingSync). Without
// it a member that died between JoinGroup and SyncGroup would hold the
// group in CompletingRebalance, as it need not heartbeat while awaiting.
func (g *group) schedulePendingSyncLocked() {
	g.stopSyncTimerLocked()
	seq := g.mu.syncSeq
	generation := g.mu.generation
	g.mu.syncTimer = g.c.afterFunc(g.rebalanceTimeoutLocked(), func() {
		g.run(func(e *effects) {
			if g.mu.syncSeq != seq || g.mu.generation != generation {
				return
			}
			if g.mu.state != CompletingRebalance && g.mu.state != Stable || len(g.mu.pendingSync) == 0 {
				return
			}
			ids := make([]string, 0, len(g.mu.pendingSync))
			for id := range g.mu.pendingSync {
				ids = append(ids, id)
			}
			slices.Sort(ids)
			for _, id := range ids {
				if m := g.mu.byID[id]; m != nil {
					g.removeLocked(m, e)
				}
			}
			g.prepareRebalanceLocked(e)
		})
	})
}

func (g *group) stopSyncTimerLocked() {
	g.mu.syncSeq++
	if g.mu.syncTimer != nil {
		g.mu.syncTimer.Stop()
		g.mu.syncTimer = nil
	}
}
