package log

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// RecoveryReport says what Open found and what it cut.
type RecoveryReport struct {
	// Clean is true when the previous run stopped cleanly (checkpoint
	// present, abort marker absent) and its recorded end was trusted.
	Clean bool
	// Durable is the durable position the checkpoint recorded.
	Durable int64
	// ScannedFrom is where entries started being read and verified.
	ScannedFrom int64
	// End is the global position just past the last valid entry: the log
	// ends there now.
	End int64
	// Entries counts the valid entries read from ScannedFrom to End.
	Entries int
	// Cut is true when an invalid entry (not the zeros that follow the last
	// entry) ended the log; CutReason says why. After a crash everything
	// from End on was zeroed or removed, cut or not.
	Cut       bool
	CutReason string
	// Corruption is set when the cut lay below the durable position and was
	// allowed only by Config.TruncateCorrupt.
	Corruption *CorruptionError
}

// recover finds the end of the log and replays entries to visit.
//
// After a clean stop the checkpoint's end is trusted and entries are only
// read (and still verified) from replayFrom; when replayFrom is that end,
// nothing is read. After a crash every entry from
// the start of the file holding min(durable, replayFrom) is verified. The
// first invalid entry at or after the durable position starts a torn tail,
// cut off with everything after it: past that point a power loss may have
// left any mix of old and new pages, so nothing there means anything. An
// invalid entry below the durable position is corruption of data known to
// be durable: Open fails with a *CorruptionError unless TruncateCorrupt.
func (l *CommitLog) recover(cp Checkpoint, found, crashed bool, replayFrom int64, visit func(Entry) error) (RecoveryReport, error) {
	r := RecoveryReport{Clean: !crashed, Durable: cp.Durable}
	files := l.queue.Files()
	if len(files) == 0 {
		if found && cp.End > 0 {
			return r, fmt.Errorf("log: the checkpoint records data up to %d but %s holds no files", cp.End, l.dir)
		}
		// A new store: nothing to recover.
		r.Clean = !found || !crashed
		return r, nil
	}
	first, last := files[0].from, files[len(files)-1].from+l.cfg.FileSize
	durable := min(max(cp.Durable, first), last)
	limit := last // how far the scan may go
	if !crashed {
		if cp.End < first || cp.End > last {
			// A clean checkpoint that does not fit the files: verify instead.
			crashed, r.Clean = true, false
		} else {
			limit, durable = cp.End, cp.End
		}
	}
	// A file found short lost its tail. Below the durable position (or a
	// clean end) that is lost acknowledged data.
	for _, m := range files {
		if m.loadedSize < m.size && m.from+m.loadedSize < durable {
			cerr := &CorruptionError{File: m.path, Offset: m.loadedSize, Pos: m.from + m.loadedSize,
				Reason: fmt.Sprintf("file cut short to %d bytes below the durable position %d", m.loadedSize, durable)}
			if !l.cfg.TruncateCorrupt {
				return r, cerr
			}
			// Let the scan cut there: the extended bytes are zeros.
			r.Corruption = cerr
			durable = m.from + m.loadedSize
			crashed, r.Clean = true, false
			limit = last
			break
		}
	}
	replayFrom = min(max(replayFrom, first), limit)
	start := alignDown(min(durable, replayFrom), l.cfg.FileSize)
	if !crashed {
		// Entries are parsed from the start of a file (the only boundary
		// known without an index), so replaying from the middle of one
		// reads its first part too.
		start = alignDown(replayFrom, l.cfg.FileSize)
		if replayFrom >= limit {
			// Nothing to replay, and the end is trusted: reading the
			// last file up to it would fault in up to a whole file
			// (128 MiB by default) of mapping for nothing, which made
			// start-up after a clean stop grow with the file size.
			start = limit
		}
	}
	r.ScannedFrom = start

	pos := start
	for pos < limit {
		m := l.queue.Find(pos)
		off := pos - m.from
		var kind entryKind
		var size int
		var reason string
		if err := guardFault(func() {
			kind, size, reason = parseEntry(m.data[off:min(m.size, limit-m.from)], l.cfg.KeySize)
		}); err != nil {
			kind, reason = kindInvalid, err.Error()
		}
		if kind == kindEnd && !crashed && limit-m.from < m.size {
			// The trusted end lies in this file and fewer than minBlank
			// bytes remain before it: that is the end.
			break
		}
		switch kind {
		case kindEntry:
			if pos >= replayFrom && visit != nil {
				e := Entry{Pos: pos, Size: int32(size)}
				e.Key = m.data[off+entryFixedSize : off+entryFixedSize+int64(l.cfg.KeySize)]
				e.Payload = m.data[off+int64(l.headerLen) : off+int64(size)]
				if err := visit(e); err != nil {
					return r, fmt.Errorf("log: replay entry at %d: %w", pos, err)
				}
			}
			r.Entries++
			pos += int64(size)
			continue
		case kindBlank, kindEnd:
			pos = m.from + m.size
			continue
		}
		// An invalid entry.
		if pos < durable {
			cerr := &CorruptionError{File: m.path, Offset: off, Pos: pos, Reason: reason}
			if !l.cfg.TruncateCorrupt {
				return r, cerr
			}
			r.Corruption = cerr
		}
		// Zeros where the next entry would start are the normal end of the
		// data; anything else is a torn or garbage tail.
		if reason != reasonZeros || r.Corruption != nil {
			r.Cut, r.CutReason = true, reason
		}
		break
	}
	r.End = pos
	if r.Cut && !crashed {
		crashed = true // a cut needs the zeroing below
	}
	if err := l.cutAt(r.End, crashed); err != nil {
		return r, err
	}
	return r, nil
}

