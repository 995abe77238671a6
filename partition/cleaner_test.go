package partition

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/kbroker/kbroker/partition/batch"
)

// compactTopic is a compacted topic config that cleans whatever is not the
// last batch.
func compactTopic(n byte) TopicSpec {
	tc := DefaultTopicConfig()
	tc.Compact = true
	tc.MinCleanableRatio = 0
	tc.SegmentMs = 1
	tc.DeleteRetentionMs = 1000
	tc.RetentionMs, tc.RetentionBytes = -1, -1
	return TopicSpec{ID: topicID(n), Name: fmt.Sprintf("compacted-%d", n), Partitions: 1, Config: tc}
}

// fakeClock is a settable clock for Config.Now.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *fakeClock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func mustClean(t testing.TB, s *Store) CleanStats {
	t.Helper()
	st, err := s.Clean(context.Background(), true)
	if err != nil {
		t.Fatalf("clean: %v", err)
	}
	return st
}

func mustAppendKeyed(t testing.TB, p *Partition, recs []keyed, now int64, pid int64, seq int32, txn bool) AppendResult {
	t.Helper()
	res, err := p.Append(keyedBatch(recs, now, pid, 0, seq, txn), 9, now)
	if err != nil {
		t.Fatalf("append: %v", err)
	}
	return res
}

// TestCompactionAbortedMarker checks the life of an aborted transaction:
// its data goes in the first pass, its ABORT marker gets a horizon, then
// goes with its aborted-index entry, and a later committed transaction of
// the same producer is read by read_committed consumers (a stale index
// entry would hide it).
func TestCompactionAbortedMarker(t *testing.T) {
	t.Parallel()
	clk := &fakeClock{t: time.UnixMilli(1_700_000_000_000)}
	cfg := testStoreConfig(t, FlushAsync)
	cfg.Now = clk.now
	s := openStore(t, cfg, compactTopic(1))
	p := s.Partition(topicID(1), 0)
	now := func() int64 { return clk.now().UnixMilli() }

	mustAppendKeyed(t, p, []keyed{{[]byte("a"), []byte("committed")}}, now(), -1, 0, false) // 0
	mustAppendKeyed(t, p, []keyed{{[]byte("a"), []byte("aborted")}}, now(), 7, 0, true)     // 1
	abort, err := p.AppendMarker(7, 0, false, 0, now())                                     // 2
	if err != nil {
		t.Fatal(err)
	}
	mustAppendKeyed(t, p, []keyed{{[]byte("z"), []byte("tail")}}, now(), -1, 0, false) // 3, the last batch
	if got := p.AbortedTransactions(0, 4, nil); len(got) != 1 {
		t.Fatalf("aborted before cleaning: %+v", got)
	}
	clk.add(10 * time.Millisecond) // past segment.ms: no active segment but the last batch

	mustClean(t, s)
	recs, _ := readAll(t, p, 0, false)
	if len(recs) != 3 || string(recs[0].value) != "committed" || !recs[1].control || recs[1].offset != abort.BaseOffset {
		t.Fatalf("after the first pass: %+v (want the committed value, the ABORT marker, the tail)", recs)
	}
	clk.add(2 * time.Second) // past delete.retention.ms
	mustClean(t, s)
	recs, _ = readAll(t, p, 0, false)
	if len(recs) != 2 || recs[0].offset != 0 || recs[1].offset != 3 {
		t.Fatalf("after the horizon: %+v (want offsets 0 and 3)", recs)
	}
	if got := p.AbortedTransactions(0, 10, nil); len(got) != 0 {
		t.Fatalf("aborted index keeps %+v after its marker went", got)
	}

	// The producer's next transaction commits: read_committed sees it.
	mustAppendKeyed(t, p, []keyed{{[]byte("b"), []byte("later")}}, now(), 7, 1, true) // 4
	if _, err := p.AppendMarker(7, 0, true, 0, now()); err != nil {                   // 5
		t.Fatal(err)
	}
	mustAppendKeyed(t, p, []keyed{{[]byte("y"), []byte("tail2")}}, now(), -1, 0, false) // 6
	clk.add(10 * time.Millisecond)
	mustClean(t, s)
	got, _ := readAll(t, p, 0, true)
	var values []string
	for _, r := range got {
		if !r.control {
			values = append(values, string(r.value))
		}
	}
	if fmt.Sprint(values) != "[committed tail later tail2]" {
		t.Fatalf("read_committed after cleaning: %v", values)
	}
	if got := p.AbortedTransactions(0, 10, nil); len(got) != 0 {
		t.Fatalf("aborted index: %+v", got)
	}
}

