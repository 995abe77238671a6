package partition

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// openStore opens a store with the given topics and closes it at cleanup.
func openStore(t testing.TB, cfg Config, topics ...TopicSpec) *Store {
	t.Helper()
	s, _, err := Open(cfg, topics)
	if err != nil {
		t.Fatalf("open store: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func spec(n byte, parts int32) TopicSpec {
	return TopicSpec{ID: topicID(n), Name: "topic-" + string('a'+rune(n)), Partitions: parts, Config: DefaultTopicConfig()}
}

func mustAppend(t testing.TB, s *Store, p *Partition, tb testBatch, now int64) AppendResult {
	t.Helper()
	res, err := p.Append(tb.encode(), 9, now)
	if err != nil {
		t.Fatalf("append: %v", err)
	}
	if err := s.AwaitDurable(context.Background(), res.End); err != nil {
		t.Fatalf("await durable: %v", err)
	}
	return res
}

func values(n, size int) [][]byte {
	out := make([][]byte, n)
	for i := range out {
		out[i] = bytes.Repeat([]byte{byte('a' + i%26)}, size)
	}
	return out
}

func TestBadBatchesAreRejectedAndWriteNothing(t *testing.T) {
	s := openStore(t, testStoreConfig(t, FlushAsync), spec(0, 1))
	p := s.Partition(topicID(0), 0)
	good := testBatch{pid: -1, values: values(3, 10), baseTs: 1000}.encode()
	corrupt := func(f func(b []byte) []byte) []byte { return f(bytes.Clone(good)) }
	cases := []struct {
		name string
		b    []byte
		want *kerr.Error
	}{
		{"wrong crc", corrupt(func(b []byte) []byte { b[len(b)-1] ^= 1; return b }), kerr.CorruptMessage},
		{"magic 1", corrupt(func(b []byte) []byte { b[16] = 1; return b }), kerr.InvalidRecord},
		{"truncated", good[:len(good)-5], kerr.InvalidRecord},
		{"two batches", append(bytes.Clone(good), good...), kerr.InvalidRecord},
		{"record count mismatch", corrupt(func(b []byte) []byte {
			binary.BigEndian.PutUint32(b[57:], 2)
			fixCRC(b)
			return b
		}), kerr.InvalidRecord},
		{"too large", testBatch{pid: -1, values: values(1, 2<<20)}.encode(), kerr.MessageTooLarge},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := p.Append(tc.b, 9, 0)
			if !errors.Is(err, tc.want) {
				t.Fatalf("got %v, want %v", err, tc.want)
			}
			if p.LogEndOffset() != 0 || s.CommitLog().WrotePosition() != 0 {
				t.Fatalf("a rejected batch wrote something: end %d, log %d", p.LogEndOffset(), s.CommitLog().WrotePosition())
			}
		})
	}
	if s.Partition(topicID(0), 1) != nil || s.Partition(topicID(9), 0) != nil {
		t.Fatal("unknown partitions found")
	}
}

func fixCRC(b []byte) {
	binary.BigEndian.PutUint32(b[17:], crcOf(b[21:]))
}

func TestLogAppendTime(t *testing.T) {
	top := spec(0, 1)
	top.Config.LogAppendTime = true
	s := openStore(t, testStoreConfig(t, FlushAsync), top)
	p := s.Partition(topicID(0), 0)
	tb := testBatch{pid: 7, values: values(2, 5), baseTs: 1000}
	res, err := p.Append(tb.encode(), 9, 555_000)
	if err != nil || res.LogAppendTime != 555_000 {
		t.Fatalf("append: %+v, %v", res, err)
	}
	got, _ := readRecords(t, p, 0)
	for _, r := range got {
		if r.ts != 555_000 {
			t.Fatalf("record %d has timestamp %d, want the append time", r.offset, r.ts)
		}
	}
	// A retry is a duplicate answered with the original append time.
	dup, err := p.Append(tb.encode(), 9, 999_000)
	if err != nil || !dup.Duplicate || dup.BaseOffset != 0 || dup.LogAppendTime != 555_000 {
		t.Fatalf("retry: %+v, %v", dup, err)
	}
}

