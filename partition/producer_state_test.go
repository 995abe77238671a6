package partition

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

// idem builds an idempotent batch of n records starting at sequence seq.
func idem(pid int64, epoch int16, seq int32, n int32) ProducerBatch {
	return ProducerBatch{ProducerID: pid, ProducerEpoch: epoch, BaseSequence: seq, LastOffsetDelta: n - 1, MaxTimestamp: 1000 + int64(seq)}
}

// appendProducerBatches runs Check and Update for each batch as the partition
// would, at consecutive offsets from next, failing on anything but a plain
// accept. It returns the next free offset.
func appendProducerBatches(t testing.TB, s *ProducerStates, next int64, bs ...ProducerBatch) int64 {
	t.Helper()
	for _, b := range bs {
		dup, _, _, err := s.Check(b)
		if err != nil || dup {
			t.Fatalf("setup Check(%+v) = dup %v, err %v; want accepted", b, dup, err)
		}
		s.Update(b, next, 5000)
		next += int64(b.LastOffsetDelta) + 1
	}
	return next
}

func TestProducerCheckRules(t *testing.T) {
	const pid = 7
	// seven batches of two records from offset 100: batch i holds sequences
	// 2i, 2i+1 at offsets 100+2i, 101+2i; batches 2..6 are retained.
	var seven []ProducerBatch
	for i := range int32(7) {
		seven = append(seven, idem(pid, 0, 2*i, 2))
	}
	tests := []struct {
		name      string
		setup     []ProducerBatch
		probe     ProducerBatch
		wantDup   bool
		wantFirst int64
		wantLast  int64
		wantErr   error
	}{
		{name: "non-idempotent", probe: ProducerBatch{ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1, LastOffsetDelta: 4}},
		{name: "non-idempotent with garbage fields", setup: seven[:1], probe: ProducerBatch{ProducerID: -1, ProducerEpoch: 9, BaseSequence: 77}},
		{name: "first batch seq 0", probe: idem(pid, 0, 0, 3)},
		{name: "in order", setup: seven[:3], probe: idem(pid, 0, 6, 1)},
		{name: "in order after many", setup: seven, probe: idem(pid, 0, 14, 5)},
		{name: "gap", setup: seven[:3], probe: idem(pid, 0, 7, 1), wantErr: kerr.OutOfOrderSequenceNumber},
		{name: "behind last", setup: seven[:3], probe: idem(pid, 0, 5, 1), wantErr: kerr.OutOfOrderSequenceNumber},
		{name: "dup of newest", setup: seven, probe: idem(pid, 0, 12, 2), wantDup: true, wantFirst: 112, wantLast: 113},
		{name: "dup of 2nd newest", setup: seven, probe: idem(pid, 0, 10, 2), wantDup: true, wantFirst: 110, wantLast: 111},
		{name: "dup of 3rd newest", setup: seven, probe: idem(pid, 0, 8, 2), wantDup: true, wantFirst: 108, wantLast: 109},
		{name: "dup of 4th newest", setup: seven, probe: idem(pid, 0, 6, 2), wantDup: true, wantFirst: 106, wantLast: 107},
		{name: "dup of 5th newest", setup: seven, probe: idem(pid, 0, 4, 2), wantDup: true, wantFirst: 104, wantLast: 105},
		{name: "6th newest is forgotten", setup: seven, probe: idem(pid, 0, 2, 2), wantErr: kerr.OutOfOrderSequenceNumber},
		{name: "7th newest is forgotten", setup: seven, probe: idem(pid, 0, 0, 2), wantErr: kerr.OutOfOrderSequenceNumber},
		{name: "same first seq other last seq", setup: seven, probe: idem(pid, 0, 12, 1), wantErr: kerr.OutOfOrderSequenceNumber},
		{name: "same last seq other first seq", setup: seven, probe: idem(pid, 0, 13, 1), wantErr: kerr.OutOfOrderSequenceNumber},
		{name: "dup needs same producer", setup: seven, probe: idem(pid+1, 0, 12, 2)},
		{
			name:  "wrap past MaxInt32 across batches",
			setup: []ProducerBatch{idem(pid, 0, math.MaxInt32-1, 2)},
			probe: idem(pid, 0, 0, 1),
		},
		{
			name:  "up to MaxInt32 without wrap",
			setup: []ProducerBatch{idem(pid, 0, math.MaxInt32-3, 2)},
			probe: idem(pid, 0, math.MaxInt32-1, 2),
		},
		{
			name:  "wrap inside a batch",
			setup: []ProducerBatch{idem(pid, 0, math.MaxInt32-1, 4)}, // MaxInt32-1, MaxInt32, 0, 1
			probe: idem(pid, 0, 2, 1),
		},
		{
			name:    "wrap inside a batch, restart at 0 is out of order",
			setup:   []ProducerBatch{idem(pid, 0, math.MaxInt32-1, 4)},
			probe:   idem(pid, 0, 0, 1),
			wantErr: kerr.OutOfOrderSequenceNumber,
		},
		{
			name:    "after MaxInt32 comes 0, not 1",
			setup:   []ProducerBatch{idem(pid, 0, math.MaxInt32-1, 2)},
			probe:   idem(pid, 0, 1, 1),
			wantErr: kerr.OutOfOrderSequenceNumber,
		},
		{
			name:     "dup of a wrapping batch",
			setup:    []ProducerBatch{idem(pid, 0, math.MaxInt32-1, 4)},
			probe:    idem(pid, 0, math.MaxInt32-1, 4),
			wantDup:  true,
			wantLast: 103, wantFirst: 100,
		},
		{name: "epoch bump seq 0", setup: seven[:3], probe: idem(pid, 1, 0, 1)},
		{name: "epoch jump seq 0", setup: seven[:3], probe: idem(pid, 9, 0, 1)},
		{name: "epoch bump seq != 0", setup: seven[:3], probe: idem(pid, 1, 6, 1), wantErr: kerr.OutOfOrderSequenceNumber},
		{name: "stale epoch", setup: []ProducerBatch{idem(pid, 3, 0, 1)}, probe: idem(pid, 2, 1, 1), wantErr: kerr.InvalidProducerEpoch},
		{name: "stale epoch at seq 0", setup: []ProducerBatch{idem(pid, 3, 0, 1)}, probe: idem(pid, 2, 0, 1), wantErr: kerr.InvalidProducerEpoch},
		{
			name:    "retry of the old epoch after a bump",
			setup:   []ProducerBatch{idem(pid, 0, 0, 2), idem(pid, 1, 0, 2)},
			probe:   idem(pid, 0, 0, 2),
			wantErr: kerr.InvalidProducerEpoch,
		},
		{
			name:    "dup only within the current epoch",
			setup:   []ProducerBatch{idem(pid, 0, 0, 2), idem(pid, 1, 0, 2)},
			probe:   idem(pid, 1, 0, 2),
			wantDup: true, wantFirst: 102, wantLast: 103,
		},
		{
			name:    "old epoch's batches are forgotten on a bump",
			setup:   []ProducerBatch{idem(pid, 0, 0, 2), idem(pid, 0, 2, 2), idem(pid, 1, 0, 1)},
			probe:   idem(pid, 1, 2, 2),
			wantErr: kerr.OutOfOrderSequenceNumber,
		},
		// KIP-360 (Kafka 2.5+): a producer without state may start anywhere;
		// before 2.5 this was UNKNOWN_PRODUCER_ID.
		{name: "unknown producer seq != 0", probe: idem(pid, 0, 42, 1)},
		{name: "unknown producer high epoch seq != 0", probe: idem(pid, 17, 42, 1)},
		{name: "unknown producer epoch below -1", probe: idem(pid, -2, 0, 1), wantErr: kerr.InvalidProducerEpoch},
		{
			// Kafka's same-epoch branch accepts anything while the epoch is
			// NO_PRODUCER_EPOCH; clients never send this.
			name:  "producer id with epoch -1 is never sequence checked",
			setup: []ProducerBatch{idem(pid, -1, 0, 1)},
			probe: idem(pid, -1, 9, 1),
		},
		{name: "negative base sequence", probe: ProducerBatch{ProducerID: pid, BaseSequence: -1}, wantErr: kerr.InvalidRecord},
		{name: "negative last offset delta", probe: ProducerBatch{ProducerID: pid, LastOffsetDelta: -1}, wantErr: kerr.InvalidRecord},
		{name: "producers are independent", setup: seven, probe: idem(pid+1, 0, 0, 1)},
		{
			name:  "transactional flag does not change sequencing",
			setup: []ProducerBatch{{ProducerID: pid, BaseSequence: 0, LastOffsetDelta: 1, Transactional: true}},
			probe: ProducerBatch{ProducerID: pid, BaseSequence: 2, Transactional: true},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := NewProducerStates()
			appendProducerBatches(t, s, 100, tt.setup...)
			before := s.Clone()
			dup, first, last, err := s.Check(tt.probe)
			if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil && err != nil) {
				t.Fatalf("err: got %v, want %v", err, tt.wantErr)
			}
			if err != nil && !strings.HasPrefix(err.Error(), "partition: ") {
				t.Errorf("error %q lacks the package prefix", err)
			}
			wantFirst, wantLast := tt.wantFirst, tt.wantLast
			if !tt.wantDup {
				wantFirst, wantLast = -1, -1
			}
			if dup != tt.wantDup || first != wantFirst || last != wantLast {
				t.Errorf("got dup %v, offsets %d..%d; want dup %v, offsets %d..%d", dup, first, last, tt.wantDup, wantFirst, wantLast)
			}
			if !sameStates(before, s) {
				t.Errorf("Check changed the state")
			}
		})
	}
}

