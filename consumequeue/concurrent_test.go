package consumequeue

import (
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"testing"
)

// modelEntry gives entry i of the concurrency tests. gen distinguishes
// entries rewritten after a truncation.
func modelEntry(i, gen int64) Entry {
	return Entry{Pos: i*1000 + gen, BaseOffset: 3 * i, MaxTimestampSoFar: i * 10, Size: 500, LastOffsetDelta: 1}
}

// checkModel verifies that e is entry i of some generation.
func checkModel(e Entry) error {
	i := e.BaseOffset / 3
	w := modelEntry(i, e.Pos-i*1000)
	if e.BaseOffset%3 != 0 || e != w || e.Pos-i*1000 < 0 || e.Pos-i*1000 >= 1000 {
		return fmt.Errorf("entry %v is not a model entry", e)
	}
	return nil
}

func TestConcurrentReaders(t *testing.T) {
	const n = 3000
	q := openQueue(t, t.TempDir(), 64)
	var next atomic.Int64 // offsets below are appended
	var floor atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	errc := make(chan error, 8)

	reader := func(seed int64) {
		defer wg.Done()
		buf := make([]Entry, 0, 16)
		x := uint64(seed)
		for {
			select {
			case <-stop:
				return
			default:
			}
			hi := next.Load()
			if hi == 0 {
				continue
			}
			x = x*6364136223846793005 + 1442695040888963407
			off := int64(x>>33) % hi
			e, ok := q.Find(off)
			fl := floor.Load()
			if !ok {
				errc <- fmt.Errorf("Find(%d) found nothing with %d appended", off, hi)
				return
			}
			if err := checkModel(e); err != nil {
				errc <- err
				return
			}
			if e.NextOffset() <= off || (off >= fl && e.BaseOffset > off && !(off%3 == 2 && e.BaseOffset == off+1)) {
				errc <- fmt.Errorf("Find(%d) = %v (floor %d)", off, e, fl)
				return
			}
			buf = q.Read(off, hi, 16, buf[:0])
			if len(buf) == 0 || len(buf) > 16 {
				errc <- fmt.Errorf("Read(%d, %d) returned %d entries", off, hi, len(buf))
				return
			}
			for j, r := range buf {
				if err := checkModel(r); err != nil {
					errc <- err
					return
				}
				if r.BaseOffset >= hi || (j > 0 && r.BaseOffset != buf[j-1].BaseOffset+3) {
					errc <- fmt.Errorf("Read(%d, %d): entry %d is %v", off, hi, j, r)
					return
				}
			}
			if e, ok := q.FindTimestamp(off); ok {
				if err := checkModel(e); err != nil {
					errc <- err
					return
				}
			}
			if l, ok := q.Last(); !ok || l.NextOffset() < hi {
				errc <- fmt.Errorf("Last = %v, %v with %d appended", l, ok, hi)
				return
			}
			_ = q.Len()
		}
	}
	for i := range 3 {
		wg.Add(1)
		go reader(int64(i + 1))
	}
	// Retention and the flusher run beside the appender, as in the broker.
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			if err := q.Flush(); err != nil {
				errc <- err
				return
			}
			f := next.Load() / 4
			floor.Store(f)
			if _, err := q.DeleteBefore(f); err != nil {
				errc <- err
				return
			}
		}
	}()

	for i := range int64(n) {
		e := modelEntry(i, 0)
		if err := q.Append(e.Pos, e.Size, e.BaseOffset, e.LastOffsetDelta, 0, e.MaxTimestampSoFar); err != nil {
			t.Fatal(err)
		}
		next.Store(e.NextOffset())
		select {
		case err := <-errc:
			t.Fatal(err)
		default:
		}
	}
	close(stop)
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Fatal(err)
	}
}

// Readers racing truncations see old or new entries, never garbage.
func TestConcurrentTruncate(t *testing.T) {
	const n = 200
	q := openQueue(t, t.TempDir(), 16)
	for i := range int64(n) {
		e := modelEntry(i, 0)
		if err := q.Append(e.Pos, e.Size, e.BaseOffset, e.LastOffsetDelta, 0, e.MaxTimestampSoFar); err != nil {
			t.Fatal(err)
		}
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	errc := make(chan error, 4)
	for r := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]Entry, 0, 32)
			off := int64(r * 7)
			for {
				select {
				case <-stop:
					return
				default:
				}
				off = (off + 37) % (3 * n)
				if e, ok := q.Find(off); ok {
					if err := checkModel(e); err != nil {
						errc <- err
						return
					}
				}
				buf = q.Read(off, math.MaxInt64, 32, buf[:0])
				for _, e := range buf {
					if err := checkModel(e); err != nil {
						errc <- err
						return
					}
				}
			}
		}()
	}
	for gen := int64(1); gen <= 20; gen++ {
		cut := (gen * 53) % n
		if err := q.TruncateFromOffset(3 * cut); err != nil {
			t.Fatal(err)
		}
		for i := cut; i < n; i++ {
			e := modelEntry(i, gen)
			if err := q.Append(e.Pos, e.Size, e.BaseOffset, e.LastOffsetDelta, 0, e.MaxTimestampSoFar); err != nil {
				t.Fatal(err)
			}
		}
	}
	close(stop)
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Fatal(err)
	}
	if q.Len() != n {
		t.Fatalf("Len = %d, want %d", q.Len(), n)
	}
}
