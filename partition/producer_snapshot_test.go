package partition

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

// sampleProducerStates builds a state with every kind of entry: full rings,
// a wrapped sequence, an epoch bump, an open transaction, a marker-like
// entry without batches.
func sampleProducerStates(t testing.TB) *ProducerStates {
	t.Helper()
	s := NewProducerStates()
	next := int64(1000)
	for i := range int32(9) {
		next = appendProducerBatches(t, s, next, idem(1, 2, 5*i, 5))
	}
	next = appendProducerBatches(t, s, next, idem(2, 0, math.MaxInt32-1, 4), idem(2, 0, 2, 1))
	next = appendProducerBatches(t, s, next, idem(3, 0, 0, 1), idem(3, 4, 0, 2))
	tb := idem(math.MaxInt64, 0, 0, 3)
	tb.Transactional = true
	tb.MaxTimestamp = -1
	appendProducerBatches(t, s, next, tb)
	s.producers[4] = &producerEntry{epoch: 6, coordinatorEpoch: 2, txnFirstOffset: -1, lastTimestamp: 77, lastAppendMs: 88,
		lastTxnFirst: 10, lastTxnLast: 20}
	return s
}

func TestProducerSnapshotRoundTrip(t *testing.T) {
	for name, s := range map[string]*ProducerStates{
		"empty":  NewProducerStates(),
		"sample": sampleProducerStates(t),
	} {
		t.Run(name, func(t *testing.T) {
			prefix := []byte("prefix")
			b := s.AppendSnapshot(append([]byte(nil), prefix...))
			if string(b[:len(prefix)]) != string(prefix) {
				t.Fatal("AppendSnapshot overwrote dst")
			}
			got, err := LoadProducerSnapshot(b[len(prefix):])
			if err != nil {
				t.Fatalf("LoadProducerSnapshot: %v", err)
			}
			if !sameStates(got, s) {
				t.Fatalf("round trip differs:\n got %+v\nwant %+v", views(got), views(s))
			}
			if again := got.AppendSnapshot(nil); string(again) != string(b[len(prefix):]) {
				t.Error("re-encoding gives different bytes")
			}
		})
	}
}

func views(s *ProducerStates) []ProducerView {
	var vs []ProducerView
	for v := range s.All() {
		vs = append(vs, v)
	}
	return vs
}

// TestProducerSnapshotRestart checks the point of keeping all five batches:
// a retry arriving after a restart is still answered as a duplicate.
func TestProducerSnapshotRestart(t *testing.T) {
	s := sampleProducerStates(t)
	loaded, err := LoadProducerSnapshot(s.AppendSnapshot(nil))
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range []ProducerBatch{idem(1, 2, 20, 5), idem(2, 0, math.MaxInt32-1, 4), idem(1, 2, 45, 5), idem(3, 4, 3, 1), idem(4, 6, 0, 1), idem(4, 6, 1, 1)} {
		d1, f1, l1, e1 := s.Check(b)
		d2, f2, l2, e2 := loaded.Check(b)
		if d1 != d2 || f1 != f2 || l1 != l2 || fmt.Sprint(e1) != fmt.Sprint(e2) {
			t.Errorf("Check(%+v): before restart (%v %d %d %v), after (%v %d %d %v)", b, d1, f1, l1, e1, d2, f2, l2, e2)
		}
	}
	if dup, first, _, _ := loaded.Check(idem(1, 2, 20, 5)); !dup || first != 1020 {
		t.Errorf("oldest retained batch after restart: dup %v at %d, want dup at 1020", dup, first)
	}
	// Marker-only entry: the epoch is known and no sequence, so 0 is next.
	if _, _, _, err := loaded.Check(idem(4, 6, 1, 1)); !errors.Is(err, kerr.OutOfOrderSequenceNumber) {
		t.Errorf("known epoch without batches, seq 1: got %v, want OUT_OF_ORDER_SEQUENCE_NUMBER", err)
	}
	if _, _, _, err := loaded.Check(idem(4, 7, 3, 1)); !errors.Is(err, kerr.OutOfOrderSequenceNumber) {
		t.Errorf("new epoch over a known epoch, seq 3: got %v, want OUT_OF_ORDER_SEQUENCE_NUMBER", err)
	}
}

// resealSnapshot rewrites the length and CRC of a snapshot so a test (or the
// fuzzer) can reach the body checks behind them.
func resealSnapshot(b []byte) []byte {
	if len(b) < producerSnapshotHeaderSize {
		return b
	}
	binary.BigEndian.PutUint32(b[2:], uint32(len(b)-producerSnapshotHeaderSize))
	binary.BigEndian.PutUint32(b[6:], crc32.Checksum(b[producerSnapshotHeaderSize:], castagnoli))
	return b
}