func TestProducerNonIdempotentNotTracked(t *testing.T) {
	s := NewProducerStates()
	s.Update(ProducerBatch{ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1}, 0, 1)
	if s.Len() != 0 {
		t.Fatalf("Len: got %d, want 0", s.Len())
	}
}

func TestProducerUpdateRetainsLastFive(t *testing.T) {
	s := NewProducerStates()
	next := int64(0)
	for i := range int32(8) {
		next = appendProducerBatches(t, s, next, idem(1, 0, 3*i, 3))
	}
	v, ok := s.Get(1)
	if !ok {
		t.Fatal("producer 1 missing")
	}
	if v.NumBatches != NumBatchesToRetain {
		t.Fatalf("NumBatches: got %d, want %d", v.NumBatches, NumBatchesToRetain)
	}
	for i := range NumBatchesToRetain {
		k := int32(i + 3) // batches 3..7 remain, oldest first
		want := BatchMetadata{FirstSeq: 3 * k, LastSeq: 3*k + 2, FirstOffset: int64(3 * k), LastOffset: int64(3*k + 2), MaxTimestamp: 1000 + int64(3*k)}
		if v.Batches[i] != want {
			t.Errorf("batch %d: got %+v, want %+v", i, v.Batches[i], want)
		}
	}
	want := ProducerView{
		ProducerID: 1, ProducerEpoch: 0, LastSequence: 23, LastOffset: 23, LastTimestamp: 1021, LastAppendMs: 5000,
		CoordinatorEpoch: -1, CurrentTxnStartOffset: -1, NumBatches: 5, Batches: v.Batches,
	}
	if v != want {
		t.Errorf("view: got %+v, want %+v", v, want)
	}
	if _, ok := s.Get(2); ok {
		t.Error("Get(2): got a producer, want none")
	}
}

