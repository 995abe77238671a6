package partition

import (
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kbroker/kbroker/partition/batch"
)

// txnTB is a transactional batch of n records of producer pid.
func txnTB(pid int64, epoch int16, seq int32, n int) testBatch {
	return testBatch{pid: pid, epoch: epoch, seq: seq, txn: true, values: values(n, 10), baseTs: 1000}
}

func mustMarkerAt(t testing.TB, s *Store, p *Partition, pid int64, epoch int16, commit bool, now int64) AppendResult {
	t.Helper()
	res, err := p.AppendMarker(pid, epoch, commit, 0, now)
	if err != nil {
		t.Fatalf("append marker: %v", err)
	}
	if err := s.AwaitDurable(context.Background(), res.End); err != nil {
		t.Fatalf("await durable: %v", err)
	}
	return res
}

// committedOffsets reads p with ReadCommitted from offset and returns the
// offsets of the records returned at or after offset, and the result.
func committedOffsets(t testing.TB, p *Partition, offset int64) ([]int64, ReadResult) {
	t.Helper()
	res, ranges, err := p.ReadCommitted(offset, 1<<40, true, nil)
	if err != nil {
		t.Fatalf("read committed %s-%d at %d: %v", p.topic, p.index, offset, err)
	}
	defer ReleaseRanges(ranges)
	recs := decodeRanges(t, ranges)
	var out []int64
	for _, r := range recs {
		if r.offset >= offset {
			out = append(out, r.offset)
		}
	}
	return out, res
}

// wallMs is the broker clock for appends in tests that checkpoint: producer
// expiry measures from it.
func wallMs() int64 { return time.Now().UnixMilli() }

func offsetsFrom(from, to int64) []int64 {
	var out []int64
	for o := from; o < to; o++ {
		out = append(out, o)
	}
	return out
}

func aborted(p *Partition, from, to int64) []AbortedTxn {
	return p.AbortedTransactions(from, to, nil)
}

