package partition

import (
	"errors"
	"fmt"
	"os"

	"github.com/twmb/franz-go/pkg/kerr"
	"go.uber.org/zap"

	"github.com/kbroker/kbroker/consumequeue"
)

// Lazily opened consume queues.
//
// Opening a consume queue reads its directory, opens and maps its files
// and verifies every entry: 100–160 µs each, most of it system calls, so
// 10,000 written partitions took about a second to open at start-up
// (docs/BENCHMARKS.md, Scale). Recovery therefore opens only the queues
// that need work (recover.go); every other partition starts from its
// checkpoint (offsets, producer state, aborted index), which describes
// exactly the batches its queue holds below the checkpoint's next offset,
// and opens its queue the first time an append, a read, a search or
// retention needs it.
//
// Such a queue may hold entries past the checkpoint's next offset: they
// were written after the checkpoint and their commit-log entries were lost
// (pool mode's uncommitted buffers, a power loss), since the replay would
// otherwise have found them and opened the queue. They are cut when the
// queue opens, and a queue that lacks batches the checkpoint counted
// (damaged files) is indexed again from the commit log.

// errStoreClosed refuses to open a queue once the store has closed.
var errStoreClosed = errors.New("partition: store closed")

// queue returns the partition's consume queue, opening it on first use.
// A failed open is sticky: the partition answers KAFKA_STORAGE_ERROR
// until the broker restarts.
func (p *Partition) queue() (*consumequeue.Queue, error) {
	if q := p.cq.Load(); q != nil {
		return q, nil
	}
	return p.openQueue()
}

// openQueue is queue's slow path. It may run under p.mu (an append) or
// without it (a read); it takes p.openMu, a leaf but for the queue's own
// locks and the commit log's read side, and changes no state that p.mu
// guards: a queue not yet open has had no append since the store opened.
func (p *Partition) openQueue() (*consumequeue.Queue, error) {
	p.openMu.Lock()
	defer p.openMu.Unlock()
	if q := p.cq.Load(); q != nil {
		return q, nil
	}
	if p.lazy.err != nil {
		return nil, p.lazy.err
	}
	q, err := p.store.openLazyQueue(p)
	if err != nil {
		p.lazy.err = storageError(fmt.Sprintf("open index of %s-%d", p.topic, p.index), err)
		p.store.lg.Error("consume queue failed to open", zap.String("topic", p.topic), zap.Int32("partition", p.index), zap.Error(err))
		return nil, p.lazy.err
	}
	p.cq.Store(q)
	if first, ok := p.firstOffset(); ok && first > p.logStart.Load() {
		p.advanceLogStart(first)
	}
	return q, nil
}

// openLazyQueue opens p's queue after start-up: cut to the checkpoint's
// next offset, and indexed from the commit log if it lacks batches below
// it.
func (s *Store) openLazyQueue(p *Partition) (*consumequeue.Queue, error) {
	if s.closed.Load() {
		return nil, errStoreClosed
	}
	q, err := s.openQueueFile(p)
	if err != nil {
		return nil, err
	}
	want := p.lazy.want
	if err := q.TruncateFromOffset(want); err != nil {
		q.Close()
		return nil, fmt.Errorf("partition: cut %s-%d at its checkpoint: %w", p.topic, p.index, err)
	}
	saved := partitionCheckpoint{Next: want, LogStart: p.logStart.Load()}
	if queueBehind(q, saved) {
		n, err := s.reindex(map[[KeySize]byte]reindexTarget{p.key: {p, q}}, s.clog.WrotePosition())
		if err == nil && queueBehind(q, saved) {
			err = fmt.Errorf("partition: index of %s-%d ends at %d after a rebuild, its checkpoint at %d: %w",
				p.topic, p.index, q.NextOffset(), want, kerr.KafkaStorageError)
		}
		if err != nil {
			q.Close()
			return nil, err
		}
		s.lg.Warn("consume queue rebuilt from the commit log", zap.String("topic", p.topic), zap.Int32("partition", p.index), zap.Int("batches", n))
	}
	return q, nil
}

// openQueueFile opens p's queue directory as it is on disk.
func (s *Store) openQueueFile(p *Partition) (*consumequeue.Queue, error) {
	q, err := consumequeue.Open(p.dir, s.cfg.ConsumeQueueEntries)
	if err != nil {
		return nil, fmt.Errorf("partition: open %s-%d: %w", p.topic, p.index, err)
	}
	return q, nil
}

// closeQueue closes p's queue at Close or Abandon (if it was ever opened)
// and keeps it from opening again.
func (p *Partition) closeQueue() {
	p.openMu.Lock()
	defer p.openMu.Unlock()
	if p.lazy.err == nil {
		p.lazy.err = storageError(fmt.Sprintf("index of %s-%d", p.topic, p.index), errStoreClosed)
	}
	if q := p.cq.Load(); q != nil {
		q.Close()
	}
}

// destroyQueue removes p's queue (its topic was deleted), open or not,
// and keeps it from opening again.
func (p *Partition) destroyQueue() error {
	p.openMu.Lock()
	defer p.openMu.Unlock()
	p.lazy.err = fmt.Errorf("partition: %s-%d: %w", p.topic, p.index, kerr.UnknownTopicOrPartition)
	if q := p.cq.Load(); q != nil {
		return q.Destroy()
	}
	if err := os.RemoveAll(p.dir); err != nil {
		return fmt.Errorf("partition: remove index of %s-%d: %w", p.topic, p.index, err)
	}
	return nil // DeleteTopic removes and syncs the topic's directory
}
