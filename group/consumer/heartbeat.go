package consumer

import (
	"crypto/rand"
	"encoding/base64"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/kbroker/kbroker/group/grouperr"

	"github.com/twmb/franz-go/pkg/kerr"
)

// HeartbeatRequest is a ConsumerGroupHeartbeat request in wire-independent
// form. Nil pointers and slices are Kafka's nulls: "unchanged since the
// last heartbeat".
type HeartbeatRequest struct {
	// Version is the request's version: from v1 the member generates its
	// member id (KIP-1082); a v0 member joins with "" and gets one.
	Version     int16
	Group       string
	MemberID    string
	MemberEpoch int32
	InstanceID  *string
	RackID      *string
	// RebalanceTimeoutMillis is -1 when unchanged.
	RebalanceTimeoutMillis int32
	SubscribedTopicNames   []string
	SubscribedTopicRegex   *string
	ServerAssignor         *string
	// Topics are the partitions the member owns; nil when unchanged.
	Topics     []TopicPartitions
	ClientID   string
	ClientHost string
}

// HeartbeatResponse is the answer to a HeartbeatRequest. Err is nil or an
// error wrapping a *kerr.Error, whose text is Kafka's error message; the
// other fields are set only without it.
type HeartbeatResponse struct {
	Err               error
	MemberID          string
	MemberEpoch       int32
	HeartbeatInterval time.Duration
	// Assignment is the member's whole assignment when HasAssignment (a
	// join, a full request, or a changed assignment); otherwise the
	// member keeps what it has.
	HasAssignment bool
	Assignment    []TopicPartitions
}

func heartbeatError(err error) HeartbeatResponse { return HeartbeatResponse{Err: err} }

// Heartbeat handles a ConsumerGroupHeartbeat request
// (GroupCoordinatorService.consumerGroupHeartbeat and
// GroupMetadataManager.consumerGroupHeartbeat): it validates the request,
// handles a leave (member epoch -1, or -2 for a static member), or else
// creates or updates the member, bumps the group epoch when the member's
// subscription or the subscribed topics changed, computes a new target
// assignment when the group epoch is ahead of it, and reconciles the
// member towards its target. md is the topic registry for the call.
func (c *Coordinator) Heartbeat(req HeartbeatRequest, md Metadata) HeartbeatResponse {
	if !c.enter() {
		return heartbeatError(kerr.CoordinatorNotAvailable)
	}
	defer c.wg.Done()
	if err := c.validateHeartbeat(&req); err != nil {
		return heartbeatError(err)
	}
	if req.MemberEpoch == LeaveEpoch || req.MemberEpoch == StaticLeaveEpoch {
		return c.leave(&req)
	}
	// A join that would create the group checks its regular expression
	// first: creating the group may delete an Empty classic group, which
	// a failed join must not do (Kafka writes nothing for it).
	if req.MemberEpoch == JoinEpoch && req.SubscribedTopicRegex != nil && *req.SubscribedTopicRegex != "" && !c.Exists(req.Group) {
		if _, err := compileRegex(*req.SubscribedTopicRegex); err != nil {
			return heartbeatError(invalidRegex(*req.SubscribedTopicRegex, err))
		}
	}
	g, created, err := c.lockGroup(req.Group, req.MemberEpoch == JoinEpoch)
	if err != nil {
		return heartbeatError(err)
	}
	resp, changed, err := g.heartbeatLocked(&req, md)
	g.mu.Unlock()
	if err != nil {
		if created {
			c.dropIfUnused(g)
		}
		return heartbeatError(err)
	}
	if changed {
		c.changed(req.Group)
	}
	return resp
}

// blank is Java's value.trim().isEmpty().
func blank(s string) bool {
	return strings.TrimFunc(s, func(r rune) bool { return r <= ' ' }) == ""
}

