package offsets

import (
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"go.uber.org/zap"

	"github.com/kbroker/kbroker/partition"
	"github.com/kbroker/kbroker/partition/batch"
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
	ps    *partition.Store
	parts []*partition.Partition
	lg    *zap.Logger

	// startNext and startEnd are where replay ended at Open: the first
	// snapshot may cut there once the commit log is durable up to
	// startEnd.
	startNext []int64
	startEnd  int64

	mu struct {
		sync.Mutex
		closed bool
		groups map[string]*groupState
		// pending holds, per partition, the writes appended but not yet
		// applied, in log order.
		pending [][]*write
		// applied holds, per partition, the writes applied since the
		// last snapshot's cut, in log order.
		applied [][]appliedWrite
		// cut is, per partition, the offset the last snapshot covers.
		cut   []int64
		dirty bool
		buf   []byte
		kvs   []batch.KeyValue
	}
	// snapMu makes snapshots one at a time.
	snapMu sync.Mutex

	stop chan struct{}
	wg   sync.WaitGroup
}

// groupState is one group's committed offsets and last metadata record.
type groupState struct {
	offsets map[TopicPartition]Offset
	// meta is the last GroupMetadataValue (nil: none, a group that only
	// commits); the other fields are decoded from it.
	meta         []byte
	protocolType string
	generation   int32
	// empty is whether the group had no members at its last record (and,
	// after a restart, always: members do not survive one); emptySince is
	// from when.
	empty      bool
	emptySince int64
}

// write is one batch of records on its way to being applied.
type write struct {
	part     int
	next     int64 // offset after the batch
	end      int64 // commit-log position after the batch
	recs     []rec
	done     func(error)
	finished bool
	err      error
}

type appliedWrite struct{ next, end int64 }

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
	if len(parts) == 0 {
		return nil, errors.New("offsets: no partitions")
	}
	s := &Store{cfg: cfg, hooks: hooks, ps: ps, parts: parts, lg: lg, stop: make(chan struct{})}
	s.mu.groups = map[string]*groupState{}
	s.mu.pending = make([][]*write, len(parts))
	s.mu.applied = make([][]appliedWrite, len(parts))
	s.mu.cut = make([]int64, len(parts))
	s.startNext = make([]int64, len(parts))
	s.startEnd = ps.CommitLog().WrotePosition()

	start := time.Now()
	loaded, err := s.loadSnapshot()
	if err != nil {
		return nil, err
	}
	replayed := 0
	for i, p := range parts {
		from := max(s.mu.cut[i], p.LogStartOffset())
		if hw := p.HighWatermark(); hw < s.mu.cut[i] {
			// The snapshot's cut never passes durable data, so this is
			// a damaged data directory; the records past hw are gone.
			lg.Warn("offsets partition ends before its snapshot", zap.Int("partition", i), zap.Int64("end", hw), zap.Int64("cut", s.mu.cut[i]))
		}
		n, err := s.replay(p, from)
		if err != nil {
			return nil, err
		}
		replayed += n
		s.startNext[i] = p.HighWatermark()
	}
	// Members do not survive a restart: every group is empty from now.
	now := cfg.Now().UnixMilli()
	for _, g := range s.mu.groups {
		if !g.empty {
			g.empty, g.emptySince = true, now
		}
	}
	lg.Info("group offsets loaded", zap.Int("groups", len(s.mu.groups)), zap.Bool("snapshot", loaded),
		zap.Int("replayed", replayed), zap.Duration("took", time.Since(start)))
	s.wg.Add(1)
	go s.background()
	return s, nil
}

// replay applies the records of p from offset from on.
func (s *Store) replay(p *partition.Partition, from int64) (int, error) {
	n := 0
	var decodeErr error
	err := p.EachBatch(from, func(b []byte) bool {
		h, err := batch.ParseHeader(b)
		if err != nil {
			decodeErr = err
			return false
		}
		if h.IsControl() {
			return true
		}
		err = batch.Records(b, func(r batch.Record) bool {
			if h.BaseOffset+int64(r.OffsetDelta) < from {
				return true
			}
			rc, ok, err := decodeRec(r.Key, r.Value)
			if err != nil {
				// Only this store writes here (and Kafka's admin client
				// id, as on Kafka): a record it cannot read is skipped,
				// not a reason to refuse to start.
				s.lg.Warn("offsets: skipping an unreadable record", zap.Int64("offset", h.BaseOffset+int64(r.OffsetDelta)), zap.Error(err))
				return true
			}
			if ok {
				s.applyLocked(&rc)
				n++
			}
			return true
		})
		if err != nil && decodeErr == nil {
			decodeErr = err
		}
		return decodeErr == nil
	})
	if err == nil {
		err = decodeErr
	}
	if err != nil {
		return n, fmt.Errorf("offsets: replay %s-%d from %d: %w", p.Topic(), p.Index(), from, err)
	}
	return n, nil
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
	if g.meta == nil && len(g.offsets) == 0 {
		delete(s.mu.groups, r.group)
	}
}

