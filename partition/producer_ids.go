package partition

// Producer id allocation for InitProducerId, after Kafka's ProducerIdManager:
// ids are handed out from blocks of ProducerIDBlockSize, and the end of the
// current block is persisted before any id in it is handed out, so an id is
// never given twice, not even across a crash. A restart skips what was left
// of the block it crashed in (Kafka loses the rest of a block the same way).
//
// The block end lives in <data>/metadata/producer_ids:
//
//	{"version":1,"next_block_start":N,"crc":C}
//
// where every id below N may have been handed out and C is the CRC-32C of
// the same JSON with crc 0 (the form of the partitions checkpoint). It is
// written atomically: a temporary file, fsynced, renamed over the old one,
// then the directory fsynced (log.WriteFileAtomic). It lives here, beside
// the partitions' checkpoint in the same directory, because it is storage:
// the broker's InitProducerId handler and the transaction coordinator only
// ask it for ids.

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"

	klog "github.com/kbroker/kbroker/log"
)

const (
	// ProducerIDBlockSize is how many ids one persisted block covers
	// (Kafka's ProducerIdsBlock.PRODUCER_ID_BLOCK_SIZE).
	ProducerIDBlockSize = 1000
	producerIDsFile     = "producer_ids"
	producerIDsVersion  = 1
)

// ProducerIDs hands out the broker's producer ids for InitProducerId
// (Kafka's ProducerIdManager). It is safe for concurrent use.
type ProducerIDs struct {
	dir string

	mu struct {
		sync.Mutex
		// next is the id handed out next.
		next int64
		// blockEnd is the persisted bound: ids below it may be handed
		// out without another write.
		blockEnd int64
	}
}

// producerIDsState is the file's JSON form.
type producerIDsState struct {
	Version        int    `json:"version"`
	NextBlockStart int64  `json:"next_block_start"`
	CRC            uint32 `json:"crc"`
}

func (s producerIDsState) checksum() uint32 {
	s.CRC = 0
	sum, _ := jsonChecksum(s) // a struct of numbers always marshals
	return sum
}

// OpenProducerIDs loads the persisted block bound from dir (created if
// needed). A missing file starts at id 0; a damaged one is an error, since
// guessing could hand out an id twice.
func OpenProducerIDs(dir string) (*ProducerIDs, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("partition: producer ids: %w", err)
	}
	m := &ProducerIDs{dir: dir}
	path := filepath.Join(dir, producerIDsFile)
	_ = os.Remove(path + klog.TempSuffix) // a write that a crash interrupted
	b, err := os.ReadFile(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return m, nil
	case err != nil:
		return nil, fmt.Errorf("partition: producer ids: %w", err)
	}
	var s producerIDsState
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("partition: producer ids file %s is damaged: %w", path, err)
	}
	if s.Version != producerIDsVersion {
		return nil, fmt.Errorf("partition: producer ids file %s has version %d, want %d", path, s.Version, producerIDsVersion)
	}
	if s.CRC != s.checksum() || s.NextBlockStart < 0 {
		return nil, fmt.Errorf("partition: producer ids file %s is damaged: checksum mismatch", path)
	}
	m.mu.next, m.mu.blockEnd = s.NextBlockStart, s.NextBlockStart
	return m, nil
}

// Next returns a producer id never handed out before. When the current
// block is used up it persists the next one first; a failed write hands out
// nothing and is retried by the next call. Errors wrap KAFKA_STORAGE_ERROR.
func (m *ProducerIDs) Next() (int64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.mu.next >= m.mu.blockEnd {
		end := m.mu.next + ProducerIDBlockSize
		if end < m.mu.next {
			return -1, fmt.Errorf("partition: producer ids exhausted: %w", kerr.KafkaStorageError)
		}
		if err := m.persist(end); err != nil {
			return -1, fmt.Errorf("partition: persist producer id block: %w: %w", kerr.KafkaStorageError, err)
		}
		m.mu.blockEnd = end
	}
	id := m.mu.next
	m.mu.next++
	return id, nil
}

// persist writes end as the new block bound, atomically and durably.
func (m *ProducerIDs) persist(end int64) error {
	s := producerIDsState{Version: producerIDsVersion, NextBlockStart: end}
	s.CRC = s.checksum()
	data, err := json.Marshal(s)
	if err != nil {
		return err
	}
	return klog.WriteFileAtomic(filepath.Join(m.dir, producerIDsFile), data)
}