// validateHeartbeat is throwIfConsumerGroupHeartbeatRequestIsInvalid: the
// fields a heartbeat must or must not have, INVALID_REQUEST otherwise, and
// a known server assignor (UNSUPPORTED_ASSIGNOR).
func (c *Coordinator) validateHeartbeat(req *HeartbeatRequest) error {
	invalid := func(msg string) error { return grouperr.Errorf(kerr.InvalidRequest, "%s", msg) }
	if (req.Version >= 1 || req.MemberEpoch > 0 || req.MemberEpoch == LeaveEpoch) && blank(req.MemberID) {
		return invalid("MemberId can't be empty.")
	}
	if blank(req.Group) {
		return invalid("GroupId can't be empty.")
	}
	if req.InstanceID != nil && blank(*req.InstanceID) {
		return invalid("InstanceId can't be empty.")
	}
	if req.RackID != nil && blank(*req.RackID) {
		return invalid("RackId can't be empty.")
	}
	switch {
	case req.MemberEpoch == JoinEpoch:
		if req.RebalanceTimeoutMillis == -1 {
			return invalid("RebalanceTimeoutMs must be provided in first request.")
		}
		if req.Topics == nil || len(req.Topics) > 0 {
			return invalid("TopicPartitions must be empty when (re-)joining.")
		}
		if req.SubscribedTopicNames == nil && req.SubscribedTopicRegex == nil {
			return invalid("Either SubscribedTopicNames or SubscribedTopicRegex must be non-null when (re-)joining.")
		}
	case req.MemberEpoch == StaticLeaveEpoch:
		if req.InstanceID == nil {
			return invalid("InstanceId can't be null.")
		}
	case req.MemberEpoch < StaticLeaveEpoch:
		return invalid("MemberEpoch is invalid.")
	}
	if req.ServerAssignor != nil && !slices.Contains(c.cfg.Assignors, *req.ServerAssignor) {
		return grouperr.Errorf(kerr.UnsupportedAssignor, "ServerAssignor %s is not supported. Supported assignors: %s.",
			*req.ServerAssignor, strings.Join(c.cfg.Assignors, ", "))
	}
	return nil
}

// invalidRegex is INVALID_REGULAR_EXPRESSION with Kafka's message
// (throwIfRegularExpressionIsInvalid).
func invalidRegex(re string, err error) error {
	return grouperr.Errorf(kerr.InvalidRegularExpression, "SubscribedTopicRegex `%s` is not a valid regular expression: %v.", re, err)
}

// newMemberID returns a random id as Kafka's Uuid.randomUuid().toString()
// writes one: 16 bytes, URL-safe base64 without padding.
func newMemberID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand crashes the program instead)
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// heartbeatLocked is the regular heartbeat of GroupMetadataManager
// .consumerGroupHeartbeat. It computes everything first and changes the
// group only at the end, so that an error leaves the group as it was (as
// Kafka writes its records only for a successful heartbeat). The steps
// fill in one heartbeatPlan, in Kafka's order. changed reports whether
// the group changed in a way its records show (Kafka writes records for
// such a heartbeat only).
func (g *group) heartbeatLocked(req *HeartbeatRequest, md Metadata) (resp HeartbeatResponse, changed bool, err error) {
	hb, err := g.updatedMemberLocked(req)
	if err != nil {
		return HeartbeatResponse{}, false, err
	}
	if err := g.resolveRegexesLocked(hb, md); err != nil {
		return HeartbeatResponse{}, false, err
	}
	g.groupEpochLocked(hb, md)
	g.targetLocked(hb, md)
	if err := g.reconcileLocked(hb, md); err != nil {
		return HeartbeatResponse{}, false, err
	}
	changed = hb.old == nil || hb.replaced != nil || hb.bump || hb.newTarget != nil || !hb.reconciled.sameAs(hb.old)
	g.installLocked(hb)
	return g.heartbeatResponse(hb), changed, nil
}

// heartbeatPlan is what one heartbeat will change, computed step by step
// by heartbeatLocked before any of it is installed.
type heartbeatPlan struct {
	req *HeartbeatRequest
	// owned is what the member says it owns (nil: unchanged).
	owned Assignment
	// base is the member as it stands; old the installed version it
	// replaces (nil for a new member); replaced a static member's
	// previous incarnation that leaves the group for it.
	base, old, replaced *member
	// updated is base with what the request changes.
	updated                    *member
	namesChanged, regexChanged bool
	// skip lists the members whose subscriptions no longer count: the
	// member's installed version and the replaced one.
	skip []string

	// Regular expressions: the resolution to use, whether it is new
	// (refreshed, at now), and whether the member took one the group had
	// resolved already or dropped its own (Kafka's
	// REGEX_UPDATED_AND_RESOLVED).
	resolved      map[string][]string
	refreshed     bool
	regexResolved bool
	now           time.Time

	// The group epoch, bumped (with new topic metadata meta) when bump.
	epoch int32
	bump  bool
	meta  map[string]Topic

	// The member's target: a new target assignment of the whole group
	// (newTarget, nil when unchanged) or the current one.
	newTarget   map[string]Assignment
	targetEpoch int32
	target      Assignment

	// reconciled is updated moved towards its target.
	reconciled *member
}

