package offsets

import "go.uber.org/zap"

// RecordStreamsGroup is RecordConsumerGroup for a streams group
// (KIP-1071)'s records (streams_records.go): sg is the group now, nil once
// deleted. done (if not nil) hears when the records are durable, or why
// not: Kafka answers the heartbeat only then.
func (s *Store) RecordStreamsGroup(group string, sg *StreamsGroup, done func(error)) {
	var now map[string][]byte
	if sg != nil {
		now = streamsGroupRecords(sg)
	}
	s.recordTyped(group, now, isStreamsType, "streams", done)
}

// streamsGroupLocked decodes the group's streams-group records, nil when
// it has none.
func (s *Store) streamsGroupLocked(group string, g *groupState) *StreamsGroup {
	recs := ofTypes(g.cg, isStreamsType)
	if len(recs) == 0 {
		return nil
	}
	sg, err := streamsGroupOf(group, recs)
	if err != nil {
		// Each record was checked when read: this is a group written
		// partially (a member without its metadata), kept as far as
		// it goes.
		s.lg.Warn("streams group records incomplete", zap.String("group", group), zap.Error(err))
	}
	return sg
}