func TestProducerUpdateEpochBumpForgetsBatches(t *testing.T) {
	s := NewProducerStates()
	appendProducerBatches(t, s, 0, idem(1, 0, 0, 2), idem(1, 0, 2, 2), idem(1, 1, 0, 1))
	v, _ := s.Get(1)
	if v.ProducerEpoch != 1 || v.NumBatches != 1 || v.LastSequence != 0 || v.LastOffset != 4 {
		t.Fatalf("got %+v, want epoch 1 with one batch at offset 4", v)
	}
	if v.Batches[1] != (BatchMetadata{}) {
		t.Errorf("stale slot not cleared: %+v", v.Batches[1])
	}
}

func TestProducerUpdateTransactionStart(t *testing.T) {
	s := NewProducerStates()
	next := appendProducerBatches(t, s, 10, idem(1, 0, 0, 1))
	b := idem(1, 0, 1, 2)
	b.Transactional = true
	next = appendProducerBatches(t, s, next, b)
	b = idem(1, 0, 3, 1)
	b.Transactional = true
	appendProducerBatches(t, s, next, b)
	if v, _ := s.Get(1); v.CurrentTxnStartOffset != 11 {
		t.Errorf("CurrentTxnStartOffset: got %d, want 11 (first transactional batch)", v.CurrentTxnStartOffset)
	}
}