// TestTransactionsInterleaved runs two transactional producers and plain
// appends on one partition and checks the last stable offset, what
// read_committed reads, and the aborted transactions after each step.
func TestTransactionsInterleaved(t *testing.T) {
	s := openStore(t, testStoreConfig(t, FlushAsync), spec(0, 1))
	p := s.Partition(topicID(0), 0)
	check := func(step string, lso int64, wantAborted []AbortedTxn) {
		t.Helper()
		if got := p.LastStableOffset(); got != lso {
			t.Fatalf("%s: LastStableOffset %d, want %d (hw %d)", step, got, lso, p.HighWatermark())
		}
		got, res := committedOffsets(t, p, 0)
		if !slices.Equal(got, offsetsFrom(0, lso)) || res.LastStableOffset != lso || res.HighWatermark != p.LogEndOffset() {
			t.Fatalf("%s: read_committed gave %v (lso %d hw %d), want offsets below %d", step, got, res.LastStableOffset, res.HighWatermark, lso)
		}
		if res.NextOffset != lso {
			t.Fatalf("%s: NextOffset %d, want %d", step, res.NextOffset, lso)
		}
		if a := aborted(p, 0, p.LogEndOffset()); !slices.Equal(a, wantAborted) {
			t.Fatalf("%s: aborted %v, want %v", step, a, wantAborted)
		}
	}
	const p1, p2 = 101, 202
	mustAppend(t, s, p, testBatch{pid: -1, values: values(2, 10)}, 0) // 0-1
	check("plain", 2, nil)
	mustAppend(t, s, p, txnTB(p1, 0, 0, 2), 0) // 2-3: p1 opens
	check("p1 open", 2, nil)
	mustAppend(t, s, p, testBatch{pid: -1, values: values(1, 10)}, 0) // 4
	mustAppend(t, s, p, txnTB(p2, 0, 0, 1), 0)                        // 5: p2 opens
	mustAppend(t, s, p, txnTB(p1, 0, 2, 1), 0)                        // 6: p1 again
	check("both open", 2, nil)
	// A plain batch from a producer inside a transaction is refused.
	if _, err := p.Append(testBatch{pid: p1, seq: 3, values: values(1, 1)}.encode(), 9, 0); !errors.Is(err, kerr.InvalidTxnState) {
		t.Fatalf("non-transactional batch in a transaction: %v", err)
	}
	if p.LogEndOffset() != 7 {
		t.Fatalf("a refused batch was written: end %d", p.LogEndOffset())
	}
	mustMarkerAt(t, s, p, p1, 0, false, 5000) // 7: p1 aborts
	check("p1 aborted", 5, []AbortedTxn{{p1, 2}})
	if e := p.aborted.entries[0]; e.last != 7 || e.lso != 5 {
		t.Fatalf("index entry %+v, want marker 7 and last stable offset 5", e)
	}
	mustMarkerAt(t, s, p, p2, 0, true, 5000) // 8: p2 commits
	check("p2 committed", 9, []AbortedTxn{{p1, 2}})
	// After its marker p1 may write plainly again.
	mustAppend(t, s, p, testBatch{pid: p1, seq: 3, values: values(1, 10)}, 0) // 9
	check("p1 plain", 10, []AbortedTxn{{p1, 2}})
	// A marker for a producer without an open transaction is written and
	// completes nothing.
	if r := mustMarkerAt(t, s, p, p2, 0, false, 5000); r.BaseOffset != 10 {
		t.Fatalf("empty marker at %d", r.BaseOffset)
	}
	check("empty abort", 11, []AbortedTxn{{p1, 2}})
	// p2 opens again and aborts: two entries, in marker order.
	mustAppend(t, s, p, txnTB(p2, 0, 1, 2), 0) // 11-12
	mustMarkerAt(t, s, p, p2, 0, false, 5000)  // 13
	check("p2 aborted", 14, []AbortedTxn{{p1, 2}, {p2, 11}})

	// Ranges (Kafka: marker at or after from, first offset below to).
	for _, tc := range []struct {
		from, to int64
		want     []AbortedTxn
	}{
		{0, 2, nil}, // p1's data starts at 2
		{0, 3, []AbortedTxn{{p1, 2}}},
		{7, 11, []AbortedTxn{{p1, 2}}}, // p1's marker is at 7
		{8, 11, nil},
		{8, 12, []AbortedTxn{{p2, 11}}},
		{13, 14, []AbortedTxn{{p2, 11}}},
		{14, 14, nil},
	} {
		if got := aborted(p, tc.from, tc.to); !slices.Equal(got, tc.want) {
			t.Errorf("AbortedTransactions(%d, %d) = %v, want %v", tc.from, tc.to, got, tc.want)
		}
	}
	// ListOffsets: latest is the last stable offset for read_committed.
	open := txnTB(p1, 0, 4, 1)
	open.baseTs = 9000
	mustAppend(t, s, p, open, 0) // 14: open again, newer than anything
	if off, _, _ := p.OffsetForTimeCommitted(LatestTimestamp); off != 14 {
		t.Fatalf("read_committed latest %d, want 14", off)
	}
	if off, _, _ := p.OffsetForTime(LatestTimestamp); off != 15 {
		t.Fatalf("read_uncommitted latest %d, want 15", off)
	}
	if off, ts, _ := p.OffsetForTimeCommitted(9000); off != -1 || ts != -1 {
		t.Fatalf("read_committed offset for time 9000: %d %d, want none", off, ts)
	}
	if off, _, _ := p.OffsetForTime(9000); off != 14 {
		t.Fatalf("read_uncommitted offset for time 9000: %d, want 14", off)
	}
	if off, ts, _ := p.OffsetForTimeCommitted(MaxTimestamp); off != 7 || ts != 5000 {
		t.Fatalf("read_committed max timestamp: %d %d, want the first marker at 7", off, ts)
	}
}