// write appends recs as one batch to the group's partition and applies
// them once durable; done (if not nil) hears the outcome: nil, or an error
// wrapping a Kafka error code.
func (s *Store) write(group string, recs []rec, done func(error)) {
	if done == nil {
		done = func(error) {}
	}
	if len(recs) == 0 {
		done(nil)
		return
	}
	i := partitionFor(group, len(s.parts))
	p := s.parts[i]
	now := s.cfg.Now().UnixMilli()
	s.mu.Lock()
	if s.mu.closed {
		s.mu.Unlock()
		done(kerr.CoordinatorNotAvailable)
		return
	}
	kvs := s.mu.kvs[:0]
	buf := s.mu.buf[:0]
	for j := range recs {
		k := len(buf)
		buf = recs[j].appendKey(buf)
		kvs = append(kvs, batch.KeyValue{Key: buf[k:len(buf):len(buf)]})
		if !recs[j].tombstone {
			v := len(buf)
			buf = recs[j].appendValue(buf)
			kvs[j].Value = buf[v:len(buf):len(buf)]
		}
	}
	// Keys and values alias buf, which AppendBuild extends: build into
	// a second region of the same buffer only after they are laid out.
	b := batch.AppendBuild(buf[len(buf):], batch.BuildOptions{Timestamp: now, ProducerID: batch.NoProducerID, ProducerEpoch: batch.NoProducerEpoch}, kvs)
	s.mu.buf, s.mu.kvs = buf[:0], kvs[:0]
	res, err := p.Append(b, produceVersion, now)
	if err != nil {
		s.mu.Unlock()
		done(fmt.Errorf("offsets: write to %s-%d: %w", p.Topic(), p.Index(), err))
		return
	}
	w := &write{part: i, next: res.BaseOffset + int64(len(recs)), end: res.End, recs: recs, done: done}
	s.mu.pending[i] = append(s.mu.pending[i], w)
	s.mu.Unlock()
	s.ps.SubmitDurable(res.End, func(err error) { s.finish(w, err) })
}

// produceVersion is the Produce version the store's own batches are
// validated as.
const produceVersion = 9

// finish marks w durable (or failed) and applies every finished write at
// the head of its partition's queue, so that writes apply in log order.
func (s *Store) finish(w *write, err error) {
	s.mu.Lock()
	w.finished, w.err = true, err
	q := s.mu.pending[w.part]
	var ready []*write
	for len(q) > 0 && q[0].finished {
		h := q[0]
		q[0] = nil
		q = q[1:]
		if h.err == nil {
			for j := range h.recs {
				s.applyLocked(&h.recs[j])
			}
			s.mu.applied[h.part] = append(s.mu.applied[h.part], appliedWrite{next: h.next, end: h.end})
			s.mu.dirty = true
		}
		ready = append(ready, h)
	}
	s.mu.pending[w.part] = q
	s.mu.Unlock()
	for _, h := range ready {
		h.done(h.err)
	}
}

// Close takes a last snapshot (when the store can) and stops the loops.
// Writes after Close get COORDINATOR_NOT_AVAILABLE.
func (s *Store) Close() error {
	s.mu.Lock()
	if s.mu.closed {
		s.mu.Unlock()
		return nil
	}
	s.mu.closed = true
	s.mu.Unlock()
	close(s.stop)
	s.wg.Wait()
	return s.Snapshot()
}

// background runs expiry and snapshots.
func (s *Store) background() {
	defer s.wg.Done()
	expire := time.NewTicker(s.cfg.CheckInterval)
	defer expire.Stop()
	snap := time.NewTicker(s.cfg.SnapshotInterval)
	defer snap.Stop()
	for {
		select {
		case <-s.stop:
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
