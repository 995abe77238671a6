package partition

import (
	"bytes"
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kbroker/kbroker/partition/batch"
)

// The model-based test drives random operations against a Store and a plain
// in-memory model of what Kafka promises, and compares every answer.

type storeModelRecord struct {
	offset int64
	ts     int64
	value  []byte
}

type storeModelBatch struct {
	base    int64
	records []storeModelRecord
}

type storeModelProducer struct {
	id      int64
	key     [KeySize]byte // its partition: idempotence is per producer and partition
	nextSeq int32
	history []storeModelProduced // the last batches, for retries
}

type storeModelProduced struct {
	tb   testBatch
	base int64
}

type storeModelPartition struct {
	batches  []storeModelBatch
	logStart int64
	next     int64
	// open maps a producer to the first offset of its open transaction.
	open map[int64]int64
	// aborted lists aborted transactions in marker order.
	aborted []storeModelAborted
}

type storeModelAborted struct {
	pid, first, last int64
}

// lso is Kafka's last stable offset once everything is visible: the
// oldest open transaction's first offset, else the log end, never below
// the log start.
func (m *storeModelPartition) lso() int64 {
	lso := m.next
	for _, f := range m.open {
		lso = min(lso, f)
	}
	return max(lso, m.logStart)
}

// abortedIn is Kafka's answer for [from, to): aborts whose marker is at or
// after from and whose first offset is below to, in marker order.
func (m *storeModelPartition) abortedIn(from, to int64) []AbortedTxn {
	var out []AbortedTxn
	for _, a := range m.aborted {
		if a.last >= from && a.first < to && a.last >= m.logStart {
			out = append(out, AbortedTxn{ProducerID: a.pid, FirstOffset: a.first})
		}
	}
	return out
}

// storeModelTxnProducer is a transactional producer writing to two
// partitions that the other transactional producers share, so that their
// transactions interleave.
type storeModelTxnProducer struct {
	id      int64
	parts   [][KeySize]byte
	nextSeq map[[KeySize]byte]int32
	touched map[[KeySize]byte]bool // partitions of the current transaction
}

// visible returns the model's records from offset on.
func (m *storeModelPartition) recordsFrom(offset int64) []storeModelRecord {
	var out []storeModelRecord
	for _, b := range m.batches {
		for _, r := range b.records {
			if r.offset >= offset {
				out = append(out, r)
			}
		}
	}
	return out
}

// offsetForTime is Kafka's answer: the first record, in offset order, at
// or after the log start with timestamp ≥ ts.
func (m *storeModelPartition) offsetForTime(ts int64) (int64, int64) {
	for _, r := range m.recordsFrom(m.logStart) {
		if r.ts >= ts {
			return r.offset, r.ts
		}
	}
	return -1, -1
}

// maxTimestamp is the first record carrying the largest timestamp.
func (m *storeModelPartition) maxTimestamp() (int64, int64) {
	off, ts := int64(-1), int64(-1)
	for _, r := range m.recordsFrom(m.logStart) {
		if r.ts > ts {
			off, ts = r.offset, r.ts
		}
	}
	return off, ts
}

type storeModel struct {
	t      *testing.T
	cfg    Config
	topics []TopicSpec
	s      *Store
	parts  map[[KeySize]byte]*storeModelPartition
	prods  []*storeModelProducer
	txns   []*storeModelTxnProducer
	rng    *rand.Rand
	now    int64
}

func TestStoreModel(t *testing.T) {
	for _, mode := range []FlushMode{FlushSync, FlushAsync} {
		t.Run(mode.String(), func(t *testing.T) {
			t.Parallel()
			runModel(t, mode, 600, 1)
		})
	}
}