func TestSyncModeVisibilityAndWait(t *testing.T) {
	s := openStore(t, testStoreConfig(t, FlushSync), spec(0, 1))
	p := s.Partition(topicID(0), 0)
	wait := p.Wait(0)
	select {
	case <-wait:
		t.Fatal("wait fired before any data")
	default:
	}
	res, err := p.Append(testBatch{pid: -1, values: values(2, 10)}.encode(), 9, 0)
	if err != nil {
		t.Fatal(err)
	}
	// Until the group commit covers it, nothing is visible.
	if hw := p.HighWatermark(); hw != 0 && s.CommitLog().FlushedPosition() < res.End {
		t.Fatalf("high watermark %d before the flush", hw)
	}
	if err := s.AwaitDurable(context.Background(), res.End); err != nil {
		t.Fatal(err)
	}
	select {
	case <-wait:
	case <-time.After(10 * time.Second):
		t.Fatal("parked wait not woken by the flush")
	}
	if p.HighWatermark() != 2 || s.CommitLog().FlushedPosition() < res.End {
		t.Fatalf("hw %d, flushed %d, end %d", p.HighWatermark(), s.CommitLog().FlushedPosition(), res.End)
	}
	// Reading between the high watermark and the end is empty, not an error.
	if _, rs, err := p.Read(2, 1<<20, true, nil); err != nil || len(rs) != 0 {
		t.Fatalf("read at hw: %d ranges, %v", len(rs), err)
	}
}

func TestPoolModeVisibleAfterCommit(t *testing.T) {
	cfg := testStoreConfig(t, FlushAsyncPool)
	cfg.Log.PoolBuffers = 2
	s := openStore(t, cfg, spec(0, 1))
	p := s.Partition(topicID(0), 0)
	wait := p.Wait(0)
	if _, err := p.Append(testBatch{pid: -1, values: values(3, 100)}.encode(), 9, 0); err != nil {
		t.Fatal(err)
	}
	select {
	case <-wait:
	case <-time.After(10 * time.Second):
		t.Fatal("pool commit did not make the batch visible")
	}
	if got, _ := readRecords(t, p, 0); len(got) != 3 {
		t.Fatalf("read %d records", len(got))
	}
}

func TestRetentionByTimeAndBytes(t *testing.T) {
	cfg := testStoreConfig(t, FlushAsync)
	cfg.Log.FileSize = 16 << 10
	var now atomic.Int64
	now.Store(1_000_000)
	cfg.Now = func() time.Time { return time.UnixMilli(now.Load()) }
	byTime, byBytes, keep := spec(0, 1), spec(1, 1), spec(2, 1)
	byTime.Config.RetentionMs = 10_000
	byBytes.Config.RetentionMs, byBytes.Config.RetentionBytes = -1, 8000
	keep.Config.RetentionMs = -1
	s := openStore(t, cfg, byTime, byBytes, keep)
	pt, pb, pk := s.Partition(byTime.ID, 0), s.Partition(byBytes.ID, 0), s.Partition(keep.ID, 0)

	// The kept topic writes one batch first: it pins the first file.
	mustAppend(t, s, pk, testBatch{pid: -1, values: values(1, 100), baseTs: now.Load()}, now.Load())
	for i := 0; i < 20; i++ {
		ts := now.Load() + int64(i)*1000
		mustAppend(t, s, pt, testBatch{pid: -1, values: values(1, 1000), baseTs: ts}, ts)
		mustAppend(t, s, pb, testBatch{pid: -1, values: values(1, 1000), baseTs: ts}, ts)
	}
	files := len(s.CommitLog().Files())
	now.Store(1_000_000 + 25_000) // batches older than 15 000 have expired
	n, err := s.EnforceRetention(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	// by time: batches with timestamp < now-10s go: those of i < 15.
	if got := pt.LogStartOffset(); got != 15 {
		t.Fatalf("retention.ms: log start %d, want 15", got)
	}
	// by bytes: keep the fewest newest batches holding ≥ 8000 bytes.
	var sizes []int64
	es := pb.cq.Load().Read(0, pb.HighWatermark(), 100, nil)
	for _, e := range es {
		sizes = append(sizes, int64(e.Size))
	}
	want, remaining := int64(0), int64(0)
	for _, sz := range sizes {
		remaining += sz
	}
	for _, sz := range sizes {
		if remaining-sz < 8000 {
			break
		}
		remaining -= sz
		want++
	}
	if got := pb.LogStartOffset(); got != want {
		t.Fatalf("retention.bytes: log start %d, want %d", got, want)
	}
	if n != 0 || len(s.CommitLog().Files()) != files {
		t.Fatalf("deleted %d files while the kept topic pins the first one", n)
	}
	if pk.LogStartOffset() != 0 {
		t.Fatal("retention moved a topic with retention.ms=-1")
	}
	// Reading below the new start is out of range.
	if _, _, err := pt.Read(0, 1<<20, true, nil); !errors.Is(err, kerr.OffsetOutOfRange) {
		t.Fatalf("read below the start: %v", err)
	}

	// Once the pinning partition lets go, files go, except one a reader holds.
	if _, err := pk.DeleteRecords(-1); err != nil {
		t.Fatal(err)
	}
	first := s.CommitLog().Files()[0]
	held, err := s.CommitLog().Hold(first.From())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	n, err = s.EnforceRetention(ctx)
	cancel()
	if n != 0 || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("retention with a held file: %d, %v", n, err)
	}
	if _, err := os.Stat(first.Path()); err != nil {
		t.Fatalf("held file deleted: %v", err)
	}
	held.Release()
	n, err = s.EnforceRetention(context.Background())
	if err != nil || n == 0 {
		t.Fatalf("retention after release: %d files, %v", n, err)
	}
	// Everything still visible reads back, and survives a restart.
	before, _ := readRecords(t, pt, pt.LogStartOffset())
	s.Close()
	s2 := openStore(t, cfg, byTime, byBytes, keep)
	after, _ := readRecords(t, s2.Partition(byTime.ID, 0), 15)
	if len(after) != len(before) || len(after) != 5 {
		t.Fatalf("after restart %d records, before %d", len(after), len(before))
	}
	if got := s2.Partition(keep.ID, 0).LogStartOffset(); got != 1 {
		t.Fatalf("emptied partition's log start %d after restart, want 1", got)
	}
	if got := s2.Partition(keep.ID, 0).LogEndOffset(); got != 1 {
		t.Fatalf("emptied partition's log end %d after restart, want 1", got)
	}
}

