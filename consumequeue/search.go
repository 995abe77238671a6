package consumequeue

import (
	"encoding/binary"
	"fmt"
)

// warmEntries is how many entries at the end of a file make up its warm
// section: 8 KiB, as Kafka's index lookup (§2.5). Most fetches come from
// consumers near the end of the queue, so a search that probes the warm
// section first touches only its two pages.
const warmEntries = 8192 / EntrySize

// searchKey selects the monotone predicate a search looks for: every search
// finds the first entry for which it holds.
type searchKey uint8

const (
	byOffset searchKey = iota // NextOffset() > v: the batch holding offset v, or the next one
	byBase                    // BaseOffset >= v
	byTime                    // MaxTimestampSoFar >= v
	byEnd                     // End() > v (positions grow with offsets)
)

// match evaluates the predicate on the raw entry b, reading only the
// fields it needs.
func (k searchKey) match(b []byte, v int64) bool {
	b = b[:EntrySize]
	be := binary.BigEndian
	switch k {
	case byOffset:
		return int64(be.Uint64(b[offBase:]))+int64(int32(be.Uint32(b[offDelta:]))) >= v
	case byBase:
		return int64(be.Uint64(b[offBase:])) >= v
	case byTime:
		return int64(be.Uint64(b[offMaxTime:])) >= v
	default:
		return int64(be.Uint64(b[offPos:]))+int64(int32(be.Uint32(b[offSize:]))) > v
	}
}

// matchEntry evaluates the predicate on a decoded entry.
func (k searchKey) matchEntry(e *Entry, v int64) bool {
	switch k {
	case byOffset:
		return e.LastOffset() >= v
	case byBase:
		return e.BaseOffset >= v
	case byTime:
		return e.MaxTimestampSoFar >= v
	default:
		return e.End() > v
	}
}

// Find returns the first entry whose NextOffset is above offset: the batch
// holding offset, or the next batch when offset falls in a gap between
// batches or below the first entry. ok is false when there is none.
func (q *Queue) Find(offset int64) (Entry, bool) {
	h := q.search(byOffset, offset)
	return h.e, h.found && h.valid
}

// FindTimestamp returns the first entry whose MaxTimestampSoFar is at or
// above ts: the first batch that may hold a record with a timestamp ≥ ts
// (ListOffsets, retention.ms). ok is false when there is none.
func (q *Queue) FindTimestamp(ts int64) (Entry, bool) {
	h := q.search(byTime, ts)
	return h.e, h.found && h.valid
}

// hit is the result of a search.
type hit struct {
	fs       []*file // the snapshot searched
	fi, slot int     // where the entry is in fs
	e        Entry
	found    bool // some entry matched
	valid    bool // e passed its checksum (false only when racing a truncation)
}

// search finds the first entry matching k and v, starting over on a fresh
// list when a file it needed was removed meanwhile.
func (q *Queue) search(k searchKey, v int64) hit {
	for range readRetries {
		fs := *q.files.Load()
		h, stale, err := locate(fs, k, v)
		if err != nil {
			q.fail(fmt.Errorf("consumequeue: search %s: %w", q.dir, err))
			return hit{}
		}
		if !stale {
			return h
		}
	}
	return hit{}
}

// locate searches the snapshot fs. Because every predicate is monotone
// along the queue, the files whose first entry matches form a suffix; the
// answer is in the file just before that suffix, or else it is the first
// entry of the suffix. The file level uses the cached first entries, so
// only one file's mapping is touched.
func locate(fs []*file, k searchKey, v int64) (h hit, stale bool, err error) {
	h.fs = fs
	lo, hi := 0, len(fs)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if k.matchEntry(&fs[m].first, v) {
			hi = m
		} else {
			lo = m + 1
		}
	}
	if lo > 0 {
		f := fs[lo-1]
		slot, e, ok, held, err := f.find(k, v)
		if err != nil {
			return h, false, fmt.Errorf("%s: %w", f.mf.Path(), err)
		}
		if !held {
			return h, true, nil
		}
		if slot >= 0 {
			h.fi, h.slot, h.e, h.found, h.valid = lo-1, slot, e, true, ok
			return h, false, nil
		}
	}
	if lo < len(fs) {
		h.fi, h.slot, h.e, h.found, h.valid = lo, 0, fs[lo].first, true, true
	}
	return h, false, nil
}

// find returns the first slot of f whose entry matches, and that entry
// verified (ok), or slot -1 when none does. The first entry is known not
// to match. held is false when the file was already removed.
func (f *file) find(k searchKey, v int64) (slot int, e Entry, ok, held bool, err error) {
	slot = -1
	held, err = f.mf.View(func(data []byte) {
		n := len(data) / EntrySize
		lo, hi := 1, n
		// Probe the warm section first: if its first entry does not match
		// yet, the answer lies inside it, and the search stays within its
		// pages.
		if w := n - warmEntries; w > lo {
			if k.match(data[w*EntrySize:], v) {
				hi = w
			} else {
				lo = w + 1
			}
		}
		for lo < hi {
			m := int(uint(lo+hi) >> 1)
			if k.match(data[m*EntrySize:], v) {
				hi = m
			} else {
				lo = m + 1
			}
		}
		if lo < n {
			slot = lo
			e, ok = decode(data[lo*EntrySize:])
		}
	})
	return slot, e, ok, held, err
}
