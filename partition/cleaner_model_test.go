package partition

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"math/rand/v2"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/partition/batch"
)

// keyed is one record for keyedBatch: a nil value is a tombstone.
type keyed struct {
	key, value []byte
}

// keyedBatch encodes a batch of keyed records as a producer sends it.
func keyedBatch(recs []keyed, baseTs, pid int64, epoch int16, seq int32, txn bool) []byte {
	rb := kmsg.RecordBatch{Magic: 2, ProducerID: pid, ProducerEpoch: epoch, FirstSequence: seq, FirstTimestamp: baseTs, MaxTimestamp: baseTs}
	if pid < 0 {
		rb.ProducerEpoch, rb.FirstSequence = -1, -1
	}
	if txn {
		rb.Attributes |= batch.AttrTransactional
	}
	var raw []byte
	for i, kv := range recs {
		r := kmsg.Record{OffsetDelta: int32(i), Key: kv.key, Value: kv.value}
		body := r.AppendTo(nil)
		r.Length = int32(len(body) - 1)
		raw = r.AppendTo(raw)
	}
	rb.LastOffsetDelta = int32(len(recs) - 1)
	rb.NumRecords = int32(len(recs))
	rb.Records = raw
	b := rb.AppendTo(nil)
	binary.BigEndian.PutUint32(b[8:], uint32(len(b)-12))
	binary.BigEndian.PutUint32(b[17:], crc32.Checksum(b[21:], crc32.MakeTable(crc32.Castagnoli)))
	return b
}

// compactedRecord is a record as a fetch returns it.
type compactedRecord struct {
	offset     int64
	key, value []byte
	ts         int64
	control    bool
	txn        bool
	pid        int64
}

