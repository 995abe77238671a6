package group

import (
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// JoinRequest is a JoinGroup request in wire-independent form.
type JoinRequest struct {
	Group string
	// MemberID is "" for a member that has none yet.
	MemberID string
	// InstanceID is group.instance.id (KIP-345, v5+); "" for a dynamic
	// member. The handler refuses invalid instance ids before calling.
	InstanceID string
	ClientID   string
	ClientHost string
	// SessionTimeout must lie within the configured bounds.
	SessionTimeout time.Duration
	// RebalanceTimeout is how long the group waits for members to rejoin;
	// JoinGroup v0 has none, so the handler passes the session timeout
	// (as Kafka does).
	RebalanceTimeout time.Duration
	ProtocolType     string
	Protocols        []Protocol
	// RequireKnownMemberID is set for JoinGroup v4+ (KIP-394): a dynamic
	// member without an id gets MEMBER_ID_REQUIRED and an id to rejoin
	// with, instead of entering the group at once.
	RequireKnownMemberID bool
	// SupportsSkipAssignment is set for JoinGroup v9+: a static leader
	// that rejoins a Stable group is told it leads, but to skip assigning.
	SupportsSkipAssignment bool
}

// JoinMember is one member in the leader's JoinGroup response.
type JoinMember struct {
	MemberID   string
	InstanceID string // "" for a dynamic member
	Metadata   []byte // for the selected protocol
}

// JoinResponse is the answer to a JoinRequest. Err is nil or a *kerr.Error;
// on error Generation is -1 and MemberID is what the client should use next
// (the generated id with MEMBER_ID_REQUIRED, "" to start over). Members is
// set only for the leader. Empty strings stand for Kafka's nulls. The
// slices are shared with the group: do not modify them.
type JoinResponse struct {
	Err            error
	MemberID       string
	Generation     int32
	ProtocolType   string
	ProtocolName   string
	Leader         string
	SkipAssignment bool
	Members        []JoinMember
}

func joinError(memberID string, err error) JoinResponse {
	return JoinResponse{Err: err, MemberID: memberID, Generation: -1}
}

// Join handles a JoinGroup request. done is called exactly once with the
// response: before Join returns when the answer is known at once (errors,
// MEMBER_ID_REQUIRED, a follower rejoining a Stable group), or later when
// the join phase completes, from the goroutine of the call or timer that
// completed it. done must be quick and must not block; it may call the
// Coordinator (except Close). See doc.go for the handler pattern.
func (c *Coordinator) Join(req JoinRequest, done func(JoinResponse)) {
	if !c.enter() {
		done(joinError(req.MemberID, kerr.CoordinatorNotAvailable))
		return
	}
	defer c.wg.Done()
	switch {
	case req.Group == "":
		done(joinError(req.MemberID, kerr.InvalidGroupID))
		return
	case req.SessionTimeout < c.cfg.MinSessionTimeout || req.SessionTimeout > c.cfg.MaxSessionTimeout:
		done(joinError(req.MemberID, kerr.InvalidSessionTimeout))
		return
	}
	req.Protocols = cloneProtocols(req.Protocols)
	// A group is created only for a member without an id; a member id
	// for a group that does not exist is stale.
	unknown := req.MemberID == ""
	g, err := c.lockGroup(req.Group, unknown)
	if err != nil {
		// A consumer group with members holds the id. Kafka 4 would let
		// the member join it with the classic protocol (KIP-848
		// migration); kbroker refuses, with Kafka's answer for a group
		// of another protocol.
		done(joinError("", kerr.InconsistentGroupProtocol))
		return
	}
	if g == nil {
		done(joinError(req.MemberID, kerr.UnknownMemberID))
		return
	}
	var e effects
	switch {
	case !g.acceptJoiningMemberLocked(req.MemberID):
		g.rejectOverCapacityLocked(req.MemberID, &e)
		e.add(func() { done(joinError("", kerr.GroupMaxSizeReached)) })
	case unknown:
		g.joinNewMemberLocked(&req, done, &e)
	default:
		g.joinExistingMemberLocked(&req, done, &e)
	}
	g.mu.Unlock()
	e.run()
}

// acceptJoiningMemberLocked applies group.max.size
// (GroupCoordinator.acceptJoiningMember): while preparing a rebalance, a
// member already parked is let in and others only while fewer than the
// maximum are parked; otherwise members are let in and new ones only below
// the maximum.
func (g *group) acceptJoiningMemberLocked(memberID string) bool {
	limit := g.c.cfg.MaxSize
	switch g.mu.state {
	case PreparingRebalance:
		m := g.mu.byID[memberID]
		return (m != nil && m.joinDone != nil) || g.mu.awaiting < limit
	case CompletingRebalance, Stable:
		return g.mu.byID[memberID] != nil || len(g.mu.members) < limit
	}
	return true
}

// rejectOverCapacityLocked removes a member refused for group.max.size.
func (g *group) rejectOverCapacityLocked(memberID string, e *effects) {
	g.removePendingLocked(memberID)
	if m := g.mu.byID[memberID]; m != nil {
		g.removeLocked(m, e)
		g.maybeCompleteJoinPhaseLocked(e)
	}
}

// joinNewMemberLocked handles a JoinGroup without a member id
// (doNewMemberJoinGroup / classicGroupJoinNewMember).
func (g *group) joinNewMemberLocked(req *JoinRequest, done func(JoinResponse), e *effects) {
	if !g.supportsProtocolsLocked(req.ProtocolType, req.Protocols) {
		e.add(func() { done(joinError("", kerr.InconsistentGroupProtocol)) })
		return
	}
	if req.InstanceID != "" {
		newID := newMemberID(req.InstanceID)
		if oldID, ok := g.mu.static[req.InstanceID]; ok {
			g.replaceStaticMemberLocked(req, g.mu.byID[oldID], newID, done, e)
			return
		}
		g.addMemberAndRebalanceLocked(req, newID, done, e)
		return
	}
	newID := newMemberID(req.ClientID)
	if req.RequireKnownMemberID {
		g.addPendingLocked(newID, req.SessionTimeout)
		e.add(func() { done(joinError(newID, kerr.MemberIDRequired)) })
		return
	}
	g.addMemberAndRebalanceLocked(req, newID, done, e)
}

// addPendingLocked records a member id handed out with MEMBER_ID_REQUIRED;
// it is forgotten unless the member rejoins within its session timeout.
func (g *group) addPendingLocked(id string, timeout time.Duration) {
	p := &pendingMember{}
	g.mu.pending[id] = p
	p.timer = g.c.afterFunc(timeout, func() {
		g.run(func(e *effects) {
			if g.mu.pending[id] != p || g.mu.state == Dead {
				return
			}
			delete(g.mu.pending, id)
			if g.mu.state == PreparingRebalance && g.hasAllMembersJoinedLocked() {
				g.completeJoinPhaseLocked(e)
			}
		})
	})
}

// joinExistingMemberLocked handles a JoinGroup with a member id
// (doCurrentMemberJoinGroup / classicGroupJoinExistingMember).
func (g *group) joinExistingMemberLocked(req *JoinRequest, done func(JoinResponse), e *effects) {
	id := req.MemberID
	reply := func(resp JoinResponse) { e.add(func() { done(resp) }) }
	if !g.supportsProtocolsLocked(req.ProtocolType, req.Protocols) {
		reply(joinError(id, kerr.InconsistentGroupProtocol))
		return
	}
	if _, ok := g.mu.pending[id]; ok {
		if req.InstanceID != "" {
			// Kafka throws IllegalStateException here: a pending id is
			// never static. Never panic on client input: the client
			// should start over with its instance id and no member id.
			reply(joinError(id, kerr.UnknownMemberID))
			return
		}
		g.addMemberAndRebalanceLocked(req, id, done, e)
		return
	}
	if err := g.validateMemberLocked(id, req.InstanceID); err != nil {
		reply(joinError(id, err))
		return
	}
	m := g.mu.byID[id]
	switch g.mu.state {
	case PreparingRebalance:
		g.updateMemberLocked(m, req, done, e)
		g.maybePrepareRebalanceOrCompleteJoinLocked(e)
	case CompletingRebalance:
		if !m.matches(req.Protocols) {
			g.updateMemberLocked(m, req, done, e)
			g.maybePrepareRebalanceOrCompleteJoinLocked(e)
			return
		}
		// Same metadata: the member probably lost the first response.
		reply(g.generationResponseLocked(m, g.mu.leader == id))
	case Stable:
		// The leader's JoinGroup always rebalances: that is how it
		// reacts to changes that do not show in the metadata (new
		// partitions of a subscribed topic).
		if g.mu.leader == id || !m.matches(req.Protocols) {
			g.updateMemberLocked(m, req, done, e)
			g.maybePrepareRebalanceOrCompleteJoinLocked(e)
			return
		}
		reply(g.generationResponseLocked(m, false))
	default:
		// Empty: a member cannot validate without members; defensive.
		reply(joinError(id, kerr.UnknownMemberID))
	}
}

// generationResponseLocked is the JoinGroup answer describing the current
// generation; withMembers adds every member's metadata (for the leader).
func (g *group) generationResponseLocked(m *member, withMembers bool) JoinResponse {
	resp := JoinResponse{
		MemberID:     m.id,
		Generation:   g.mu.generation,
		ProtocolType: g.mu.protocolType,
		ProtocolName: g.mu.protocolName,
		Leader:       g.mu.leader,
	}
	if withMembers {
		resp.Members = g.currentMembersLocked()
	}
	return resp
}

// addMemberAndRebalanceLocked adds a member whose JoinGroup parks until the
// join phase completes (addMemberAndRebalance).
func (g *group) addMemberAndRebalanceLocked(req *JoinRequest, id string, done func(JoinResponse), e *effects) {
	m := &member{
		id:               id,
		instanceID:       req.InstanceID,
		clientID:         req.ClientID,
		clientHost:       req.ClientHost,
		sessionTimeout:   req.SessionTimeout,
		rebalanceTimeout: req.RebalanceTimeout,
		protocolType:     req.ProtocolType,
		protocols:        req.Protocols,
		isNew:            true,
	}
	// A member joining during the initial delay extends it.
	if g.mu.state == PreparingRebalance && g.mu.previous == Empty {
		g.mu.newMemberAdded = true
	}
	g.addLocked(m, done)
	g.scheduleExpiryLocked(m, newMemberJoinTimeout)
	g.maybePrepareRebalanceOrCompleteJoinLocked(e)
}

// replaceStaticMemberLocked handles a known group.instance.id joining
// without a member id: the old member id is fenced and the member continues
// under the new one (updateStaticMemberAndRebalance /
// updateStaticMemberThenRebalanceOrCompleteJoin).
func (g *group) replaceStaticMemberLocked(req *JoinRequest, m *member, newID string, done func(JoinResponse), e *effects) {
	oldLeader := g.mu.leader
	g.replaceStaticLocked(m, newID, e)
	g.updateMemberLocked(m, req, done, e)
	// The old id's session timer is void; time the new id.
	g.scheduleExpiryLocked(m, m.sessionTimeout)
	switch g.mu.state {
	case Stable:
		if g.selectProtocolLocked() != g.mu.protocolName {
			g.maybePrepareRebalanceOrCompleteJoinLocked(e)
			return
		}
		// No rebalance: the member keeps its assignment. Kafka persists
		// the new member id before it answers; here the state hook
		// records it once the answer is on its way.
		g.notifyLocked(e)
		resp := g.generationResponseLocked(m, false)
		if req.SupportsSkipAssignment {
			// v9+: the leader learns it leads but must not assign; an
			// assignment sent to a Stable group would not be applied.
			if g.mu.leader == newID {
				resp.Members = g.currentMembersLocked()
				resp.SkipAssignment = true
			}
		} else {
			// Before v9 the old leader id keeps a rejoining static
			// leader from running a pointless assignment.
			resp.Leader = oldLeader
		}
		g.completeJoinLocked(m, resp, e)
	case CompletingRebalance:
		// The leader may already hold the old member id in its
		// assignment, which would then miss the new id: rebalance.
		g.prepareRebalanceLocked(e)
	case PreparingRebalance:
		g.maybeCompleteJoinPhaseLocked(e)
	}
}

// maybePrepareRebalanceOrCompleteJoinLocked starts a rebalance if the state
// allows one, else tries to complete the running join phase.
func (g *group) maybePrepareRebalanceOrCompleteJoinLocked(e *effects) {
	if g.canRebalanceLocked() {
		g.prepareRebalanceLocked(e)
		return
	}
	g.maybeCompleteJoinPhaseLocked(e)
}

// maybeCompleteJoinPhaseLocked completes the join phase once every member
// has rejoined, except in the initial rebalance, which always waits for
// its delay (maybeCompleteJoinPhase; InitialDelayedJoin.tryComplete).
func (g *group) maybeCompleteJoinPhaseLocked(e *effects) {
	if g.mu.state == PreparingRebalance && g.mu.previous != Empty && g.hasAllMembersJoinedLocked() {
		g.completeJoinPhaseLocked(e)
	}
}

// prepareRebalanceLocked moves the group to PreparingRebalance
// (GroupCoordinator.prepareRebalance). Parked SyncGroups are answered
// REBALANCE_IN_PROGRESS so those members rejoin. An Empty group waits for
// the initial delay; otherwise the phase ends when all members rejoined
// or after the rebalance timeout.
func (g *group) prepareRebalanceLocked(e *effects) {
	if g.mu.state == CompletingRebalance {
		g.propagateAssignmentLocked(kerr.RebalanceInProgress, e)
	}
	g.stopSyncTimerLocked()
	clear(g.mu.pendingSync)
	initial := g.mu.state == Empty
	if initial {
		delay := g.c.cfg.InitialRebalanceDelay
		remaining := max(g.rebalanceTimeoutLocked()-delay, 0)
		g.scheduleInitialJoinLocked(delay, remaining)
	}
	g.transitionLocked(PreparingRebalance, e)
	if initial {
		return
	}
	if g.hasAllMembersJoinedLocked() {
		g.completeJoinPhaseLocked(e)
		return
	}
	g.scheduleJoinTimerLocked(g.rebalanceTimeoutLocked(), g.completeJoinPhaseLocked)
}

// scheduleInitialJoinLocked waits delay, then completes the initial join
// phase, unless members joined meanwhile and time remains within the
// rebalance timeout: then it waits again (InitialDelayedJoin.onComplete).
func (g *group) scheduleInitialJoinLocked(delay, remaining time.Duration) {
	g.scheduleJoinTimerLocked(delay, func(e *effects) {
		if g.mu.newMemberAdded && remaining != 0 {
			g.mu.newMemberAdded = false
			next := min(g.c.cfg.InitialRebalanceDelay, remaining)
			g.scheduleInitialJoinLocked(next, max(remaining-delay, 0))
			return
		}
		g.completeJoinPhaseLocked(e)
	})
}

// scheduleJoinTimerLocked replaces the join timer with one that runs f
// after d, if the group is still preparing a rebalance then.
func (g *group) scheduleJoinTimerLocked(d time.Duration, f func(e *effects)) {
	g.stopJoinTimerLocked()
	seq := g.mu.joinSeq
	g.mu.joinTimer = g.c.afterFunc(d, func() {
		g.run(func(e *effects) {
			if g.mu.joinSeq == seq && g.mu.state == PreparingRebalance {
				f(e)
			}
		})
	})
}

func (g *group) stopJoinTimerLocked() {
	g.mu.joinSeq++
	if g.mu.joinTimer != nil {
		g.mu.joinTimer.Stop()
		g.mu.joinTimer = nil
	}
}

// completeJoinPhaseLocked ends the join phase (onCompleteJoin /
// completeClassicGroupJoin): dynamic members that did not rejoin are
// removed (static ones stay, KIP-345), a leader is kept or chosen among
// the rejoined, and the next generation starts. Each parked JoinGroup is
// answered; the leader's answer carries every member's metadata.
func (g *group) completeJoinPhaseLocked(e *effects) {
	g.stopJoinTimerLocked()
	for _, m := range slices.Clone(g.mu.members) {
		if m.joinDone == nil && m.instanceID == "" {
			g.removeLocked(m, e)
		}
	}
	if !g.maybeElectNewJoinedLeaderLocked() && len(g.mu.members) > 0 {
		// Nobody rejoined (only static members that did not come back
		// are left): wait another rebalance timeout, until their
		// sessions expire.
		g.scheduleJoinTimerLocked(g.rebalanceTimeoutLocked(), g.completeJoinPhaseLocked)
		return
	}
	g.initNextGenerationLocked(e)
	if g.mu.state == Empty {
		return
	}
	for _, m := range g.mu.members {
		g.completeJoinLocked(m, g.generationResponseLocked(m, g.mu.leader == m.id), e)
		g.scheduleExpiryLocked(m, m.sessionTimeout)
		m.isNew = false
		g.mu.pendingSync[m.id] = true
	}
	g.schedulePendingSyncLocked()
}

// maybeElectNewJoinedLeaderLocked keeps the leader if it rejoined, else
// makes the first rejoined member leader; false if no member rejoined
// (GroupMetadata.maybeElectNewJoinedLeader).
func (g *group) maybeElectNewJoinedLeaderLocked() bool {
	leader := g.mu.byID[g.mu.leader]
	if leader == nil {
		return false
	}
	if leader.joinDone != nil {
		return true
	}
	for _, m := range g.mu.members {
		if m.joinDone != nil {
			g.mu.leader = m.id
			return true
		}
	}
	return false
}