func runModel(t *testing.T, mode FlushMode, steps int, seed uint64) {
	mt := &storeModel{
		t:     t,
		cfg:   testStoreConfig(t, mode),
		parts: map[[KeySize]byte]*storeModelPartition{},
		rng:   rand.New(rand.NewPCG(seed, uint64(mode))),
		now:   time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli(),
	}
	mt.cfg.Now = func() time.Time { return time.UnixMilli(mt.now) }
	for i := byte(0); i < 3; i++ {
		mt.topics = append(mt.topics, TopicSpec{ID: topicID(i), Name: "t" + string('a'+rune(i)), Partitions: 3, Config: DefaultTopicConfig()})
		for p := int32(0); p < 3; p++ {
			mt.parts[entryKey(topicID(i), p)] = &storeModelPartition{open: map[int64]int64{}}
		}
	}
	for i := 0; i < 3; i++ {
		// Producer i writes to partition i of topic i.
		mt.prods = append(mt.prods, &storeModelProducer{id: int64(1000 + i), key: entryKey(topicID(byte(i)), int32(i))})
	}
	for i := 0; i < 3; i++ {
		// Transactional producers share partition 0 of topic 0 and
		// partition 1 of topic 1 (where idempotent producer 1 writes too).
		mt.txns = append(mt.txns, &storeModelTxnProducer{
			id:      int64(2000 + i),
			parts:   [][KeySize]byte{entryKey(topicID(0), 0), entryKey(topicID(1), 1)},
			nextSeq: map[[KeySize]byte]int32{},
			touched: map[[KeySize]byte]bool{},
		})
	}
	mt.open()
	defer func() { mt.s.Close() }()
	for step := 0; step < steps; step++ {
		mt.now += int64(mt.rng.IntN(50))
		switch r := mt.rng.IntN(100); {
		case r < 45:
			mt.append()
		case r < 60:
			mt.txnStep()
		case r < 72:
			mt.checkRead(mt.randomPartition())
		case r < 82:
			mt.checkListOffsets(mt.randomPartition())
		case r < 85:
			mt.deleteRecords()
		case r < 90:
			mt.s.Close()
			mt.open()
			mt.checkAll("clean restart")
		case r < 96:
			mt.crash()
			mt.open()
			mt.checkAll("crash")
		default:
			mt.s.Close()
			if err := os.RemoveAll(filepath.Join(mt.cfg.Dir, "consumequeue")); err != nil {
				t.Fatal(err)
			}
			mt.open()
			mt.checkAll("consume queues rebuilt")
		}
	}
	mt.checkAll("end")
}

func (mt *storeModel) open() {
	s, _, err := Open(mt.cfg, mt.topics)
	if err != nil {
		mt.t.Fatalf("open: %v", err)
	}
	mt.s = s
}

// crash stops the store as a SIGKILL would: no checkpoint, no clean close.
func (mt *storeModel) crash() { crashStore(mt.s) }

func (mt *storeModel) randomPartition() *Partition {
	t := mt.topics[mt.rng.IntN(len(mt.topics))]
	return mt.s.Partition(t.ID, int32(mt.rng.IntN(int(t.Partitions))))
}

func (mt *storeModel) randomBatch() testBatch {
	n := 1 + mt.rng.IntN(4)
	tb := testBatch{pid: -1, baseTs: mt.now - int64(mt.rng.IntN(5000))}
	for i := 0; i < n; i++ {
		tb.values = append(tb.values, bytes.Repeat([]byte{byte(mt.rng.IntN(256))}, mt.rng.IntN(3000)))
		tb.tsDeltas = append(tb.tsDeltas, int64(mt.rng.IntN(10000)))
	}
	return tb
}

