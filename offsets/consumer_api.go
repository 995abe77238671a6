package offsets

import (
	"bytes"
	"encoding/binary"
	"maps"
	"slices"

	"go.uber.org/zap"
)

// RecordConsumerGroup writes the records of a consumer group (KIP-848)
// that changed since the group was last recorded, as Kafka writes them
// with each heartbeat that changes the group: cg is the group as it is
// now, or nil when it was deleted (every record of it gets a tombstone).
// A member no longer in cg gets tombstones for its records. done (if not
// nil) hears when the records are durable, or why not: Kafka answers the
// heartbeat only then. Calls for one group must come in the order of the
// states they describe (the log keeps the append order), which the
// caller ensures by holding one lock across taking the state and this
// call.
func (s *Store) RecordConsumerGroup(group string, cg *ConsumerGroup, done func(error)) {
	var now map[string][]byte
	if cg != nil {
		now = consumerGroupRecords(cg)
	}
	s.recordTyped(group, now, isConsumerType, "consumer", done)
}

// RecordShareGroup is RecordConsumerGroup for a share group (KIP-932)'s
// records (share_records.go): sg is the group now, nil once deleted.
func (s *Store) RecordShareGroup(group string, sg *ShareGroup, done func(error)) {
	var now map[string][]byte
	if sg != nil {
		now = shareGroupRecords(sg)
	}
	s.recordTyped(group, now, isShareType, "share", done)
}

// recordTyped writes the records of now, of the record types mine, that
// differ from what was last written of those types for group, and
// tombstones for those of the types mine that now lacks.
func (s *Store) recordTyped(group string, now map[string][]byte, mine func(typ int16) bool, kind string, done func(error)) {
	s.mu.Lock()
	written, cached := s.mu.cgWritten[group]
	if !cached {
		if g := s.mu.groups[group]; g != nil {
			written = g.cg
		}
	}
	base := ofTypes(written, mine)
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
	next := make(map[string][]byte, len(written)+len(now))
	maps.Copy(next, written)
	maps.DeleteFunc(next, func(k string, _ []byte) bool { return mine(keyType(k)) })
	maps.Copy(next, now)
	if len(next) == 0 {
		delete(s.mu.cgWritten, group)
	} else {
		s.mu.cgWritten[group] = next
	}
	s.mu.Unlock()
	if len(recs) == 0 {
		if done != nil {
			done(nil)
		}
		return
	}
	s.write(group, recs, func(err error) {
		if err != nil {
			// Outcome unknown: the next change of the group is
			// written whole, with tombstones for what applied and
			// is gone.
			s.mu.Lock()
			delete(s.mu.cgWritten, group)
			s.mu.Unlock()
			s.lg.Warn(kind+" group records not written", zap.String("group", group), zap.Error(err))
		}
		if done != nil {
			done(err)
		}
	})
}

// keyType is the record type of an encoded key (its first two bytes).
func keyType(k string) int16 {
	if len(k) < 2 {
		return -1
	}
	return int16(binary.BigEndian.Uint16([]byte(k[:2])))
}

// ofTypes is the part of recs whose keys are of the record types mine.
func ofTypes(recs map[string][]byte, mine func(typ int16) bool) map[string][]byte {
	out := make(map[string][]byte, len(recs))
	for k, v := range recs {
		if mine(keyType(k)) {
			out[k] = v
		}
	}
	return out
}

// consumerGroupLocked decodes the group's consumer-group records, nil when
// it has none.
func (s *Store) consumerGroupLocked(group string, g *groupState) *ConsumerGroup {
	recs := ofTypes(g.cg, isConsumerType)
	if len(recs) == 0 {
		return nil
	}
	cg, err := consumerGroupOf(group, recs)
	if err != nil {
		// Each record was checked when read: this is a group written
		// partially (a member without its metadata), kept as far as
		// it goes.
		s.lg.Warn("consumer group records incomplete", zap.String("group", group), zap.Error(err))
	}
	return cg
}

// shareGroupLocked decodes the group's share-group records, nil when it
// has none.
func (s *Store) shareGroupLocked(group string, g *groupState) *ShareGroup {
	sg, err := shareGroupOf(group, g.cg)
	if err != nil {
		s.lg.Warn("share group records incomplete", zap.String("group", group), zap.Error(err))
	}
	return sg
}
