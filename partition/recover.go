package partition

import (
	"fmt"

	klog "github.com/kbroker/kbroker/log"
	"github.com/kbroker/kbroker/partition/batch"
)

// recover brings the partitions back when the store opens, in three
// phases: restore each partition from the checkpoint (openPartitions), open
// the commit log with a replay of what the checkpoint does not cover
// (replay.visit), and cut every partition back to what the commit log
// kept (trimToLog).
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
	r.Indexed = rp.indexed
	if err != nil {
		return r, err
	}
	s.clog = clog
	return r, trimToLog(all, lr.End)
}

// replay is the commit-log pass of recovery: from position from on, it
// indexes the batches each consume queue lacks and applies the producer
// state each partition's snapshot lacks.
type replay struct {
	from    int64 // commit-log position the replay starts at
	states  map[[KeySize]byte]*replayState
	nowMs   int64 // the time producer state is stamped with
	indexed int   // batches added to consume queues
}

// replayState is where the replay stands for one partition.
type replayState struct {
	p        *Partition
	cqNext   int64 // index entries from here on
	prodNext int64 // apply producer state from here on
}

// openPartitions opens every partition's consume queue, restores its
// offsets and producer state from the checkpoint, and prepares the replay:
// from the checkpoint's position, or from the start of the commit log when
// a queue lacks entries the checkpoint counted. Rebuilt partitions are
// listed in r.
func (s *Store) openPartitions(cp checkpoint, topics []TopicSpec, r *RecoveryReport) (*replay, map[TopicID][]*Partition, error) {
	rp := &replay{from: cp.Dispatched, states: map[[KeySize]byte]*replayState{}}
	all := map[TopicID][]*Partition{}
	for _, t := range topics {
		ps := make([]*Partition, 0, t.Partitions)
		for i := int32(0); i < t.Partitions; i++ {
			p, err := s.newPartition(t, i)
			if err != nil {
				return nil, nil, err
			}
			ps = append(ps, p)
			st := &replayState{p: p, cqNext: p.cq.NextOffset()}
			if saved, ok := cp.Partitions[p.key]; ok && !st.restore(saved) {
				rp.from = 0
				r.Rebuilt = append(r.Rebuilt, fmt.Sprintf("%s-%d", t.Name, i))
			}
			rp.states[p.key] = st
		}
		all[t.ID] = ps
	}
	return rp, all, nil
}

// restore applies the checkpointed state of st's partition. It reports
// false when the consume queue lacks entries the checkpoint counted (its
// files were deleted or damaged): the queue and the producer state must
// then be rebuilt from the whole commit log.
func (st *replayState) restore(saved partitionCheckpoint) (complete bool) {
	p := st.p
	p.logStart.Store(saved.LogStart)
	p.mu.next = max(saved.Next, st.cqNext)
	// Producer state and the aborted index were taken together and cover
	// the same offsets: use both or neither.
	prods, perr := LoadProducerSnapshot(saved.Producers)
	aborted, aerr := loadAbortedSnapshot(saved.Aborted)
	if perr == nil && aerr == nil {
		p.mu.producers = prods
		p.aborted.entries = aborted
		st.prodNext = saved.Next
	}
	if st.cqNext < saved.Next && saved.Next > saved.LogStart {
		p.mu.producers = NewProducerStates()
		p.aborted.entries = nil
		st.prodNext = 0
		return false
	}
	return true
}

// visit replays one commit-log entry: it adds the batch to its
// partition's consume queue unless the queue has it or retention already
// passed it, applies it to the producer state unless the snapshot covers
// it, and moves the partition's next offset past it.
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
	next := h.BaseOffset + int64(h.LastOffsetDelta) + 1
	p := st.p
	if h.BaseOffset >= st.cqNext && next > p.logStart.Load() {
		if err := p.cq.Append(e.PayloadPos(), int32(len(e.Payload)), h.BaseOffset, h.LastOffsetDelta, h.Attributes, h.MaxTimestamp); err != nil {
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
	return nil
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
func trimToLog(all map[TopicID][]*Partition, end int64) error {
	for _, ps := range all {
		for _, p := range ps {
			if err := p.cq.TruncateFromPos(end); err != nil {
				return fmt.Errorf("partition: truncate %s-%d: %w", p.topic, p.index, err)
			}
			p.mu.next = max(p.cq.NextOffset(), p.logStart.Load())
			p.mu.producers.TruncateAfter(p.mu.next)
			p.truncateAborted(p.mu.next)
			if first, ok := p.firstOffset(); ok && first > p.logStart.Load() {
				p.logStart.Store(first)
			}
			p.logEnd.Store(p.mu.next)
			p.highWatermark.Store(p.mu.next)
			p.pruneAborted(p.logStart.Load())
			p.pruneAbortedToView(p.clean.Load())
			p.syncOpenLocked(nil) // every replayed marker is visible now
		}
	}
	return nil
}