func TestProducerExpire(t *testing.T) {
	s := NewProducerStates()
	s.Update(idem(1, 0, 0, 1), 0, 1_000)
	s.Update(idem(2, 0, 0, 1), 1, 2_000)
	txn := idem(3, 0, 0, 1)
	txn.Transactional = true
	s.Update(txn, 2, 0)
	s.Update(idem(4, 0, 0, 1), 3, 5_000)

	if n := s.Expire(1_000+DefaultProducerIDExpirationMs-1, DefaultProducerIDExpirationMs); n != 0 {
		t.Fatalf("one ms early: removed %d, want 0", n)
	}
	// Kafka: expired when now - last >= expiration.
	if n := s.Expire(2_000+DefaultProducerIDExpirationMs, DefaultProducerIDExpirationMs); n != 2 {
		t.Fatalf("removed %d, want 2 (producers 1 and 2)", n)
	}
	for id, want := range map[int64]bool{1: false, 2: false, 3: true, 4: true} {
		if _, ok := s.Get(id); ok != want {
			t.Errorf("producer %d present: got %v, want %v", id, ok, want)
		}
	}
	// An open transaction keeps a producer however old it is.
	if n := s.Expire(math.MaxInt64/2, DefaultProducerIDExpirationMs); n != 1 || s.Len() != 1 {
		t.Fatalf("removed %d leaving %d, want 1 leaving producer 3", n, s.Len())
	}
	// An expired producer is unknown again: any sequence is accepted.
	if _, _, _, err := s.Check(idem(1, 0, 99, 1)); err != nil {
		t.Errorf("Check after expiry: %v", err)
	}
}

func TestProducerTruncateAfter(t *testing.T) {
	s := NewProducerStates()
	next := int64(0)
	for i := range int32(4) { // producer 1: offsets 0-1, 4-5, 8-9, 12-13
		next = appendProducerBatches(t, s, next, idem(1, 0, 2*i, 2), idem(2, 0, 2*i, 2))
	}
	tb := idem(3, 0, 0, 1)
	tb.Transactional = true
	next = appendProducerBatches(t, s, next, tb) // producer 3 at 16, opens a txn
	appendProducerBatches(t, s, next, idem(4, 0, 0, 1))

	s.TruncateAfter(9) // cuts the batch at 8-9 and everything later
	v, ok := s.Get(1)
	if !ok || v.NumBatches != 2 || v.LastSequence != 3 || v.LastOffset != 5 || v.LastTimestamp != 1002 {
		t.Fatalf("producer 1: got %+v (present %v), want 2 batches ending at seq 3, offset 5", v, ok)
	}
	if v.Batches[2] != (BatchMetadata{}) {
		t.Errorf("cut slot not cleared: %+v", v.Batches[2])
	}
	if v, _ := s.Get(2); v.LastOffset != 7 {
		t.Errorf("producer 2 last offset: got %d, want 7", v.LastOffset)
	}
	for _, id := range []int64{3, 4} {
		if _, ok := s.Get(id); ok {
			t.Errorf("producer %d: still present after all its batches were cut", id)
		}
	}
	// The producer retries the lost batch: in sequence again.
	if dup, _, _, err := s.Check(idem(1, 0, 4, 2)); dup || err != nil {
		t.Errorf("retry after truncation: dup %v, err %v; want accepted", dup, err)
	}
}

func TestProducerTruncateAfterKeepsTransactionBeforeCut(t *testing.T) {
	s := NewProducerStates()
	tb := idem(1, 0, 0, 1)
	tb.Transactional = true
	tb2 := idem(1, 0, 1, 1)
	tb2.Transactional = true
	appendProducerBatches(t, s, 5, tb, tb2)
	s.TruncateAfter(6)
	if v, _ := s.Get(1); v.CurrentTxnStartOffset != 5 || v.NumBatches != 1 {
		t.Errorf("got %+v, want the transaction from 5 kept with one batch", v)
	}
	s.TruncateAfter(5)
	if s.Len() != 0 {
		t.Errorf("Len: got %d, want 0", s.Len())
	}
}

