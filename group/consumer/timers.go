package consumer

// scheduleSessionTimerLocked (re)starts the member's session timer: when it
// fires the member is fenced (scheduleConsumerGroupSessionTimeout).
func (g *group) scheduleSessionTimerLocked(m *member) {
	t := m.timers
	g.stopSessionTimerLocked(m)
	seq := t.sessionSeq
	id := m.id
	t.session = g.c.afterFunc(g.c.sessionTimeout(g.id), func() {
		g.mu.Lock()
		cur := g.mu.members[id]
		if g.mu.deleted || cur == nil || cur.timers != t || t.sessionSeq != seq {
			g.mu.Unlock()
			return
		}
		g.fenceLocked(cur)
		g.mu.Unlock()
		g.c.changed(g.id)
	})
}

func (g *group) stopSessionTimerLocked(m *member) {
	t := m.timers
	t.sessionSeq++
	if t.session != nil {
		t.session.Stop()
		t.session = nil
	}
}

// scheduleRebalanceTimerLocked starts the member's rebalance timer as it
// enters UNREVOKED_PARTITIONS at its epoch: a member still at that epoch
// when the timer fires did not revoke in time and is fenced
// (scheduleConsumerGroupRebalanceTimeout).
func (g *group) scheduleRebalanceTimerLocked(m *member) {
	t := m.timers
	g.stopRebalanceTimerLocked(m)
	seq := t.rebalanceSeq
	id, epoch := m.id, m.epoch
	d := m.rebalanceTimeout
	if d < 0 {
		d = 0
	}
	t.rebalance = g.c.afterFunc(d, func() {
		g.mu.Lock()
		cur := g.mu.members[id]
		if g.mu.deleted || cur == nil || cur.timers != t || t.rebalanceSeq != seq || cur.epoch != epoch {
			g.mu.Unlock()
			return
		}
		g.fenceLocked(cur)
		g.mu.Unlock()
		g.c.changed(g.id)
	})
}

func (g *group) stopRebalanceTimerLocked(m *member) {
	t := m.timers
	t.rebalanceSeq++
	if t.rebalance != nil {
		t.rebalance.Stop()
		t.rebalance = nil
	}
}

// scheduleEmptyCheckLocked starts the timer that deletes the group if it
// is still Empty and has no committed offsets after
// Config.EmptyGroupCheckInterval (Kafka's periodic cleanupGroupMetadata).
func (g *group) scheduleEmptyCheckLocked() {
	g.stopEmptyCheckLocked()
	seq := g.mu.emptySeq
	g.mu.emptyTimer = g.c.afterFunc(g.c.cfg.EmptyGroupCheckInterval, func() {
		c := g.c
		deleted := func() bool {
			c.mu.Lock()
			defer c.mu.Unlock()
			g.mu.Lock()
			defer g.mu.Unlock()
			if g.mu.deleted || g.mu.emptySeq != seq || g.mu.state != Empty {
				return false
			}
			if probe := c.hasOffsets.Load(); probe != nil && (*probe)(g.id) {
				return false // it goes when its offsets expire
			}
			g.deleteLocked()
			return true
		}()
		if deleted {
			c.changed(g.id)
		}
	})
}

func (g *group) stopEmptyCheckLocked() {
	g.mu.emptySeq++
	if g.mu.emptyTimer != nil {
		g.mu.emptyTimer.Stop()
		g.mu.emptyTimer = nil
	}
}

// stopTimersLocked stops every timer of the group.
func (g *group) stopTimersLocked() {
	for _, m := range g.mu.members {
		g.stopSessionTimerLocked(m)
		g.stopRebalanceTimerLocked(m)
	}
	g.stopEmptyCheckLocked()
}
