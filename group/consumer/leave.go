package consumer

import (
	"github.com/kbroker/kbroker/group/grouperr"
	"github.com/twmb/franz-go/pkg/kerr"
)

// leave handles a heartbeat with member epoch -1 or -2
// (consumerGroupLeave): a dynamic member, or a static member with -1,
// leaves for good and the group rebalances; a static member with -2 leaves
// for now, keeping its partitions until its session times out or its
// instance id rejoins. The answer echoes the member id and epoch.
func (c *Coordinator) leave(req *HeartbeatRequest) HeartbeatResponse {
	g, _, err := c.lockGroup(req.Group, false)
	if err != nil {
		return heartbeatError(err)
	}
	resp := g.leaveLocked(req)
	g.mu.Unlock()
	if resp.Err == nil {
		c.changed(req.Group)
	}
	return resp
}

// leaveLocked is leave once the group is found.
func (g *group) leaveLocked(req *HeartbeatRequest) HeartbeatResponse {
	resp := HeartbeatResponse{MemberID: req.MemberID, MemberEpoch: req.MemberEpoch}
	if req.InstanceID == nil {
		m := g.mu.members[req.MemberID]
		if m == nil {
			return heartbeatError(grouperr.Errorf(kerr.UnknownMemberID, "Member %s is not a member of group %s.", req.MemberID, g.id))
		}
		g.fenceLocked(m)
		return resp
	}
	instanceID := *req.InstanceID
	m := g.staticMemberLocked(instanceID)
	switch {
	case m == nil:
		return heartbeatError(grouperr.Errorf(kerr.UnknownMemberID, "Instance id %s is unknown.", instanceID))
	case m.id != req.MemberID:
		return heartbeatError(grouperr.Errorf(kerr.FencedInstanceID, "Static member %s with instance id %s was fenced by member %s.", req.MemberID, instanceID, m.id))
	}
	if req.MemberEpoch == StaticLeaveEpoch {
		// consumerGroupStaticMemberGroupLeave: epoch -2, nothing pending
		// revocation; the session timer runs on.
		left := m.clone()
		left.epoch = StaticLeaveEpoch
		left.pendingRevocation = Assignment{}
		g.updateMemberLocked(m, left)
		g.updateStateLocked()
		resp.MemberID = m.id
		return resp
	}
	g.fenceLocked(m)
	return resp
}

// fenceLocked removes a member from the group, which bumps the group epoch
// so that the others rebalance without it (consumerGroupFenceMember): on a
// leave, a session timeout or a rebalance timeout. Its partitions are free
// at once. A group left without members has its assignment epoch caught
// up (KAFKA-20442).
func (g *group) fenceLocked(m *member) {
	g.removeMemberLocked(m)
	g.mu.epoch++
	// The subscribed topics without the member, with the metadata seen at
	// the last bump; a change since shows at the next heartbeat.
	names := g.subscribedNamesLocked(g.mu.resolved, nil, nil)
	for n := range g.mu.meta {
		if !names[n] {
			delete(g.mu.meta, n)
		}
	}
	if len(g.mu.members) == 0 {
		g.mu.assignmentEpoch = g.mu.epoch
		clear(g.mu.target)
	}
	g.updateStateLocked()
}