func TestProducerClone(t *testing.T) {
	s := NewProducerStates()
	appendProducerBatches(t, s, 0, idem(1, 0, 0, 1), idem(2, 0, 0, 1))
	c := s.Clone()
	if !sameStates(s, c) {
		t.Fatal("clone differs")
	}
	appendProducerBatches(t, c, 2, idem(1, 0, 1, 1))
	if v, _ := s.Get(1); v.NumBatches != 1 {
		t.Errorf("original changed with its clone: %+v", v)
	}
}

func TestProducerAll(t *testing.T) {
	s := NewProducerStates()
	appendProducerBatches(t, s, 0, idem(9, 0, 0, 1), idem(3, 0, 0, 1), idem(5, 0, 0, 1))
	var ids []int64
	for v := range s.All() {
		ids = append(ids, v.ProducerID)
		if v.ProducerID == 3 {
			break
		}
	}
	if !reflect.DeepEqual(ids, []int64{3}) {
		t.Errorf("early break: got %v, want [3]", ids)
	}
	ids = ids[:0]
	for v := range s.All() {
		ids = append(ids, v.ProducerID)
	}
	if !reflect.DeepEqual(ids, []int64{3, 5, 9}) {
		t.Errorf("got %v, want [3 5 9]", ids)
	}
}

// producerModel restates the rules over plain slices, written differently
// from the implementation, for the randomized comparison below.
type producerModel struct {
	producers map[int64]*modelProducer
}

type modelProducer struct {
	epoch      int16
	batches    []BatchMetadata // current epoch, at most 5, oldest first
	txnFirst   int64           // -1: no open transaction
	lastAppend int64
	coordEpoch int32
	lastTxn    [2]int64 // first offset and marker of the last completed transaction, -1 if none
}

// firstOpen is the oldest open transaction's first offset, -1 if none.
func (m *producerModel) firstOpen() int64 {
	first := int64(-1)
	for _, p := range m.producers {
		if p.txnFirst >= 0 && (first < 0 || p.txnFirst < first) {
			first = p.txnFirst
		}
	}
	return first
}

// checkMarker is CheckMarker restated.
func (m *producerModel) checkMarker(mk Marker) *kerr.Error {
	p := m.producers[mk.ProducerID]
	switch {
	case p == nil:
		return nil
	case mk.ProducerEpoch < p.epoch:
		return kerr.InvalidProducerEpoch
	case mk.CoordinatorEpoch < p.coordEpoch:
		return kerr.TransactionCoordinatorFenced
	}
	return nil
}

// applyMarker is ApplyMarker restated.
func (m *producerModel) applyMarker(mk Marker, offset, now int64) (CompletedTxn, bool) {
	p := m.producers[mk.ProducerID]
	if p == nil {
		p = &modelProducer{epoch: mk.ProducerEpoch, txnFirst: -1, coordEpoch: -1, lastTxn: [2]int64{-1, -1}}
		m.producers[mk.ProducerID] = p
	}
	var txn CompletedTxn
	ok := p.txnFirst >= 0
	if ok {
		lso := offset + 1
		for id, o := range m.producers {
			if id != mk.ProducerID && o.txnFirst >= 0 && o.txnFirst < lso {
				lso = o.txnFirst
			}
		}
		txn = CompletedTxn{ProducerID: mk.ProducerID, FirstOffset: p.txnFirst, LastOffset: offset, LastStableOffset: lso, Aborted: !mk.Commit}
		p.lastTxn = [2]int64{p.txnFirst, offset}
		p.txnFirst = -1
	}
	if p.epoch != mk.ProducerEpoch {
		p.epoch, p.batches = mk.ProducerEpoch, nil
	}
	p.coordEpoch = mk.CoordinatorEpoch
	p.lastAppend = now
	return txn, ok
}