// cutAt makes end the end of the log: files after it are removed and, after
// a crash, the rest of its file is zeroed and the surviving tail is synced
// so that the recovered state is durable before anything new is appended.
func (l *CommitLog) cutAt(end int64, crashed bool) error {
	if crashed {
		if err := l.queue.truncateAfter(end, true); err != nil {
			return err
		}
		for _, m := range l.queue.Files() {
			if err := unix.Fdatasync(m.Fd()); err != nil {
				return fmt.Errorf("log: fdatasync %s: %w", m.path, err)
			}
		}
		return nil
	}
	return l.queue.truncateAfter(end, false)
}

// Iterate calls fn for each entry from global position from (an entry
// boundary) up to the read position, in order. The Entry's slices are valid
// only during fn. It stops at the first error fn returns, and reports an
// invalid entry below the read position as a *CorruptionError.
func (l *CommitLog) Iterate(from int64, fn func(Entry) error) error {
	for {
		end := l.ReadPosition()
		if from >= end {
			return nil
		}
		m, err := l.Hold(from)
		if err != nil {
			return err
		}
		next, err := l.iterateFile(m, from, end, fn)
		m.Release()
		if err != nil {
			return err
		}
		from = next
	}
}

// iterateFile walks the entries of one held file from pos, up to end.
func (l *CommitLog) iterateFile(m *MappedFile, pos, end int64, fn func(Entry) error) (int64, error) {
	stop := min(m.from+m.ReadPosition(), end)
	for pos < stop {
		off := pos - m.from
		var kind entryKind
		var size int
		var reason string
		if err := guardFault(func() {
			kind, size, reason = parseEntry(m.data[off:m.size], l.cfg.KeySize)
		}); err != nil {
			return pos, err
		}
		switch kind {
		case kindBlank, kindEnd:
			return m.from + m.size, nil
		case kindInvalid:
			return pos, &CorruptionError{File: m.path, Offset: off, Pos: pos, Reason: reason}
		}
		e := Entry{
			Pos:     pos,
			Size:    int32(size),
			Key:     m.data[off+entryFixedSize : off+entryFixedSize+int64(l.cfg.KeySize)],
			Payload: m.data[off+int64(l.headerLen) : off+int64(size)],
		}
		if err := fn(e); err != nil {
			return pos, err
		}
		pos += int64(size)
	}
	return pos, nil
}

// ReadEntry returns the entry at global position pos (an entry boundary),
// holding its file: the caller must Release the returned file once done with
// the entry's slices.
func (l *CommitLog) ReadEntry(pos int64) (Entry, *MappedFile, error) {
	m, err := l.Hold(pos)
	if err != nil {
		return Entry{}, nil, err
	}
	off := pos - m.from
	var kind entryKind
	var size int
	var reason string
	if err := guardFault(func() {
		kind, size, reason = parseEntry(m.data[off:m.ReadPosition()], l.cfg.KeySize)
	}); err != nil {
		m.Release()
		return Entry{}, nil, err
	}
	if kind != kindEntry {
		m.Release()
		if reason == "" {
			reason = "no entry starts here"
		}
		return Entry{}, nil, fmt.Errorf("%w: no entry at %d: %s", ErrOutOfRange, pos, reason)
	}
	return Entry{
		Pos:     pos,
		Size:    int32(size),
		Key:     m.data[off+entryFixedSize : off+entryFixedSize+int64(l.cfg.KeySize)],
		Payload: m.data[off+int64(l.headerLen) : off+int64(size)],
	}, m, nil
}
