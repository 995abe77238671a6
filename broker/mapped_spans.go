package broker

import (
	"sync"
	"time"

	"go.uber.org/zap"
)

// sentSpans is the broker's set of commit-log spans that fetch responses
// were written from through the mapping (writeFetch) and that are still
// mapped: their pages are unmapped (MappedFile.Unmap, MADV_DONTNEED) in
// batches, not after every response.
//
// Unmapping after every response cost a madvise per response and, with
// several connections reading the same interleaved stretch of the log
// (each its own partitions), each connection's madvise dropped pages the
// others were about to send, which then faulted in again: mapping and
// unmapping were about a quarter of the broker's consume CPU (issue 14).
// Here the spans of all connections merge, and a stretch is unmapped once,
// when the set holds more than sentSpanBudget bytes or the span is older
// than sentSpanAge.
//
// The set holds a reference on each span's file (Hold) until the span is
// unmapped: a file is never munmapped while a span of it is pending, so a
// madvise never reaches an address range that was unmapped and reused.
type sentSpans struct {
	lg *zap.Logger
	// budget bounds the bytes of the pending spans; 0 is sentSpanBudget.
	// Set before first use (tests).
	budget int64
	mu     struct {
		sync.Mutex
		// spans are the pending spans, oldest first.
		spans []sentSpan
		// bytes is the sum of their lengths.
		bytes int64
		// sweeping is set while a sweep is scheduled.
		sweeping bool
		// closed unmaps every span at once (the broker stopped).
		closed bool
	}
}

// sentSpan is a pending span and when it entered the set. A span that
// later responses extend keeps its time, so no page stays mapped much
// longer than sentSpanAge.
type sentSpan struct {
	mappedSpan
	at time.Time
}

const (
	// sentSpanBudget bounds the bytes of the pending spans, and so what
	// they add to the broker's resident memory: issue 14 asks for at most
	// a tenth of Kafka's (590–1,300 MB while consuming), and kbroker's
	// whole RSS was 23–57 MB with every span unmapped at once.
	sentSpanBudget = 32 << 20
	// sentSpanAge is how long a span stays pending at most (plus a sweep
	// period): an idle broker returns to its small resident memory, and a
	// segment's deletion, which waits for the set's reference, is not
	// delayed by more.
	sentSpanAge = time.Second
	// faultAround is the kernel's fault-around window (fault_around_bytes,
	// 64 KiB by default): a read fault maps the pages of the window,
	// aligned in virtual memory, around it that are in the page cache. A
	// span is widened by a window on each side so that unmapping it
	// leaves none of those pages behind, wherever the mapping starts;
	// several connections' spans ending all over the log left megabytes
	// of them.
	faultAround = 64 << 10
)

// add moves the spans of a sent response into the set, merging each with a
// pending span of the same file that it overlaps or comes within
// mappedSpanGap of, and returns the spans now due (over the budget, too
// old, or all once closed) in ms's array: the caller unmaps them (unmap)
// outside the lock.
func (s *sentSpans) add(ms mappedSpans, now time.Time) mappedSpans {
	s.mu.Lock()
	defer s.mu.Unlock()
	due := ms[:0]
	for _, r := range ms {
		r.lo, r.hi = max(r.lo-faultAround, 0), min(r.hi+faultAround, r.m.Size())
		if s.merge(r) {
			continue
		}
		if !r.m.Hold() {
			// Cannot happen: the response holds its files until it is
			// recycled, after this. Without a reference, no madvise.
			continue
		}
		if s.mu.closed {
			due = append(due, r) // due never overtakes the range over ms
			continue
		}
		s.mu.spans = append(s.mu.spans, sentSpan{mappedSpan: r, at: now})
		s.mu.bytes += r.hi - r.lo
	}
	due = s.due(due, now.Add(-sentSpanAge))
	if len(s.mu.spans) > 0 && !s.mu.sweeping {
		s.mu.sweeping = true
		time.AfterFunc(sentSpanAge, s.sweep)
	}
	return due
}

// merge extends a pending span of r's file with r if they overlap or lie
// within mappedSpanGap of each other, and reports whether it did.
func (s *sentSpans) merge(r mappedSpan) bool {
	for i := len(s.mu.spans) - 1; i >= 0; i-- {
		p := &s.mu.spans[i].mappedSpan
		before := p.hi - p.lo
		if p.absorb(r) {
			s.mu.bytes += (p.hi - p.lo) - before
			return true
		}
	}
	return false
}

// due removes from the set, oldest first, the spans over the budget, those
// that entered before cutoff, and every one once the set is closed, and
// appends them to dst.
func (s *sentSpans) due(dst mappedSpans, cutoff time.Time) mappedSpans {
	budget := s.budget
	if budget == 0 {
		budget = sentSpanBudget
	}
	n := 0
	for _, p := range s.mu.spans {
		if !s.mu.closed && s.mu.bytes <= budget && !p.at.Before(cutoff) {
			break
		}
		dst = append(dst, p.mappedSpan)
		s.mu.bytes -= p.hi - p.lo
		n++
	}
	if n > 0 {
		rest := copy(s.mu.spans, s.mu.spans[n:])
		clear(s.mu.spans[rest:])
		s.mu.spans = s.mu.spans[:rest]
	}
	return dst
}

// sweep unmaps the spans older than sentSpanAge and schedules itself again
// while spans remain.
func (s *sentSpans) sweep() {
	s.mu.Lock()
	due := s.due(nil, time.Now().Add(-sentSpanAge))
	s.mu.sweeping = len(s.mu.spans) > 0
	if s.mu.sweeping {
		time.AfterFunc(sentSpanAge, s.sweep)
	}
	s.mu.Unlock()
	s.unmap(due)
}

// close unmaps every pending span; spans added later are unmapped at once.
// The broker calls it when no connection is left, before closing the store
// (whose files close when the set releases them).
func (s *sentSpans) close() {
	s.mu.Lock()
	s.mu.closed = true
	due := s.due(nil, time.Time{})
	s.mu.Unlock()
	s.unmap(due)
}

// unmap unmaps the spans and releases their files. Only the resident-memory
// accounting suffers from a failed madvise; it is said once per call.
func (s *sentSpans) unmap(ms mappedSpans) {
	warned := false
	for _, p := range ms {
		if err := p.m.Unmap(p.lo, p.hi-p.lo); err != nil && !warned {
			s.lg.Warn("unmapping sent commit-log pages", zap.Error(err))
			warned = true
		}
		p.m.Release()
	}
}
