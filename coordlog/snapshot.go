package coordlog

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"os"

	"go.uber.org/zap"

	klog "github.com/kbroker/kbroker/log"
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Snapshot writes the live state to the snapshot file and moves the
// partitions' log start up to the new cut, so that retention can delete
// the commit-log files that only older records needed. The cut of a
// partition is the end of the writes applied in log order whose bytes the
// commit log has made durable; state past the cut is in the file too, and
// replay of the records from the cut reproduces it (the file is written
// once the log is durable through all of it). Nothing is written when
// neither the state nor a cut changed.
func (l *Log[R]) Snapshot() error {
	l.snapMu.Lock()
	defer l.snapMu.Unlock()
	flushed := l.ps.CommitLog().FlushedPosition()
	l.mu.Lock()
	cuts := make([]int64, len(l.parts))
	moved := false
	for i := range l.parts {
		cut := l.mu.cut[i]
		if l.startEnd <= flushed && l.startNext[i] > cut {
			cut = l.startNext[i]
		}
		a := l.mu.applied[i]
		n := 0
		for n < len(a) && a[n].end <= flushed {
			cut = max(cut, a[n].next)
			n++
		}
		l.mu.applied[i] = append(a[:0], a[n:]...)
		// Transactions pin the cut at their first offset until the
		// cut can pass their marker too (see closedTxn).
		bound := cut
		for _, first := range l.mu.openTxn[i] {
			bound = min(bound, first)
		}
		for _, c := range l.mu.closedTxn[i] {
			if cut < c.markerNext {
				bound = min(bound, c.first)
			}
		}
		cut = max(bound, l.mu.cut[i])
		cuts[i] = cut
		moved = moved || cut != l.mu.cut[i]
	}
	if !moved && !l.mu.dirty {
		l.mu.Unlock()
		return nil
	}
	data := l.encodeLocked(cuts)
	l.mu.dirty = false
	l.mu.Unlock()

	// The state may hold the effect of writes that the flush mode
	// acknowledged before the disk had them (async and pool modes apply a
	// write once appended; pool mode loses its buffers to a kill, both to
	// a power loss). A snapshot that outlived them would be ahead of the
	// log with no record left past its cut to bring it back: a
	// transaction completed in the snapshot whose markers are gone would
	// hang its partitions forever. So the log is made durable through
	// every write applied so far (all appended before this point) first.
	if err := l.ps.Sync(context.Background(), l.ps.CommitLog().WrotePosition()); err != nil {
		l.mu.Lock()
		l.mu.dirty = true
		l.mu.Unlock()
		return fmt.Errorf("%s: make the snapshot's records durable: %w", l.cfg.Name, err)
	}
	if err := klog.WriteFileAtomic(l.cfg.SnapshotPath, data); err != nil {
		l.mu.Lock()
		l.mu.dirty = true
		l.mu.Unlock()
		return fmt.Errorf("%s: write snapshot: %w", l.cfg.Name, err)
	}
	l.mu.Lock()
	copy(l.mu.cut, cuts)
	for i := range l.mu.closedTxn {
		kept := l.mu.closedTxn[i][:0]
		for _, c := range l.mu.closedTxn[i] {
			if cuts[i] < c.markerNext {
				kept = append(kept, c)
			}
		}
		l.mu.closedTxn[i] = kept
	}
	l.mu.Unlock()
	for i, p := range l.parts {
		to := min(cuts[i], p.HighWatermark())
		if to <= p.LogStartOffset() {
			continue
		}
		if _, err := p.DeleteRecords(to); err != nil {
			l.lg.Warn(l.cfg.Name+": move log start to the snapshot", zap.Int("partition", i), zap.Int64("offset", to), zap.Error(err))
		}
	}
	return nil
}

// encodeLocked encodes the live state with the given cuts.
func (l *Log[R]) encodeLocked(cuts []int64) []byte {
	b := append([]byte(nil), l.cfg.Magic...)
	b = binary.BigEndian.AppendUint32(b, uint32(len(cuts)))
	for _, c := range cuts {
		b = binary.BigEndian.AppendUint64(b, uint64(c))
	}
	var kv []byte
	l.st.Live(func(r *R) {
		kv = l.st.AppendKey(kv[:0], r)
		b = binary.BigEndian.AppendUint32(b, uint32(len(kv)))
		b = append(b, kv...)
		kv, _ = l.st.AppendValue(kv[:0], r)
		b = binary.BigEndian.AppendUint32(b, uint32(len(kv)))
		b = append(b, kv...)
	})
	return binary.BigEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
}

// loadSnapshot applies the snapshot, if there is one, and takes its cuts.
func (l *Log[R]) loadSnapshot() (bool, error) {
	path := l.cfg.SnapshotPath
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("%s: read snapshot: %w", l.cfg.Name, err)
	}
	if err := l.decodeSnapshot(data); err != nil {
		return false, fmt.Errorf("%s: snapshot %s: %w", l.cfg.Name, path, err)
	}
	return true, nil
}

// decodeSnapshot applies a snapshot's records and takes its cuts.
func (l *Log[R]) decodeSnapshot(data []byte) error {
	magic := len(l.cfg.Magic)
	if len(data) < magic+8 || string(data[:magic]) != l.cfg.Magic {
		return fmt.Errorf("%w: bad header", ErrCorrupt)
	}
	body := data[:len(data)-4]
	if crc32.Checksum(body, castagnoli) != binary.BigEndian.Uint32(data[len(data)-4:]) {
		return fmt.Errorf("%w: checksum mismatch", ErrCorrupt)
	}
	b := body[magic:]
	n := binary.BigEndian.Uint32(b)
	b = b[4:]
	if int(n) != len(l.parts) {
		return fmt.Errorf("snapshot of %d partitions for %d", n, len(l.parts))
	}
	if len(b) < 8*int(n) {
		return fmt.Errorf("%w: short cuts", ErrCorrupt)
	}
	for i := range l.mu.cut {
		l.mu.cut[i] = int64(binary.BigEndian.Uint64(b))
		b = b[8:]
	}
	next := func() ([]byte, bool) {
		if len(b) < 4 {
			return nil, false
		}
		n := binary.BigEndian.Uint32(b)
		if uint64(len(b)-4) < uint64(n) {
			return nil, false
		}
		v := b[4 : 4+n]
		b = b[4+n:]
		return v, true
	}
	for len(b) > 0 {
		k, ok1 := next()
		v, ok2 := next()
		if !ok1 || !ok2 {
			return fmt.Errorf("%w: truncated record", ErrCorrupt)
		}
		r, ok, err := l.st.Decode(k, v)
		if err != nil {
			return err
		}
		if ok {
			l.st.Apply(&r)
		}
	}
	return nil
}
