package partition

import (
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
)

// TestSizeAndTraffic checks the partition's size (extended as batches are
// appended, summed again when the log start moves) and traffic counters
// against the batches appended.
func TestSizeAndTraffic(t *testing.T) {
	s := openStore(t, testStoreConfig(t, FlushAsync), spec(0, 1))
	p := s.Partition(topicID(0), 0)
	if got := p.Size(); got != 0 {
		t.Fatalf("empty partition size %d, want 0", got)
	}
	var sizes []int64
	var total int64
	for i := range 40 { // several consume-queue files (16 entries each)
		b := testBatch{pid: -1, values: values(1+i%3, 50+i), baseTs: 1000}.encode()
		mustAppend(t, s, p, testBatch{pid: -1, values: values(1+i%3, 50+i), baseTs: 1000}, 1000)
		sizes = append(sizes, int64(len(b)))
		total += int64(len(b))
		if i%7 == 0 {
			if got := p.Size(); got != total {
				t.Fatalf("after %d batches: size %d, want %d", i+1, got, total)
			}
		}
	}
	if got := p.Size(); got != total {
		t.Fatalf("size %d, want %d", got, total)
	}
	tr := p.Traffic()
	var records int64
	for i := range 40 {
		records += int64(1 + i%3)
	}
	if tr.BytesIn.Load() != total || tr.RecordsIn.Load() != records {
		t.Fatalf("traffic in: %d bytes %d records, want %d and %d", tr.BytesIn.Load(), tr.RecordsIn.Load(), total, records)
	}

	// DeleteRecords to the start of the 10th batch: the first 9 go.
	var off int64
	for i := range 9 {
		off += int64(1 + i%3)
		total -= sizes[i]
	}
	if _, err := p.DeleteRecords(off); err != nil {
		t.Fatal(err)
	}
	if got := p.Size(); got != total {
		t.Fatalf("after DeleteRecords(%d): size %d, want %d", off, got, total)
	}
	// A retried idempotent batch is a duplicate: not counted again.
	dup := testBatch{pid: 7, epoch: 0, seq: 0, values: values(2, 10), baseTs: 1000}
	mustAppend(t, s, p, dup, 1000)
	in := tr.BytesIn.Load()
	if res, err := p.Append(dup.encode(), 9, 1000); err != nil || !res.Duplicate {
		t.Fatalf("retry: %+v, %v; want a duplicate", res, err)
	}
	if tr.BytesIn.Load() != in {
		t.Fatalf("a duplicate counted: %d bytes in, want %d", tr.BytesIn.Load(), in)
	}
}

// TestReplayProgressIsBounded checks that replay progress is logged at
// most once per interval, however many entries are visited.
func TestReplayProgressIsBounded(t *testing.T) {
	core, logs := observer.New(zap.InfoLevel)
	r := &replayProgress{lg: zap.New(core), from: 0, end: 1 << 20, started: time.Now(), next: time.Now()}
	for i := range 10_000 {
		r.visited(int64(i), i)
	}
	// The first check (at 1024 entries) is due at once; the next one is
	// recoveryProgressEvery later, which a loop this short does not reach.
	entries := logs.FilterMessage("recovering commit log").All()
	if len(entries) != 1 {
		t.Fatalf("%d progress lines, want 1", len(entries))
	}
	f := entries[0].ContextMap()
	if f["position"] != int64(1023) || f["done"] == nil || f["files_end"] != int64(1<<20) {
		t.Fatalf("progress fields %v", f)
	}
}

// TestCommitLogEnd checks the estimate of where a replay ends.
func TestCommitLogEnd(t *testing.T) {
	cfg := testStoreConfig(t, FlushAsync)
	s := openStore(t, cfg, spec(0, 1))
	p := s.Partition(topicID(0), 0)
	for range 30 {
		mustAppend(t, s, p, testBatch{pid: -1, values: values(1, 4000), baseTs: 1000}, 1000)
	}
	files := s.CommitLog().Files()
	last := files[len(files)-1]
	if got, want := commitLogEnd(cfg.Dir, cfg.Log.FileSize), last.From()+last.Size(); got < want {
		t.Fatalf("commitLogEnd %d, want at least the last file's end %d", got, want)
	}
}