func (m *producerModel) check(b ProducerBatch) (bool, int64, int64, *kerr.Error) {
	if b.ProducerID < 0 {
		return false, -1, -1, nil
	}
	last := int32((int64(b.BaseSequence) + int64(b.LastOffsetDelta)) & math.MaxInt32)
	p, known := m.producers[b.ProducerID]
	if !known {
		if b.ProducerEpoch < -1 {
			return false, -1, -1, kerr.InvalidProducerEpoch
		}
		return false, -1, -1, nil
	}
	if p.epoch == b.ProducerEpoch {
		for _, x := range p.batches {
			if x.FirstSeq == b.BaseSequence && x.LastSeq == last {
				return true, x.FirstOffset, x.LastOffset, nil
			}
		}
	}
	switch {
	case b.ProducerEpoch < p.epoch:
		return false, -1, -1, kerr.InvalidProducerEpoch
	case b.ProducerEpoch > p.epoch:
		if b.BaseSequence != 0 && p.epoch != -1 {
			return false, -1, -1, kerr.OutOfOrderSequenceNumber
		}
		if p.txnFirst != -1 && !b.Transactional {
			return false, -1, -1, kerr.InvalidTxnState
		}
		return false, -1, -1, nil
	}
	want := int32(0)
	if n := len(p.batches); n > 0 {
		want = int32((int64(p.batches[n-1].LastSeq) + 1) & math.MaxInt32)
	}
	if b.BaseSequence != want {
		return false, -1, -1, kerr.OutOfOrderSequenceNumber
	}
	if p.txnFirst != -1 && !b.Transactional {
		return false, -1, -1, kerr.InvalidTxnState
	}
	return false, -1, -1, nil
}

func (m *producerModel) update(b ProducerBatch, offset, now int64) {
	if b.ProducerID < 0 {
		return
	}
	p := m.producers[b.ProducerID]
	if p == nil || p.epoch != b.ProducerEpoch {
		if p == nil {
			p = &modelProducer{txnFirst: -1, coordEpoch: -1, lastTxn: [2]int64{-1, -1}}
			m.producers[b.ProducerID] = p
		}
		p.epoch, p.batches = b.ProducerEpoch, nil
	}
	p.batches = append(p.batches, BatchMetadata{
		FirstSeq: b.BaseSequence, LastSeq: int32((int64(b.BaseSequence) + int64(b.LastOffsetDelta)) & math.MaxInt32),
		FirstOffset: offset, LastOffset: offset + int64(b.LastOffsetDelta), MaxTimestamp: b.MaxTimestamp,
	})
	if len(p.batches) > NumBatchesToRetain {
		p.batches = p.batches[1:]
	}
	if b.Transactional && p.txnFirst == -1 {
		p.txnFirst = offset
	}
	p.lastAppend = now
}

