package partition

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"

	klog "github.com/kbroker/kbroker/log"
)

// checkpointName is the partitions' checkpoint in the metadata directory.
const checkpointName = "partitions"

// checkpointVersion is the format version of the checkpoint file.
const checkpointVersion = 1

// checkpoint is what the store persists about its partitions (Kafka's
// log-start-offset and recovery-point checkpoints plus producer snapshots
// and transaction indexes, in one file).
//
// Dispatched is a commit-log position below which every entry is indexed
// in its consume queue and the queues were flushed: recovery re-indexes
// only from there. Each partition's Next and LogStart let a partition whose
// batches were all deleted keep its offsets, and its producer snapshot
// covers every batch below Next.
type checkpoint struct {
	Dispatched int64
	Partitions map[[KeySize]byte]partitionCheckpoint
}

type partitionCheckpoint struct {
	LogStart  int64
	Next      int64
	Producers []byte
	// Aborted is the aborted-transaction index (txn.go), taken with
	// Producers: both cover the batches below Next. Omitted when empty,
	// so that checkpoints without transactions keep their old form.
	Aborted []byte `json:",omitempty"`
	// End is the commit-log position just past the partition's last batch
	// (an upper bound), so that recovery knows the log kept every batch
	// counted here when its end is not below End; then the queue may stay
	// closed until first used (lazy.go). Absent in checkpoints written
	// before it existed, which opens every queue.
	End *int64 `json:",omitempty"`
	// Summary is what retention and the size metric need of the
	// partition's batches, so that they can leave its queue closed after
	// a restart (lazy.go). Absent for a compacted partition with a clean
	// store and in older checkpoints: retention then opens the queue.
	Summary *queueSummary `json:",omitempty"`
}

// checkpointFile is the JSON form: keys in hex, a checksum over the body.
type checkpointFile struct {
	Version    int                            `json:"version"`
	Dispatched int64                          `json:"dispatched"`
	Partitions map[string]partitionCheckpoint `json:"partitions"`
	CRC        uint32                         `json:"crc"`
}

// castagnoli is the CRC-32C table of this package's files: the
// checkpoint, the producer-id blocks and the producer snapshots.
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// jsonChecksum is the CRC-32C of v's JSON form. The JSON files of this
// package (checkpoint, producer-id blocks) carry the checksum of their
// own form with the checksum field zero.
func jsonChecksum(v any) (uint32, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return 0, err
	}
	return crc32.Checksum(b, castagnoli), nil
}

func (f *checkpointFile) checksum() (uint32, error) {
	c := *f
	c.CRC = 0
	return jsonChecksum(c)
}

// readCheckpoint loads the checkpoint; a missing file is an empty one.
func readCheckpoint(dir string) (checkpoint, error) {
	cp := checkpoint{Partitions: map[[KeySize]byte]partitionCheckpoint{}}
	path := filepath.Join(dir, checkpointName)
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return cp, nil
	}
	if err != nil {
		return cp, fmt.Errorf("partition: read checkpoint %s: %w", path, err)
	}
	var f checkpointFile
	if err := json.Unmarshal(b, &f); err != nil {
		return cp, fmt.Errorf("partition: checkpoint %s is damaged: %w", path, err)
	}
	if f.Version != checkpointVersion {
		return cp, fmt.Errorf("partition: checkpoint %s has version %d, want %d", path, f.Version, checkpointVersion)
	}
	if sum, err := f.checksum(); err != nil || sum != f.CRC {
		return cp, fmt.Errorf("partition: checkpoint %s is damaged: checksum mismatch", path)
	}
	cp.Dispatched = f.Dispatched
	for k, v := range f.Partitions {
		raw, err := hex.DecodeString(k)
		if err != nil || len(raw) != KeySize {
			return cp, fmt.Errorf("partition: checkpoint %s has a bad key %q", path, k)
		}
		var key [KeySize]byte
		copy(key[:], raw)
		cp.Partitions[key] = v
	}
	return cp, nil
}

