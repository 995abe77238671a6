package partition

// The clean store of a compacted partition (COMPACTION-REFERENCE.md §4.4,
// option A with a separate clean index): the batches the log cleaner kept,
// in one sealed file per generation, served by sendfile like commit-log
// data. Offsets below the generation's clean end are read from it; offsets
// at or above it from the consume queue and the shared commit log, which
// is then free to delete the files that held the cleaned range.
//
//	<data>/compacted/<topic id>/<partition>/manifest               the published generation
//	<data>/compacted/<topic id>/<partition>/00000000000000000007   its data: Kafka batches, back to back
//
// The data file holds record batches exactly as they are served, each
// with its base offset; batch headers give the index, so there is no index
// file. A file is written once, fsynced, and never changed.
//
// Manifest, big-endian, written with log.WriteFileAtomic (temporary file,
// fsync, rename, directory fsync): the rename is the commit point of a
// cleaning pass, standing for Kafka's .swap renames plus its
// cleaner-offset-checkpoint.
//
//	0    4        6            14          22          30          38          46
//	+----+--------+------------+-----------+-----------+-----------+-----------+--------+
//	|KBCM| version| generation | log start | deduped   | clean end | data size | crc32c |
//	|    | u16 = 1| u64        | i64       | i64       | i64       | i64       | of 0..46
//	+----+--------+------------+-----------+-----------+-----------+-----------+--------+
//
// The log start is the partition's when the pass began: compaction never
// moves it, so recovery must not take the first surviving batch for it.
// Offsets below "deduped" were cleaned; the store may also hold batches
// from there up to the clean end copied unchanged ("evacuated": moved out
// of the commit log so that an idle compacted partition does not pin the
// shared files), which later passes clean like dirty data.
//
// Recovery loads the manifest, maps its data file (which must have exactly
// the recorded size), rebuilds the index from the batch headers and
// deletes every other file of the directory (a pass that crashed before
// its rename). A missing directory or manifest is a partition never
// cleaned; a manifest that does not verify, or a data file that does not
// match it, is an error: the cleaned range has no other copy.

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"

	"github.com/kbroker/kbroker/consumequeue"
	klog "github.com/kbroker/kbroker/log"
	"github.com/kbroker/kbroker/partition/batch"
)

const (
	manifestName    = "manifest"
	manifestMagic   = "KBCM"
	manifestVersion = 1
	manifestSize    = 50
)

// errCorruptManifest is returned for a manifest that does not verify.
var errCorruptManifest = errors.New("partition: corrupt compaction manifest")

// manifest is the published state of a clean store.
type manifest struct {
	generation uint64
	logStart   int64
	deduped    int64
	cleanEnd   int64
	dataSize   int64
}

func (m manifest) encode() []byte {
	b := make([]byte, manifestSize)
	copy(b, manifestMagic)
	be := binary.BigEndian
	be.PutUint16(b[4:], manifestVersion)
	be.PutUint64(b[6:], m.generation)
	be.PutUint64(b[14:], uint64(m.logStart))
	be.PutUint64(b[22:], uint64(m.deduped))
	be.PutUint64(b[30:], uint64(m.cleanEnd))
	be.PutUint64(b[38:], uint64(m.dataSize))
	be.PutUint32(b[46:], crc32.Checksum(b[:46], castagnoli))
	return b
}

func decodeManifest(b []byte) (manifest, error) {
	if len(b) != manifestSize || string(b[:4]) != manifestMagic {
		return manifest{}, fmt.Errorf("%w: %d bytes", errCorruptManifest, len(b))
	}
	be := binary.BigEndian
	if crc := crc32.Checksum(b[:46], castagnoli); crc != be.Uint32(b[46:]) {
		return manifest{}, fmt.Errorf("%w: checksum mismatch", errCorruptManifest)
	}
	if v := be.Uint16(b[4:]); v != manifestVersion {
		return manifest{}, fmt.Errorf("%w: version %d", errCorruptManifest, v)
	}
	m := manifest{generation: be.Uint64(b[6:]), logStart: int64(be.Uint64(b[14:])), deduped: int64(be.Uint64(b[22:])),
		cleanEnd: int64(be.Uint64(b[30:])), dataSize: int64(be.Uint64(b[38:]))}
	if m.logStart < 0 || m.deduped < m.logStart || m.cleanEnd < m.deduped || m.dataSize < 0 || m.generation > 1<<62 {
		return manifest{}, fmt.Errorf("%w: generation %d, log start %d, deduped %d, clean end %d, size %d",
			errCorruptManifest, m.generation, m.logStart, m.deduped, m.cleanEnd, m.dataSize)
	}
	return m, nil
}

