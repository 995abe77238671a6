package offsets

import (
	"maps"
	"slices"
	"strings"

	"go.uber.org/zap"
)

// Commit is one partition's offset in an OffsetCommit.
type Commit struct {
	TopicPartition
	Offset      int64
	LeaderEpoch int32
	Metadata    string
	// ExpireTimestamp is an explicit expiry in ms, or -1.
	ExpireTimestamp int64
}

// Commit stores the offsets of group. done hears nil once they are
// durable and visible to Fetch, or an error wrapping a Kafka error code
// (KAFKA_STORAGE_ERROR, REQUEST_TIMED_OUT, COORDINATOR_NOT_AVAILABLE).
// done may run before Commit returns, or on another goroutine.
func (s *Store) Commit(group string, cs []Commit, done func(error)) {
	s.write(group, s.commitRecs(group, cs), done)
}

// commitRecs are the records of a commit, stamped now.
func (s *Store) commitRecs(group string, cs []Commit) []rec {
	now := s.cfg.Now().UnixMilli()
	recs := make([]rec, len(cs))
	for i, c := range cs {
		recs[i] = rec{group: group, tp: c.TopicPartition, offset: Offset{
			Offset: c.Offset, LeaderEpoch: c.LeaderEpoch, Metadata: c.Metadata,
			CommitTimestamp: now, ExpireTimestamp: c.ExpireTimestamp,
		}}
	}
	return recs
}

// Fetch returns a copy of the group's committed offsets (nil when none).
func (s *Store) Fetch(group string) map[TopicPartition]Offset {
	s.mu.Lock()
	defer s.mu.Unlock()
	g := s.mu.groups[group]
	if g == nil || len(g.offsets) == 0 {
		return nil
	}
	return maps.Clone(g.offsets)
}

// DeleteOffsets removes the given partitions' offsets of group (those it
// has); done as for Commit.
func (s *Store) DeleteOffsets(group string, tps []TopicPartition, done func(error)) {
	s.mu.Lock()
	var recs []rec
	if g := s.mu.groups[group]; g != nil {
		for _, tp := range tps {
			if _, ok := g.offsets[tp]; ok {
				recs = append(recs, rec{group: group, tp: tp, tombstone: true})
			}
		}
	}
	s.mu.Unlock()
	s.write(group, recs, done)
}

// DeleteGroup removes every offset of group and its metadata; done as for
// Commit.
func (s *Store) DeleteGroup(group string, done func(error)) {
	s.write(group, s.groupTombstones(group, nil), done)
}