// updatedMemberLocked checks the group's size, finds or creates the
// heartbeat's member and applies what the request changes to it.
func (g *group) updatedMemberLocked(req *HeartbeatRequest) (*heartbeatPlan, error) {
	cfg := &g.c.cfg
	if len(g.mu.members) >= cfg.MaxSize && (req.MemberID == "" || g.mu.members[req.MemberID] == nil) {
		return nil, grouperr.Errorf(kerr.GroupMaxSizeReached, "The consumer group has reached its maximum capacity of %d members.", cfg.MaxSize)
	}
	memberID := req.MemberID
	if memberID == "" {
		memberID = newMemberID()
	}
	hb := &heartbeatPlan{req: req}
	if req.Topics != nil {
		hb.owned = assignmentOf(req.Topics)
	}
	var err error
	hb.base, hb.old, hb.replaced, err = g.memberForHeartbeatLocked(req, memberID, hb.owned)
	if err != nil {
		return nil, err
	}

	updated := hb.base.clone()
	if req.InstanceID != nil {
		updated.instanceID = *req.InstanceID
	}
	if req.RackID != nil {
		updated.rackID = *req.RackID
	}
	if req.RebalanceTimeoutMillis != -1 {
		updated.rebalanceTimeout = time.Duration(req.RebalanceTimeoutMillis) * time.Millisecond
	}
	if req.ServerAssignor != nil {
		updated.serverAssignor = *req.ServerAssignor
	}
	if req.SubscribedTopicNames != nil {
		updated.topicNames = sortedNames(req.SubscribedTopicNames)
	}
	if req.SubscribedTopicRegex != nil {
		updated.regex = *req.SubscribedTopicRegex
	}
	updated.clientID, updated.clientHost = req.ClientID, req.ClientHost
	hb.updated = updated
	hb.namesChanged = !slices.Equal(hb.base.topicNames, updated.topicNames)
	hb.regexChanged = hb.base.regex != updated.regex

	hb.skip = []string{updated.id}
	if hb.replaced != nil {
		hb.skip = append(hb.skip, hb.replaced.id)
	}
	return hb, nil
}

// resolveRegexesLocked resolves the group's regular expressions
// (maybeUpdateRegularExpressions) here and now instead of by a background
// task: a new one at once, all of them again when the last resolution is
// older than regexRefreshMinInterval.
func (g *group) resolveRegexesLocked(hb *heartbeatPlan, md Metadata) error {
	updated := hb.updated
	hb.resolved = g.mu.resolved
	newRegex := hb.regexChanged && updated.regex != "" && g.mu.regexes[updated.regex] == 0
	if newRegex {
		if _, err := compileRegex(updated.regex); err != nil {
			return invalidRegex(updated.regex, err)
		}
	}
	hb.now = time.Now()
	var regexes map[string]bool
	if len(g.mu.regexes) > 0 || updated.regex != "" {
		regexes = g.subscribedRegexesLocked(hb.skip, updated)
	}
	if len(regexes) > 0 && (newRegex || hb.now.Sub(g.mu.lastRefresh) >= regexRefreshMinInterval) {
		hb.resolved = resolveRegexes(slices.Sorted(maps.Keys(regexes)), md)
		hb.refreshed = true
	}
	// Kafka's heartbeat bumps the group epoch for a regular expression
	// only when the group has it resolved already or the member drops
	// its own. A new one is resolved in the background, and its result
	// bumps the epoch only when the group's subscribed topics changed
	// (handleRegularExpressionsResult compares the metadata hash), as a
	// refresh's does: groupEpochLocked's metadata comparison is that.
	hb.regexResolved = hb.regexChanged && ((updated.regex != "" && !newRegex) || (updated.regex == "" && hb.base.regex != ""))
	return nil
}

