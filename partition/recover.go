package partition

import (
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/kbroker/kbroker/consumequeue"
	klog "github.com/kbroker/kbroker/log"
	"github.com/kbroker/kbroker/partition/batch"
)

// recover brings the partitions back when the store opens, in four
// phases: restore each partition from the checkpoint (openPartitions), open
// the commit log with a replay of what the checkpoint does not cover
// (replay.visit), index the queues found incomplete from the whole log
// (reindex), and cut every partition back to what the commit log kept
// (trimToLog).
//
// Only the partitions that need work open their consume queue here (see
// lazy.go): those the replay finds written after the checkpoint, those
// the checkpoint does not know, those whose queue must be rebuilt, and
// those with batches the commit log may have lost. Every other partition
// takes its offsets from the checkpoint and opens its queue on first use:
// opening 10,000 queues took about a second of a start-up.
func (s *Store) recover(cp checkpoint, topics []TopicSpec) (RecoveryReport, error) {
	var r RecoveryReport
	rp, all, err := s.openPartitions(cp, topics, &r)
	if err != nil {
		return r, err
	}
	s.topics.Store(&all)
	r.ReplayedFrom = rp.from

	rp.nowMs = s.cfg.Now().UnixMilli()
	progress := newReplayProgress(s.lg, s.cfg.Dir, s.cfg.Log.FileSize, rp.from)
	visit := func(e klog.Entry) error {
		progress.visited(e.Pos, rp.indexed)
		return rp.visit(e)
	}
	clog, lr, err := klog.Open(s.cfg.Log, rp.from, visit)
	r.Log = lr
	if err != nil {
		r.Indexed = rp.indexed
		return r, err
	}
	s.clog = clog
	if len(rp.rebuild) > 0 {
		n, err := s.reindex(rp.rebuild, lr.End)
		rp.indexed += n
		if err != nil {
			r.Indexed = rp.indexed
			return r, err
		}
		for _, t := range rp.rebuild {
			r.Rebuilt = append(r.Rebuilt, fmt.Sprintf("%s-%d", t.p.topic, t.p.index))
		}
	}
	r.Indexed = rp.indexed
	for _, st := range rp.states {
		if st.p.cq.Load() == nil && !st.lazyOK(lr.End) {
			// Batches the checkpoint counted may be past the log's end:
			// the queue must be cut now, before anyone reads.
			if err := rp.open(st); err != nil {
				return r, err
			}
		}
	}
	return r, trimToLog(rp.states, lr.End)
}

// replay is the commit-log pass of recovery: from position from on, it
// indexes the batches each consume queue lacks and applies the producer
// state each partition's snapshot lacks.
type replay struct {
	store   *Store
	from    int64 // commit-log position the replay starts at
	states  map[[KeySize]byte]*replayState
	nowMs   int64 // the time producer state is stamped with
	indexed int   // batches added to consume queues
	// rebuild are the partitions whose queue lacks batches the checkpoint
	// counted: reindex indexes them from the start of the log, and the
	// replay leaves their queue alone.
	rebuild map[[KeySize]byte]reindexTarget
}

// reindexTarget is a queue reindex completes, and its partition.
type reindexTarget struct {
	p *Partition
	q *consumequeue.Queue
}

// replayState is where the replay stands for one partition.
type replayState struct {
	p        *Partition
	saved    partitionCheckpoint
	hasSaved bool  // the checkpoint knows the partition
	cqNext   int64 // index entries from here on (valid once the queue is open)
	prodNext int64 // apply producer state from here on
}

// lazyOK reports whether the partition may keep its queue closed after a
// recovery that ended the commit log at end: the checkpoint knows it, and
// every batch the checkpoint counted ends at or before end. (A partition
// with a batch past the checkpoint was opened by the replay.)
func (st *replayState) lazyOK(end int64) bool {
	return st.hasSaved && st.saved.End != nil && *st.saved.End <= end
}

