package partition

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// TestBatchAppendMany: a request's batches appended together get the
// results Partition.Append gives them one by one (offsets, a refused
// batch, an idempotent retry, a sequence gap), whatever the order of the
// partitions in the request, and read back intact, across commit-log
// files and in every flush mode.
func TestBatchAppendMany(t *testing.T) {
	for _, mode := range []FlushMode{FlushAsync, FlushSync, FlushAsyncPool} {
		t.Run(fmt.Sprint(mode), func(t *testing.T) {
			s := openStore(t, testStoreConfig(t, mode), spec(0, 5), spec(1, 3))
			ps := append(s.Partitions(topicID(0)), s.Partitions(topicID(1))...)
			var bt Batch
			next := map[*Partition]int64{}
			seq := map[*Partition]int32{}
			last := map[*Partition]testBatch{}
			for round := range 30 {
				bt.Reset()
				var want []error
				// Partitions in a different order each round, one of them
				// with a corrupt batch, one with a retry of its last batch.
				for k := range ps {
					p := ps[(k*7+round)%len(ps)]
					tb := testBatch{pid: 1000 + int64(k*7+round)%int64(len(ps)), seq: seq[p], values: values(1+round%4, 100+round*50), baseTs: 1}
					b := tb.encode()
					switch {
					case k == round%len(ps):
						b[len(b)-1] ^= 0xff // CRC mismatch
						want = append(want, kerr.CorruptMessage)
					case k == (round+3)%len(ps) && seq[p] > 0:
						b = last[p].encode() // a retry of the last one stored
						want = append(want, nil)
					default:
						want = append(want, nil)
					}
					bt.Add(p, b)
				}
				bt.AppendMany(s, 9, 1)
				sent := map[*Partition]testBatch{}
				for k := range ps {
					p := ps[(k*7+round)%len(ps)]
					sent[p] = testBatch{pid: 1000 + int64(k*7+round)%int64(len(ps)), seq: seq[p], values: values(1+round%4, 100+round*50), baseTs: 1}
				}
				var maxEnd int64
				for k, it := range bt.Items {
					if !errors.Is(it.Err, want[k]) || (want[k] == nil) != (it.Err == nil) {
						t.Fatalf("round %d item %d: got %v, want %v", round, k, it.Err, want[k])
					}
					if it.Err != nil {
						continue
					}
					if it.Result.Duplicate {
						continue
					}
					p := it.P
					if it.Result.BaseOffset != next[p] {
						t.Fatalf("round %d item %d: base %d, want %d", round, k, it.Result.BaseOffset, next[p])
					}
					n := int64(1 + round%4)
					next[p] += n
					seq[p] += int32(n)
					last[p] = sent[p]
					maxEnd = max(maxEnd, it.Result.End)
				}
				if err := s.Sync(context.Background(), maxEnd); err != nil {
					t.Fatal(err)
				}
			}
			for _, p := range ps {
				// Pool mode reveals what it committed a moment later.
				for hw := p.HighWatermark(); hw < next[p]; hw = p.HighWatermark() {
					select {
					case <-p.Wait(hw):
					case <-time.After(10 * time.Second):
						t.Fatalf("%s-%d: high watermark stuck at %d, want %d", p.topic, p.index, hw, next[p])
					}
				}
				if p.LogEndOffset() != next[p] || p.HighWatermark() != next[p] {
					t.Fatalf("%s-%d: end %d, high watermark %d, want %d", p.topic, p.index, p.LogEndOffset(), p.HighWatermark(), next[p])
				}
				recs, _ := readRecords(t, p, 0)
				if int64(len(recs)) != next[p] {
					t.Fatalf("%s-%d: read %d records, want %d", p.topic, p.index, len(recs), next[p])
				}
				for i, r := range recs {
					if r.offset != int64(i) {
						t.Fatalf("%s-%d: record %d has offset %d", p.topic, p.index, i, r.offset)
					}
				}
			}
			if len(s.clog.Files()) < 2 {
				t.Fatalf("the batches fit in %d commit-log file; the test wants rolls", len(s.clog.Files()))
			}
		})
	}
}