// TestProducerModel drives the implementation and the model with random
// produce traffic (in order, retries, gaps, epoch bumps, stale epochs,
// sequences near the wrap), expiry, truncation and snapshot reloads, and
// compares every answer.
func TestProducerModel(t *testing.T) {
	for seed := range uint64(20) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			r := rand.New(rand.NewPCG(seed, 42))
			s := NewProducerStates()
			m := &producerModel{producers: map[int64]*modelProducer{}}
			next, now := int64(0), int64(0)
			for step := range 3000 {
				now += r.Int64N(1000)
				switch op := r.IntN(100); {
				case op < 2:
					exp := r.Int64N(20_000)
					s.Expire(now, exp)
					for id, p := range m.producers {
						if p.txnFirst == -1 && now-p.lastAppend >= exp {
							delete(m.producers, id)
						}
					}
				case op < 4:
					cut := next - r.Int64N(30)
					s.TruncateAfter(cut)
					for id, p := range m.producers {
						n := len(p.batches)
						for len(p.batches) > 0 && p.batches[len(p.batches)-1].LastOffset >= cut {
							p.batches = p.batches[:len(p.batches)-1]
						}
						if p.txnFirst >= cut {
							p.txnFirst = -1
						}
						if p.lastTxn[1] >= cut {
							// The marker is gone: its transaction is open again
							// if any of it survived.
							if p.txnFirst == -1 && p.lastTxn[0] < cut {
								p.txnFirst = p.lastTxn[0]
							}
							p.lastTxn = [2]int64{-1, -1}
						}
						if n > 0 && len(p.batches) == 0 && p.txnFirst == -1 {
							delete(m.producers, id)
						}
					}
					next = max(cut, 0)
				case op < 12:
					mk := randomMarker(r, m)
					before := s.Clone()
					err := s.CheckMarker(mk)
					merr := m.checkMarker(mk)
					if (merr == nil) != (err == nil) || (merr != nil && !errors.Is(err, merr)) {
						t.Fatalf("step %d: CheckMarker(%+v) = %v, model %v", step, mk, err, merr)
					}
					if !sameStates(before, s) {
						t.Fatalf("step %d: CheckMarker changed the state", step)
					}
					if err == nil {
						txn, ok := s.ApplyMarker(mk, next, now)
						mtxn, mok := m.applyMarker(mk, next, now)
						if ok != mok || txn != mtxn {
							t.Fatalf("step %d: ApplyMarker(%+v) at %d = %+v %v, model %+v %v", step, mk, next, txn, ok, mtxn, mok)
						}
						next++
					}
				case op < 6:
					loaded, err := LoadProducerSnapshot(s.AppendSnapshot(nil))
					if err != nil {
						t.Fatalf("step %d: %v", step, err)
					}
					if !sameStates(loaded, s) {
						t.Fatalf("step %d: snapshot round trip differs", step)
					}
					s = loaded
				default:
					b := randomProducerBatch(r, m)
					before := s.Clone()
					dup, first, last, err := s.Check(b)
					mdup, mfirst, mlast, merr := m.check(b)
					if dup != mdup || first != mfirst || last != mlast || (merr == nil) != (err == nil) || (merr != nil && !errors.Is(err, merr)) {
						t.Fatalf("step %d: Check(%+v) = (%v, %d, %d, %v), model (%v, %d, %d, %v)",
							step, b, dup, first, last, err, mdup, mfirst, mlast, merr)
					}
					if !sameStates(before, s) {
						t.Fatalf("step %d: Check changed the state", step)
					}
					if err == nil && !dup {
						s.Update(b, next, now)
						m.update(b, next, now)
						next += int64(b.LastOffsetDelta) + 1
					}
				}
				if s.Len() != len(m.producers) {
					t.Fatalf("step %d: Len %d, model %d", step, s.Len(), len(m.producers))
				}
				first, ok := s.FirstOpenOffset()
				if mf := m.firstOpen(); first != mf || ok != (mf >= 0) {
					t.Fatalf("step %d: FirstOpenOffset %d %v, model %d", step, first, ok, mf)
				}
				for id, p := range m.producers {
					v, ok := s.Get(id)
					if !ok || v.ProducerEpoch != p.epoch || v.CurrentTxnStartOffset != p.txnFirst || v.NumBatches != len(p.batches) ||
						v.CoordinatorEpoch != p.coordEpoch {
						t.Fatalf("step %d: producer %d: %+v (present %v), model %+v", step, id, v, ok, p)
					}
				}
			}
		})
	}
}

// randomMarker is a marker for a random producer: mostly its current
// epoch, sometimes a newer or an older one, and a coordinator epoch around
// the last one.
func randomMarker(r *rand.Rand, m *producerModel) Marker {
	mk := Marker{ProducerID: r.Int64N(3), Commit: r.IntN(2) == 0, Timestamp: r.Int64N(1 << 40), CoordinatorEpoch: r.Int32N(3)}
	p := m.producers[mk.ProducerID]
	if p == nil {
		mk.ProducerEpoch = int16(r.IntN(3))
		return mk
	}
	mk.ProducerEpoch = p.epoch
	switch c := r.IntN(10); {
	case c == 0:
		mk.ProducerEpoch++
	case c == 1:
		mk.ProducerEpoch--
	}
	mk.CoordinatorEpoch = max(p.coordEpoch, 0) + r.Int32N(3) - 1
	return mk
}