// openPartitions creates every partition, restores its offsets and
// producer state from the checkpoint, and prepares the replay from the
// checkpoint's position. Consume queues open here only for partitions the
// checkpoint does not know (their offsets are in the queue alone) and for
// those whose queue directory is gone while the checkpoint counts batches
// (rebuilt from the whole log after the replay).
func (s *Store) openPartitions(cp checkpoint, topics []TopicSpec, r *RecoveryReport) (*replay, map[TopicID][]*Partition, error) {
	rp := &replay{store: s, from: cp.Dispatched, states: map[[KeySize]byte]*replayState{}, rebuild: map[[KeySize]byte]reindexTarget{}}
	present, err := listDir(s.cqRoot)
	if err != nil {
		return nil, nil, err
	}
	// Most topics are not compacted: one directory read spares two
	// failed look-ups per partition.
	compacted, err := listDir(filepath.Join(s.cfg.Dir, "compacted"))
	if err != nil {
		return nil, nil, err
	}
	all := map[TopicID][]*Partition{}
	for _, t := range topics {
		ps := make([]*Partition, 0, t.Partitions)
		for i := int32(0); i < t.Partitions; i++ {
			p, err := s.newPartition(t, i, !compacted[hex.EncodeToString(t.ID[:])])
			if err != nil {
				return nil, nil, err
			}
			ps = append(ps, p)
			st := &replayState{p: p}
			rp.states[p.key] = st
			st.saved, st.hasSaved = cp.Partitions[p.key]
			if st.hasSaved {
				st.restore()
			}
			switch {
			case !st.hasSaved:
				err = rp.open(st)
			case st.saved.Next > st.saved.LogStart && !present[filepath.Base(filepath.Dir(p.dir))]:
				err = rp.open(st)
			}
			if err != nil {
				return nil, nil, err
			}
		}
		all[t.ID] = ps
	}
	return rp, all, nil
}

// listDir lists the names in dir (none if it does not exist). Recovery
// reads the consume-queue and clean-store roots once, to learn which
// topics have a directory there, instead of looking once per partition.
func listDir(dir string) (map[string]bool, error) {
	ents, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("partition: list %s: %w", dir, err)
	}
	present := make(map[string]bool, len(ents))
	for _, e := range ents {
		present[e.Name()] = true
	}
	return present, nil
}

// open opens st's consume queue during recovery. A queue the checkpoint
// knows is first cut back to the checkpoint's next offset: batches past it
// were written after the checkpoint, and the replay indexes again those
// the commit log kept (queue entries the log lost, from this or an
// earlier crash, must not outlive the open). A queue that then lacks
// batches the checkpoint counted is marked for reindex.
func (rp *replay) open(st *replayState) error {
	p := st.p
	q, err := p.store.openQueueFile(p)
	if err != nil {
		return err
	}
	p.cq.Store(q)
	if st.hasSaved {
		if err := q.TruncateFromOffset(st.saved.Next); err != nil {
			return fmt.Errorf("partition: cut %s-%d at its checkpoint: %w", p.topic, p.index, err)
		}
	}
	st.cqNext = q.NextOffset()
	if st.hasSaved && queueBehind(q, st.saved) {
		rp.rebuild[p.key] = reindexTarget{p, q}
	}
	p.mu.next = max(p.mu.next, st.cqNext)
	return nil
}

// queueBehind reports whether q lacks batches the checkpoint saved
// counted (its files were deleted or damaged).
func queueBehind(q *consumequeue.Queue, saved partitionCheckpoint) bool {
	return q.NextOffset() < saved.Next && saved.Next > saved.LogStart
}

// restore applies the checkpointed state of st's partition: offsets,
// producer state and the aborted index (taken together, they cover the
// same offsets: both or neither). Whatever its queue holds, the snapshots
// stay valid: they describe the batches below the checkpoint's next
// offset, which the queue or a reindex will index.
func (st *replayState) restore() {
	p := st.p
	saved := st.saved
	p.logStart.Store(saved.LogStart)
	p.mu.next = saved.Next
	if saved.End != nil {
		p.mu.lastEnd = *saved.End
	}
	p.summary.Store(saved.Summary)
	prods, perr := LoadProducerSnapshot(saved.Producers)
	aborted, aerr := loadAbortedSnapshot(saved.Aborted)
	if perr == nil && aerr == nil {
		p.mu.producers = prods
		p.aborted.entries = aborted
		st.prodNext = saved.Next
	}
}

// visit replays one commit-log entry: it adds the batch to its
// partition's consume queue unless the queue has it or retention already
// passed it, applies it to the producer state unless the snapshot covers
// it, and moves the partition's next offset past it. A partition's queue
// opens at its first entry.
func (rp *replay) visit(e klog.Entry) error {
	var k [KeySize]byte
	copy(k[:], e.Key)
	st := rp.states[k]
	if st == nil {
		return nil // a deleted topic's data
	}
	h, err := batch.ParseHeader(e.Payload)
	if err != nil {
		return fmt.Errorf("partition: replay entry at %d: %w", e.Pos, err)
	}
	p := st.p
	if p.cq.Load() == nil {
		if err := rp.open(st); err != nil {
			return err
		}
	}
	next := h.BaseOffset + int64(h.LastOffsetDelta) + 1
	if _, again := rp.rebuild[k]; !again && h.BaseOffset >= st.cqNext && next > p.logStart.Load() {
		if err := p.cq.Load().Append(e.PayloadPos(), int32(len(e.Payload)), h.BaseOffset, h.LastOffsetDelta, h.Attributes, h.MaxTimestamp); err != nil {
			return fmt.Errorf("partition: index %s-%d: %w", p.topic, p.index, err)
		}
		st.cqNext = next
		rp.indexed++
	}
	if h.BaseOffset >= st.prodNext && h.ProducerID >= 0 {
		if h.IsControl() {
			// A control batch's type is in its record's key.
			p.replayMarkerLocked(e.Payload, h, rp.nowMs)
		} else {
			p.mu.producers.Update(ProducerBatch{
				ProducerID: h.ProducerID, ProducerEpoch: h.ProducerEpoch, BaseSequence: h.BaseSequence,
				LastOffsetDelta: h.LastOffsetDelta, MaxTimestamp: h.MaxTimestamp, Transactional: h.IsTransactional(),
			}, h.BaseOffset, rp.nowMs)
		}
	}
	if next > p.mu.next {
		p.mu.next = next
	}
	p.mu.lastEnd = max(p.mu.lastEnd, e.Pos+int64(e.Size))
	return nil
}