// cleanView is one published generation of a partition's clean store.
// It is immutable; the cleaner publishes a new one with an atomic pointer.
type cleanView struct {
	gen uint64
	// start is the log start offset when the generation was written:
	// the first offset the view may answer for.
	start int64
	// deduped is where the cleaned part ends; batches from there to end
	// were evacuated unchanged and are still dirty.
	deduped int64
	// end is the clean end: offsets below it are served from this view
	// (those it does not hold were cleaned away), offsets at or above it
	// from the consume queue.
	end int64
	// file holds the batches; nil when none survived.
	file *klog.MappedFile
	// entries index the batches in offset order; Pos is the byte offset
	// in file and MaxTimestampSoFar the running maximum within the view.
	entries []consumequeue.Entry
	// minHorizon is the earliest KIP-534 delete horizon at which a pass
	// would remove something from this view (tombstones, emptied
	// transaction markers), or -1: the cleaner runs then even without new
	// dirty data. After a restart it is the earliest horizon of any
	// stamped batch, a safe overestimate of the work.
	minHorizon int64
}

// find returns the index of the first entry holding offset or after it.
func (v *cleanView) find(offset int64) int {
	return sort.Search(len(v.entries), func(i int) bool { return v.entries[i].NextOffset() > offset })
}

// findTimestamp returns the index of the first entry whose running maximum
// timestamp reaches ts, or len(entries).
func (v *cleanView) findTimestamp(ts int64) int {
	return sort.Search(len(v.entries), func(i int) bool { return v.entries[i].MaxTimestampSoFar >= ts })
}

// size is the number of bytes of the view's batches.
func (v *cleanView) size() int64 {
	if v == nil || len(v.entries) == 0 {
		return 0
	}
	last := v.entries[len(v.entries)-1]
	return last.Pos + int64(last.Size)
}

// indexBatches rebuilds the index of a data file from its batch headers,
// checking that every batch is whole, offsets strictly increase and stay
// below end.
func indexBatches(b []byte, end int64) ([]consumequeue.Entry, int64, error) {
	var out []consumequeue.Entry
	minHorizon := int64(-1)
	var pos int64
	next := int64(-1)
	runMax := int64(batch.NoTimestamp)
	for pos < int64(len(b)) {
		h, err := batch.ParseHeader(b[pos:])
		if err != nil {
			return nil, -1, fmt.Errorf("batch at %d: %w", pos, err)
		}
		size := int64(h.Size())
		if h.Length < batch.HeaderSize-batch.LogOverhead || size > int64(len(b))-pos {
			return nil, -1, fmt.Errorf("batch at %d: length %d with %d bytes left", pos, h.Length, int64(len(b))-pos)
		}
		if h.BaseOffset < next || h.LastOffsetDelta < 0 || h.NextOffset(h.BaseOffset) > end {
			return nil, -1, fmt.Errorf("batch at %d: offsets %d+%d after %d, clean end %d", pos, h.BaseOffset, h.LastOffsetDelta, next, end)
		}
		if h.HasDeleteHorizon() && (minHorizon < 0 || h.BaseTimestamp < minHorizon) {
			minHorizon = h.BaseTimestamp
		}
		runMax = max(runMax, h.MaxTimestamp)
		out = append(out, consumequeue.Entry{
			Pos: pos, BaseOffset: h.BaseOffset, MaxTimestampSoFar: runMax, Size: int32(size),
			LastOffsetDelta: h.LastOffsetDelta, Attributes: h.Attributes,
		})
		next = h.NextOffset(h.BaseOffset)
		pos += size
	}
	return out, minHorizon, nil
}