// readAll fetches p from offset to the high watermark through Read and
// decodes every batch with kmsg, checking CRCs and that offsets increase.
func readAll(t testing.TB, p *Partition, offset int64, committed bool) ([]compactedRecord, ReadResult) {
	t.Helper()
	read := p.Read
	if committed {
		read = p.ReadCommitted
	}
	res, ranges, err := read(offset, 1<<40, true, nil)
	if err != nil {
		t.Fatalf("read at %d: %v", offset, err)
	}
	defer ReleaseRanges(ranges)
	var out []compactedRecord
	prevNext := int64(-1)
	for _, r := range ranges {
		b := make([]byte, r.Len)
		if err := r.File.CopyTo(b, r.Offset); err != nil {
			t.Fatal(err)
		}
		h, err := batch.Verify(b)
		if err != nil {
			t.Fatalf("batch read back does not verify: %v", err)
		}
		if h.BaseOffset < prevNext {
			t.Fatalf("batch at %d after one ending at %d", h.BaseOffset, prevNext)
		}
		prevNext = h.NextOffset(h.BaseOffset)
		if h.HasDeleteHorizon() && h.BaseTimestamp < h.MaxTimestamp {
			// The horizon is stamped after the records were written.
			t.Fatalf("batch at %d: horizon %d before its max timestamp %d", h.BaseOffset, h.BaseTimestamp, h.MaxTimestamp)
		}
		err = batch.Records(b, func(rec batch.Record) bool {
			out = append(out, compactedRecord{offset: h.BaseOffset + int64(rec.OffsetDelta), key: bytes.Clone(rec.Key),
				value: bytes.Clone(rec.Value), ts: rec.Timestamp, control: h.IsControl(), txn: h.IsTransactional(), pid: h.ProducerID})
			return true
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	for i := 1; i < len(out); i++ {
		if out[i].offset <= out[i-1].offset {
			t.Fatalf("offsets not increasing: %d then %d", out[i-1].offset, out[i].offset)
		}
	}
	return out, res
}

// modelRecord is one produced record in the compaction model.
type modelRecord struct {
	offset     int64
	key, value []byte
	ts         int64
	pid        int64
	txnID      int // 0: not transactional
	control    bool
}

type modelTxn struct {
	pid        int64
	first      int64
	marker     int64 // -1 while open
	aborted    bool
	hasRecords bool
}

// compactModel is the full history of a compacted partition, and what a
// pass is allowed to have removed.
type compactModel struct {
	records []modelRecord
	txns    map[int]*modelTxn
	// horizonOf is, per tombstone or marker offset, the first time a pass
	// saw it kept (Kafka stamps now + delete.retention.ms then).
	firstKept map[int64]int64
}

func (m *compactModel) txnOf(r modelRecord) *modelTxn {
	if r.txnID == 0 {
		return nil
	}
	return m.txns[r.txnID]
}

// latest returns, per key, the offset of its latest write that counts
// (not aborted, not in an open transaction) below end.
func (m *compactModel) latest(end int64) map[string]int64 {
	out := map[string]int64{}
	for _, r := range m.records {
		if r.control || r.offset >= end {
			continue
		}
		if tx := m.txnOf(r); tx != nil && (tx.aborted || tx.marker < 0) {
			continue
		}
		out[string(r.key)] = r.offset
	}
	return out
}

// TestCompactionModel drives random keyed writes, tombstones, empty values,
// committed and aborted transactions, cleaning passes with a tiny dedupe
// buffer (several passes per dirty range), clean restarts and crashes, and
// a fake clock; after each pass and restart a read from the start must obey
// Kafka's compaction rules against the full history.
func TestCompactionModel(t *testing.T) {
	seeds := []uint64{1, 2, 3, 4}
	if testing.Short() {
		seeds = seeds[:2]
	}
	for _, seed := range seeds {
		t.Run(fmt.Sprint("seed=", seed), func(t *testing.T) {
			t.Parallel()
			runCompactionModel(t, seed, 300)
		})
	}
}

func runCompactionModel(t *testing.T, seed uint64, steps int) {
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	const (
		keys      = 40
		deleteRet = 500
	)
	clock := time.UnixMilli(1_700_000_000_000)
	cfg := testStoreConfig(t, FlushAsync)
	cfg.Now = func() time.Time { return clock }
	cfg.Cleaner.DedupeBufferSize = compactSlots(24) // 16 slots, 14 keys: several passes
	tc := DefaultTopicConfig()
	tc.Compact = true
	tc.MinCleanableRatio = 0
	tc.DeleteRetentionMs = deleteRet
	tc.SegmentMs = 1
	tc.RetentionMs, tc.RetentionBytes = -1, -1
	topics := []TopicSpec{{ID: topicID(7), Name: "compacted", Partitions: 1, Config: tc}}
	s, _, err := Open(cfg, topics)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { s.Close() }()
	p := s.Partition(topicID(7), 0)

	m := &compactModel{txns: map[int]*modelTxn{}, firstKept: map[int64]int64{}}
	type producer struct {
		pid   int64
		epoch int16
		seq   int32
		txnID int // open transaction, 0 if none
	}
	producers := []*producer{{pid: 100}, {pid: 101}, {pid: 102}}
	nextTxn := 1
	var removedHorizon []int64 // tombstones a pass was due to remove

	appendBatch := func(pr *producer, recs []keyed, txn bool) {
		b := keyedBatch(recs, clock.UnixMilli(), pr.pid, pr.epoch, pr.seq, txn)
		res, err := p.Append(b, 9, clock.UnixMilli())
		if err != nil {
			t.Fatalf("append (producer %d seq %d): %v", pr.pid, pr.seq, err)
		}
		pr.seq += int32(len(recs))
		for i, kv := range recs {
			m.records = append(m.records, modelRecord{offset: res.BaseOffset + int64(i), key: kv.key, value: kv.value,
				ts: clock.UnixMilli(), pid: pr.pid, txnID: pr.txnID})
		}
	}
	randomRecords := func() []keyed {
		n := 1 + rng.IntN(4)
		recs := make([]keyed, n)
		for i := range recs {
			recs[i].key = fmt.Appendf(nil, "key-%02d", rng.IntN(keys))
			switch rng.IntN(10) {
			case 0:
				recs[i].value = nil // tombstone
			case 1:
				recs[i].value = []byte{} // empty, not a tombstone
			default:
				recs[i].value = fmt.Appendf(nil, "v%d", rng.Uint32())
			}
		}
		return recs
	}
	check := func(what string) {
		t.Helper()
		checkCompaction(t, p, m, what)
	}
	restart := func(crash bool) {
		if crash {
			crashStore(s)
		} else if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		s, _, err = Open(cfg, topics)
		if err != nil {
			t.Fatalf("reopen: %v", err)
		}
		p = s.Partition(topicID(7), 0)
	}

	for step := range steps {
		pr := producers[rng.IntN(len(producers))]
		switch op := rng.IntN(20); {
		case op < 9:
			if pr.txnID == 0 && rng.IntN(3) == 0 {
				pr.txnID = nextTxn
				m.txns[nextTxn] = &modelTxn{pid: pr.pid, marker: -1}
				nextTxn++
			}
			recs := randomRecords()
			before := len(m.records)
			appendBatch(pr, recs, pr.txnID != 0)
			if tx := m.txns[pr.txnID]; pr.txnID != 0 && !tx.hasRecords {
				tx.first, tx.hasRecords = m.records[before].offset, true
			}
		case op < 12:
			if pr.txnID == 0 {
				continue
			}
			commit := rng.IntN(2) == 0
			res, err := p.AppendMarker(pr.pid, pr.epoch, commit, 0, clock.UnixMilli())
			if err != nil {
				t.Fatalf("marker: %v", err)
			}
			tx := m.txns[pr.txnID]
			tx.marker, tx.aborted = res.BaseOffset, !commit
			m.records = append(m.records, modelRecord{offset: res.BaseOffset, pid: pr.pid, txnID: pr.txnID, control: true, ts: clock.UnixMilli()})
			pr.txnID = 0
		case op < 14:
			clock = clock.Add(time.Duration(rng.IntN(400)) * time.Millisecond)
		case op < 15:
			// Retention (none for this topic) and evacuation of the tail
			// into the clean store, as when the partition pins the log.
			if _, err := s.EnforceRetention(context.Background()); err != nil {
				t.Fatal(err)
			}
			p.evacuate.Store(rng.IntN(2) == 0)
		case op < 19:
			before := p.clean.Load()
			if _, err := s.Clean(context.Background(), rng.IntN(2) == 0); err != nil {
				t.Fatalf("step %d: clean: %v", step, err)
			}
			if after := p.clean.Load(); after != before {
				// Tombstones whose horizon had passed before this pass
				// are gone now.
				removedHorizon = removedHorizon[:0]
				for off, first := range m.firstKept {
					if clock.UnixMilli() >= first+deleteRet {
						removedHorizon = append(removedHorizon, off)
					}
				}
				checkHorizons(t, p, m, removedHorizon, clock.UnixMilli())
			}
			check(fmt.Sprintf("step %d: after a pass", step))
		default:
			restart(rng.IntN(2) == 0)
			check(fmt.Sprintf("step %d: after a restart", step))
		}
	}
	// Close every transaction, let every horizon pass and clean until
	// nothing changes: the partition converges to one record per live key
	// (plus the uncleanable last batch).
	for _, pr := range producers {
		if pr.txnID != 0 {
			res, err := p.AppendMarker(pr.pid, pr.epoch, true, 0, clock.UnixMilli())
			if err != nil {
				t.Fatal(err)
			}
			tx := m.txns[pr.txnID]
			tx.marker = res.BaseOffset
			m.records = append(m.records, modelRecord{offset: res.BaseOffset, pid: pr.pid, txnID: pr.txnID, control: true, ts: clock.UnixMilli()})
			pr.txnID = 0
		}
	}
	appendBatch(producers[0], []keyed{{key: []byte("last"), value: []byte("x")}}, false)
	for range 12 {
		clock = clock.Add(2 * deleteRet * time.Millisecond)
		if _, err := s.Clean(context.Background(), true); err != nil {
			t.Fatal(err)
		}
	}
	check("converged")
	got, res := readAll(t, p, p.logStart.Load(), false)
	live := 0
	for k, off := range m.latest(res.HighWatermark) {
		for _, r := range m.records {
			if r.offset == off && r.value != nil && k != "last" {
				live++
			}
		}
	}
	var data int
	for _, r := range got {
		if !r.control {
			data++
		}
	}
	if data > live+1 {
		t.Fatalf("converged to %d data records for %d live keys (+1 last batch)", data, live)
	}
}

// compactSlots is the dedupe buffer that gives an OffsetMap n slots.
func compactSlots(n int64) int64 { return n * 24 }

// checkHorizons checks that the tombstones and markers whose horizon had
// passed before a pass are gone after it.
func checkHorizons(t *testing.T, p *Partition, m *compactModel, gone []int64, now int64) {
	t.Helper()
	if len(gone) == 0 {
		return
	}
	got, _ := readAll(t, p, p.logStart.Load(), false)
	present := map[int64]bool{}
	for _, r := range got {
		present[r.offset] = true
	}
	for _, off := range gone {
		if present[off] {
			t.Fatalf("offset %d is still there at %d, past its delete horizon %d", off, now, m.firstKept[off]+500)
		}
	}
}

// checkCompaction reads p from the start and checks Kafka's rules against
// the history m.
func checkCompaction(t *testing.T, p *Partition, m *compactModel, what string) {
	t.Helper()
	v := p.clean.Load()
	cleanEnd := int64(0) // below it the rules apply; above, everything is there
	if v != nil {
		cleanEnd = v.deduped
	}
	if ls := p.logStart.Load(); ls != 0 {
		t.Fatalf("%s: log start %d: compaction and restarts must not move it", what, ls)
	}
	got, res := readAll(t, p, p.logStart.Load(), false)
	if res.HighWatermark != int64(len(m.records))+m.records[0].offset && len(m.records) > 0 {
		// offsets are dense in the history: one per record
		last := m.records[len(m.records)-1]
		if res.HighWatermark != last.offset+1 {
			t.Fatalf("%s: high watermark %d, want %d", what, res.HighWatermark, last.offset+1)
		}
	}
	byOffset := map[int64]modelRecord{}
	for _, r := range m.records {
		byOffset[r.offset] = r
	}
	present := map[int64]bool{}
	for _, r := range got {
		want, ok := byOffset[r.offset]
		if !ok {
			t.Fatalf("%s: offset %d was never produced", what, r.offset)
		}
		if r.control != want.control || (!r.control && (!bytes.Equal(r.key, want.key) || !bytes.Equal(r.value, want.value) ||
			(r.value == nil) != (want.value == nil) || r.ts != want.ts)) {
			t.Fatalf("%s: offset %d reads key %q value %q (nil %t) ts %d control %t, produced %q %q (nil %t) ts %d control %t",
				what, r.offset, r.key, r.value, r.value == nil, r.ts, r.control, want.key, want.value, want.value == nil, want.ts, want.control)
		}
		present[r.offset] = true
	}
	latest := m.latest(cleanEnd)
	for _, r := range m.records {
		if r.control {
			continue
		}
		tx := m.txnOf(r)
		aborted := tx != nil && tx.aborted
		switch {
		case r.offset >= cleanEnd:
			// Not cleaned yet: everything is there.
			if !present[r.offset] {
				t.Fatalf("%s: offset %d at or above the clean end %d is missing", what, r.offset, cleanEnd)
			}
		case aborted:
			if present[r.offset] {
				t.Fatalf("%s: aborted record at %d below the clean end %d survived", what, r.offset, cleanEnd)
			}
		case r.key == nil:
		case latest[string(r.key)] != r.offset:
			if l, ok := latest[string(r.key)]; ok && l > r.offset && present[r.offset] {
				t.Fatalf("%s: record %d of key %s superseded at %d (clean end %d) survived", what, r.offset, r.key, l, cleanEnd)
			}
		case r.value != nil:
			if !present[r.offset] {
				t.Fatalf("%s: latest value of key %s at %d is gone (clean end %d)", what, r.key, r.offset, cleanEnd)
			}
		default:
			// The latest write is a tombstone: it stays until a pass at
			// or after its horizon.
			if present[r.offset] {
				if _, ok := m.firstKept[r.offset]; !ok {
					m.firstKept[r.offset] = p.store.cfg.Now().UnixMilli()
				}
			}
		}
	}
	// A fetch at any offset returns the next surviving batch.
	offsets := make([]int64, 0, len(got))
	for _, r := range got {
		offsets = append(offsets, r.offset)
	}
	for off := p.logStart.Load(); off < res.HighWatermark; off += 1 + off%7 {
		part, _ := readAll(t, p, off, false)
		i := sort.Search(len(offsets), func(i int) bool { return offsets[i] >= off })
		var want []int64
		want = append(want, offsets[i:]...)
		var have []int64
		for _, r := range part {
			if r.offset >= off {
				have = append(have, r.offset)
			}
		}
		if !slices.Equal(have, want) {
			t.Fatalf("%s: fetch at %d returned offsets %v, want %v", what, off, have, want)
		}
	}
	checkReadCommitted(t, p, m, what)
}

// checkReadCommitted reads p from the start as a read_committed consumer
// does (aborted transactions list, ABORT markers ending them) and checks
// that exactly the surviving records of committed or non-transactional
// writes below the last stable offset come back.
func checkReadCommitted(t *testing.T, p *Partition, m *compactModel, what string) {
	t.Helper()
	start := p.logStart.Load()
	got, res := readAll(t, p, start, true)
	abortedTxns := p.AbortedTransactions(start, res.NextOffset, nil)
	sort.SliceStable(abortedTxns, func(i, j int) bool { return abortedTxns[i].FirstOffset < abortedTxns[j].FirstOffset })
	active := map[int64]bool{}
	var visible []int64
	for _, r := range got {
		for len(abortedTxns) > 0 && abortedTxns[0].FirstOffset <= r.offset {
			active[abortedTxns[0].ProducerID] = true
			abortedTxns = abortedTxns[1:]
		}
		if r.control {
			delete(active, r.pid) // a marker ends the producer's transaction
			continue
		}
		if r.txn && active[r.pid] {
			continue
		}
		visible = append(visible, r.offset)
	}
	byOffset := map[int64]modelRecord{}
	for _, r := range m.records {
		byOffset[r.offset] = r
	}
	for _, off := range visible {
		r := byOffset[off]
		if tx := m.txnOf(r); tx != nil && tx.aborted {
			t.Fatalf("%s: read_committed returned aborted record %d", what, off)
		}
	}
	// Every committed record that a plain read returns below the LSO
	// must come back to read_committed too.
	plain, _ := readAll(t, p, start, false)
	want := map[int64]bool{}
	for _, r := range plain {
		if r.control || r.offset >= res.LastStableOffset {
			continue
		}
		if tx := m.txnOf(byOffset[r.offset]); tx != nil && tx.aborted {
			continue
		}
		want[r.offset] = true
	}
	for _, off := range visible {
		delete(want, off)
	}
	if len(want) > 0 {
		t.Fatalf("%s: read_committed skipped committed records %v", what, want)
	}
}
