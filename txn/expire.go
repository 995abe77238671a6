package txn

import (
	"go.uber.org/zap"
)

// maxTombstones bounds the records of one tombstone batch, so that a mass
// expiry stays well within the topic's max.message.bytes (Kafka fills
// batches up to it).
const maxTombstones = 1000

// expireIDs removes the transactional ids that had no transition for
// Config.IDExpiration and have no transaction open or completing (Kafka's
// removeExpiredTransactionalIds): each gets a tombstone, and leaves memory
// once it is durable. Meanwhile it is Dead in flight, and its requests get
// CONCURRENT_TRANSACTIONS. An id that never reached the log (its first
// InitProducerId write failed) just leaves memory.
func (c *Coordinator) expireIDs() {
	now := c.cfg.Now().UnixMilli()
	limit := now - c.cfg.IDExpiration.Milliseconds()
	c.mu.Lock()
	if c.mu.closed {
		c.mu.Unlock()
		return
	}
	byPart := map[int][]rec{}
	for id, t := range c.mu.txns {
		if t.pending != noState || !t.state.expirable() || t.updateMs > limit {
			continue
		}
		if !t.written {
			delete(c.mu.txns, id)
			continue
		}
		t.pending = Dead
		part := c.partitionOf(id)
		byPart[part] = append(byPart[part], rec{id: id, tombstone: true})
	}
	c.mu.Unlock()
	for part, recs := range byPart {
		for len(recs) > 0 {
			n := min(len(recs), maxTombstones)
			chunk := recs[:n:n]
			recs = recs[n:]
			c.lg.Info("txn: expiring transactional ids", zap.Int("partition", part), zap.Int("ids", len(chunk)))
			c.write(part, chunk, func(err error) {
				if err == nil {
					return // applied: the ids are gone
				}
				c.lg.Warn("txn: expiring transactional ids failed", zap.Int("ids", len(chunk)), zap.Error(err))
				for _, r := range chunk {
					c.resetPending(r.id, Dead)
				}
			})
		}
	}
}