func (mt *storeModel) append() {
	t := mt.t
	p := mt.randomPartition()
	tb := mt.randomBatch()
	var prod *storeModelProducer
	kind := "plain"
	if mt.rng.IntN(2) == 0 {
		prod = mt.prods[mt.rng.IntN(len(mt.prods))]
		p = mt.s.Partition(TopicID(prod.key[:16]), int32(prod.key[19]))
		tb.pid, tb.epoch, tb.seq = prod.id, 0, prod.nextSeq
		kind = "idempotent"
		if h := prod.history; len(h) > 0 && mt.rng.IntN(5) == 0 {
			kind = "retry"
			tb = h[len(h)-1-mt.rng.IntN(len(h))].tb
		} else if len(prod.history) > 0 && mt.rng.IntN(12) == 0 {
			kind = "gap"
			tb.seq += 3
		}
	}
	m := mt.parts[p.key]
	res, err := p.Append(tb.encode(), 9, mt.now)
	if err == nil {
		err = mt.s.AwaitDurable(context.Background(), res.End)
	}
	switch kind {
	case "gap":
		if !errors.Is(err, kerr.OutOfOrderSequenceNumber) {
			t.Fatalf("sequence gap: got %v, want OUT_OF_ORDER_SEQUENCE_NUMBER", err)
		}
		return
	case "retry":
		var want int64 = -1
		for _, h := range prod.history {
			if h.tb.seq == tb.seq {
				want = h.base
			}
		}
		if err != nil || !res.Duplicate || res.BaseOffset != want {
			t.Fatalf("retry of seq %d: got %+v, %v; want duplicate at %d", tb.seq, res, err, want)
		}
		return
	}
	if err != nil {
		t.Fatalf("append: %v", err)
	}
	if res.BaseOffset != m.next || res.Duplicate {
		t.Fatalf("append to %s-%d: base %d dup=%v, want %d", p.topic, p.index, res.BaseOffset, res.Duplicate, m.next)
	}
	mb := storeModelBatch{base: res.BaseOffset}
	for i, v := range tb.values {
		mb.records = append(mb.records, storeModelRecord{offset: res.BaseOffset + int64(i), ts: tb.baseTs + tb.tsDeltas[i], value: v})
	}
	m.batches = append(m.batches, mb)
	m.next += int64(len(tb.values))
	if prod != nil {
		prod.nextSeq += int32(len(tb.values))
		prod.history = append(prod.history, storeModelProduced{tb: tb, base: res.BaseOffset})
		if len(prod.history) > 5 {
			prod.history = prod.history[1:]
		}
	}
	if hw := p.HighWatermark(); hw != m.next {
		t.Fatalf("%s-%d: high watermark %d after a durable append, want %d", p.topic, p.index, hw, m.next)
	}
	if lso := p.LastStableOffset(); lso != m.lso() {
		t.Fatalf("%s-%d: last stable offset %d after a durable append, want %d", p.topic, p.index, lso, m.lso())
	}
}

// txnStep is one step of a random transactional producer: a transactional
// batch, the end of its transaction (markers on every partition it wrote
// to, sometimes one more without data), or a stray non-transactional batch
// inside a transaction, which must be refused.
func (mt *storeModel) txnStep() {
	t := mt.t
	tp := mt.txns[mt.rng.IntN(len(mt.txns))]
	switch r := mt.rng.IntN(10); {
	case r < 6:
		key := tp.parts[mt.rng.IntN(len(tp.parts))]
		mt.txnBatch(tp, key, true)
	case r < 9:
		commit := mt.rng.IntN(2) == 0
		keys := make([][KeySize]byte, 0, len(tp.parts))
		for _, k := range tp.parts {
			if tp.touched[k] || mt.rng.IntN(8) == 0 {
				keys = append(keys, k)
			}
		}
		for _, k := range keys {
			p := mt.s.Partition(TopicID(k[:16]), int32(k[19]))
			m := mt.parts[k]
			res, err := p.AppendMarker(tp.id, 0, commit, 0, mt.now)
			if err == nil {
				err = mt.s.AwaitDurable(context.Background(), res.End)
			}
			if err != nil || res.BaseOffset != m.next {
				t.Fatalf("marker on %s-%d: %+v, %v; want offset %d", p.topic, p.index, res, err, m.next)
			}
			// The marker's record: value [version 0][coordinator epoch 0].
			m.batches = append(m.batches, storeModelBatch{base: m.next, records: []storeModelRecord{{offset: m.next, ts: mt.now, value: make([]byte, 6)}}})
			if first, ok := m.open[tp.id]; ok {
				if !commit {
					m.aborted = append(m.aborted, storeModelAborted{pid: tp.id, first: first, last: m.next})
				}
				delete(m.open, tp.id)
			}
			m.next++
			if p.LastStableOffset() != m.lso() {
				t.Fatalf("%s-%d: last stable offset %d after a marker, want %d", p.topic, p.index, p.LastStableOffset(), m.lso())
			}
		}
		clear(tp.touched)
	default:
		for _, k := range tp.parts {
			if tp.touched[k] {
				mt.txnBatch(tp, k, false)
				return
			}
		}
		mt.txnBatch(tp, tp.parts[0], true)
	}
}