// TestCompactionFreesCommitLog writes many updates over few keys to a
// compacted partition beside a delete-policy one: after cleaning and a
// retention run, the commit-log files that held only cleaned batches are
// deleted and the partitions read back right.
func TestCompactionFreesCommitLog(t *testing.T) {
	t.Parallel()
	cfg := testStoreConfig(t, FlushAsync) // 64 KiB commit-log files
	plain := spec(2, 1)
	plain.Config.RetentionMs, plain.Config.RetentionBytes = -1, -1
	s := openStore(t, cfg, compactTopic(1), plain)
	p, q := s.Partition(topicID(1), 0), s.Partition(topicID(2), 0)
	now := time.Now().UnixMilli()
	value := make([]byte, 200)
	for i := range 3000 {
		mustAppendKeyed(t, p, []keyed{{fmt.Appendf(nil, "key-%d", i%20), fmt.Appendf(value[:0:0], "%d-%s", i, value)}}, now, -1, 0, false)
	}
	mustAppend(t, s, q, testBatch{pid: -1, values: values(2, 10), baseTs: now}, now)
	files := func() int {
		des, err := os.ReadDir(filepath.Join(cfg.Dir, "commitlog"))
		if err != nil {
			t.Fatal(err)
		}
		return len(des)
	}
	before := files()
	sizeBefore := p.Size()
	stats := mustClean(t, s)
	if sizeAfter := p.Size(); sizeAfter*50 > sizeBefore {
		t.Fatalf("Size %d after cleaning, %d before: the cleaned bytes still count", sizeAfter, sizeBefore)
	}
	if stats.Partitions != 1 || stats.RecordsRemoved < 2900 {
		t.Fatalf("clean stats %+v", stats)
	}
	if _, err := s.EnforceRetention(context.Background()); err != nil {
		t.Fatal(err)
	}
	after := files()
	if before < 10 || after > 3 {
		t.Fatalf("commit-log files: %d before, %d after cleaning (want the cleaned ones deleted)", before, after)
	}
	recs, _ := readAll(t, p, 0, false)
	if len(recs) > 21 {
		t.Fatalf("%d records survive for 20 keys and the last batch", len(recs))
	}
	last := map[string]string{}
	for _, r := range recs {
		last[string(r.key)] = string(r.value)
	}
	for k := range 20 {
		want := fmt.Sprintf("%d-", 2980+k)
		if v := last[fmt.Sprintf("key-%d", k)]; len(v) < len(want) || v[:len(want)] != want {
			t.Fatalf("key-%d: %q, want the latest value %q...", k, v, want)
		}
	}
	if got, _ := readRecords(t, q, 0); len(got) != 2 {
		t.Fatalf("delete-policy partition lost data: %d records", len(got))
	}
	// The clean store survives a restart and the commit log stays small.
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s2 := openStore(t, cfg, compactTopic(1), plain)
	recs2, _ := readAll(t, s2.Partition(topicID(1), 0), 0, false)
	if len(recs2) != len(recs) {
		t.Fatalf("after restart %d records, before %d", len(recs2), len(recs))
	}
}

