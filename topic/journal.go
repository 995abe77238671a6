package topic

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"

	klog "github.com/kbroker/kbroker/log"
)

// The journal, <dir>/topics.journal, holds the mutations made since the
// topics file was last written, so that a mutation costs one fdatasync of
// a small append instead of rewriting the whole file (two fsyncs, more
// with the directory):
//
//	0      4         8           12          16
//	+------+---------+-----------+-----------+
//	| KBTJ | version | base crc  | base len  |   header
//	+------+---------+-----------+-----------+
//	| len u32 BE | crc32c u32 BE | JSON (len bytes)  |  record, repeated
//	+------------+---------------+-------------------+
//	| zeros to the end of the allocated file         |
//	+------------------------------------------------+
//
// A record is {"put": <topic as in the topics file>} for a created or
// changed topic, or {"del": "<name>"}. Base crc and len identify the topics
// file the records apply to: the CRC-32C and length of its compact topics
// array. A journal whose base does not match the topics file is left over
// from before a compaction that finished, and is ignored. Records end at
// the first zero length; a record whose checksum fails ends them too: it
// was being written when the process died, so it was never acknowledged.
//
// Compaction (at Open, at Close and when the journal passes
// journalCompactBytes) writes the whole state to the topics file as before
// and then replaces the journal with an empty one based on it (written to
// a temporary file, fsynced, renamed, directory fsynced).
const (
	journalName         = "topics.journal"
	journalMagic        = "KBTJ"
	journalVersion      = 1
	journalHeaderSize   = 16
	journalRecordHeader = 8
	// journalMaxRecord bounds a record's length as read from disk.
	journalMaxRecord = 1 << 20
	// journalAllocStep is how much the journal is allocated ahead, so that
	// an append does not change the file size (fdatasync then writes no
	// size update).
	journalAllocStep = 256 << 10
	// journalCompactBytes is the journal size above which a mutation
	// compacts it into the topics file.
	journalCompactBytes = 4 << 20
)

// journalRecord is one record's JSON.
type journalRecord struct {
	Put *fileTopic `json:"put,omitempty"`
	Del string     `json:"del,omitempty"`
}

// journalBase identifies a topics file: its topics array's CRC and length.
type journalBase struct {
	crc uint32
	len uint32
}

// journal is the open journal file. Appends happen under Registry.mu;
// syncMu serialises fdatasync calls (lock order: Registry.mu, then
// syncMu; sync never takes Registry.mu).
type journal struct {
	path string
	f    *os.File
	tail atomic.Int64 // end of the appended records; written under Registry.mu
	size int64        // allocated length of the file; under Registry.mu

	syncMu sync.Mutex
	synced atomic.Int64          // records below this are durable
	err    atomic.Pointer[error] // a failed fdatasync: sticky
}

// readJournal returns the records of the journal in dir that apply to
// base, in order, and where they end (0 when the journal is missing or
// based on another topics file: it has none).
func readJournal(dir string, base journalBase) ([]journalRecord, int64, error) {
	path := filepath.Join(dir, journalName)
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, 0, nil
	}
	if err != nil {
		return nil, 0, fmt.Errorf("topic: read %s: %w", path, err)
	}
	return parseJournal(path, data, base)
}

// parseJournal returns the records of journal contents data that apply to
// base and the offset just past the last one (0 when none apply); path
// names the file in errors.
func parseJournal(path string, data []byte, base journalBase) ([]journalRecord, int64, error) {
	if len(data) < journalHeaderSize || string(data[:4]) != journalMagic {
		// Torn while being created: its rename never happened, or it
		// did not finish before a crash; either way it holds nothing.
		return nil, 0, nil
	}
	if v := binary.BigEndian.Uint32(data[4:]); v != journalVersion {
		return nil, 0, &CorruptionError{File: path, Reason: fmt.Sprintf("journal version %d, this kbroker reads version %d", v, journalVersion)}
	}
	if binary.BigEndian.Uint32(data[8:]) != base.crc || binary.BigEndian.Uint32(data[12:]) != base.len {
		return nil, 0, nil
	}
	var out []journalRecord
	off := journalHeaderSize
	for off+journalRecordHeader <= len(data) {
		n := int(binary.BigEndian.Uint32(data[off:]))
		sum := binary.BigEndian.Uint32(data[off+4:])
		if n == 0 || n > journalMaxRecord || off+journalRecordHeader+n > len(data) {
			break
		}
		body := data[off+journalRecordHeader : off+journalRecordHeader+n]
		if crc32.Checksum(body, castagnoli) != sum {
			break // a torn last record, never acknowledged
		}
		var rec journalRecord
		if err := json.Unmarshal(body, &rec); err != nil || (rec.Put == nil) == (rec.Del == "") {
			return nil, 0, &CorruptionError{File: path, Reason: fmt.Sprintf("record at %d is not a put or a delete", off)}
		}
		out = append(out, rec)
		off += journalRecordHeader + n
	}
	return out, int64(off), nil
}

// openJournal opens the existing journal in dir for appending after its
// valid records, which end at tail; nothing is written. Open uses it when
// a compaction cannot be written (a full disk), so that a restart needs
// no space.
func openJournal(dir string, tail int64) (*journal, error) {
	path := filepath.Join(dir, journalName)
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return nil, fmt.Errorf("topic: open %s: %w", path, err)
	}
	st, err := f.Stat()
	if err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("topic: stat %s: %w", path, err)
	}
	j := &journal{path: path, f: f, size: st.Size()}
	j.tail.Store(tail)
	j.synced.Store(tail)
	return j, nil
}

