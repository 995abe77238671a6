package consumequeue

import (
	"fmt"
	"math"
)

// Last returns the last entry.
func (q *Queue) Last() (Entry, bool) {
	for range readRetries {
		fs := *q.files.Load()
		if len(fs) == 0 {
			return Entry{}, false
		}
		f := fs[len(fs)-1]
		e, ok, held, err := f.at(-1)
		if err != nil {
			q.fail(fmt.Errorf("consumequeue: read file %s: %w", f.mf.Path(), err))
			return Entry{}, false
		}
		if held {
			return e, ok
		}
	}
	return Entry{}, false
}

// mustAt is at for the writer, to which an entry that fails its checksum
// is corruption of data verified at open.
func (f *file) mustAt(slot int) (Entry, error) {
	e, ok, _, err := f.at(slot)
	if err != nil {
		return e, fmt.Errorf("read entry %d of %s: %w", slot, f.mf.Path(), err)
	}
	if !ok {
		return e, fmt.Errorf("read entry %d of %s: checksum mismatch", slot, f.mf.Path())
	}
	return e, nil
}

// at returns the entry in slot (-1: the last one) of a held file. held is
// false when the file was already removed.
func (f *file) at(slot int) (e Entry, ok, held bool, err error) {
	held, err = f.mf.View(func(data []byte) {
		n := len(data) / EntrySize
		if slot < 0 {
			slot = n - 1
		}
		if slot >= 0 && slot < n {
			e, ok = decode(data[slot*EntrySize:])
		}
	})
	return e, ok, held, err
}

// Read appends to buf the entries from the one Find(offset) returns on,
// stopping after maxEntries entries or before the first entry whose
// BaseOffset is at or after endOffset (the high watermark: batches from
// there on are not visible yet). It allocates nothing when buf has room.
func (q *Queue) Read(offset, endOffset int64, maxEntries int, buf []Entry) []Entry {
	if maxEntries <= 0 {
		return buf
	}
	h := q.search(byOffset, offset)
	if !h.found || !h.valid || h.e.BaseOffset >= endOffset {
		return buf
	}
	limit := len(buf) + min(maxEntries, math.MaxInt-len(buf))
	buf = append(buf, h.e)
	fi, slot := h.fi, h.slot+1
	for len(buf) < limit && fi < len(h.fs) {
		f := h.fs[fi]
		var more bool
		var err error
		buf, more, err = f.read(slot, endOffset, limit, buf)
		if err != nil {
			q.fail(fmt.Errorf("consumequeue: read file %s: %w", f.mf.Path(), err))
			return buf
		}
		if !more {
			break
		}
		fi, slot = fi+1, 0
	}
	return buf
}

// read appends the verified entries of f from slot on to buf, stopping at
// limit entries in buf, at endOffset, or at the end of the file. more
// reports that the file was consumed to its full capacity, so that the
// queue continues in the next file.
func (f *file) read(slot int, endOffset int64, limit int, buf []Entry) (out []Entry, more bool, err error) {
	out = buf
	// A file removed meanwhile (not held) ends the read: the queue changed
	// under it.
	_, err = f.mf.View(func(data []byte) {
		n := len(data) / EntrySize
		for ; slot < n; slot++ {
			if len(out) >= limit {
				return
			}
			out = append(out, Entry{})
			if e := &out[len(out)-1]; !decodeInto(data[slot*EntrySize:], e) || e.BaseOffset >= endOffset {
				out = out[:len(out)-1]
				return
			}
		}
		more = n == f.slots
	})
	return out, more, err
}