// groupEpochLocked bumps the group epoch when the member's subscribed
// topic names changed (a new member's included), it took a regular
// expression the group had resolved or dropped its own, the group's
// preferred server assignor changed (hasPreferredServerAssignorChanged),
// or the subscribed topics changed: their metadata, or what regular
// expressions match.
func (g *group) groupEpochLocked(hb *heartbeatPlan, md Metadata) {
	hb.epoch = g.mu.epoch
	hb.bump = hb.namesChanged || hb.regexResolved
	if hb.updated.serverAssignor != hb.base.serverAssignor &&
		g.preferredAssignorLocked(hb.skip, hb.updated) != g.preferredAssignorLocked(nil, nil) {
		hb.bump = true
	}
	if hb.bump || hb.namesChanged || hb.regexChanged || hb.refreshed || hb.replaced != nil || !g.metadataCurrentLocked(md) {
		hb.meta = metadataOf(g.subscribedNamesLocked(hb.resolved, hb.skip, hb.updated), md)
		if !maps.Equal(hb.meta, g.mu.meta) {
			hb.bump = true
		}
	}
	if hb.bump {
		hb.epoch++
	}
}

// targetLocked computes a new target assignment when the group epoch is
// ahead of it, and picks the member's target.
func (g *group) targetLocked(hb *heartbeatPlan, md Metadata) {
	hb.targetEpoch = g.mu.assignmentEpoch
	if hb.epoch > g.mu.assignmentEpoch {
		removed := ""
		if hb.replaced != nil {
			removed = hb.replaced.id
		}
		hb.newTarget = g.computeTargetLocked(hb.updated, removed, hb.resolved, md)
		hb.targetEpoch = hb.epoch
		hb.target = hb.newTarget[hb.updated.id]
	} else {
		var ok bool
		if hb.target, ok = g.mu.target[hb.updated.id]; !ok && hb.replaced != nil {
			hb.target = g.mu.target[hb.replaced.id]
		}
	}
	if hb.target == nil {
		hb.target = Assignment{}
	}
}

// reconcileLocked moves the member towards its target (maybeReconcile).
func (g *group) reconcileLocked(hb *heartbeatPlan, md Metadata) error {
	subscriptionChanged := hb.namesChanged || hb.regexChanged
	hb.reconciled = hb.updated
	if subscriptionChanged || !hb.updated.reconciledTo(hb.targetEpoch) {
		r := reconciler{
			g: g, m: hb.updated, targetEpoch: hb.targetEpoch, target: hb.target,
			subscriptionChanged: subscriptionChanged,
			subscribed:          subscribedTopicIDs(hb.updated, hb.resolved, md, nil),
			owned:               hb.owned,
		}
		var err error
		if hb.reconciled, err = r.build(); err != nil {
			return err
		}
	}
	return nil
}

// installLocked changes the group as the plan says; nothing in it fails.
func (g *group) installLocked(hb *heartbeatPlan) {
	if hb.refreshed {
		g.mu.resolved = hb.resolved
		g.mu.lastRefresh = hb.now
	}
	if hb.bump {
		g.mu.epoch = hb.epoch
		g.mu.meta = hb.meta
	}
	if hb.newTarget != nil {
		g.mu.target = hb.newTarget
		g.mu.assignmentEpoch = hb.epoch
	} else if hb.replaced != nil {
		g.mu.target[hb.updated.id] = hb.target
	}
	if hb.replaced != nil {
		g.removeMemberLocked(hb.replaced)
	}
	reconciled := hb.reconciled
	g.updateMemberLocked(hb.old, reconciled)
	if !reconciled.sameAs(hb.updated) {
		if reconciled.state == MemberUnrevokedPartitions {
			g.scheduleRebalanceTimerLocked(reconciled)
		} else {
			g.stopRebalanceTimerLocked(reconciled)
		}
	}
	g.scheduleSessionTimerLocked(reconciled)
	g.updateStateLocked()
}

// heartbeatResponse answers the heartbeat. The assignment goes out on a
// join, to a full request (one with every field that a join needs, which
// a member sends after an error) and when it changed.
func (g *group) heartbeatResponse(hb *heartbeatPlan) HeartbeatResponse {
	req, reconciled := hb.req, hb.reconciled
	resp := HeartbeatResponse{
		MemberID:          reconciled.id,
		MemberEpoch:       reconciled.epoch,
		HeartbeatInterval: g.c.heartbeatInterval(g.id),
	}
	full := req.RebalanceTimeoutMillis != -1 && (req.SubscribedTopicNames != nil || req.SubscribedTopicRegex != nil) && req.Topics != nil
	if req.MemberEpoch == JoinEpoch || full || !hb.base.assigned.equal(reconciled.assigned) {
		resp.HasAssignment = true
		resp.Assignment = reconciled.assigned.list()
	}
	return resp
}

