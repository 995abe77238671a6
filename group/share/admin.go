package share

import "github.com/twmb/franz-go/pkg/kerr"

// The share-group offsets admin operations (KIP-932's
// DescribeShareGroupOffsets, AlterShareGroupOffsets and
// DeleteShareGroupOffsets), as Kafka 4.2's GroupCoordinatorService.

// PartitionOffsets describes one share-partition of a group.
type PartitionOffsets struct {
	TopicIDPartition
	// StartOffset is SPSO; Done counts the acknowledged and archived
	// records of the window, which do not count as lag.
	StartOffset int64
	Done        int
}

// Offsets lists the share-partitions of a group; ok is false when there is
// no such share group.
func (c *Coordinator) Offsets(groupID string) (out []PartitionOffsets, ok bool) {
	c.mu.Lock()
	if c.mu.groups[groupID] == nil {
		c.mu.Unlock()
		return nil, false
	}
	parts := map[TopicIDPartition]*Partition{}
	for k, p := range c.mu.parts {
		if k.Group == groupID {
			parts[TopicIDPartition{k.TopicID, k.Partition}] = p
		}
	}
	c.mu.Unlock()
	now := c.now()
	for tp, p := range parts {
		_, _, done := p.Counts(now)
		out = append(out, PartitionOffsets{TopicIDPartition: tp, StartOffset: p.StartOffset(), Done: done})
	}
	return out, true
}

// AlterOffsets sets the start offset of share-partitions of an empty group
// (NON_EMPTY_GROUP while it has members), creating the group when there is
// none, as Kafka does to let an administrator prepare one: each partition
// starts over at its offset with a new state epoch. done hears when the
// states are durable.
func (c *Coordinator) AlterOffsets(groupID string, offsets map[TopicIDPartition]int64, done func(error)) *kerr.Error {
	c.mu.Lock()
	created := false
	g := c.mu.groups[groupID]
	if g != nil && len(g.members) > 0 {
		c.mu.Unlock()
		return kerr.NonEmptyGroup
	}
	if g == nil {
		if c.taken(groupID) {
			c.mu.Unlock()
			return kerr.GroupIDNotFound
		}
		c.mu.groups[groupID] = newGroup(groupID)
		created = true
	}
	keys := make([]Key, 0, len(offsets))
	for tp, off := range offsets {
		k := Key{Group: groupID, TopicID: tp.TopicID, Partition: tp.Partition}
		if p := c.mu.parts[k]; p != nil {
			p.Reset(off)
		} else {
			c.mu.parts[k] = newPartition(off, 0, c.cfg.PartitionMaxRecordLocks, c.cfg.DeliveryCountLimit)
		}
		keys = append(keys, k)
	}
	c.mu.Unlock()
	if created {
		// The new group is stored with its states, as Kafka writes
		// its metadata record.
		both := joinDone(2, done)
		c.record(groupID, both)
		c.Persist(keys, both)
		return nil
	}
	c.Persist(keys, done)
	return nil
}

// DeleteOffsets deletes the share-partition states of the given topics of
// an empty group (NON_EMPTY_GROUP while it has members,
// GROUP_ID_NOT_FOUND without the group); a later fetch starts them over
// by share.auto.offset.reset. done hears when the deletion is durable.
func (c *Coordinator) DeleteOffsets(groupID string, topics []TopicID, done func(error)) *kerr.Error {
	c.mu.Lock()
	g := c.mu.groups[groupID]
	switch {
	case g == nil:
		c.mu.Unlock()
		return kerr.GroupIDNotFound
	case len(g.members) > 0:
		c.mu.Unlock()
		return kerr.NonEmptyGroup
	}
	var keys []Key
	for k := range c.mu.parts {
		for _, id := range topics {
			if k.Group == groupID && k.TopicID == id {
				keys = append(keys, k)
				delete(c.mu.parts, k)
			}
		}
	}
	c.mu.Unlock()
	c.deleteStates(keys, done)
	return nil
}

// DeleteTopic drops every group's share-partition states of a deleted
// topic, as Kafka's share coordinator does when a topic goes, so that
// they neither linger nor apply to a new topic of the same name (which
// has a new id anyway). done hears when the tombstones are durable.
func (c *Coordinator) DeleteTopic(id TopicID, done func(error)) {
	c.mu.Lock()
	var keys []Key
	for k := range c.mu.parts {
		if k.TopicID == id {
			keys = append(keys, k)
			delete(c.mu.parts, k)
		}
	}
	c.mu.Unlock()
	c.deleteStates(keys, done)
}
