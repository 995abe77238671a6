package group

// Restore recreates, at start-up, a group known from stored offsets or
// group metadata: Empty, with its protocol type and last generation, so
// that ListGroups shows it, a stale member's commit gets
// ILLEGAL_GENERATION or UNKNOWN_MEMBER_ID instead of passing for a
// first-generation one, and the next rebalance continues the count.
// Members do not survive a restart (Kafka keeps them); they rejoin when
// their heartbeat is refused. A group that already exists is left alone.
func (c *Coordinator) Restore(groupID, protocolType string, generation int32) {
	if !c.enter() {
		return
	}
	defer c.wg.Done()
	g, err := c.lockGroup(groupID, true)
	if err != nil {
		return // a consumer group holds the id
	}
	defer g.mu.Unlock()
	if g.mu.state == Empty && g.mu.generation == 0 && g.mu.protocolType == "" {
		g.mu.protocolType = protocolType
		g.mu.generation = generation
	}
}
