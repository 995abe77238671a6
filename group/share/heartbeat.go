package share

import (
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// HeartbeatRequest is a ShareGroupHeartbeat (KIP-932), independent of the
// wire version.
type HeartbeatRequest struct {
	Group, MemberID string
	// MemberEpoch is 0 to join, LeaveEpoch to leave, else the member's
	// current epoch.
	MemberEpoch int32
	// Rack is nil when unchanged.
	Rack *string
	// SubscribedTopicNames is nil when unchanged.
	SubscribedTopicNames []string
	ClientID, ClientHost string
}

// HeartbeatResponse is the answer; Err is a Kafka error (then only
// ErrMessage means anything).
type HeartbeatResponse struct {
	Err        *kerr.Error
	ErrMessage string
	MemberID   string
	// MemberEpoch is the member's epoch, LeaveEpoch after leaving.
	MemberEpoch       int32
	HeartbeatInterval time.Duration
	// HasAssignment says Assignment is sent: on joining and whenever it
	// changed since the member last heard it.
	HasAssignment bool
	Assignment    []TopicPartitions
	// Changed says the heartbeat changed what the group's records hold:
	// the caller records the group (Record) and answers once that is
	// durable, as Kafka does.
	Changed bool
}

// Heartbeat handles a ShareGroupHeartbeat, as Kafka's
// GroupMetadataManager.shareGroupHeartbeat: it joins, keeps or removes a
// member, recomputes the assignment when membership, subscriptions or the
// subscribed topics changed, and answers with the member's epoch and,
// when it changed, its assignment. Share groups need no revocation: a
// partition may move at once, since records are locked one by one, not
// owned by partition; so a member reaches the assignment epoch at its
// next heartbeat.
func (c *Coordinator) Heartbeat(req HeartbeatRequest, md Metadata) HeartbeatResponse {
	if resp, ok := validateHeartbeat(&req); !ok {
		return resp
	}
	now := c.now()
	c.mu.Lock()
	g := c.mu.groups[req.Group]
	if req.MemberEpoch == LeaveEpoch {
		left := g != nil && g.members[req.MemberID] != nil
		if left {
			c.removeMemberLocked(g, req.MemberID)
			c.assignLocked(g, md)
		}
		c.mu.Unlock()
		if left {
			c.releaseMember(req.Group, req.MemberID)
		}
		return HeartbeatResponse{MemberID: req.MemberID, MemberEpoch: LeaveEpoch, Changed: left}
	}
	if g == nil {
		if req.MemberEpoch != 0 {
			// Kafka looks the group up without creating it first.
			c.mu.Unlock()
			return HeartbeatResponse{Err: kerr.GroupIDNotFound, ErrMessage: "Group " + req.Group + " not found."}
		}
		if c.taken(req.Group) {
			c.mu.Unlock()
			return HeartbeatResponse{Err: kerr.GroupIDNotFound, ErrMessage: "Group " + req.Group + " is not a share group."}
		}
		g = newGroup(req.Group)
		c.mu.groups[req.Group] = g
	}
	changes := g.changes
	m := g.members[req.MemberID]
	joined := m == nil
	switch {
	case m == nil && req.MemberEpoch != 0:
		c.mu.Unlock()
		return HeartbeatResponse{Err: kerr.UnknownMemberID, ErrMessage: "Member " + req.MemberID + " is not a member of group " + req.Group + "."}
	case m == nil && len(g.members) >= c.cfg.MaxSize:
		c.mu.Unlock()
		return HeartbeatResponse{Err: kerr.GroupMaxSizeReached, ErrMessage: "The share group has reached its maximum capacity."}
	case m == nil:
		m = &member{id: req.MemberID}
		g.members[req.MemberID] = m
		g.epoch++
	case req.MemberEpoch > m.epoch:
		c.mu.Unlock()
		return HeartbeatResponse{Err: kerr.FencedMemberEpoch, ErrMessage: "The share group member has a greater member epoch than expected."}
	case req.MemberEpoch != 0 && req.MemberEpoch < m.epoch && req.MemberEpoch != m.previousEpoch:
		// The previous epoch is accepted: the answer that bumped it
		// may have been lost (Kafka's
		// throwIfShareGroupMemberEpochIsInvalid).
		c.mu.Unlock()
		return HeartbeatResponse{Err: kerr.FencedMemberEpoch, ErrMessage: "The share group member has a smaller member epoch than expected."}
	}
	if m.clientID != req.ClientID || m.clientHost != req.ClientHost {
		m.clientID, m.clientHost = req.ClientID, req.ClientHost
		g.changes++
	}
	if req.Rack != nil && m.rack != *req.Rack {
		m.rack = *req.Rack
		g.changes++
	}
	if req.SubscribedTopicNames != nil {
		subs := slices.Clone(req.SubscribedTopicNames)
		slices.Sort(subs)
		subs = slices.Compact(subs)
		if !slices.Equal(subs, m.subscribed) {
			m.subscribed = subs
			g.changes++
			if !joined { // a join bumped the epoch already
				g.epoch++
			}
		}
	}
	c.assignLocked(g, md)
	// The member moves to the assignment's epoch at its own heartbeat,
	// as Kafka's members do; the others stay at theirs until they
	// heartbeat, so none is fenced for a bump it has not heard of.
	if m.epoch != g.assignmentEpoch {
		m.previousEpoch, m.epoch = m.epoch, g.assignmentEpoch
		g.changes++
	}
	interval, timeout := c.intervals(req.Group)
	m.expires = now.Add(timeout)
	resp := HeartbeatResponse{MemberID: m.id, MemberEpoch: m.epoch, HeartbeatInterval: interval, Changed: g.changes != changes || joined}
	if !m.sent || req.MemberEpoch == 0 || req.MemberEpoch != m.epoch || req.SubscribedTopicNames != nil {
		resp.HasAssignment, resp.Assignment, m.sent = true, m.assignment, true
	}
	c.mu.Unlock()
	return resp
}

// validateHeartbeat checks the request as Kafka's
// throwIfShareGroupHeartbeatRequestIsInvalid.
func validateHeartbeat(req *HeartbeatRequest) (HeartbeatResponse, bool) {
	bad := func(msg string) (HeartbeatResponse, bool) {
		return HeartbeatResponse{Err: kerr.InvalidRequest, ErrMessage: msg}, false
	}
	switch {
	case req.Group == "":
		return bad("GroupId can't be empty.")
	case req.MemberID == "":
		return bad("MemberId can't be empty.")
	case req.MemberEpoch < LeaveEpoch:
		return bad("MemberEpoch is invalid.")
	case req.MemberEpoch == 0 && len(req.SubscribedTopicNames) == 0:
		return bad("SubscribedTopicNames must be set in first request.")
	case req.Rack != nil && *req.Rack == "":
		return bad("RackId can't be empty.")
	}
	return HeartbeatResponse{}, true
}

// intervals are the heartbeat interval and session timeout of a group.
func (c *Coordinator) intervals(groupID string) (interval, timeout time.Duration) {
	gc := c.groupConfig(groupID)
	interval, timeout = c.cfg.HeartbeatInterval, c.cfg.SessionTimeout
	if gc.HeartbeatInterval > 0 {
		interval = gc.HeartbeatInterval
	}
	if gc.SessionTimeout > 0 {
		timeout = gc.SessionTimeout
	}
	return interval, timeout
}

// assignLocked recomputes the assignment when the group epoch moved past
// it or the subscribed topics changed (created, deleted, more
// partitions); members reach its epoch at their own heartbeats.
func (c *Coordinator) assignLocked(g *group, md Metadata) {
	topics := g.subscribedTopics(md)
	if g.assignmentEpoch == g.epoch && slices.Equal(topics, g.topics) {
		return
	}
	if !slices.Equal(topics, g.topics) && g.assignmentEpoch == g.epoch {
		g.epoch++
	}
	g.topics = topics
	g.changes++
	next := assign(topics, g.members)
	for id, m := range g.members {
		a := next[id]
		sortTopicPartitions(a)
		if !sameAssignment(a, m.assignment) {
			m.assignment, m.sent = a, false
		}
	}
	g.assignmentEpoch = g.epoch
}

// Description describes one share group (ShareGroupDescribe).
type Description struct {
	Group, State    string
	GroupEpoch      int32
	AssignmentEpoch int32
	Members         []MemberDescription
}

// MemberDescription describes one member.
type MemberDescription struct {
	MemberID, Rack, ClientID, ClientHost string
	MemberEpoch                          int32
	SubscribedTopicNames                 []string
	Assignment                           []TopicPartitions
}

// Describe describes a share group; false when there is none of that id.
func (c *Coordinator) Describe(groupID string) (Description, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	g := c.mu.groups[groupID]
	if g == nil {
		return Description{}, false
	}
	d := Description{Group: g.id, State: g.state(), GroupEpoch: g.epoch, AssignmentEpoch: g.assignmentEpoch}
	ids := make([]string, 0, len(g.members))
	for id := range g.members {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		m := g.members[id]
		d.Members = append(d.Members, MemberDescription{MemberID: m.id, Rack: m.rack, ClientID: m.clientID, ClientHost: m.clientHost,
			MemberEpoch: m.epoch, SubscribedTopicNames: slices.Clone(m.subscribed), Assignment: m.assignment})
	}
	return d, true
}