// txnBatch appends a batch of tp to partition key: transactional (opening
// its transaction there if needed), or not, which is INVALID_TXN_STATE
// inside a transaction.
func (mt *storeModel) txnBatch(tp *storeModelTxnProducer, key [KeySize]byte, txn bool) {
	t := mt.t
	p := mt.s.Partition(TopicID(key[:16]), int32(key[19]))
	m := mt.parts[key]
	tb := mt.randomBatch()
	tb.pid, tb.epoch, tb.seq, tb.txn = tp.id, 0, tp.nextSeq[key], txn
	coordinator := mt.rng.IntN(5) == 0
	var res AppendResult
	var err error
	if coordinator {
		// As a coordinator writes it (TxnOffsetCommit): no sequence, every
		// record at the batch's timestamp.
		kvs := make([]batch.KeyValue, len(tb.values))
		for i, v := range tb.values {
			kvs[i] = batch.KeyValue{Key: []byte("k"), Value: v}
			tb.tsDeltas[i] = 0
		}
		tb.baseTs = mt.now
		o := batch.BuildOptions{Timestamp: mt.now, ProducerID: tp.id, ProducerEpoch: 0}
		if txn {
			o.Attributes = batch.AttrTransactional
		}
		res, err = p.AppendCoordinator(batch.AppendBuild(nil, o, kvs), mt.now)
	} else {
		res, err = p.Append(tb.encode(), 9, mt.now)
	}
	if err == nil {
		err = mt.s.AwaitDurable(context.Background(), res.End)
	}
	if !txn {
		if !errors.Is(err, kerr.InvalidTxnState) {
			t.Fatalf("non-transactional batch inside a transaction: %+v, %v", res, err)
		}
		return
	}
	if err != nil || res.BaseOffset != m.next || res.Duplicate {
		t.Fatalf("transactional append to %s-%d: %+v, %v; want offset %d", p.topic, p.index, res, err, m.next)
	}
	mb := storeModelBatch{base: res.BaseOffset}
	for i, v := range tb.values {
		mb.records = append(mb.records, storeModelRecord{offset: res.BaseOffset + int64(i), ts: tb.baseTs + tb.tsDeltas[i], value: v})
	}
	m.batches = append(m.batches, mb)
	if _, ok := m.open[tp.id]; !ok {
		m.open[tp.id] = m.next
	}
	m.next += int64(len(tb.values))
	if !coordinator {
		tp.nextSeq[key] += int32(len(tb.values))
	}
	tp.touched[key] = true
	if lso := p.LastStableOffset(); lso != m.lso() {
		t.Fatalf("%s-%d: last stable offset %d after a transactional append, want %d", p.topic, p.index, lso, m.lso())
	}
}

func (mt *storeModel) checkRead(p *Partition) {
	t := mt.t
	m := mt.parts[p.key]
	off := m.logStart + int64(mt.rng.IntN(int(m.next-m.logStart+1)))
	got, res := readRecords(t, p, off)
	if res.HighWatermark != m.next || res.LogStartOffset != m.logStart {
		t.Fatalf("%s-%d: hw %d start %d, want %d %d", p.topic, p.index, res.HighWatermark, res.LogStartOffset, m.next, m.logStart)
	}
	var filtered []decodedRecord
	for _, r := range got {
		if r.offset >= off {
			filtered = append(filtered, r)
		}
	}
	if len(got) > 0 && got[0].offset > off {
		t.Fatalf("%s-%d: read at %d starts at %d", p.topic, p.index, off, got[0].offset)
	}
	want := m.recordsFrom(off)
	if len(filtered) != len(want) {
		t.Fatalf("%s-%d: read at %d: %d records, want %d", p.topic, p.index, off, len(filtered), len(want))
	}
	for i := range want {
		if filtered[i].offset != want[i].offset || filtered[i].ts != want[i].ts || !bytes.Equal(filtered[i].value, want[i].value) {
			t.Fatalf("%s-%d: record %d differs: got offset %d ts %d, want %d %d", p.topic, p.index, i, filtered[i].offset, filtered[i].ts, want[i].offset, want[i].ts)
		}
	}
	if res.LastStableOffset != m.lso() {
		t.Fatalf("%s-%d: read says last stable offset %d, want %d", p.topic, p.index, res.LastStableOffset, m.lso())
	}
	// read_committed: the records below the last stable offset, and the
	// aborted transactions of the range returned.
	cres, ranges, err := p.ReadCommitted(off, 1<<40, true, nil)
	if err != nil {
		t.Fatalf("%s-%d: read committed at %d: %v", p.topic, p.index, off, err)
	}
	cgot := decodeRanges(t, ranges)
	ReleaseRanges(ranges)
	var cwant []int64
	for _, r := range want {
		if r.offset < m.lso() {
			cwant = append(cwant, r.offset)
		}
	}
	var cfiltered []int64
	for _, r := range cgot {
		if r.offset >= off {
			cfiltered = append(cfiltered, r.offset)
		}
	}
	if !slices.Equal(cfiltered, cwant) {
		t.Fatalf("%s-%d: read committed at %d (lso %d): offsets %v, want %v", p.topic, p.index, off, m.lso(), cfiltered, cwant)
	}
	wantNext := off
	if len(cgot) > 0 {
		wantNext = cgot[len(cgot)-1].offset + 1
	}
	if cres.NextOffset != wantNext {
		t.Fatalf("%s-%d: read committed at %d: NextOffset %d, want %d", p.topic, p.index, off, cres.NextOffset, wantNext)
	}
	if got, w := p.AbortedTransactions(off, cres.NextOffset, nil), m.abortedIn(off, cres.NextOffset); !slices.Equal(got, w) {
		t.Fatalf("%s-%d: aborted in [%d, %d): %v, want %v", p.topic, p.index, off, cres.NextOffset, got, w)
	}
	from := m.logStart + int64(mt.rng.IntN(int(m.next-m.logStart+1)))
	to := from + int64(mt.rng.IntN(int(m.next-from+1)))
	if got, w := p.AbortedTransactions(from, to, nil), m.abortedIn(from, to); !slices.Equal(got, w) {
		t.Fatalf("%s-%d: aborted in [%d, %d): %v, want %v", p.topic, p.index, from, to, got, w)
	}
	// Out of range on both sides.
	if _, _, err := p.Read(m.next+1, 1<<20, true, nil); !errors.Is(err, kerr.OffsetOutOfRange) {
		t.Fatalf("read past the end: %v", err)
	}
	if m.logStart > 0 {
		if _, _, err := p.Read(m.logStart-1, 1<<20, true, nil); !errors.Is(err, kerr.OffsetOutOfRange) {
			t.Fatalf("read below the start: %v", err)
		}
	}
}