// errReindexDone ends reindex's walk at the recovered end.
var errReindexDone = errors.New("partition: reindex done")

// reindex indexes, from the start of the commit log up to position end,
// the batches that the queues of ps lack (those past each queue's last
// entry and the partition's log start). It serves the queues recovery
// found incomplete, in one pass, and a single queue found incomplete when
// it opens lazily (no batch of that partition lies past end then: its
// appends wait for the open). It returns the number of batches indexed.
func (s *Store) reindex(ps map[[KeySize]byte]reindexTarget, end int64) (int, error) {
	indexed := 0
	err := s.clog.Iterate(s.clog.MinOffset(), func(e klog.Entry) error {
		if e.Pos >= end {
			return errReindexDone
		}
		var k [KeySize]byte
		copy(k[:], e.Key)
		t, ok := ps[k]
		if !ok {
			return nil
		}
		h, err := batch.ParseHeader(e.Payload)
		if err != nil {
			return fmt.Errorf("partition: reindex entry at %d: %w", e.Pos, err)
		}
		p, q := t.p, t.q
		next := h.BaseOffset + int64(h.LastOffsetDelta) + 1
		if h.BaseOffset < q.NextOffset() || next <= p.logStart.Load() {
			return nil
		}
		if err := q.Append(e.PayloadPos(), int32(len(e.Payload)), h.BaseOffset, h.LastOffsetDelta, h.Attributes, h.MaxTimestamp); err != nil {
			return fmt.Errorf("partition: reindex %s-%d: %w", p.topic, p.index, err)
		}
		indexed++
		return nil
	})
	if errors.Is(err, errReindexDone) {
		err = nil
	}
	return indexed, err
}

// trimToLog cuts every partition back to end, the recovered end of the
// commit log, and sets its offsets from what is left.
//
// Entries past end are gone. What survived in the queue (cut at that end,
// completed by the replay) is the truth about the offsets; the log start
// offset is kept. The checkpoint's next offset and producer state, and
// queue entries written before the crash, may count batches that did not
// survive: pool mode loses its uncommitted buffers to a kill (their queue
// entries were written at append, and a checkpoint counts them), and a
// power loss takes the log's pages past the durable position whether or
// not the checkpoint saw them, while the queue's may have reached the
// disk. Trusting those would leave a hole between the last batch and the
// log end that a consumer waits on forever, and answer a producer's retry
// of a lost batch as a duplicate.
//
// A partition whose queue stays closed kept every batch its checkpoint
// counted (lazyOK): its offsets are the checkpoint's, and its queue is cut
// to them when it opens.
func trimToLog(states map[[KeySize]byte]*replayState, end int64) error {
	for _, st := range states {
		p := st.p
		if q := p.cq.Load(); q != nil {
			if err := q.TruncateFromPos(end); err != nil {
				return fmt.Errorf("partition: truncate %s-%d: %w", p.topic, p.index, err)
			}
			p.mu.next = max(q.NextOffset(), p.logStart.Load())
			if e, ok := q.Last(); ok {
				p.mu.lastEnd = e.End()
			} else {
				p.mu.lastEnd = 0
			}
			if first, ok := p.firstOffset(); ok && first > p.logStart.Load() {
				p.logStart.Store(first)
			}
		} else {
			p.lazy.want = st.saved.Next
		}
		p.mu.producers.TruncateAfter(p.mu.next)
		p.truncateAborted(p.mu.next)
		p.logEnd.Store(p.mu.next)
		p.highWatermark.Store(p.mu.next)
		p.pruneAborted(p.logStart.Load())
		p.pruneAbortedToView(p.clean.Load())
		p.syncOpenLocked(nil) // every replayed marker is visible now
	}
	return nil
}
