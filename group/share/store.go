package share

import (
	"path/filepath"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/kbroker/kbroker/coordlog"
	"github.com/kbroker/kbroker/partition"
)

// snapshotMagic names the snapshot file format of the share-state log.
const snapshotMagic = "KBSHST01"

// Store keeps share-partition states durable in the partitions of
// __share_group_state (Kafka's share coordinator and its persister),
// through a coordinator log: each write is one record holding a
// share-partition's whole state, applied once durable; Open replays the
// snapshot and the records after it. See records.go for the format.
type Store struct {
	log *coordlog.Log[rec]
	lg  *zap.Logger
	mu  struct {
		sync.Mutex
		// states are the durable states, the latest of each key.
		states map[Key]PartitionState
	}
	loops coordlog.Loops
}

// OpenStore loads the share-partition states from dir's snapshot and the
// records of parts (the partitions of __share_group_state in index order)
// that follow it, and snapshots every snapshotEvery.
func OpenStore(dir string, ps *partition.Store, parts []*partition.Partition, snapshotEvery time.Duration, lg *zap.Logger) (*Store, error) {
	if lg == nil {
		lg = zap.NewNop()
	}
	s := &Store{lg: lg}
	s.mu.states = map[Key]PartitionState{}
	start := time.Now()
	l, ld, err := coordlog.Open(coordlog.Config{
		Name: "share", SnapshotPath: filepath.Join(dir, "share-group-state.snapshot"), Magic: snapshotMagic, Logger: lg,
	}, ps, parts, (*storeState)(s))
	if err != nil {
		return nil, err
	}
	s.log = l
	lg.Info("share-group state loaded", zap.Int("partitions", len(s.mu.states)), zap.Bool("snapshot", ld.Snapshot),
		zap.Int("replayed", ld.Replayed), zap.Duration("took", time.Since(start)))
	s.loops.Go(func(stop <-chan struct{}) { s.snapshots(stop, snapshotEvery) })
	return s, nil
}

// States returns a copy of the durable states.
func (s *Store) States() map[Key]PartitionState {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[Key]PartitionState, len(s.mu.states))
	for k, v := range s.mu.states {
		out[k] = v
	}
	return out
}

// Write stores st as k's state; done hears the outcome once durable (or
// failed).
func (s *Store) Write(k Key, st PartitionState, done func(error)) {
	s.log.Write(coordlog.PartitionFor(k.String(), s.log.Partitions()), []rec{{key: k, state: st}}, done)
}

// Delete removes k's state; done as for Write.
func (s *Store) Delete(k Key, done func(error)) {
	s.log.Write(coordlog.PartitionFor(k.String(), s.log.Partitions()), []rec{{key: k, deleted: true}}, done)
}

// Snapshot writes the states to the snapshot file and lets the commit log
// drop the records it covers.
func (s *Store) Snapshot() error { return s.log.Snapshot() }

// Close takes a last snapshot and stops the store.
func (s *Store) Close() error {
	if !s.loops.Stop(s.log.Close) {
		return nil
	}
	return s.log.Snapshot()
}

// Abandon stops the store as a crash would: no last snapshot.
func (s *Store) Abandon() { s.loops.Stop(s.log.Close) }

func (s *Store) snapshots(stop <-chan struct{}, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			if err := s.log.Snapshot(); err != nil {
				s.lg.Warn("share-group state snapshot", zap.Error(err))
			}
		}
	}
}

// storeState is the Store as coordlog sees it. Apply and Live run with the
// log's lock held and take Store.mu after it.
type storeState Store

func (st *storeState) AppendKey(dst []byte, r *rec) []byte { return r.appendKey(dst) }

func (st *storeState) AppendValue(dst []byte, r *rec) ([]byte, bool) {
	if r.deleted {
		return dst, false
	}
	return r.appendValue(dst), true
}

func (st *storeState) Decode(key, value []byte) (rec, bool, error) { return decodeRec(key, value) }

func (st *storeState) Apply(r *rec) {
	s := (*Store)(st)
	s.mu.Lock()
	defer s.mu.Unlock()
	if r.deleted {
		delete(s.mu.states, r.key)
		return
	}
	s.mu.states[r.key] = r.state
}

func (st *storeState) Live(yield func(*rec)) {
	s := (*Store)(st)
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, v := range s.mu.states {
		yield(&rec{key: k, state: v})
	}
}
