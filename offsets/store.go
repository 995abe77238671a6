package offsets

import (
	"maps"
	"path/filepath"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/kbroker/kbroker/coordlog"
	"github.com/kbroker/kbroker/partition"
)

// Config configures a Store.
type Config struct {
	// Dir is the metadata directory that holds the snapshot.
	Dir string
	// Retention is offsets.retention.minutes.
	Retention time.Duration
	// CheckInterval is offsets.retention.check.interval.ms.
	CheckInterval time.Duration
	// SnapshotInterval is how often the state is snapshotted (when it
	// changed).
	SnapshotInterval time.Duration
	// Now returns the current time; tests inject it. Default time.Now.
	Now func() time.Time
}

// Hooks tell the store about the groups' membership, which the group
// coordinator owns.
type Hooks struct {
	// Active reports whether the group has members now; expiry leaves
	// such groups alone.
	Active func(group string) bool
	// Expired hears of a group whose offsets all expired while it had no
	// members, so that the coordinator can forget it.
	Expired func(group string)
}

// Store holds the committed offsets of every group, backed by the
// partitions of __consumer_offsets. See the package comment.
type Store struct {
	cfg   Config
	hooks Hooks
	lg    *zap.Logger
	// log writes, applies, snapshots and replays the records.
	log *coordlog.Log[rec]

	mu struct {
		sync.Mutex
		groups map[string]*groupState
		// txn holds, per producer id, the offsets of its open
		// transaction (TxnOffsetCommit): durable, not yet visible.
		txn map[int64][]rec
		// cgWritten holds, per consumer or share group, its records
		// as last written (RecordConsumerGroup, RecordShareGroup),
		// applied or not, so that a
		// change writes only the records that changed. A group
		// missing here is compared with its applied records.
		cgWritten map[string]map[string][]byte
	}

	loops coordlog.Loops
}

// groupState is one group's committed offsets and last metadata record.
type groupState struct {
	offsets map[TopicPartition]Offset
	// meta is the last GroupMetadataValue (nil: none, a group that only
	// commits); the other fields are decoded from it.
	meta         []byte
	protocolType string
	generation   int32
	// empty is whether the group had no members at its last record
	// (members survive a restart: the coordinator restores them from
	// the record); emptySince is from when.
	empty      bool
	emptySince int64
	// cg holds the group's consumer-group (KIP-848) and share-group
	// (KIP-932) records: encoded key → value. A group id names one
	// group at a time, but the two kinds are told apart by record type
	// wherever they are read.
	cg map[string][]byte
}

// Open loads the snapshot in cfg.Dir, replays the records of parts that
// follow it and starts the expiry and snapshot loops. parts are the
// partitions of __consumer_offsets in index order.
func Open(cfg Config, ps *partition.Store, parts []*partition.Partition, hooks Hooks, lg *zap.Logger) (*Store, error) {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if lg == nil {
		lg = zap.NewNop()
	}
	s := &Store{cfg: cfg, hooks: hooks, lg: lg}
	s.mu.groups = map[string]*groupState{}
	s.mu.txn = map[int64][]rec{}
	s.mu.cgWritten = map[string]map[string][]byte{}

	start := time.Now()
	l, ld, err := coordlog.Open(coordlog.Config{
		Name: "offsets", SnapshotPath: s.snapshotPath(), Magic: snapshotMagic, Logger: lg, Now: cfg.Now,
	}, ps, parts, (*state)(s))
	if err != nil {
		return nil, err
	}
	s.log = l
	// Nothing is pending after a replay: what applied is what was written.
	for id, g := range s.mu.groups {
		if len(g.cg) > 0 {
			s.mu.cgWritten[id] = maps.Clone(g.cg)
		}
	}
	lg.Info("group offsets loaded", zap.Int("groups", len(s.mu.groups)), zap.Bool("snapshot", ld.Snapshot),
		zap.Int("replayed", ld.Replayed), zap.Duration("took", time.Since(start)))
	s.loops.Go(s.background)
	return s, nil
}

// applyLocked applies one record to the state; later records win.
func (s *Store) applyLocked(r *rec) {
	g := s.mu.groups[r.group]
	if g == nil {
		if r.tombstone {
			return
		}
		g = &groupState{offsets: map[TopicPartition]Offset{}}
		s.mu.groups[r.group] = g
	}
	switch {
	case r.isCG && r.tombstone:
		delete(g.cg, r.cgKey)
	case r.isCG:
		if g.cg == nil {
			g.cg = map[string][]byte{}
		}
		g.cg[r.cgKey] = r.cgValue
	case r.isGroup && r.tombstone:
		g.meta, g.protocolType, g.generation = nil, "", 0
	case r.isGroup:
		g.meta, g.protocolType, g.generation = r.meta, r.protocolType, r.generation
		g.empty = r.metaEmpty
		if r.metaEmpty {
			g.emptySince = r.metaTime
		}
	case r.tombstone:
		delete(g.offsets, r.tp)
	default:
		g.offsets[r.tp] = r.offset
	}
	if g.meta == nil && len(g.offsets) == 0 && len(g.cg) == 0 {
		delete(s.mu.groups, r.group)
	}
}

// write appends recs as one batch to the group's partition and applies
// them once durable; done (if not nil) hears the outcome: nil, or an error
// wrapping a Kafka error code.
func (s *Store) write(group string, recs []rec, done func(error)) {
	s.log.Write(coordlog.PartitionFor(group, s.log.Partitions()), recs, done)
}

// Close takes a last snapshot (when the store can) and stops the loops.
// Writes after Close get COORDINATOR_NOT_AVAILABLE.
func (s *Store) Close() error {
	if !s.loops.Stop(s.log.Close) {
		return nil
	}
	return s.Snapshot()
}

// Abandon stops the store without the snapshot Close writes, as a crash
// would; the next open replays the offsets from the commit log.
func (s *Store) Abandon() { s.loops.Stop(s.log.Close) }

// background runs expiry and snapshots until stop is closed.
func (s *Store) background(stop <-chan struct{}) {
	expire := time.NewTicker(s.cfg.CheckInterval)
	defer expire.Stop()
	snap := time.NewTicker(s.cfg.SnapshotInterval)
	defer snap.Stop()
	for {
		select {
		case <-stop:
			return
		case <-expire.C:
			s.Expire()
		case <-snap.C:
			if err := s.Snapshot(); err != nil {
				s.lg.Warn("offsets snapshot", zap.Error(err))
			}
		}
	}
}

// snapshotPath is where the snapshot lives.
func (s *Store) snapshotPath() string { return filepath.Join(s.cfg.Dir, "group-offsets.snapshot") }