// writeCheckpoint replaces the checkpoint atomically: temp file, fsync,
// rename, fsync of the directory.
func writeCheckpoint(dir string, cp checkpoint) error {
	f := checkpointFile{Version: checkpointVersion, Dispatched: cp.Dispatched, Partitions: map[string]partitionCheckpoint{}}
	for k, v := range cp.Partitions {
		f.Partitions[hex.EncodeToString(k[:])] = v
	}
	sum, err := f.checksum()
	if err != nil {
		return fmt.Errorf("partition: encode checkpoint: %w", err)
	}
	f.CRC = sum
	b, err := json.Marshal(f)
	if err != nil {
		return fmt.Errorf("partition: encode checkpoint: %w", err)
	}
	return klog.WriteFileAtomic(filepath.Join(dir, checkpointName), b)
}

// Checkpoint persists every partition's offsets and producer state and the
// position up to which the consume queues are complete and flushed.
//
// The position is read first; then each partition is snapshotted under its
// lock. Any append that wrote below the position held that partition's
// lock until its consume-queue entry was written, so once every lock has
// been taken once, every entry below the position is indexed; flushing the
// queues then makes that true on disk. The snapshots may include batches
// past the position: recovery replays those, skipping what each queue and
// snapshot already holds.
func (s *Store) Checkpoint() error {
	s.checkpointMu.Lock()
	defer s.checkpointMu.Unlock()
	dispatched := s.clog.WrotePosition()
	if s.cfg.FlushMode == FlushAsyncPool {
		// Pool bytes are not in the files yet; recovery cannot replay them.
		dispatched = min(dispatched, s.clog.ReadPosition())
	}
	cp := checkpoint{Dispatched: dispatched, Partitions: map[[KeySize]byte]partitionCheckpoint{}}
	var live []*Partition
	for _, p := range s.allPartitions() {
		p.mu.Lock()
		end := p.mu.lastEnd
		pc := partitionCheckpoint{LogStart: p.logStart.Load(), Next: p.mu.next, End: &end}
		p.mu.producers.Expire(s.cfg.Now().UnixMilli(), s.cfg.ProducerExpirationMs)
		pc.Producers = p.mu.producers.AppendSnapshot(nil)
		pc.Aborted = p.appendAbortedSnapshot(nil)
		p.mu.Unlock()
		if p.deleted.Load() {
			continue
		}
		pc.Summary = p.summarize(pc.LogStart, pc.Next)
		if p.cq.Load() != nil {
			live = append(live, p) // a closed queue has nothing new
		}
		cp.Partitions[p.key] = pc
	}
	// The snapshots may hold appends that the flush mode acknowledged
	// before the commit log had them safe: async and pool modes apply an
	// append at once, and pool mode loses its buffers to a kill (both
	// lose the page cache to a power loss). Recovery cuts the newest
	// transaction back open when its marker is gone, but it cannot undo
	// an epoch that a lost marker bumped, nor reopen older transactions:
	// a coordinator recovered from the same log would write its markers
	// with the epoch it knows, the partition would refuse them as fenced,
	// and the transaction would stay open for ever. So the log is made
	// durable through every append the snapshots saw (each held its
	// partition's lock from its write to its state's update) first.
	if err := s.Sync(context.Background(), s.clog.WrotePosition()); err != nil {
		return fmt.Errorf("partition: checkpoint: make the snapshots' batches durable: %w", err)
	}
	if err := flushQueues(live); err != nil {
		return err
	}
	return writeCheckpoint(s.metaDir, cp)
}

// checkpointFlushers bounds the consume queues flushed at once.
const checkpointFlushers = 64

// flushQueues flushes the partitions' consume queues, many at once: each
// flush waits for msync and, for a queue with new files, directory fsyncs,
// and the filesystem's journal commits concurrent syncs together, so with
// thousands of new partitions a checkpoint (and a clean stop) takes a few
// journal commits instead of one per queue (measured on ext4 with 10,000
// new partitions: docs/BENCHMARKS.md).
func flushQueues(ps []*Partition) error {
	var (
		mu   sync.Mutex
		errs []error
		wg   sync.WaitGroup
		next atomic.Int64
	)
	for range min(len(ps), checkpointFlushers) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := int(next.Add(1) - 1); i < len(ps); i = int(next.Add(1) - 1) {
				p := ps[i]
				if err := p.cq.Load().Flush(); err != nil {
					mu.Lock()
					errs = append(errs, fmt.Errorf("partition: flush index of %s-%d: %w", p.topic, p.index, err))
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}
