package partition

import (
	"encoding/binary"
	"errors"
	"hash/crc32"
	"reflect"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

// txnBatch is a transactional batch of n records from sequence seq.
func txnBatch(pid int64, epoch int16, seq, n int32) ProducerBatch {
	b := idem(pid, epoch, seq, n)
	b.Transactional = true
	return b
}

// sameStates compares two states; an empty list of open transactions
// equals a nil one.
func sameStates(a, b *ProducerStates) bool {
	return reflect.DeepEqual(a.producers, b.producers) && slices.Equal(a.ongoing, b.ongoing)
}

func mustMarker(t *testing.T, s *ProducerStates, m Marker, offset int64) (CompletedTxn, bool) {
	t.Helper()
	if err := s.CheckMarker(m); err != nil {
		t.Fatalf("CheckMarker(%+v): %v", m, err)
	}
	return s.ApplyMarker(m, offset, 9000)
}

func TestProducerTransactionLifecycle(t *testing.T) {
	s := NewProducerStates()
	// Producer 1 opens a transaction at 0, producer 2 at 2; producer 1
	// writes more inside its transaction.
	next := appendProducerBatches(t, s, 0, txnBatch(1, 0, 0, 2), txnBatch(2, 0, 0, 1), txnBatch(1, 0, 2, 1))
	if f, ok := s.FirstOpenOffset(); !ok || f != 0 || s.OpenTransactions() != 2 {
		t.Fatalf("FirstOpenOffset %d %v, %d open; want 0 with 2 open", f, ok, s.OpenTransactions())
	}
	// A non-transactional batch while the transaction is open.
	if _, _, _, err := s.Check(idem(1, 0, 3, 1)); !errors.Is(err, kerr.InvalidTxnState) {
		t.Fatalf("non-transactional write in a transaction: %v, want INVALID_TXN_STATE", err)
	}
	// A retry of a transactional batch is still a duplicate.
	if dup, first, _, err := s.Check(txnBatch(1, 0, 2, 1)); !dup || first != 3 || err != nil {
		t.Fatalf("retry: dup %v first %d err %v", dup, first, err)
	}
	// Producer 1 aborts: the last stable offset recorded is producer 2's
	// open transaction.
	txn, ok := mustMarker(t, s, Marker{ProducerID: 1, ProducerEpoch: 0, CoordinatorEpoch: 5, Commit: false, Timestamp: 77}, next)
	want := CompletedTxn{ProducerID: 1, FirstOffset: 0, LastOffset: 4, LastStableOffset: 2, Aborted: true}
	if !ok || txn != want {
		t.Fatalf("abort: %+v %v, want %+v", txn, ok, want)
	}
	next++
	if f, _ := s.FirstOpenOffset(); f != 2 {
		t.Fatalf("FirstOpenOffset after the abort: %d, want 2", f)
	}
	v, _ := s.Get(1)
	if v.CurrentTxnStartOffset != -1 || v.CoordinatorEpoch != 5 || v.LastTimestamp != 77 || v.NumBatches != 2 {
		t.Fatalf("producer 1 after its marker: %+v", v)
	}
	// Now a plain idempotent batch from producer 1 is fine again.
	next = appendProducerBatches(t, s, next, idem(1, 0, 3, 1))
	// Producer 2 commits with nothing else open: LSO = marker + 1.
	txn, ok = mustMarker(t, s, Marker{ProducerID: 2, ProducerEpoch: 0, CoordinatorEpoch: 5, Commit: true}, next)
	if want := (CompletedTxn{ProducerID: 2, FirstOffset: 2, LastOffset: next, LastStableOffset: next + 1}); !ok || txn != want {
		t.Fatalf("commit: %+v %v, want %+v", txn, ok, want)
	}
	if _, ok := s.FirstOpenOffset(); ok || len(s.ongoing) != 0 {
		t.Fatalf("transactions still open: %+v", s.ongoing)
	}
	// A marker without an open transaction completes nothing.
	if _, ok := mustMarker(t, s, Marker{ProducerID: 2, ProducerEpoch: 0, CoordinatorEpoch: 5}, next+1); ok {
		t.Fatal("a marker without a transaction completed one")
	}
}

func TestProducerMarkerFencing(t *testing.T) {
	s := NewProducerStates()
	appendProducerBatches(t, s, 0, txnBatch(1, 3, 0, 1))
	mustMarker(t, s, Marker{ProducerID: 1, ProducerEpoch: 3, CoordinatorEpoch: 4, Commit: true}, 1)
	for _, tc := range []struct {
		m    Marker
		want *kerr.Error
	}{
		{Marker{ProducerID: 1, ProducerEpoch: 2, CoordinatorEpoch: 4}, kerr.InvalidProducerEpoch},
		{Marker{ProducerID: 1, ProducerEpoch: 3, CoordinatorEpoch: 3}, kerr.TransactionCoordinatorFenced},
		{Marker{ProducerID: -1, ProducerEpoch: 3, CoordinatorEpoch: 4}, kerr.InvalidProducerIDMapping},
		{Marker{ProducerID: 1, ProducerEpoch: 3, CoordinatorEpoch: 4}, nil},
		{Marker{ProducerID: 1, ProducerEpoch: 4, CoordinatorEpoch: 9}, nil},
		{Marker{ProducerID: 99, ProducerEpoch: 0, CoordinatorEpoch: 0}, nil}, // unknown producer
	} {
		err := s.CheckMarker(tc.m)
		if (tc.want == nil) != (err == nil) || (tc.want != nil && !errors.Is(err, tc.want)) {
			t.Errorf("CheckMarker(%+v) = %v, want %v", tc.m, err, tc.want)
		}
	}
	// A marker with a newer epoch (transactions v2 bump the epoch in the
	// marker) moves the producer to it and forgets its batches.
	s.ApplyMarker(Marker{ProducerID: 1, ProducerEpoch: 4, CoordinatorEpoch: 4}, 2, 0)
	if v, _ := s.Get(1); v.ProducerEpoch != 4 || v.NumBatches != 0 {
		t.Fatalf("after an epoch-bumping marker: %+v", v)
	}
	// The old epoch's data is fenced; the new epoch starts at sequence 0.
	if _, _, _, err := s.Check(txnBatch(1, 3, 1, 1)); !errors.Is(err, kerr.InvalidProducerEpoch) {
		t.Fatalf("old epoch after the bump: %v", err)
	}
	if _, _, _, err := s.Check(txnBatch(1, 4, 0, 1)); err != nil {
		t.Fatalf("new epoch from 0: %v", err)
	}
	// A marker for an unknown producer creates its state (no batches).
	s.ApplyMarker(Marker{ProducerID: 99, ProducerEpoch: 2, CoordinatorEpoch: 1}, 3, 0)
	if v, ok := s.Get(99); !ok || v.ProducerEpoch != 2 || v.NumBatches != 0 || v.CoordinatorEpoch != 1 {
		t.Fatalf("marker-only producer: %+v %v", v, ok)
	}
}

// TestProducerTruncateAfterReopensTransaction: when the cut removes a
// marker but not the whole transaction, the transaction is open again.
func TestProducerTruncateAfterReopensTransaction(t *testing.T) {
	s := NewProducerStates()
	next := appendProducerBatches(t, s, 0, txnBatch(1, 0, 0, 1), txnBatch(1, 0, 1, 1))   // 0, 1
	mustMarker(t, s, Marker{ProducerID: 1, ProducerEpoch: 0, CoordinatorEpoch: 0}, next) // 2
	next = appendProducerBatches(t, s, next+1, txnBatch(2, 0, 0, 1))                     // 3
	mustMarker(t, s, Marker{ProducerID: 2, ProducerEpoch: 0, CoordinatorEpoch: 0}, next) // 4

	c := s.Clone()
	c.TruncateAfter(5) // nothing cut
	if !sameStates(c, s) {
		t.Fatal("a cut past the end changed the state")
	}
	s.TruncateAfter(2) // the first marker and everything after it
	if v, _ := s.Get(1); v.CurrentTxnStartOffset != 0 || v.NumBatches != 2 {
		t.Fatalf("producer 1: %+v, want its transaction from 0 open again", v)
	}
	if _, ok := s.Get(2); ok {
		t.Fatal("producer 2, entirely cut, is still there")
	}
	if f, _ := s.FirstOpenOffset(); f != 0 {
		t.Fatalf("FirstOpenOffset %d", f)
	}
	// A cut inside the transaction keeps it open and keeps the producer,
	// even with no batch left.
	s.TruncateAfter(1)
	if v, ok := s.Get(1); !ok || v.CurrentTxnStartOffset != 0 || v.NumBatches != 1 {
		t.Fatalf("producer 1 after a cut at 1: %+v %v", v, ok)
	}
	s.TruncateAfter(0)
	if s.Len() != 0 || len(s.ongoing) != 0 {
		t.Fatalf("a cut at 0 left %d producers, %v open", s.Len(), s.ongoing)
	}
}

// TestProducerSnapshotVersion1 loads a snapshot in the format before
// transactions (no last-transaction fields).
func TestProducerSnapshotVersion1(t *testing.T) {
	s := NewProducerStates()
	next := appendProducerBatches(t, s, 0, idem(1, 0, 0, 2), txnBatch(2, 1, 0, 1))
	appendProducerBatches(t, s, next, idem(3, 0, 0, 1))
	v2 := s.AppendSnapshot(nil)
	// Rewrite as version 1: drop the 16 bytes before each producer's
	// batch count.
	v1 := append([]byte(nil), v2[:producerSnapshotHeaderSize+4]...)
	binary.BigEndian.PutUint16(v1, 1)
	rest := v2[producerSnapshotHeaderSize+4:]
	for range s.Len() {
		n := int(rest[producerSnapshotEntrySize-1])
		v1 = append(v1, rest[:producerSnapshotEntrySizeV1-1]...)
		v1 = append(v1, rest[producerSnapshotEntrySize-1:producerSnapshotEntrySize+n*producerSnapshotBatchSize]...)
		rest = rest[producerSnapshotEntrySize+n*producerSnapshotBatchSize:]
	}
	binary.BigEndian.PutUint32(v1[2:], uint32(len(v1)-producerSnapshotHeaderSize))
	binary.BigEndian.PutUint32(v1[6:], crc32.Checksum(v1[producerSnapshotHeaderSize:], castagnoli))
	got, err := LoadProducerSnapshot(v1)
	if err != nil {
		t.Fatal(err)
	}
	if !sameStates(got, s) {
		t.Fatalf("version 1 loads as\n%+v\nwant\n%+v", views(got), views(s))
	}
	if f, _ := got.FirstOpenOffset(); f != 2 {
		t.Fatalf("open transaction not restored: %d", f)
	}
}

func TestProducerMarkerAllocs(t *testing.T) {
	s := NewProducerStates()
	appendProducerBatches(t, s, 0, idem(2, 0, 0, 1))
	seq, off := int32(0), int64(10)
	allocs := testing.AllocsPerRun(1000, func() {
		b := txnBatch(1, 0, seq, 1)
		if dup, _, _, err := s.Check(b); dup || err != nil {
			panic(err)
		}
		s.Update(b, off, 0)
		m := Marker{ProducerID: 1, Commit: true}
		if err := s.CheckMarker(m); err != nil {
			panic(err)
		}
		s.ApplyMarker(m, off+1, 0)
		seq++
		off += 2
	})
	if allocs != 0 {
		t.Fatalf("a transaction costs %v allocations, want 0", allocs)
	}
}