func TestDeleteTopic(t *testing.T) {
	cfg := testStoreConfig(t, FlushAsync)
	cfg.Log.FileSize = 16 << 10
	a, b := spec(0, 2), spec(1, 1)
	s := openStore(t, cfg, a, b)
	pa := s.Partition(a.ID, 1)
	for i := 0; i < 20; i++ {
		mustAppend(t, s, pa, testBatch{pid: -1, values: values(1, 1000)}, 0)
	}
	mustAppend(t, s, s.Partition(b.ID, 0), testBatch{pid: -1, values: values(1, 10)}, 0)
	wait := pa.Wait(pa.HighWatermark())
	if err := s.DeleteTopic(a.ID); err != nil {
		t.Fatal(err)
	}
	select {
	case <-wait:
	case <-time.After(10 * time.Second):
		t.Fatal("parked fetch not woken by the deletion")
	}
	if s.Partition(a.ID, 0) != nil {
		t.Fatal("deleted topic still served")
	}
	if _, err := pa.Append(testBatch{pid: -1, values: values(1, 1)}.encode(), 9, 0); !errors.Is(err, kerr.UnknownTopicOrPartition) {
		t.Fatalf("append to a deleted partition: %v", err)
	}
	if _, err := os.Stat(filepath.Join(cfg.Dir, "consumequeue", "ab000000000000000000000000000000")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("consume queues of the deleted topic remain: %v", err)
	}
	// The deleted topic no longer pins commit-log files: only b's batch does.
	if err := s.DeleteTopic(a.ID); !errors.Is(err, kerr.UnknownTopicOrPartition) {
		t.Fatalf("second delete: %v", err)
	}
	if _, err := s.Partition(b.ID, 0).DeleteRecords(-1); err != nil {
		t.Fatal(err)
	}
	if n, err := s.EnforceRetention(context.Background()); err != nil || n == 0 {
		t.Fatalf("retention after delete: %d files, %v", n, err)
	}
	// Restart without the topic: its entries are skipped, b is intact.
	s.Close()
	s2 := openStore(t, cfg, b)
	if got := s2.Partition(b.ID, 0).LogEndOffset(); got != 1 {
		t.Fatalf("b's end offset %d after restart", got)
	}
}

func TestAddPartitions(t *testing.T) {
	s := openStore(t, testStoreConfig(t, FlushAsync), spec(0, 1))
	mustAppend(t, s, s.Partition(topicID(0), 0), testBatch{pid: -1, values: values(1, 1)}, 0)
	if err := s.AddTopic(spec(0, 3)); err != nil {
		t.Fatal(err)
	}
	p2 := s.Partition(topicID(0), 2)
	if p2 == nil || s.Partition(topicID(0), 0).LogEndOffset() != 1 {
		t.Fatal("partitions not added, or the old one lost its state")
	}
	mustAppend(t, s, p2, testBatch{pid: -1, values: values(2, 1)}, 0)
	if p2.HighWatermark() != 2 {
		t.Fatalf("new partition hw %d", p2.HighWatermark())
	}
}

