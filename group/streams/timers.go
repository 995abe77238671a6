package streams

import (
	"strconv"
	"time"
)

func formatInt(i int64) string { return strconv.FormatInt(i, 10) }

// scheduleSessionLocked (re)starts a member's session timer: when it
// fires the member is fenced (scheduleStreamsGroupSessionTimeout).
func (c *Coordinator) scheduleSessionLocked(g *group, m *member, d time.Duration) {
	c.stopSessionLocked(m)
	seq := m.sessionSeq
	c.wg.Add(1)
	m.session = time.AfterFunc(d, func() {
		defer c.wg.Done()
		c.mu.Lock()
		if c.closed || c.groups[g.id] != g || g.members[m.id] != m || m.sessionSeq != seq {
			c.mu.Unlock()
			return
		}
		c.removeLocked(g, m)
		c.mu.Unlock()
		c.changed(g.id)
	})
}

func (c *Coordinator) stopSessionLocked(m *member) {
	m.sessionSeq++
	if m.session != nil && m.session.Stop() {
		c.wg.Done()
	}
	m.session = nil
}

// scheduleRebalanceLocked starts the timer of a member that must revoke
// tasks: still at that epoch when it fires, the member is fenced
// (scheduleStreamsGroupRebalanceTimeout).
func (c *Coordinator) scheduleRebalanceLocked(g *group, m *member) {
	c.stopRebalanceLocked(m)
	seq, epoch := m.rebalanceSeq, m.epoch
	c.wg.Add(1)
	m.rebalance = time.AfterFunc(max(m.rebalanceTimeout, 0), func() {
		defer c.wg.Done()
		c.mu.Lock()
		if c.closed || c.groups[g.id] != g || g.members[m.id] != m || m.rebalanceSeq != seq || m.epoch != epoch || m.state != MemberUnrevokedTasks {
			c.mu.Unlock()
			return
		}
		c.removeLocked(g, m)
		c.mu.Unlock()
		c.changed(g.id)
	})
}

func (c *Coordinator) stopRebalanceLocked(m *member) {
	m.rebalanceSeq++
	if m.rebalance != nil && m.rebalance.Stop() {
		c.wg.Done()
	}
	m.rebalance = nil
}

func (c *Coordinator) stopTimersLocked(m *member) {
	c.stopSessionLocked(m)
	c.stopRebalanceLocked(m)
}

// scheduleDelayEndLocked ends a new group's initial rebalance delay after
// d and computes the target assignment at the group epoch its members
// reached meanwhile, as Kafka's computeDelayedTargetAssignment does (an
// empty group waits for its next member).
func (c *Coordinator) scheduleDelayEndLocked(g *group, d time.Duration) {
	c.wg.Add(1)
	t := time.AfterFunc(d, func() {
		defer c.wg.Done()
		c.mu.Lock()
		if c.closed || c.groups[g.id] != g || !g.delayed {
			c.mu.Unlock()
			return
		}
		g.delayed = false
		g.delayTimer = nil
		if len(g.members) == 0 || g.epoch <= g.targetEpoch {
			c.mu.Unlock()
			return
		}
		g.computeTarget(c.groupConfig(g.id).NumStandbyReplicas)
		c.mu.Unlock()
		c.changed(g.id)
	})
	g.delayTimer = t
}

// stopDelayLocked stops a group's delay timer (Close, deletion).
func (c *Coordinator) stopDelayLocked(g *group) {
	if g.delayTimer != nil && g.delayTimer.Stop() {
		c.wg.Done()
	}
	g.delayTimer = nil
}