// TestCompactionReadersDuringSwap fetches continuously while passes swap
// generations: every read is well-formed, increasing, and has every key's
// latest value as of the read.
func TestCompactionReadersDuringSwap(t *testing.T) {
	t.Parallel()
	cfg := testStoreConfig(t, FlushAsync)
	s := openStore(t, cfg, compactTopic(1))
	p := s.Partition(topicID(1), 0)
	now := time.Now().UnixMilli()
	for i := range 400 {
		mustAppendKeyed(t, p, []keyed{{fmt.Appendf(nil, "k%d", i%10), fmt.Appendf(nil, "%d", i)}}, now, -1, 0, false)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				res, ranges, err := p.Read(0, 1<<30, true, nil)
				if err != nil {
					t.Errorf("read: %v", err)
					return
				}
				prev := int64(-1)
				for _, r := range ranges {
					b := make([]byte, r.Len)
					if err := r.File.CopyTo(b, r.Offset); err != nil {
						t.Errorf("copy: %v", err)
					}
					h, err := batch.Verify(b)
					if err != nil || h.BaseOffset <= prev {
						t.Errorf("batch %+v after %d: %v", h, prev, err)
					}
					prev = h.BaseOffset
				}
				ReleaseRanges(ranges)
				if res.HighWatermark < 400 {
					t.Errorf("high watermark %d", res.HighWatermark)
				}
			}
		}()
	}
	for i := range 30 {
		mustAppendKeyed(t, p, []keyed{{fmt.Appendf(nil, "k%d", i%10), fmt.Appendf(nil, "late-%d", i)}}, now, -1, 0, false)
		mustClean(t, s)
		if _, err := s.EnforceRetention(context.Background()); err != nil {
			t.Error(err)
		}
	}
	cancel()
	wg.Wait()
	recs, _ := readAll(t, p, 0, false)
	if len(recs) > 11 {
		t.Fatalf("%d records for 10 keys plus the last batch", len(recs))
	}
}

