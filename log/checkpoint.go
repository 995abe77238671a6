package log

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// Checkpoint is what the store remembers about itself between runs
// (RocketMQ's StoreCheckpoint).
type Checkpoint struct {
	// Durable is the global position below which every byte was flushed to
	// disk when the checkpoint was written. Rewritten after flushes without
	// an fsync of its own: a stale value is only smaller, hence safe.
	Durable int64
	// End is the global position just past the last entry. Exact only after
	// a clean stop; recovery ignores it after a crash.
	End int64
	// Time is when the checkpoint was written (Unix milliseconds).
	Time int64
}

// Checkpoint file layout: two slots at fixed offsets, written alternately,
// each with a sequence number and a CRC. A torn write can only damage the
// slot being written, so the other one (one write older) stays valid: the
// file is updated atomically without rename or fsync.
//
//	slot: magic u32 | seq u64 | durable i64 | end i64 | time i64 | crc32c u32
const (
	checkpointMagic    uint32 = 0x4b42434b // "KBCK"
	checkpointSlotSize        = 44
	checkpointSlotGap         = 512 // slots in different disk sectors
)

// checkpointFile owns the checkpoint file.
type checkpointFile struct {
	mu   sync.Mutex
	f    *os.File
	seq  uint64
	last Checkpoint
	buf  [checkpointSlotSize]byte
}

// openCheckpoint opens (creating if needed) the checkpoint file at path and
// reads the newest valid slot. found is false when there is none.
func openCheckpoint(path string) (c *checkpointFile, cp Checkpoint, found bool, err error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, Checkpoint{}, false, fmt.Errorf("open checkpoint %s: %w", path, err)
	}
	c = &checkpointFile{f: f}
	var raw [checkpointSlotGap + checkpointSlotSize]byte
	n, err := f.ReadAt(raw[:], 0)
	if err != nil && n < len(raw) && !errors.Is(err, io.EOF) {
		f.Close()
		return nil, Checkpoint{}, false, fmt.Errorf("read checkpoint %s: %w", path, err)
	}
	c.seq, cp, found = newestSlot(raw[:n])
	c.last = cp
	return c, cp, found, nil
}

// ReadCheckpoint reads the checkpoint of the store whose data directory is
// dir (the file dir/checkpoint) without opening the store or changing
// anything: the newest valid slot. It is for tools and tests, e.g. to learn
// the durable position a crashed run recorded. A missing file is an error
// wrapping os.ErrNotExist; a file with no valid slot, ErrNoCheckpoint.
func ReadCheckpoint(dir string) (Checkpoint, error) {
	path := filepath.Join(dir, "checkpoint")
	f, err := os.Open(path)
	if err != nil {
		return Checkpoint{}, fmt.Errorf("read checkpoint: %w", err)
	}
	defer f.Close()
	var raw [checkpointSlotGap + checkpointSlotSize]byte
	n, err := f.ReadAt(raw[:], 0)
	if err != nil && !errors.Is(err, io.EOF) {
		return Checkpoint{}, fmt.Errorf("read checkpoint %s: %w", path, err)
	}
	_, cp, found := newestSlot(raw[:n])
	if !found {
		return Checkpoint{}, fmt.Errorf("%w in %s", ErrNoCheckpoint, path)
	}
	return cp, nil
}

// newestSlot decodes the slots that raw (the start of a checkpoint file)
// holds whole and returns the valid one with the highest sequence number.
func newestSlot(raw []byte) (seq uint64, cp Checkpoint, found bool) {
	for _, off := range []int{0, checkpointSlotGap} {
		if off+checkpointSlotSize > len(raw) {
			continue
		}
		s, slot, ok := decodeCheckpointSlot(raw[off : off+checkpointSlotSize])
		if ok && (!found || s > seq) {
			seq, cp, found = s, slot, true
		}
	}
	return seq, cp, found
}

func decodeCheckpointSlot(b []byte) (uint64, Checkpoint, bool) {
	if binary.BigEndian.Uint32(b[0:]) != checkpointMagic {
		return 0, Checkpoint{}, false
	}
	if crc32.Checksum(b[:40], castagnoli) != binary.BigEndian.Uint32(b[40:]) {
		return 0, Checkpoint{}, false
	}
	return binary.BigEndian.Uint64(b[4:]), Checkpoint{
		Durable: int64(binary.BigEndian.Uint64(b[12:])),
		End:     int64(binary.BigEndian.Uint64(b[20:])),
		Time:    int64(binary.BigEndian.Uint64(b[28:])),
	}, true
}

// write stores cp in the older slot. With sync it also fdatasyncs (clean
// stop); otherwise the page cache carries it.
func (c *checkpointFile) write(cp Checkpoint, sync bool) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if cp.Time == 0 {
		cp.Time = time.Now().UnixMilli()
	}
	c.seq++
	b := c.buf[:]
	binary.BigEndian.PutUint32(b[0:], checkpointMagic)
	binary.BigEndian.PutUint64(b[4:], c.seq)
	binary.BigEndian.PutUint64(b[12:], uint64(cp.Durable))
	binary.BigEndian.PutUint64(b[20:], uint64(cp.End))
	binary.BigEndian.PutUint64(b[28:], uint64(cp.Time))
	binary.BigEndian.PutUint32(b[40:], crc32.Checksum(b[:40], castagnoli))
	off := int64(c.seq%2) * checkpointSlotGap
	if _, err := c.f.WriteAt(b, off); err != nil {
		return fmt.Errorf("write checkpoint %s: %w", c.f.Name(), err)
	}
	if sync {
		if err := unix.Fdatasync(int(c.f.Fd())); err != nil {
			return fmt.Errorf("fdatasync checkpoint %s: %w", c.f.Name(), err)
		}
	}
	c.last = cp
	return nil
}

func (c *checkpointFile) close() error { return c.f.Close() }

// createAbortMarker writes the abort file (holding the PID) and makes it
// durable. Its presence at the next start means this run did not stop
// cleanly (RocketMQ's abort file).
func createAbortMarker(dir, path string) error {
	if err := os.WriteFile(path, []byte(strconv.Itoa(os.Getpid())+"\n"), 0o644); err != nil {
		return fmt.Errorf("create abort marker: %w", err)
	}
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("open abort marker: %w", err)
	}
	err = f.Sync()
	f.Close()
	if err != nil {
		return fmt.Errorf("fsync abort marker: %w", err)
	}
	return SyncDir(dir)
}

// removeAbortMarker deletes the abort file durably: the last step of a
// clean stop.
func removeAbortMarker(dir, path string) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove abort marker: %w", err)
	}
	return SyncDir(dir)
}

// lockDir takes an exclusive flock on path so that two processes never open
// one data directory. The kernel drops it when the process dies.
func lockDir(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open lock %s: %w", path, err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, fmt.Errorf("%w: %s", ErrLocked, path)
		}
		return nil, fmt.Errorf("flock %s: %w", path, err)
	}
	return f, nil
}