func (mt *storeModel) checkListOffsets(p *Partition) {
	t := mt.t
	m := mt.parts[p.key]
	check := func(ts, wantOff, wantTs int64) {
		t.Helper()
		off, gotTs, err := p.OffsetForTime(ts)
		if err != nil || off != wantOff || (ts >= 0 || ts == MaxTimestamp) && gotTs != wantTs {
			t.Fatalf("%s-%d: ListOffsets(%d) = %d, %d, %v; want %d, %d", p.topic, p.index, ts, off, gotTs, err, wantOff, wantTs)
		}
	}
	check(LatestTimestamp, m.next, -1)
	check(EarliestTimestamp, m.logStart, -1)
	if off, _, err := p.OffsetForTimeCommitted(LatestTimestamp); err != nil || off != m.lso() {
		t.Fatalf("%s-%d: read_committed ListOffsets(latest) = %d, %v; want %d", p.topic, p.index, off, err, m.lso())
	}
	wo, wt := m.maxTimestamp()
	check(MaxTimestamp, wo, wt)
	for i := 0; i < 3; i++ {
		ts := mt.now - int64(mt.rng.IntN(20000))
		wo, wt := m.offsetForTime(ts)
		check(ts, wo, wt)
	}
}

func (mt *storeModel) deleteRecords() {
	p := mt.randomPartition()
	m := mt.parts[p.key]
	off := m.logStart + int64(mt.rng.IntN(int(m.next-m.logStart+1)))
	low, err := p.DeleteRecords(off)
	if err != nil || low != off {
		mt.t.Fatalf("DeleteRecords(%d) = %d, %v", off, low, err)
	}
	m.logStart = off
	if lso := p.LastStableOffset(); lso != m.lso() {
		mt.t.Fatalf("%s-%d: last stable offset %d after DeleteRecords(%d), want %d", p.topic, p.index, lso, off, m.lso())
	}
}

func (mt *storeModel) checkAll(when string) {
	mt.t.Helper()
	for _, tp := range mt.topics {
		for i := int32(0); i < tp.Partitions; i++ {
			p := mt.s.Partition(tp.ID, i)
			m := mt.parts[p.key]
			if p.LogEndOffset() != m.next || p.HighWatermark() != m.next || p.LogStartOffset() != m.logStart || p.LastStableOffset() != m.lso() {
				mt.t.Fatalf("after %s: %s-%d: end %d hw %d start %d lso %d, want %d %d %d %d", when, p.topic, p.index,
					p.LogEndOffset(), p.HighWatermark(), p.LogStartOffset(), p.LastStableOffset(), m.next, m.next, m.logStart, m.lso())
			}
			mt.checkRead(p)
			mt.checkListOffsets(p)
		}
	}
}