func TestProducerSnapshotCorrupt(t *testing.T) {
	good := sampleProducerStates(t).AppendSnapshot(nil)
	// Offsets inside good: the body starts with the count; the first producer
	// (id 1) follows, then its 5 batches.
	const body = producerSnapshotHeaderSize
	const first = body + 4
	const firstBatches = first + producerSnapshotEntrySize
	edit := func(reseal bool, f func(b []byte) []byte) []byte {
		b := f(append([]byte(nil), good...))
		if reseal {
			b = resealSnapshot(b)
		}
		return b
	}
	put32 := func(off int, v uint32) func([]byte) []byte {
		return func(b []byte) []byte { binary.BigEndian.PutUint32(b[off:], v); return b }
	}
	put64 := func(off int, v uint64) func([]byte) []byte {
		return func(b []byte) []byte { binary.BigEndian.PutUint64(b[off:], v); return b }
	}
	tests := map[string][]byte{
		"nil":                nil,
		"short header":       good[:producerSnapshotHeaderSize-1],
		"header only":        good[:producerSnapshotHeaderSize],
		"version 0":          edit(false, func(b []byte) []byte { b[1] = 0; return b }),
		"version 3":          edit(false, func(b []byte) []byte { b[1] = 3; return b }),
		"length too big":     edit(false, put32(2, uint32(len(good)))),
		"length too small":   edit(false, put32(2, 4)),
		"truncated":          good[:len(good)-1],
		"trailing byte":      append(append([]byte(nil), good...), 0),
		"bit flip":           edit(false, func(b []byte) []byte { b[len(b)-3] ^= 0x10; return b }),
		"crc":                edit(false, func(b []byte) []byte { b[6] ^= 1; return b }),
		"no count":           resealSnapshot(append([]byte(nil), good[:body+3]...)),
		"count too big":      edit(true, put32(body, math.MaxUint32)),
		"count one too many": edit(true, put32(body, 6)),
		"count one too few":  edit(true, put32(body, 4)),
		"negative producer":  edit(true, put64(first, math.MaxUint64)),
		"duplicate producer": edit(true, put64(first+producerSnapshotEntrySize+5*producerSnapshotBatchSize, 1)),
		"txn offset -2":      edit(true, put64(first+8+2+4, math.MaxUint64-1)),
		"last txn half set":  edit(true, put64(first+8+2+4+8+8+8, 5)),
		"last txn reversed": edit(true, func(b []byte) []byte {
			binary.BigEndian.PutUint64(b[first+38:], 9)
			binary.BigEndian.PutUint64(b[first+46:], 9)
			return b
		}),
		"last txn after open one": edit(true, func(b []byte) []byte {
			binary.BigEndian.PutUint64(b[first+14:], 5) // open transaction from 5
			binary.BigEndian.PutUint64(b[first+38:], 1)
			binary.BigEndian.PutUint64(b[first+46:], 6)
			return b
		}),
		"six batches":       edit(true, func(b []byte) []byte { b[firstBatches-1] = 6; return b }),
		"255 batches":       edit(true, func(b []byte) []byte { b[firstBatches-1] = 255; return b }),
		"negative last seq": edit(true, put32(firstBatches, 0x80000000)),
		"negative delta":    edit(true, put32(firstBatches+12, 0xFFFFFFFF)),
		"delta past offset 0": edit(true, func(b []byte) []byte {
			binary.BigEndian.PutUint64(b[firstBatches+4:], 3)
			return b
		}),
		"batches out of order": edit(true, put64(firstBatches+producerSnapshotBatchSize+4, 1000)),
		"zero batches leaves bytes": edit(true, func(b []byte) []byte {
			b[firstBatches-1] = 0
			return b
		}),
	}
	for name, b := range tests {
		t.Run(name, func(t *testing.T) {
			s, err := LoadProducerSnapshot(b)
			if err == nil {
				t.Fatalf("got %d producers, want an error", s.Len())
			}
			if !errors.Is(err, ErrCorruptProducerSnapshot) {
				t.Errorf("error %v does not wrap ErrCorruptProducerSnapshot", err)
			}
			if s != nil {
				t.Error("non-nil state with an error")
			}
		})
	}
}

func TestProducerSnapshotEveryPrefix(t *testing.T) {
	good := sampleProducerStates(t).AppendSnapshot(nil)
	for n := range len(good) {
		if _, err := LoadProducerSnapshot(good[:n]); err == nil {
			t.Fatalf("prefix of %d bytes loaded", n)
		}
		if n >= producerSnapshotHeaderSize {
			if _, err := LoadProducerSnapshot(resealSnapshot(append([]byte(nil), good[:n]...))); err == nil {
				t.Fatalf("resealed prefix of %d bytes loaded", n)
			}
		}
	}
}

func BenchmarkProducerSnapshot(b *testing.B) {
	s := NewProducerStates()
	for id := range int64(1000) {
		for i := range int32(5) {
			s.Update(idem(id, 0, 2*i, 2), id*100+int64(2*i), 0)
		}
	}
	buf := s.AppendSnapshot(nil)
	b.Run("append", func(b *testing.B) {
		b.SetBytes(int64(len(buf)))
		b.ReportAllocs()
		for b.Loop() {
			buf = s.AppendSnapshot(buf[:0])
		}
	})
	b.Run("load", func(b *testing.B) {
		b.SetBytes(int64(len(buf)))
		b.ReportAllocs()
		for b.Loop() {
			if _, err := LoadProducerSnapshot(buf); err != nil {
				b.Fatal(err)
			}
		}
	})
}