// TestRecoveryDropsLostBatches: a crash left batches counted past the end
// of what the commit log kept, by consume-queue entries ("queue": pool
// mode writes a batch's entry at once but the batch only into a pool
// buffer, which a kill loses; after a power loss the queue's pages may
// have reached the disk and the log's not) or by the checkpoint's next
// offset ("checkpoint": pool mode checkpoints the partitions' offsets with
// batches still in its buffers; any mode may count a batch appended after
// the checkpoint read its position). Recovery takes the offsets from what
// survived: the log end offset and high watermark are right after the last
// surviving batch (a consumer reading there gets an empty fetch, not a hole
// it waits on forever), the next append gets that offset, and a retry of
// the lost batch by its idempotent producer is written again, not answered
// as a duplicate with offsets that no longer exist.
func TestRecoveryDropsLostBatches(t *testing.T) {
	for _, ahead := range []string{"queue", "checkpoint"} {
		t.Run(ahead, func(t *testing.T) {
			cfg := testStoreConfig(t, FlushAsync)
			s, _, err := Open(cfg, []TopicSpec{spec(0, 1)})
			if err != nil {
				t.Fatal(err)
			}
			p := s.Partition(topicID(0), 0)
			mustAppend(t, s, p, testBatch{pid: -1, values: values(3, 100)}, 0) // 0-2
			if ahead == "queue" {
				if err := s.Checkpoint(); err != nil {
					t.Fatal(err)
				}
			}
			b := mustAppend(t, s, p, testBatch{pid: 7, seq: 0, values: values(3, 100)}, 0) // 3-5
			lost := testBatch{pid: 7, seq: 3, values: values(3, 100)}
			mustAppend(t, s, p, lost, 0) // 6-8
			if ahead == "checkpoint" {
				if err := s.Checkpoint(); err != nil {
					t.Fatal(err)
				}
			}
			f := s.CommitLog().Files()[0]
			path, from := f.Path(), f.From()
			metaDir := s.metaDir
			crashStore(s)
			if ahead == "checkpoint" {
				// The checkpoint counts the lost batch (next 9, its
				// producer's sequence) but says the queues were complete
				// only up to where it starts.
				cp, err := readCheckpoint(metaDir)
				if err != nil {
					t.Fatal(err)
				}
				cp.Dispatched = b.End
				if err := writeCheckpoint(metaDir, cp); err != nil {
					t.Fatal(err)
				}
			}
			// The lost batch's entry starts where b's ends.
			fh, err := os.OpenFile(path, os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := fh.WriteAt(make([]byte, 1024), b.End-from); err != nil {
				t.Fatal(err)
			}
			fh.Close()

			cfg.Log.TruncateCorrupt = true // the zeroed bytes may lie below the durable position
			s2 := openStore(t, cfg, spec(0, 1))
			p2 := s2.Partition(topicID(0), 0)
			if p2.LogEndOffset() != 6 || p2.HighWatermark() != 6 || p2.LastStableOffset() != 6 {
				t.Fatalf("after the loss: log end %d, high watermark %d, last stable %d; want 6", p2.LogEndOffset(), p2.HighWatermark(), p2.LastStableOffset())
			}
			if got, res := readRecords(t, p2, 0); len(got) != 6 || res.HighWatermark != 6 {
				t.Fatalf("read %d records (high watermark %d), want 6", len(got), res.HighWatermark)
			}
			res, err := p2.Append(lost.encode(), 9, 0)
			if err != nil || res.Duplicate || res.BaseOffset != 6 {
				t.Fatalf("the lost batch again: %+v, %v; want it written at 6", res, err)
			}
			if err := s2.AwaitDurable(context.Background(), res.End); err != nil {
				t.Fatal(err)
			}
			if got, _ := readRecords(t, p2, 6); len(got) != 3 || got[0].offset != 6 {
				t.Fatalf("read %d records from 6 after the retry, want 3", len(got))
			}
		})
	}
}

// TestSyncMakesDurable: Sync makes the commit log durable up to a
// position in every flush mode, even when the flush services would not
// get to it for an hour (async and pool modes acknowledge appends before
// that).
func TestSyncMakesDurable(t *testing.T) {
	for _, mode := range []FlushMode{FlushSync, FlushAsync, FlushAsyncPool} {
		t.Run(mode.String(), func(t *testing.T) {
			cfg := testStoreConfig(t, mode)
			idleFlushServices(&cfg)
			s := openStore(t, cfg, spec(0, 1))
			p := s.Partition(topicID(0), 0)
			var end int64
			for range 3 {
				res, err := p.Append(testBatch{pid: -1, values: values(3, 100)}.encode(), 9, 0)
				if err != nil {
					t.Fatal(err)
				}
				end = res.End
			}
			if mode != FlushSync && s.CommitLog().FlushedPosition() >= end {
				t.Fatalf("durable up to %d before Sync, past the appends' end %d: the test cannot tell", s.CommitLog().FlushedPosition(), end)
			}
			if err := s.Sync(context.Background(), end); err != nil {
				t.Fatalf("Sync: %v", err)
			}
			if f := s.CommitLog().FlushedPosition(); f < end {
				t.Fatalf("durable up to %d after Sync(%d)", f, end)
			}
			if err := s.Sync(context.Background(), end); err != nil {
				t.Fatalf("Sync of what is durable: %v", err)
			}
		})
	}
}