// loadCleanStore opens the clean store in dir: the published view, or nil
// when the partition was never cleaned. Files of unpublished generations
// are removed.
func loadCleanStore(dir string) (*cleanView, error) {
	raw, err := os.ReadFile(filepath.Join(dir, manifestName))
	if errors.Is(err, fs.ErrNotExist) {
		if err := removeAllBut(dir, ""); err != nil {
			return nil, err
		}
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("partition: read %s: %w", dir, err)
	}
	m, err := decodeManifest(raw)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", dir, err)
	}
	name := klog.FileName(int64(m.generation))
	if err := removeAllBut(dir, name); err != nil {
		return nil, err
	}
	v := &cleanView{gen: m.generation, start: m.logStart, deduped: m.deduped, end: m.cleanEnd, minHorizon: -1}
	if m.dataSize == 0 {
		return v, nil
	}
	st, err := os.Stat(filepath.Join(dir, name))
	if err != nil {
		return nil, fmt.Errorf("partition: clean store %s: %w", dir, err)
	}
	if st.Size() != m.dataSize {
		return nil, fmt.Errorf("%w: %s has %d bytes, the manifest says %d", errCorruptManifest, filepath.Join(dir, name), st.Size(), m.dataSize)
	}
	mf, err := klog.OpenMappedFile(dir, int64(m.generation), m.dataSize)
	if err != nil {
		return nil, fmt.Errorf("partition: clean store %s: %w", dir, err)
	}
	var ierr error
	if _, err := mf.View(func(b []byte) { v.entries, v.minHorizon, ierr = indexBatches(b, m.cleanEnd) }); err != nil || ierr != nil {
		mf.Close()
		return nil, fmt.Errorf("partition: clean store %s: %w", filepath.Join(dir, name), errors.Join(err, ierr))
	}
	v.file = mf
	return v, nil
}

// removeAllBut removes every file of dir except keep (and the manifest).
func removeAllBut(dir, keep string) error {
	des, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("partition: clean store %s: %w", dir, err)
	}
	for _, de := range des {
		if de.Name() == keep || de.Name() == manifestName {
			continue
		}
		if err := os.Remove(filepath.Join(dir, de.Name())); err != nil {
			return fmt.Errorf("partition: clean store: %w", err)
		}
	}
	return nil
}

// cleanWriter writes the data file of a new generation.
type cleanWriter struct {
	dir     string
	gen     uint64
	f       *os.File
	w       *bufio.Writer
	pos     int64
	entries []consumequeue.Entry
	runMax  int64
}

func newCleanWriter(dir string, gen uint64) (*cleanWriter, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("partition: clean store: %w", err)
	}
	f, err := os.OpenFile(filepath.Join(dir, klog.FileName(int64(gen))), os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, fmt.Errorf("partition: clean store: %w", err)
	}
	return &cleanWriter{dir: dir, gen: gen, f: f, w: bufio.NewWriterSize(f, 256<<10), runMax: batch.NoTimestamp}, nil
}

// add appends one batch (whole, verified by the caller).
func (cw *cleanWriter) add(b []byte) error {
	h, err := batch.ParseHeader(b)
	if err != nil {
		return err
	}
	if _, err := cw.w.Write(b); err != nil {
		return fmt.Errorf("partition: clean store write: %w", err)
	}
	cw.runMax = max(cw.runMax, h.MaxTimestamp)
	cw.entries = append(cw.entries, consumequeue.Entry{
		Pos: cw.pos, BaseOffset: h.BaseOffset, MaxTimestampSoFar: cw.runMax, Size: int32(len(b)),
		LastOffsetDelta: h.LastOffsetDelta, Attributes: h.Attributes,
	})
	cw.pos += int64(len(b))
	return nil
}

// abort removes the unfinished file.
func (cw *cleanWriter) abort() {
	_ = cw.f.Close()
	_ = os.Remove(cw.f.Name())
}

// publish makes the generation durable and current on disk: data fsynced,
// then the manifest replaced atomically (the commit point). It returns the
// new view, mapped. On an error the previous generation stays published.
func (cw *cleanWriter) publish(logStart, deduped, cleanEnd int64) (*cleanView, error) {
	err := cw.w.Flush()
	if err == nil {
		err = cw.f.Sync()
	}
	if cerr := cw.f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = os.Remove(cw.f.Name())
		return nil, fmt.Errorf("partition: clean store write: %w", err)
	}
	m := manifest{generation: cw.gen, logStart: logStart, deduped: deduped, cleanEnd: cleanEnd, dataSize: cw.pos}
	if err := klog.WriteFileAtomic(filepath.Join(cw.dir, manifestName), m.encode()); err != nil {
		_ = os.Remove(cw.f.Name())
		return nil, err
	}
	v := &cleanView{gen: cw.gen, start: logStart, deduped: deduped, end: cleanEnd, entries: slices.Clip(cw.entries), minHorizon: -1}
	if cw.pos == 0 {
		_ = os.Remove(cw.f.Name())
		return v, nil
	}
	mf, err := klog.OpenMappedFile(cw.dir, int64(cw.gen), cw.pos)
	if err != nil {
		// Published but not mapped: a restart maps it. Until then the
		// cleaner keeps serving nothing new; report it.
		return nil, fmt.Errorf("partition: map the clean store: %w", err)
	}
	v.file = mf
	return v, nil
}