// TestCompactionManifest checks the manifest codec and that a corrupt one
// stops the partition from opening rather than serving a guess.
func TestCompactionManifest(t *testing.T) {
	t.Parallel()
	m := manifest{generation: 7, logStart: 12, deduped: 1000, cleanEnd: 1234, dataSize: 99}
	got, err := decodeManifest(m.encode())
	if err != nil || got != m {
		t.Fatalf("round trip: %+v, %v", got, err)
	}
	b := m.encode()
	for i := range b {
		c := append([]byte(nil), b...)
		c[i] ^= 0x10
		if _, err := decodeManifest(c); err == nil {
			t.Fatalf("byte %d flipped: accepted", i)
		}
	}

	cfg := testStoreConfig(t, FlushAsync)
	s, _, err := Open(cfg, []TopicSpec{compactTopic(1)})
	if err != nil {
		t.Fatal(err)
	}
	p := s.Partition(topicID(1), 0)
	// A second in the past: with segment.ms 1, records of this very
	// millisecond are still the active segment, which is never cleaned.
	now := time.Now().UnixMilli() - 1000
	for i := range 5 {
		mustAppendKeyed(t, p, []keyed{{[]byte("k"), fmt.Appendf(nil, "%d", i)}}, now, -1, 0, false)
	}
	mustClean(t, s)
	dir := p.cleanDir
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// A leftover of an unpublished generation is removed at open.
	stray := filepath.Join(dir, "00000000000000000099")
	if err := os.WriteFile(stray, []byte("junk"), 0o644); err != nil {
		t.Fatal(err)
	}
	s, _, err = Open(cfg, []TopicSpec{compactTopic(1)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(stray); !os.IsNotExist(err) {
		t.Fatalf("stray generation file still there: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(dir, manifestName))
	if err != nil {
		t.Fatal(err)
	}
	raw[10] ^= 1
	if err := os.WriteFile(filepath.Join(dir, manifestName), raw, 0o644); err != nil {
		t.Fatal(err)
	}
	if s, _, err := Open(cfg, []TopicSpec{compactTopic(1)}); err == nil {
		s.Close()
		t.Fatal("a corrupt manifest was accepted")
	}
}

// TestCompactionIdlePartitionDoesNotPin: a compacted partition written
// once and then idle keeps its last batch uncleaned, which would pin every
// later commit-log file; retention has the cleaner move it into the clean
// store, and the files a busy delete-policy partition fills go.
func TestCompactionIdlePartitionDoesNotPin(t *testing.T) {
	t.Parallel()
	cfg := testStoreConfig(t, FlushAsync) // 64 KiB commit-log files
	busy := spec(2, 1)
	busy.Config.RetentionMs, busy.Config.RetentionBytes = -1, 64<<10
	s := openStore(t, cfg, compactTopic(1), busy)
	p, q := s.Partition(topicID(1), 0), s.Partition(topicID(2), 0)
	// A second in the past: with segment.ms 1, records of this very
	// millisecond are still the active segment, which is never cleaned.
	now := time.Now().UnixMilli() - 1000
	for i := range 3 {
		mustAppendKeyed(t, p, []keyed{{fmt.Appendf(nil, "k%d", i), []byte("v")}}, now, -1, 0, false)
	}
	files := func() int {
		des, err := os.ReadDir(filepath.Join(cfg.Dir, "commitlog"))
		if err != nil {
			t.Fatal(err)
		}
		return len(des)
	}
	for range 4 {
		for range 200 {
			mustAppend(t, s, q, testBatch{pid: -1, values: values(1, 1000), baseTs: now}, now)
		}
		if _, err := s.EnforceRetention(context.Background()); err != nil {
			t.Fatal(err)
		}
		mustClean(t, s)
		if _, err := s.EnforceRetention(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	if n := files(); n > 4 {
		t.Fatalf("%d commit-log files: the idle compacted partition still pins the log", n)
	}
	recs, res := readAll(t, p, 0, false)
	if len(recs) != 3 || res.HighWatermark != 3 {
		t.Fatalf("compacted partition reads %d records, high watermark %d", len(recs), res.HighWatermark)
	}
	// It goes on taking writes, and they are cleaned with the evacuated ones.
	mustAppendKeyed(t, p, []keyed{{[]byte("k0"), []byte("new")}}, now, -1, 0, false)
	mustAppendKeyed(t, p, []keyed{{[]byte("k9"), []byte("tail")}}, now, -1, 0, false)
	mustClean(t, s)
	mustClean(t, s)
	recs, _ = readAll(t, p, 0, false)
	got := map[string]string{}
	for _, r := range recs {
		got[string(r.key)] = string(r.value)
	}
	if len(recs) != 4 || got["k0"] != "new" {
		t.Fatalf("after new writes: %d records, %v", len(recs), got)
	}
}

// TestCompactDeleteRetention: with compact,delete, retention.ms moves the
// log start through the clean store as through the commit log, and the
// cleaner goes on from there.
func TestCompactDeleteRetention(t *testing.T) {
	t.Parallel()
	clk := &fakeClock{t: time.UnixMilli(1_700_000_000_000)}
	cfg := testStoreConfig(t, FlushAsync)
	cfg.Now = clk.now
	ts := compactTopic(1)
	ts.Config.RetentionMs = 60_000
	s := openStore(t, cfg, ts)
	p := s.Partition(topicID(1), 0)
	now := func() int64 { return clk.now().UnixMilli() }
	for i := range 50 {
		mustAppendKeyed(t, p, []keyed{{fmt.Appendf(nil, "old-%d", i%5), []byte("v")}}, now(), -1, 0, false) // 0-49
	}
	clk.add(30 * time.Second)
	for i := range 50 {
		mustAppendKeyed(t, p, []keyed{{fmt.Appendf(nil, "new-%d", i%5), []byte("v")}}, now(), -1, 0, false) // 50-99
	}
	clk.add(10 * time.Millisecond)
	mustClean(t, s)
	recs, _ := readAll(t, p, 0, false)
	if len(recs) != 11 {
		// The last batch (new-4 at 99) is never cleaned, so new-4 at 94
		// is not superseded yet.
		t.Fatalf("after cleaning: %d records, want 5 old and 5 new keys and the last batch", len(recs))
	}
	clk.add(45 * time.Second) // the old batches are past retention.ms, the new ones not
	if _, err := s.EnforceRetention(context.Background()); err != nil {
		t.Fatal(err)
	}
	start := p.logStart.Load()
	if start < 45 || start > 95 {
		t.Fatalf("log start %d: want it past the old keys' last batches and before the new ones", start)
	}
	recs, _ = readAll(t, p, start, false)
	for _, r := range recs {
		if r.offset < 50 {
			t.Fatalf("record %d of an old key survived retention", r.offset)
		}
	}
	if len(recs) != 6 {
		t.Fatalf("after retention: %d records, want the 5 new keys and the last batch", len(recs))
	}
	// A pass after retention starts from the new log start.
	mustAppendKeyed(t, p, []keyed{{[]byte("new-0"), []byte("w")}}, now(), -1, 0, false)
	mustAppendKeyed(t, p, []keyed{{[]byte("tail"), []byte("t")}}, now(), -1, 0, false)
	clk.add(10 * time.Millisecond)
	mustClean(t, s)
	recs, _ = readAll(t, p, p.logStart.Load(), false)
	if len(recs) != 6 {
		t.Fatalf("after the next pass: %d records, want 5 keys and the tail", len(recs))
	}
}

// TestCompactionPolicySwitch: a partition switched from delete to compact
// is cleaned from its log start; switched back to delete it is no longer
// cleaned and still reads what the cleaner left.
func TestCompactionPolicySwitch(t *testing.T) {
	t.Parallel()
	clk := &fakeClock{t: time.UnixMilli(1_700_000_000_000)}
	cfg := testStoreConfig(t, FlushAsync)
	cfg.Now = clk.now
	ts := compactTopic(1)
	ts.Config.Compact = false
	s := openStore(t, cfg, ts)
	p := s.Partition(topicID(1), 0)
	now := func() int64 { return clk.now().UnixMilli() }
	for i := range 20 {
		mustAppendKeyed(t, p, []keyed{{fmt.Appendf(nil, "k%d", i%4), fmt.Appendf(nil, "%d", i)}}, now(), -1, 0, false)
	}
	clk.add(10 * time.Millisecond)
	if st := mustClean(t, s); st.Partitions != 0 {
		t.Fatalf("a delete-policy partition was cleaned: %+v", st)
	}
	cc := *p.cfg.Load()
	cc.Compact = true
	p.SetConfig(cc)
	mustClean(t, s)
	if recs, _ := readAll(t, p, 0, false); len(recs) != 5 {
		t.Fatalf("after switching to compact: %d records, want 4 keys and the last batch", len(recs))
	}
	cc.Compact = false
	p.SetConfig(cc)
	for i := range 10 {
		mustAppendKeyed(t, p, []keyed{{[]byte("k0"), fmt.Appendf(nil, "again-%d", i)}}, now(), -1, 0, false)
	}
	clk.add(10 * time.Millisecond)
	if st := mustClean(t, s); st.Partitions != 0 {
		t.Fatalf("a partition switched back to delete was cleaned: %+v", st)
	}
	if recs, _ := readAll(t, p, 0, false); len(recs) != 15 {
		t.Fatalf("after switching back: %d records, want 5 + 10", len(recs))
	}
}

// TestCompactionListOffsets: ListOffsets by timestamp on a compacted
// partition finds the first surviving record at or after the time, in the
// clean store or past it, and MaxTimestamp and the earliest offset still
// answer.
func TestCompactionListOffsets(t *testing.T) {
	t.Parallel()
	clk := &fakeClock{t: time.UnixMilli(1_700_000_000_000)}
	cfg := testStoreConfig(t, FlushAsync)
	cfg.Now = clk.now
	s := openStore(t, cfg, compactTopic(1))
	p := s.Partition(topicID(1), 0)
	base := clk.now().UnixMilli()
	for i := range 20 { // offset i written at base+10*i; keys repeat every 5
		mustAppendKeyed(t, p, []keyed{{fmt.Appendf(nil, "k%d", i%5), []byte("v")}}, base+int64(10*i), -1, 0, false)
	}
	clk.add(time.Second)
	mustClean(t, s)
	recs, _ := readAll(t, p, 0, false)
	if len(recs) != 6 || recs[0].offset != 14 {
		// k4 at 14 stays: its later write is the last batch, never cleaned.
		t.Fatalf("after cleaning: %+v, want offsets 14-19", recs)
	}
	for _, tt := range []struct{ ts, off int64 }{
		{base, 14},             // before everything: the first survivor
		{base + 100, 14},       // a removed record's time: the next survivor
		{base + 145, 15},       // between survivors
		{base + 170, 17},       // a survivor's own time
		{base + 185, 19},       // between survivors, up to the last batch
		{base + 1000, -1},      // after everything
		{EarliestTimestamp, 0}, // the log start did not move
	} {
		off, _, err := p.OffsetForTime(tt.ts)
		if err != nil || off != tt.off {
			t.Errorf("OffsetForTime(%d): %d, %v; want %d", tt.ts-base, off, err, tt.off)
		}
	}
	if off, ts, err := p.OffsetForTime(MaxTimestamp); err != nil || off != 19 || ts != base+190 {
		t.Errorf("MaxTimestamp: %d at %d, %v; want 19 at +190", off, ts-base, err)
	}
}