// createJournal replaces the journal in dir with an empty one based on
// base, durably, and opens it for appending.
func createJournal(dir string, base journalBase) (*journal, error) {
	path := filepath.Join(dir, journalName)
	tmp := path + klog.TempSuffix
	f, err := os.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, fmt.Errorf("topic: create %s: %w", tmp, err)
	}
	fail := func(err error) (*journal, error) {
		_ = f.Close()
		_ = os.Remove(tmp)
		return nil, err
	}
	var hdr [journalHeaderSize]byte
	copy(hdr[:], journalMagic)
	binary.BigEndian.PutUint32(hdr[4:], journalVersion)
	binary.BigEndian.PutUint32(hdr[8:], base.crc)
	binary.BigEndian.PutUint32(hdr[12:], base.len)
	if _, err := f.WriteAt(hdr[:], 0); err != nil {
		return fail(fmt.Errorf("topic: write %s: %w", tmp, err))
	}
	if err := allocate(f, journalHeaderSize, journalAllocStep); err != nil {
		return fail(fmt.Errorf("topic: allocate %s: %w", tmp, err))
	}
	if err := f.Sync(); err != nil {
		return fail(fmt.Errorf("topic: fsync %s: %w", tmp, err))
	}
	if err := os.Rename(tmp, path); err != nil {
		return fail(fmt.Errorf("topic: rename %s: %w", tmp, err))
	}
	if err := klog.SyncDir(dir); err != nil {
		_ = f.Close()
		return nil, err
	}
	j := &journal{path: path, f: f, size: journalHeaderSize + journalAllocStep}
	j.tail.Store(journalHeaderSize)
	j.synced.Store(journalHeaderSize)
	return j, nil
}

// allocate reserves [off, off+n) of f and zeroes it (fallocate, or zeros
// written where the filesystem has no fallocate).
func allocate(f *os.File, off, n int64) error {
	for {
		err := unix.Fallocate(int(f.Fd()), 0, off, n)
		if err == unix.EINTR {
			continue
		}
		if err == unix.EOPNOTSUPP {
			_, err := f.WriteAt(make([]byte, n), off)
			return err
		}
		return err
	}
}

// appendLocked writes one record at the tail and returns the position
// just past it; the record is durable once sync reaches that position. A
// failed write leaves the tail where it was (the next record overwrites
// what was written), so it is not sticky. The caller holds Registry.mu.
func (j *journal) appendLocked(rec journalRecord, hook func(step string) error) (int64, error) {
	if e := j.err.Load(); e != nil {
		return 0, *e
	}
	body, err := json.Marshal(rec)
	if err != nil {
		return 0, fmt.Errorf("topic: encode journal record: %w", err)
	}
	if len(body) > journalMaxRecord {
		return 0, fmt.Errorf("topic: journal record of %d bytes exceeds %d", len(body), journalMaxRecord)
	}
	buf := make([]byte, journalRecordHeader+len(body)+journalRecordHeader)
	binary.BigEndian.PutUint32(buf, uint32(len(body)))
	binary.BigEndian.PutUint32(buf[4:], crc32.Checksum(body, castagnoli))
	copy(buf[journalRecordHeader:], body)
	// The trailing zero header marks the end even where the file was not
	// allocated with zeros; it lies where the next record goes.
	tail := j.tail.Load()
	end := tail + int64(journalRecordHeader+len(body))
	if need := end + journalRecordHeader; need > j.size {
		grow := max(journalAllocStep, need-j.size)
		if err := allocate(j.f, j.size, grow); err != nil {
			return 0, fmt.Errorf("topic: allocate %s: %w", j.path, err)
		}
		j.size += grow
	}
	if _, err := j.f.WriteAt(buf, tail); err != nil {
		return 0, fmt.Errorf("topic: write %s: %w", j.path, err)
	}
	if hook != nil {
		if err := hook("journal-written"); err != nil {
			return 0, err
		}
	}
	j.tail.Store(end)
	return end, nil
}

// sync makes the records below end durable. Concurrent callers share
// fdatasync calls: one that finds its records covered by a sync that ran
// while it waited returns at once (a group commit). A failure is sticky:
// after a failed fdatasync the page cache cannot be trusted.
func (j *journal) sync(end int64) error {
	if j.synced.Load() >= end {
		return nil
	}
	j.syncMu.Lock()
	defer j.syncMu.Unlock()
	if e := j.err.Load(); e != nil {
		return *e
	}
	if j.synced.Load() >= end {
		return nil
	}
	upto := j.tail.Load() // everything appended so far rides along
	for {
		err := unix.Fdatasync(int(j.f.Fd()))
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			err = fmt.Errorf("topic: fdatasync %s: %w", j.path, err)
			j.err.CompareAndSwap(nil, &err)
			return err
		}
		break
	}
	j.synced.Store(upto)
	return nil
}

// retireLocked marks every record appended so far durable (a compaction
// wrote them to the topics file) so that waiters return without touching
// the file, and closes it. The caller holds Registry.mu.
func (j *journal) retireLocked() error {
	j.syncMu.Lock()
	defer j.syncMu.Unlock()
	j.synced.Store(j.tail.Load())
	return j.close()
}

// close closes the file (none for a missing journal).
func (j *journal) close() error {
	if j.f == nil {
		return nil
	}
	if err := j.f.Close(); err != nil {
		return fmt.Errorf("topic: close %s: %w", j.path, err)
	}
	return nil
}

// baseOf returns the journal base of a topics file's contents.
func baseOf(body []byte) journalBase {
	return journalBase{crc: crc32.Checksum(body, castagnoli), len: uint32(len(body))}
}