func TestMarkerFencing(t *testing.T) {
	s := openStore(t, testStoreConfig(t, FlushAsync), spec(0, 1))
	p := s.Partition(topicID(0), 0)
	mustAppend(t, s, p, txnTB(7, 3, 0, 1), 0)
	if _, err := p.AppendMarker(7, 3, true, 4, 1); err != nil {
		t.Fatal(err)
	}
	end := p.LogEndOffset()
	for _, tc := range []struct {
		epoch      int16
		coordEpoch int32
		want       *kerr.Error
	}{
		{2, 4, kerr.InvalidProducerEpoch},
		{3, 3, kerr.TransactionCoordinatorFenced},
	} {
		if _, err := p.AppendMarker(7, tc.epoch, false, tc.coordEpoch, 1); !errors.Is(err, tc.want) {
			t.Errorf("marker epoch %d coordinator %d: %v, want %v", tc.epoch, tc.coordEpoch, err, tc.want)
		}
	}
	if p.LogEndOffset() != end {
		t.Fatal("a fenced marker was written")
	}
	// A marker with a higher epoch bumps the producer's: its old epoch is
	// fenced from then on.
	if _, err := p.AppendMarker(7, 4, false, 4, 1); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Append(txnTB(7, 3, 1, 1).encode(), 9, 0); !errors.Is(err, kerr.InvalidProducerEpoch) {
		t.Fatalf("old epoch after a bumping marker: %v", err)
	}
	// The broker's own coordinator is never fenced: its marker takes the
	// producer's last coordinator epoch (4 here), or 0 before any.
	if _, err := p.AppendMarker(7, 4, true, OwnCoordinatorEpoch, 1); err != nil {
		t.Fatalf("own coordinator's marker after an epoch-4 marker: %v", err)
	}
	if _, err := p.AppendMarker(8, 0, true, OwnCoordinatorEpoch, 1); err != nil {
		t.Fatal(err)
	}
	for _, v := range p.Producers() {
		if want := map[int64]int32{7: 4, 8: 0}[v.ProducerID]; v.CoordinatorEpoch != want {
			t.Errorf("producer %d: coordinator epoch %d, want %d", v.ProducerID, v.CoordinatorEpoch, want)
		}
	}
}

// TestMarkerTransactionVersion2: a marker of transaction version 2
// (WriteTxnMarkers v2, KIP-890 part 2) must carry an epoch above its open
// transaction's; the same epoch passes only as a retry, once no
// transaction is open, or at 32767 (ProducerAppendInfo.checkProducerEpoch).
func TestMarkerTransactionVersion2(t *testing.T) {
	s := openStore(t, testStoreConfig(t, FlushAsync), spec(0, 1))
	p := s.Partition(topicID(0), 0)
	mustAppend(t, s, p, txnTB(7, 3, 0, 1), 0)
	end := p.LogEndOffset()
	if _, err := p.AppendMarkerTV(7, 3, true, 0, 2, 1); !errors.Is(err, kerr.InvalidProducerEpoch) {
		t.Fatalf("TV2 marker at the data's epoch: %v, want INVALID_PRODUCER_EPOCH", err)
	}
	if p.LogEndOffset() != end || p.LastStableOffset() == p.HighWatermark() {
		t.Fatal("a refused marker was written or ended the transaction")
	}
	if _, err := p.AppendMarkerTV(7, 4, true, 0, 2, 1); err != nil {
		t.Fatalf("TV2 marker at the bumped epoch: %v", err)
	}
	if _, err := p.AppendMarkerTV(7, 4, true, 0, 2, 1); err != nil {
		t.Fatalf("TV2 marker retried: %v", err)
	}
	if _, err := p.AppendMarkerTV(7, 3, true, 0, 0, 1); !errors.Is(err, kerr.InvalidProducerEpoch) {
		t.Fatalf("TV0 marker below the current epoch: %v", err)
	}
	// A transaction of the bumped epoch: TV0 takes the same epoch, TV2
	// refuses it, and 32767 (a fence's epoch) passes either way.
	mustAppend(t, s, p, txnTB(7, 4, 0, 1), 0)
	if _, err := p.AppendMarkerTV(7, 4, false, 0, 2, 1); !errors.Is(err, kerr.InvalidProducerEpoch) {
		t.Fatalf("TV2 marker at the epoch of an open transaction: %v", err)
	}
	if _, err := p.AppendMarkerTV(7, 4, false, 0, 0, 1); err != nil {
		t.Fatalf("TV0 marker at the data's epoch: %v", err)
	}
	mustAppend(t, s, p, txnTB(8, math.MaxInt16, 0, 1), 0)
	if _, err := p.AppendMarkerTV(8, math.MaxInt16, false, 0, 2, 1); err != nil {
		t.Fatalf("TV2 marker at epoch 32767: %v", err)
	}
	if p.LastStableOffset() != p.HighWatermark() {
		t.Fatal("transactions left open")
	}
}