// TestBatchSamePartitionTwice: two batches of one producer to one
// partition in one request go in the order sent.
func TestBatchSamePartitionTwice(t *testing.T) {
	s := openStore(t, testStoreConfig(t, FlushAsync), spec(0, 2))
	p0, p1 := s.Partition(topicID(0), 0), s.Partition(topicID(0), 1)
	var bt Batch
	bt.Add(p0, testBatch{pid: 7, seq: 0, values: values(2, 10), baseTs: 1}.encode())
	bt.Add(p1, testBatch{pid: -1, values: values(1, 10), baseTs: 1}.encode())
	bt.Add(p0, testBatch{pid: 7, seq: 2, values: values(3, 10), baseTs: 1}.encode())
	bt.AppendMany(s, 9, 1)
	for k, want := range []int64{0, 0, 2} {
		if it := bt.Items[k]; it.Err != nil || it.Result.BaseOffset != want {
			t.Fatalf("item %d: base %d, %v, want %d", k, it.Result.BaseOffset, it.Err, want)
		}
	}
	if p0.LogEndOffset() != 5 {
		t.Fatalf("end offset %d, want 5", p0.LogEndOffset())
	}
}

// TestBatchAllocatesNothing: appending a request's batches again and
// again allocates nothing once the batch's buffers have grown.
func TestBatchAllocatesNothing(t *testing.T) {
	s := openStore(t, Config{Dir: t.TempDir(), FlushMode: FlushAsync}, spec(0, 16))
	tmpl := testBatch{pid: -1, values: values(4, 100), baseTs: 1}.encode()
	bufs := make([][]byte, 16)
	for i := range bufs {
		bufs[i] = bytes.Clone(tmpl)
	}
	var bt Batch
	run := func() {
		bt.Reset()
		for i, p := range s.Partitions(topicID(0)) {
			copy(bufs[i], tmpl) // Stamp rewrote the base offset
			bt.Add(p, bufs[i])
		}
		bt.AppendMany(s, 9, 1)
		for _, it := range bt.Items {
			if it.Err != nil {
				t.Fatal(it.Err)
			}
		}
	}
	run()
	if allocs := testing.AllocsPerRun(50, run); allocs != 0 {
		t.Fatalf("got %v allocations per request, want 0", allocs)
	}
}

// TestBatchEntryChecksumsSurviveCrash: the commit log derives the entry
// checksum of a large batch from the batch's own CRC (klog.Pending's
// TailCRC). That CRC must be the one of the bytes stored, also where the
// partition rewrote a covered field before the append: the broker's time
// on a LogAppendTime topic (Stamp) and a producer's wrong MaxTimestamp
// (SetMaxTimestamp). After a crash, recovery verifies every entry's
// checksum against its bytes: all batches must survive and read back.
func TestBatchEntryChecksumsSurviveCrash(t *testing.T) {
	cfg := testStoreConfig(t, FlushAsync)
	cfg.Log.FileSize = 1 << 20
	createTime, appendTime := spec(0, 2), spec(1, 2)
	appendTime.Config.LogAppendTime = true
	topics := []TopicSpec{createTime, appendTime}
	s, _, err := Open(cfg, topics)
	if err != nil {
		t.Fatal(err)
	}
	ps := append(s.Partitions(createTime.ID), s.Partitions(appendTime.ID)...)
	var bt Batch
	want := map[*Partition]int64{}
	for round := range 6 {
		bt.Reset()
		for k, p := range ps {
			// 1 KiB to 24 KiB: below and above where the CRC is combined.
			tb := testBatch{pid: -1, values: values(1+round*4, 1000+k), baseTs: 1000}
			b := tb.encode()
			if round%2 == 1 {
				// A MaxTimestamp below the records': the partition
				// corrects it and recomputes the CRC.
				binary.BigEndian.PutUint64(b[35:], 1)
				binary.BigEndian.PutUint32(b[17:], crcOf(b[21:]))
			}
			bt.Add(p, b)
			want[p] += int64(len(tb.values))
		}
		bt.AppendMany(s, 9, 5_000_000)
		for k, it := range bt.Items {
			if it.Err != nil {
				t.Fatalf("round %d item %d: %v", round, k, it.Err)
			}
		}
	}
	crashStore(s)

	s2, rep, err := Open(cfg, topics)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	if rep.Log.Cut || rep.Log.Clean {
		t.Fatalf("recovery: clean %v, cut %v (%s); want every entry verified and kept", rep.Log.Clean, rep.Log.Cut, rep.Log.CutReason)
	}
	if rep.Log.Entries != 6*len(ps) {
		t.Fatalf("recovery verified %d entries, want %d", rep.Log.Entries, 6*len(ps))
	}
	for _, p := range ps {
		p2 := s2.Partition(p.id, p.index)
		if p2.LogEndOffset() != want[p] {
			t.Fatalf("%s-%d: end %d after recovery, want %d", p.topic, p.index, p2.LogEndOffset(), want[p])
		}
		if recs, _ := readRecords(t, p2, 0); int64(len(recs)) != want[p] {
			t.Fatalf("%s-%d: read %d records, want %d", p.topic, p.index, len(recs), want[p])
		}
	}
}