func randomProducerBatch(r *rand.Rand, m *producerModel) ProducerBatch {
	pid := r.Int64N(4) - 1 // -1 is non-idempotent
	n := 1 + r.Int32N(4)
	b := ProducerBatch{ProducerID: pid, LastOffsetDelta: n - 1, MaxTimestamp: r.Int64N(1 << 40), Transactional: pid >= 0 && r.IntN(8) == 0}
	p := m.producers[pid]
	if p != nil && p.txnFirst >= 0 {
		// Mostly the rest of the transaction; sometimes a stray
		// non-transactional batch (INVALID_TXN_STATE).
		b.Transactional = r.IntN(10) != 0
	}
	if p == nil {
		b.ProducerEpoch = int16(r.IntN(3))
		if r.IntN(2) == 0 {
			b.BaseSequence = math.MaxInt32 - r.Int32N(5)
		} else {
			b.BaseSequence = r.Int32N(3)
		}
		return b
	}
	b.ProducerEpoch = p.epoch
	nextSeq := int32(0)
	if k := len(p.batches); k > 0 {
		nextSeq = int32((int64(p.batches[k-1].LastSeq) + 1) & math.MaxInt32)
	}
	switch c := r.IntN(20); {
	case c < 12:
		b.BaseSequence = nextSeq
	case c < 15 && len(p.batches) > 0: // retry of a remembered batch
		x := p.batches[r.IntN(len(p.batches))]
		b.BaseSequence, b.LastOffsetDelta = x.FirstSeq, int32(x.LastOffset-x.FirstOffset)
	case c < 16:
		b.BaseSequence = int32((int64(nextSeq) + 1 + r.Int64N(3)) & math.MaxInt32)
	case c < 17:
		b.BaseSequence = int32((int64(nextSeq) + math.MaxInt32 - r.Int64N(12)) & math.MaxInt32) // behind
	case c < 19:
		b.ProducerEpoch = p.epoch + 1
		b.BaseSequence = r.Int32N(2)
	default:
		b.ProducerEpoch = p.epoch - 1
	}
	return b
}

func TestProducerCheckUpdateAllocs(t *testing.T) {
	s := NewProducerStates()
	for id := range int64(100) {
		appendProducerBatches(t, s, id, idem(id, 0, 0, 1))
	}
	seq, off := int32(1), int64(1000)
	allocs := testing.AllocsPerRun(1000, func() {
		b := idem(42, 0, seq, 3)
		if dup, _, _, err := s.Check(b); dup || err != nil {
			panic(fmt.Sprint(dup, err))
		}
		s.Update(b, off, off)
		// and a duplicate of the batch just written
		if dup, _, _, _ := s.Check(b); !dup {
			panic("not a duplicate")
		}
		seq += 3
		off += 3
	})
	if allocs != 0 {
		t.Errorf("Check+Update of a known producer: %v allocations, want 0", allocs)
	}
}

func BenchmarkProducerCheckUpdate(b *testing.B) {
	for _, producers := range []int{1, 10_000} {
		b.Run(fmt.Sprintf("producers=%d", producers), func(b *testing.B) {
			s := NewProducerStates()
			seqs := make([]int32, producers)
			for id := range producers {
				appendProducerBatches(b, s, int64(id), idem(int64(id), 0, 0, 1))
				seqs[id] = 1
			}
			off, i := int64(producers), 0
			b.ReportAllocs()
			for b.Loop() {
				id := i % producers
				pb := idem(int64(id), 0, seqs[id], 10)
				if dup, _, _, err := s.Check(pb); dup || err != nil {
					b.Fatal(dup, err)
				}
				s.Update(pb, off, off)
				seqs[id] = incrementSequence(seqs[id], 10)
				off += 10
				i++
			}
		})
	}
}

func BenchmarkProducerCheckDuplicate(b *testing.B) {
	s := NewProducerStates()
	appendProducerBatches(b, s, 0, idem(1, 0, 0, 2), idem(1, 0, 2, 2), idem(1, 0, 4, 2), idem(1, 0, 6, 2), idem(1, 0, 8, 2))
	pb := idem(1, 0, 0, 2) // the oldest: the longest search
	b.ReportAllocs()
	for b.Loop() {
		if dup, _, _, _ := s.Check(pb); !dup {
			b.Fatal("not a duplicate")
		}
	}
}