// groupTombstones lists tombstones for the group's offsets (all when only
// is nil, counting writes not yet applied, so that a commit racing with
// the deletion does not outlive it) and, when all go, for its metadata.
func (s *Store) groupTombstones(group string, only []TopicPartition) []rec {
	tps := map[TopicPartition]bool{}
	for _, tp := range only {
		tps[tp] = true
	}
	if only == nil {
		// Pending writes first: one that applies meanwhile is then
		// found in the group's offsets below (the log's lock comes
		// before s.mu, so the two cannot be read at once).
		s.log.EachPending(func(r *rec) {
			if r.group == group && !r.isGroup {
				tps[r.tp] = true
			}
		})
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	g := s.mu.groups[group]
	if only == nil && g != nil {
		for tp := range g.offsets {
			tps[tp] = true
		}
	}
	recs := make([]rec, 0, len(tps)+1)
	for tp := range tps {
		recs = append(recs, rec{group: group, tp: tp, tombstone: true})
	}
	if only == nil || (g != nil && len(only) == len(g.offsets)) {
		recs = append(recs, rec{group: group, isGroup: true, tombstone: true})
	}
	return recs
}

// RecordGroup writes a group metadata record: the coordinator calls it when
// a group completes a rebalance, when a static member of a Stable group is
// replaced and when the group becomes empty, so that a restart brings the
// group back with its generation and members (Groups) and knows since
// when it has been empty (for expiry). done (if not nil) hears when the
// record is durable, or why not; records of one group must be recorded in
// the order of the states they describe (the log keeps the append order).
func (s *Store) RecordGroup(g GroupRecord, done func(error)) {
	s.write(g.Group, []rec{groupRec(g, s.cfg.Now().UnixMilli())}, done)
}

// DeleteGroupMetadata writes a tombstone for the group's metadata and
// keeps its offsets: a consumer group (KIP-848) took over the id of an
// Empty classic group, whose metadata Kafka deletes then
// (maybeDeleteEmptyClassicGroup). The offsets then expire by their commit
// time, as a consumer group's do. It does not wait for durability, and
// writes nothing for a group without metadata.
func (s *Store) DeleteGroupMetadata(group string) {
	s.mu.Lock()
	g := s.mu.groups[group]
	has := g != nil && g.meta != nil
	s.mu.Unlock()
	if has {
		s.write(group, []rec{{group: group, isGroup: true, tombstone: true}}, nil)
	}
}

// GroupInfo is what the store knows of a group at start-up, for the
// coordinator to restore it.
type GroupInfo struct {
	Group        string
	ProtocolType string
	Generation   int32
	// Record is the group's last metadata record, decoded (HasRecord);
	// a group that only commits offsets has none.
	Record    GroupRecord
	HasRecord bool
	// Consumer is the group as its consumer-group (KIP-848) records
	// describe it, nil without any: such a group is a consumer group.
	Consumer *ConsumerGroup
	// Share is the group as its share-group (KIP-932) records describe
	// it, nil without any: such a group is a share group.
	Share *ShareGroup
	// Streams is the group as its streams-group (KIP-1071) records
	// describe it, nil without any: such a group is a streams group.
	Streams *StreamsGroup
}

// Groups lists the groups with offsets or metadata, sorted by id. A
// metadata record that does not decode (it was checked when read) is
// logged and left out of Record.
func (s *Store) Groups() []GroupInfo {
	s.mu.Lock()
	out := make([]GroupInfo, 0, len(s.mu.groups))
	metas := make([][]byte, 0, len(s.mu.groups))
	for id, g := range s.mu.groups {
		out = append(out, GroupInfo{Group: id, ProtocolType: g.protocolType, Generation: g.generation, Consumer: s.consumerGroupLocked(id, g), Share: s.shareGroupLocked(id, g), Streams: s.streamsGroupLocked(id, g)})
		metas = append(metas, g.meta)
	}
	s.mu.Unlock()
	for i := range out {
		if metas[i] == nil {
			continue
		}
		r, err := decodeGroupRecord(out[i].Group, metas[i])
		if err != nil {
			s.lg.Warn("group metadata not restored", zap.String("group", out[i].Group), zap.Error(err))
			continue
		}
		out[i].Record, out[i].HasRecord = r, true
	}
	slices.SortFunc(out, func(a, b GroupInfo) int { return strings.Compare(a.Group, b.Group) })
	return out
}

// Expire removes the expired offsets (see the package comment) of groups
// without members, and reports groups left with nothing to Hooks.Expired.
func (s *Store) Expire() {
	now := s.cfg.Now().UnixMilli()
	ret := s.cfg.Retention.Milliseconds()
	type expiry struct {
		group string
		tps   []TopicPartition
	}
	var todo []expiry
	s.mu.Lock()
	for id, g := range s.mu.groups {
		var tps []TopicPartition
		for tp, o := range g.offsets {
			base := o.CommitTimestamp
			if g.protocolType != "" && g.empty {
				base = g.emptySince
			}
			if (o.ExpireTimestamp >= 0 && now >= o.ExpireTimestamp) || (o.ExpireTimestamp < 0 && now-base >= ret) {
				tps = append(tps, tp)
			}
		}
		managedExpired := g.protocolType != "" && g.empty && now-g.emptySince >= ret && len(g.offsets) == 0
		if len(tps) > 0 || managedExpired {
			todo = append(todo, expiry{id, tps})
		}
	}
	s.mu.Unlock()
	for _, e := range todo {
		if s.hooks.Active != nil && s.hooks.Active(e.group) {
			continue
		}
		recs := s.groupTombstones(e.group, e.tps)
		gone := false
		for _, r := range recs {
			gone = gone || r.isGroup
		}
		if !gone {
			s.mu.Lock()
			g := s.mu.groups[e.group]
			gone = g != nil && g.meta == nil && len(g.offsets) == len(e.tps)
			s.mu.Unlock()
		}
		group := e.group
		s.write(group, recs, func(err error) {
			if err == nil && gone && s.hooks.Expired != nil {
				s.hooks.Expired(group)
			}
		})
	}
}
