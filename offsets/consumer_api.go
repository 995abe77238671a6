package offsets

import (
	"bytes"
	"maps"
	"slices"

	"go.uber.org/zap"
)

// RecordConsumerGroup writes the records of a consumer group (KIP-848)
// that changed since the group was last recorded, as Kafka writes them
// with each heartbeat that changes the group: cg is the group as it is
// now, or nil when it was deleted (every record of it gets a tombstone).
// A member no longer in cg gets tombstones for its records. It does not
// wait for durability; calls for one group must come in the order of the
// states they describe (the log keeps the append order), which the
// caller ensures by holding one lock across taking the state and this
// call.
func (s *Store) RecordConsumerGroup(group string, cg *ConsumerGroup) {
	var now map[string][]byte
	if cg != nil {
		now = consumerGroupRecords(cg)
	}
	s.mu.Lock()
	base, cached := s.mu.cgWritten[group]
	if !cached {
		if g := s.mu.groups[group]; g != nil {
			base = g.cg
		}
	}
	var recs []rec
	for _, k := range slices.Sorted(maps.Keys(now)) {
		if old, ok := base[k]; cached && ok && bytes.Equal(old, now[k]) {
			continue
		}
		recs = append(recs, rec{group: group, isCG: true, cgKey: k, cgValue: now[k]})
	}
	for _, k := range slices.Sorted(maps.Keys(base)) {
		if _, ok := now[k]; !ok {
			recs = append(recs, rec{group: group, isCG: true, cgKey: k, tombstone: true})
		}
	}
	if cg == nil {
		delete(s.mu.cgWritten, group)
	} else {
		s.mu.cgWritten[group] = now
	}
	s.mu.Unlock()
	s.write(group, recs, func(err error) {
		if err == nil {
			return
		}
		// Outcome unknown: the next change of the group is written
		// whole, with tombstones for what applied and is gone.
		s.mu.Lock()
		delete(s.mu.cgWritten, group)
		s.mu.Unlock()
		s.lg.Warn("consumer group records not written", zap.String("group", group), zap.Error(err))
	})
}

// consumerGroupLocked decodes the group's consumer-group records, nil when
// it has none.
func (s *Store) consumerGroupLocked(group string, g *groupState) *ConsumerGroup {
	if len(g.cg) == 0 {
		return nil
	}
	cg, err := consumerGroupOf(group, g.cg)
	if err != nil {
		// Each record was checked when read: this is a group written
		// partially (a member without its metadata), kept as far as
		// it goes.
		s.lg.Warn("consumer group records incomplete", zap.String("group", group), zap.Error(err))
	}
	return cg
}