// TestTransactionSyncModeMarkerVisibility: in sync mode a marker that is
// not yet flushed keeps its transaction unstable; the flush moves the last
// stable offset and wakes fetches parked on it.
func TestTransactionSyncModeMarkerVisibility(t *testing.T) {
	s := openStore(t, testStoreConfig(t, FlushSync), spec(0, 1))
	p := s.Partition(topicID(0), 0)
	mustAppend(t, s, p, testBatch{pid: -1, values: values(1, 10)}, 0)
	mustAppend(t, s, p, txnTB(5, 0, 0, 2), 0) // 1-2
	if p.LastStableOffset() != 1 || p.HighWatermark() != 3 {
		t.Fatalf("lso %d hw %d, want 1 and 3", p.LastStableOffset(), p.HighWatermark())
	}
	wait := p.WaitStable(1)
	select {
	case <-wait:
		if p.LastStableOffset() != 1 {
			t.Fatal("woken with the last stable offset moved before the marker")
		}
	default:
	}
	res, err := p.AppendMarker(5, 0, true, 0, 1)
	if err != nil {
		t.Fatal(err)
	}
	if s.CommitLog().FlushedPosition() < res.End && p.LastStableOffset() != 1 {
		t.Fatalf("last stable offset %d before the marker is flushed", p.LastStableOffset())
	}
	if err := s.AwaitDurable(context.Background(), res.End); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.WaitStable(1):
	case <-time.After(10 * time.Second):
		t.Fatal("waiter not woken")
	}
	if p.LastStableOffset() != 4 || p.HighWatermark() != 4 {
		t.Fatalf("after the flush: lso %d hw %d, want 4", p.LastStableOffset(), p.HighWatermark())
	}
}

// TestWaitStableWakesOnMarker parks on the last stable offset in async mode
// and checks that a commit marker wakes it.
func TestWaitStableWakesOnMarker(t *testing.T) {
	s := openStore(t, testStoreConfig(t, FlushAsync), spec(0, 1))
	p := s.Partition(topicID(0), 0)
	mustAppend(t, s, p, txnTB(5, 0, 0, 1), 0)
	wait := p.WaitStable(0)
	// Other data moves the high watermark but not the last stable offset:
	// the channel may close (shared with Wait), the offset must not move.
	mustAppend(t, s, p, testBatch{pid: -1, values: values(1, 10)}, 0)
	if p.LastStableOffset() != 0 {
		t.Fatalf("lso %d", p.LastStableOffset())
	}
	if ch := p.WaitStable(0); ch == closedChan {
		t.Fatal("WaitStable(0) returned at once with the last stable offset at 0")
	}
	go func() { _, _ = p.AppendMarker(5, 0, true, 0, 1) }()
	deadline := time.After(10 * time.Second)
	for p.LastStableOffset() == 0 {
		select {
		case <-wait:
			wait = p.WaitStable(0)
		case <-deadline:
			t.Fatal("not woken by the marker")
		}
	}
	if p.LastStableOffset() != 3 {
		t.Fatalf("lso %d, want 3", p.LastStableOffset())
	}
}

// txnScenario writes, on partition 0 of spec(0, 1): an aborted transaction
// of producer 1 (0-1, marker 3) interleaved with a committed one of producer
// 2 (2, marker 4), then an open transaction of producer 3 (5) and plain data
// (6). The last stable offset is 5.
func txnScenario(t *testing.T, s *Store) *Partition {
	p := s.Partition(topicID(0), 0)
	mustAppend(t, s, p, txnTB(1, 0, 0, 2), wallMs())
	mustAppend(t, s, p, txnTB(2, 0, 0, 1), wallMs())
	mustMarkerAt(t, s, p, 1, 0, false, wallMs())
	mustMarkerAt(t, s, p, 2, 0, true, wallMs())
	mustAppend(t, s, p, txnTB(3, 0, 0, 1), wallMs())
	mustAppend(t, s, p, testBatch{pid: -1, values: values(1, 10)}, 0)
	return p
}