// memberForHeartbeatLocked finds or creates the heartbeat's member
// (getOrMaybeSubscribeDynamicConsumerGroupMember and
// getOrMaybeSubscribeStaticConsumerGroupMember). base is the member as it
// stands, to apply the request to; old is the installed version it
// replaces (nil for a new member); replaced is a static member's previous
// incarnation, under another member id, that leaves the group for it.
func (g *group) memberForHeartbeatLocked(req *HeartbeatRequest, memberID string, owned Assignment) (base, old, replaced *member, err error) {
	joining := req.MemberEpoch == JoinEpoch
	if req.InstanceID == nil {
		old = g.mu.members[memberID]
		if old == nil {
			if !joining {
				return nil, nil, nil, grouperr.Errorf(kerr.UnknownMemberID, "Member %s is not a member of group %s.", memberID, g.id)
			}
			return newMember(memberID), nil, nil, nil
		}
		if err := validateEpoch(old, req.MemberEpoch, owned); err != nil {
			return nil, nil, nil, err
		}
		return old, old, nil, nil
	}
	instanceID := *req.InstanceID
	existing := g.staticMemberLocked(instanceID)
	if !joining {
		switch {
		case existing == nil:
			return nil, nil, nil, grouperr.Errorf(kerr.UnknownMemberID, "Instance id %s is unknown.", instanceID)
		case existing.id != memberID:
			return nil, nil, nil, grouperr.Errorf(kerr.FencedInstanceID, "Static member %s with instance id %s was fenced by member %s.", memberID, instanceID, existing.id)
		}
		if err := validateEpoch(existing, req.MemberEpoch, owned); err != nil {
			return nil, nil, nil, err
		}
		return existing, existing, nil, nil
	}
	if existing == nil {
		// A new static member (or a dynamic member of that id becoming
		// static).
		if old = g.mu.members[memberID]; old != nil {
			return old, old, nil, nil
		}
		return newMember(memberID), nil, nil, nil
	}
	// The instance rejoins: allowed only after its previous incarnation
	// left with epoch -2. The new one takes over its assignment at epoch
	// 0 and reconciles from there, so it gets its partitions back without
	// a rebalance.
	if existing.epoch != StaticLeaveEpoch {
		return nil, nil, nil, grouperr.Errorf(kerr.UnreleasedInstanceID,
			"Static member %s with instance id %s cannot join the group because the instance id is owned by %s member.", memberID, instanceID, existing.id)
	}
	base = existing.clone()
	base.epoch, base.previousEpoch = 0, 0
	if existing.id == memberID {
		return base, existing, nil, nil
	}
	base.id = memberID
	base.timers = &memberTimers{}
	if other := g.mu.members[memberID]; other != nil {
		// A dynamic member already uses the new id: it is replaced too.
		return base, other, existing, nil
	}
	return base, nil, existing, nil
}

// validateEpoch is throwIfConsumerGroupMemberEpochIsInvalid, with
// KAFKA-19233: epoch 0 rejoins the member in place (a member that was
// fenced rejoins with its member id and epoch 0); a greater epoch than
// the member's is FENCED_MEMBER_EPOCH, and so is a smaller one, except the
// previous epoch with owned partitions within the member's assignment (the
// response that moved it on was lost).
func validateEpoch(m *member, received int32, owned Assignment) error {
	switch {
	case received == JoinEpoch:
		return nil
	case received > m.epoch:
		return grouperr.Errorf(kerr.FencedMemberEpoch, "The consumer group member has a greater member epoch (%d) than the one known by the group coordinator (%d). The member must abandon all its partitions and rejoin.", received, m.epoch)
	case received < m.epoch && (received != m.previousEpoch || !ownedWithin(owned, m.assigned)):
		return grouperr.Errorf(kerr.FencedMemberEpoch, "The consumer group member has a smaller member epoch (%d) than the one known by the group coordinator (%d). The member must abandon all its partitions and rejoin.", received, m.epoch)
	}
	return nil
}

// ownedWithin reports whether every owned partition is in a; not knowing
// what the member owns (nil) is not within (isSubset).
func ownedWithin(owned, a Assignment) bool {
	if owned == nil {
		return false
	}
	for id, ps := range owned {
		for _, p := range ps {
			if !a.has(id, p) {
				return false
			}
		}
	}
	return true
}
