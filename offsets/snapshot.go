package offsets

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"os"

	"go.uber.org/zap"

	klog "github.com/kbroker/kbroker/log"
)

// The snapshot file: the latest record of every key, as a compacted
// offsets topic would hold it.
//
//	magic "KBGOFF01"
//	uint32 partitions, then int64 cut per partition
//	records: uint32 key length, key, uint32 value length, value
//	uint32 CRC-32C of everything before it
var snapshotMagic = []byte("KBGOFF01")

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Snapshot writes the state to the snapshot file and moves the offsets
// partitions' log start up to the new cut, so that retention can delete the
// commit-log files that only older commits needed. The cut of a partition
// is the end of the writes applied in log order whose bytes the commit log
// has made durable; state past the cut is in the file too, and replay of
// the records from the cut reproduces it.
func (s *Store) Snapshot() error {
	s.snapMu.Lock()
	defer s.snapMu.Unlock()
	flushed := s.ps.CommitLog().FlushedPosition()
	s.mu.Lock()
	cuts := make([]int64, len(s.parts))
	moved := false
	for i := range s.parts {
		cut := s.mu.cut[i]
		if s.startEnd <= flushed && s.startNext[i] > cut {
			cut = s.startNext[i]
		}
		a := s.mu.applied[i]
		n := 0
		for n < len(a) && a[n].end <= flushed {
			cut = max(cut, a[n].next)
			n++
		}
		s.mu.applied[i] = append(a[:0], a[n:]...)
		cuts[i] = cut
		moved = moved || cut != s.mu.cut[i]
	}
	if !moved && !s.mu.dirty {
		s.mu.Unlock()
		return nil
	}
	data := s.encodeLocked(cuts)
	s.mu.dirty = false
	s.mu.Unlock()

	if err := klog.WriteFileAtomic(s.snapshotPath(), data); err != nil {
		s.mu.Lock()
		s.mu.dirty = true
		s.mu.Unlock()
		return fmt.Errorf("offsets: write snapshot: %w", err)
	}
	s.mu.Lock()
	copy(s.mu.cut, cuts)
	s.mu.Unlock()
	for i, p := range s.parts {
		to := min(cuts[i], p.HighWatermark())
		if to <= p.LogStartOffset() {
			continue
		}
		if _, err := p.DeleteRecords(to); err != nil {
			s.lg.Warn("offsets: move log start to the snapshot", zap.Int("partition", i), zap.Int64("offset", to), zap.Error(err))
		}
	}
	return nil
}

// encodeLocked encodes the state with the given cuts.
func (s *Store) encodeLocked(cuts []int64) []byte {
	b := append([]byte(nil), snapshotMagic...)
	b = binary.BigEndian.AppendUint32(b, uint32(len(cuts)))
	for _, c := range cuts {
		b = binary.BigEndian.AppendUint64(b, uint64(c))
	}
	var kv []byte
	put := func(r *rec) {
		kv = r.appendKey(kv[:0])
		b = binary.BigEndian.AppendUint32(b, uint32(len(kv)))
		b = append(b, kv...)
		kv = r.appendValue(kv[:0])
		b = binary.BigEndian.AppendUint32(b, uint32(len(kv)))
		b = append(b, kv...)
	}
	for id, g := range s.mu.groups {
		if g.meta != nil {
			put(&rec{group: id, isGroup: true, meta: g.meta})
		}
		for tp, o := range g.offsets {
			put(&rec{group: id, tp: tp, offset: o})
		}
	}
	return binary.BigEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
}

// loadSnapshot reads the snapshot into the state, if there is one.
func (s *Store) loadSnapshot() (bool, error) {
	path := s.snapshotPath()
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("offsets: read snapshot: %w", err)
	}
	if err := s.decodeSnapshot(data); err != nil {
		return false, fmt.Errorf("offsets: snapshot %s: %w", path, err)
	}
	return true, nil
}

var errCorrupt = errors.New("corrupt")

// decodeSnapshot applies a snapshot's records and takes its cuts.
func (s *Store) decodeSnapshot(data []byte) error {
	if len(data) < len(snapshotMagic)+8 || string(data[:len(snapshotMagic)]) != string(snapshotMagic) {
		return fmt.Errorf("%w: bad header", errCorrupt)
	}
	body := data[:len(data)-4]
	if crc32.Checksum(body, castagnoli) != binary.BigEndian.Uint32(data[len(data)-4:]) {
		return fmt.Errorf("%w: checksum mismatch", errCorrupt)
	}
	b := body[len(snapshotMagic):]
	n := binary.BigEndian.Uint32(b)
	b = b[4:]
	if int(n) != len(s.parts) {
		return fmt.Errorf("snapshot of %d partitions for %d", n, len(s.parts))
	}
	if len(b) < 8*int(n) {
		return fmt.Errorf("%w: short cuts", errCorrupt)
	}
	for i := range s.mu.cut {
		s.mu.cut[i] = int64(binary.BigEndian.Uint64(b))
		b = b[8:]
	}
	next := func() ([]byte, bool) {
		if len(b) < 4 {
			return nil, false
		}
		l := binary.BigEndian.Uint32(b)
		if uint64(len(b)-4) < uint64(l) {
			return nil, false
		}
		v := b[4 : 4+l]
		b = b[4+l:]
		return v, true
	}
	for len(b) > 0 {
		k, ok1 := next()
		v, ok2 := next()
		if !ok1 || !ok2 {
			return fmt.Errorf("%w: truncated record", errCorrupt)
		}
		r, ok, err := decodeRec(k, v)
		if err != nil {
			return err
		}
		if ok {
			s.applyLocked(&r)
		}
	}
	return nil
}