// checkScenario checks txnScenario's state, then ends producer 3's
// transaction with an abort and checks again: its open transaction must
// have survived whatever happened in between.
func checkScenario(t *testing.T, s *Store, when string) {
	t.Helper()
	p := s.Partition(topicID(0), 0)
	if p.LastStableOffset() != 5 || p.HighWatermark() != 7 {
		t.Fatalf("%s: lso %d hw %d, want 5 and 7", when, p.LastStableOffset(), p.HighWatermark())
	}
	if got, _ := committedOffsets(t, p, 0); !slices.Equal(got, offsetsFrom(0, 5)) {
		t.Fatalf("%s: read_committed %v", when, got)
	}
	if a := aborted(p, 0, 7); !slices.Equal(a, []AbortedTxn{{1, 0}}) {
		t.Fatalf("%s: aborted %v", when, a)
	}
	if _, err := p.Append(testBatch{pid: 3, seq: 1, values: values(1, 1)}.encode(), 9, 0); !errors.Is(err, kerr.InvalidTxnState) {
		t.Fatalf("%s: producer 3's transaction is not open: %v", when, err)
	}
	mustMarkerAt(t, s, p, 3, 0, false, wallMs()) // 7
	if p.LastStableOffset() != 8 {
		t.Fatalf("%s: lso %d after the abort, want 8", when, p.LastStableOffset())
	}
	if a := aborted(p, 0, 8); !slices.Equal(a, []AbortedTxn{{1, 0}, {3, 5}}) {
		t.Fatalf("%s: aborted after the abort %v", when, a)
	}
	if e := p.aborted.entries[1]; e.lso != 8 || e.last != 7 {
		t.Fatalf("%s: index entry %+v", when, e)
	}
}

// TestTransactionStatePersists checks that open transactions, the aborted
// index and the last stable offset come back after a clean restart, a crash
// with and without a checkpoint covering the transactions, and a rebuild of
// the consume queue.
func TestTransactionStatePersists(t *testing.T) {
	for _, mode := range []FlushMode{FlushSync, FlushAsync} {
		t.Run(mode.String(), func(t *testing.T) {
			for _, how := range []string{"clean", "crash", "checkpoint then crash", "checkpoint mid-way", "queue rebuilt"} {
				t.Run(how, func(t *testing.T) {
					cfg := testStoreConfig(t, mode)
					s, _, err := Open(cfg, []TopicSpec{spec(0, 1)})
					if err != nil {
						t.Fatal(err)
					}
					if how == "checkpoint mid-way" {
						p := s.Partition(topicID(0), 0)
						mustAppend(t, s, p, txnTB(1, 0, 0, 2), wallMs())
						mustAppend(t, s, p, txnTB(2, 0, 0, 1), wallMs())
						if err := s.Checkpoint(); err != nil {
							t.Fatal(err)
						}
						mustMarkerAt(t, s, p, 1, 0, false, wallMs())
						mustMarkerAt(t, s, p, 2, 0, true, wallMs())
						mustAppend(t, s, p, txnTB(3, 0, 0, 1), wallMs())
						mustAppend(t, s, p, testBatch{pid: -1, values: values(1, 10)}, 0)
					} else {
						txnScenario(t, s)
					}
					switch how {
					case "clean":
						if err := s.Close(); err != nil {
							t.Fatal(err)
						}
					case "crash", "checkpoint mid-way":
						crashStore(s)
					case "checkpoint then crash":
						if err := s.Checkpoint(); err != nil {
							t.Fatal(err)
						}
						crashStore(s)
					case "queue rebuilt":
						if err := s.Close(); err != nil {
							t.Fatal(err)
						}
						if err := os.RemoveAll(filepath.Join(cfg.Dir, "consumequeue")); err != nil {
							t.Fatal(err)
						}
					}
					s2 := openStore(t, cfg, spec(0, 1))
					checkScenario(t, s2, how)
					// And once more after the second transaction's abort.
					s2.Close()
					s3 := openStore(t, cfg, spec(0, 1))
					p := s3.Partition(topicID(0), 0)
					if a := aborted(p, 0, 8); !slices.Equal(a, []AbortedTxn{{1, 0}, {3, 5}}) || p.LastStableOffset() != 8 {
						t.Fatalf("second restart: aborted %v lso %d", a, p.LastStableOffset())
					}
				})
			}
		})
	}
}

// TestTransactionLostTail simulates a power loss that took the tail of the
// commit log after a checkpoint saw it: the ABORT marker is gone while the
// transaction's data survived, so the transaction is open again (the
// coordinator will send the marker again), and the aborted entry is gone.
func TestTransactionLostTail(t *testing.T) {
	cfg := testStoreConfig(t, FlushAsync)
	s, _, err := Open(cfg, []TopicSpec{spec(0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	p := s.Partition(topicID(0), 0)
	mustAppend(t, s, p, txnTB(1, 0, 0, 2), wallMs()) // 0-1
	data := mustAppend(t, s, p, txnTB(1, 0, 2, 1), wallMs())
	mustMarkerAt(t, s, p, 1, 0, false, wallMs()) // 3
	if p.LastStableOffset() != 4 || len(aborted(p, 0, 4)) != 1 {
		t.Fatalf("before: lso %d", p.LastStableOffset())
	}
	if err := s.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	f := s.CommitLog().Files()[0]
	path, from := f.Path(), f.From()
	crashStore(s)
	// Wipe the marker's entry, which starts where the data batch's ends.
	fh, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fh.WriteAt(make([]byte, 256), data.End-from); err != nil {
		t.Fatal(err)
	}
	fh.Close()
	cfg.Log.TruncateCorrupt = true
	s2 := openStore(t, cfg, spec(0, 1))
	p2 := s2.Partition(topicID(0), 0)
	if p2.LogEndOffset() != 3 || p2.LastStableOffset() != 0 {
		t.Fatalf("after the cut: end %d lso %d, want 3 and 0", p2.LogEndOffset(), p2.LastStableOffset())
	}
	if a := aborted(p2, 0, 3); len(a) != 0 {
		t.Fatalf("aborted entry of a lost marker: %v", a)
	}
	// The coordinator sends the marker again.
	mustMarkerAt(t, s2, p2, 1, 0, false, wallMs())
	if a := aborted(p2, 0, 4); !slices.Equal(a, []AbortedTxn{{1, 0}}) || p2.LastStableOffset() != 4 {
		t.Fatalf("after the marker again: aborted %v lso %d", a, p2.LastStableOffset())
	}
}

// TestTransactionsAndLogStart: DeleteRecords past an aborted transaction's
// marker drops its entry; a hanging transaction below the log start keeps
// the last stable offset at the log start, not below.
func TestTransactionsAndLogStart(t *testing.T) {
	cfg := testStoreConfig(t, FlushAsync)
	s := openStore(t, cfg, spec(0, 1))
	p := s.Partition(topicID(0), 0)
	mustAppend(t, s, p, txnTB(1, 0, 0, 1), 0)                         // 0
	mustMarkerAt(t, s, p, 1, 0, false, 1)                             // 1
	mustAppend(t, s, p, txnTB(2, 0, 0, 1), 0)                         // 2: hangs
	mustAppend(t, s, p, testBatch{pid: -1, values: values(3, 10)}, 0) // 3-5
	if p.LastStableOffset() != 2 {
		t.Fatalf("lso %d", p.LastStableOffset())
	}
	wait := p.WaitStable(2)
	if low, err := p.DeleteRecords(4); err != nil || low != 4 {
		t.Fatalf("DeleteRecords: %d, %v", low, err)
	}
	if p.LastStableOffset() != 4 {
		t.Fatalf("lso %d after the log start passed it, want 4", p.LastStableOffset())
	}
	select {
	case <-wait:
	default:
		t.Fatal("a move of the last stable offset by DeleteRecords woke nobody")
	}
	if len(p.aborted.entries) != 0 {
		t.Fatalf("aborted entries below the log start remain: %+v", p.aborted.entries)
	}
	s.Close()
	s2 := openStore(t, cfg, spec(0, 1))
	p = s2.Partition(topicID(0), 0)
	if p.LastStableOffset() != 4 || len(p.aborted.entries) != 0 {
		t.Fatalf("after restart: lso %d, %d aborted", p.LastStableOffset(), len(p.aborted.entries))
	}
	mustMarkerAt(t, s2, p, 2, 0, false, 1) // 6
	// The abort straddles the log start: kept, first offset as written.
	if a := aborted(p, 4, 7); !slices.Equal(a, []AbortedTxn{{2, 2}}) || p.LastStableOffset() != 7 {
		t.Fatalf("aborted %v lso %d", a, p.LastStableOffset())
	}
}

// TestOpenTransactionSurvivesExpiry: producer-state expiry (at checkpoints)
// never drops a producer with an open transaction.
func TestOpenTransactionSurvivesExpiry(t *testing.T) {
	cfg := testStoreConfig(t, FlushAsync)
	now := time.UnixMilli(1_000_000)
	cfg.Now = func() time.Time { return now }
	cfg.ProducerExpirationMs = 1000
	s := openStore(t, cfg, spec(0, 1))
	p := s.Partition(topicID(0), 0)
	mustAppend(t, s, p, txnTB(1, 0, 0, 1), now.UnixMilli())
	mustAppend(t, s, p, testBatch{pid: 2, values: values(1, 1)}, now.UnixMilli())
	now = now.Add(time.Hour)
	if err := s.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	p.mu.Lock()
	n := p.mu.producers.Len()
	p.mu.Unlock()
	if n != 1 || p.LastStableOffset() != 0 {
		t.Fatalf("%d producers, lso %d; want the transactional one kept, lso 0", n, p.LastStableOffset())
	}
}

// TestReadCommittedAllocs: ReadCommitted and AbortedTransactions allocate
// nothing with room in dst.
func TestReadCommittedAllocs(t *testing.T) {
	s := openStore(t, testStoreConfig(t, FlushAsync), spec(0, 1))
	p := s.Partition(topicID(0), 0)
	for i := range int32(20) {
		mustAppend(t, s, p, txnTB(int64(i%3), 0, i/3, 1), 0)
		if i%3 == 2 {
			for pid := range int64(3) {
				mustMarkerAt(t, s, p, pid, 0, pid != 1, 0)
			}
		}
	}
	ranges := make([]Range, 0, 64)
	abs := make([]AbortedTxn, 0, 64)
	allocs := testing.AllocsPerRun(100, func() {
		res, rs, err := p.ReadCommitted(0, 1<<20, true, ranges[:0])
		if err != nil || len(rs) == 0 {
			panic(err)
		}
		ReleaseRanges(rs)
		if a := p.AbortedTransactions(0, res.NextOffset, abs[:0]); len(a) == 0 {
			panic("no aborted transactions")
		}
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per read_committed read", allocs)
	}
}

// coordBatch is a batch as a coordinator builds it: producer id and epoch,
// no sequence.
func coordBatch(pid int64, epoch int16, txn bool, n int) []byte {
	kvs := make([]batch.KeyValue, n)
	for i := range kvs {
		kvs[i] = batch.KeyValue{Key: []byte("k"), Value: []byte("v")}
	}
	o := batch.BuildOptions{Timestamp: 1000, ProducerID: pid, ProducerEpoch: epoch}
	if txn {
		o.Attributes = batch.AttrTransactional
	}
	return batch.AppendBuild(nil, o, kvs)
}

// TestAppendCoordinator: a coordinator's transactional batch (no sequence)
// opens its producer's transaction like a produced one, is checked only
// for epoch and transaction state, is never a duplicate, and survives a
// crash through replay; its marker ends it.
func TestAppendCoordinator(t *testing.T) {
	cfg := testStoreConfig(t, FlushAsync)
	s, _, err := Open(cfg, []TopicSpec{spec(0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	p := s.Partition(topicID(0), 0)
	mustAppend(t, s, p, testBatch{pid: -1, values: values(1, 1)}, wallMs()) // 0
	for i := range 2 {                                                      // 1-2, 3-4: the same bytes twice are two batches
		res, err := p.AppendCoordinator(coordBatch(9, 2, true, 2), wallMs())
		if err != nil || res.BaseOffset != int64(1+2*i) || res.Duplicate {
			t.Fatalf("coordinator batch %d: %+v, %v", i, res, err)
		}
	}
	if p.LastStableOffset() != 1 {
		t.Fatalf("lso %d, want 1", p.LastStableOffset())
	}
	for _, tc := range []struct {
		b    []byte
		want *kerr.Error
	}{
		{coordBatch(9, 1, true, 1), kerr.InvalidProducerEpoch},
		{coordBatch(9, 2, false, 1), kerr.InvalidTxnState},
		{batch.AppendEndTxnMarker(nil, 1, 9, 2, batch.EndTxnMarker{Commit: true}), kerr.InvalidRecord},
		{coordBatch(9, 2, true, 1)[:40], kerr.CorruptMessage},
	} {
		if _, err := p.AppendCoordinator(tc.b, wallMs()); !errors.Is(err, tc.want) {
			t.Errorf("got %v, want %v", err, tc.want)
		}
	}
	if p.LogEndOffset() != 5 {
		t.Fatalf("refused batches were written: end %d", p.LogEndOffset())
	}
	crashStore(s)
	s2 := openStore(t, cfg, spec(0, 1))
	p = s2.Partition(topicID(0), 0)
	if p.LastStableOffset() != 1 {
		t.Fatalf("after a crash: lso %d, want 1", p.LastStableOffset())
	}
	mustMarkerAt(t, s2, p, 9, 2, false, wallMs()) // 5
	if a := aborted(p, 0, 6); !slices.Equal(a, []AbortedTxn{{9, 1}}) || p.LastStableOffset() != 6 {
		t.Fatalf("aborted %v lso %d", a, p.LastStableOffset())
	}
}

// TestCheckpointNeverAheadOfLog: a checkpoint taken while the pool
// buffers hold a marker that bumped the producer's epoch, followed by a
// kill that loses them, must not bring back state the log lost. Recovery
// can cut the newest transaction back open, but not undo an epoch bump
// or reopen older transactions: a coordinator recovered from the same log
// would write its abort with the epoch it knows, the partition would
// refuse it as fenced, and the transaction would stay open for ever (the
// last stable offset stuck). So the checkpoint makes the log durable
// through everything its snapshots saw before it is written.
func TestCheckpointNeverAheadOfLog(t *testing.T) {
	cfg := testStoreConfig(t, FlushAsyncPool)
	idleFlushServices(&cfg)
	s := openStore(t, cfg, spec(0, 1))
	p := s.Partition(topicID(0), 0)
	data, err := p.Append(txnTB(1, 0, 0, 2).encode(), 9, wallMs()) // offsets 0-1, open
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Sync(context.Background(), data.End); err != nil {
		t.Fatal(err)
	}
	// The coordinator fences the producer: its abort carries epoch 2.
	marker, err := p.AppendMarker(1, 2, false, 0, wallMs()) // offset 2
	if err != nil {
		t.Fatal(err)
	}
	if s.CommitLog().ReadPosition() >= marker.End {
		t.Fatalf("the marker is committed already (read position %d, marker end %d): the test cannot tell", s.CommitLog().ReadPosition(), marker.End)
	}
	if err := s.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	crashStore(s) // the pool buffers are lost, as in a kill

	s2 := openStore(t, cfg, spec(0, 1))
	p2 := s2.Partition(topicID(0), 0)
	var epoch int16 = -1
	for _, v := range p2.Producers() {
		if v.ProducerID == 1 {
			epoch = v.ProducerEpoch
		}
	}
	switch end := p2.LogEndOffset(); end {
	case 3: // the marker is in the log: the transaction is over
		if epoch != 2 || p2.LastStableOffset() != 3 {
			t.Fatalf("marker kept: epoch %d, last stable offset %d; want 2 and 3", epoch, p2.LastStableOffset())
		}
	case 2: // the marker is lost: the log says epoch 0, transaction open
		if epoch != 0 || p2.LastStableOffset() != 0 {
			t.Fatalf("marker lost: epoch %d, last stable offset %d; want the log's 0 and 0", epoch, p2.LastStableOffset())
		}
		if _, err := p2.AppendMarker(1, 1, false, 0, wallMs()); err != nil {
			t.Fatalf("the abort of a coordinator recovered from the same log: %v", err)
		}
	default:
		t.Fatalf("log end offset %d after the restart", end)
	}
}
