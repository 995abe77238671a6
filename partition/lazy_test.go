package partition

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	klog "github.com/kbroker/kbroker/log"
)

// queueOpen reports whether p's consume queue has been opened.
func queueOpen(p *Partition) bool { return p.cq.Load() != nil }

// checkValues reads p from offset 0 and compares the records' values.
func checkValues(t *testing.T, p *Partition, want [][]byte) {
	t.Helper()
	got, res := readRecords(t, p, 0)
	if len(got) != len(want) || res.HighWatermark != int64(len(want)) {
		t.Fatalf("%s-%d: read %d records (high watermark %d), want %d", p.topic, p.index, len(got), res.HighWatermark, len(want))
	}
	for i := range got {
		if got[i].offset != int64(i) || !bytes.Equal(got[i].value, want[i]) {
			t.Fatalf("%s-%d: record %d at offset %d has %q, want %q", p.topic, p.index, i, got[i].offset, got[i].value, want[i])
		}
	}
}

// TestLazyQueuesAfterCleanStop: after a clean stop no consume queue opens
// at start-up, the offsets come from the checkpoint, and each queue opens
// on first use with every batch.
func TestLazyQueuesAfterCleanStop(t *testing.T) {
	cfg := testStoreConfig(t, FlushAsync)
	topics := []TopicSpec{spec(0, 3), spec(1, 2)}
	s := openStore(t, cfg, topics...)
	want := map[[KeySize]byte][][]byte{}
	for _, tp := range topics {
		for i := range tp.Partitions {
			p := s.Partition(tp.ID, i)
			for n := range int(i) + 1 { // partition i gets i+1 batches; 0 of topic 1 none
				if tp.ID == topicID(1) && i == 0 {
					break
				}
				vs := values(2, 50+n)
				mustAppend(t, s, p, testBatch{pid: -1, values: vs}, 0)
				want[p.key] = append(want[p.key], vs...)
			}
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s2, r, err := Open(cfg, topics)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	if r.Indexed != 0 || len(r.Rebuilt) != 0 {
		t.Fatalf("clean open indexed %d batches and rebuilt %v, want none", r.Indexed, r.Rebuilt)
	}
	for _, tp := range topics {
		for i := range tp.Partitions {
			p := s2.Partition(tp.ID, i)
			if queueOpen(p) {
				t.Fatalf("%s-%d: queue open after a clean start", p.topic, i)
			}
			n := int64(len(want[p.key]))
			if p.LogEndOffset() != n || p.HighWatermark() != n || p.LogStartOffset() != 0 {
				t.Fatalf("%s-%d: log end %d, high watermark %d, log start %d; want %d, %d, 0",
					p.topic, i, p.LogEndOffset(), p.HighWatermark(), p.LogStartOffset(), n, n)
			}
		}
	}
	p := s2.Partition(topicID(0), 2)
	checkValues(t, p, want[p.key])
	if !queueOpen(p) || queueOpen(s2.Partition(topicID(0), 1)) {
		t.Fatal("a read opened the wrong queues")
	}
	// An append opens a closed queue and goes after the checkpoint's end.
	q := s2.Partition(topicID(0), 1)
	res := mustAppend(t, s2, q, testBatch{pid: -1, values: values(1, 9)}, 0)
	if res.BaseOffset != int64(len(want[q.key])) {
		t.Fatalf("append after a lazy open at %d, want %d", res.BaseOffset, len(want[q.key]))
	}
	checkValues(t, q, append(want[q.key], values(1, 9)...))
}

// TestLazyQueueDropsEntriesTheLogLost: a queue entry whose commit-log
// entry a crash took (written after the last checkpoint) is cut when the
// queue opens, even when the queue stays closed through a whole run in
// which other partitions wrote over the lost position, and even across a
// later clean stop.
func TestLazyQueueDropsEntriesTheLogLost(t *testing.T) {
	cfg := testStoreConfig(t, FlushAsync)
	top := spec(0, 2)
	s, _, err := Open(cfg, []TopicSpec{top})
	if err != nil {
		t.Fatal(err)
	}
	a := s.Partition(top.ID, 0)
	kept := values(3, 100)
	b0 := mustAppend(t, s, a, testBatch{pid: -1, values: kept}, 0)
	if err := s.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	mustAppend(t, s, a, testBatch{pid: -1, values: values(3, 100)}, 0) // 3-5, lost below
	f := s.CommitLog().Files()[0]
	path, from := f.Path(), f.From()
	crashStore(s)
	// The commit log loses the second batch (as pool mode loses its
	// uncommitted buffers); its queue entry stays.
	fh, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fh.WriteAt(make([]byte, 1024), b0.End-from); err != nil {
		t.Fatal(err)
	}
	fh.Close()
	cfg.Log.TruncateCorrupt = true

	s2, _, err := Open(cfg, []TopicSpec{top})
	if err != nil {
		t.Fatal(err)
	}
	a2 := s2.Partition(top.ID, 0)
	if queueOpen(a2) || a2.LogEndOffset() != 3 {
		t.Fatalf("after the loss: queue open %v, log end %d; want closed, 3", queueOpen(a2), a2.LogEndOffset())
	}
	// Another partition writes over the lost position; a stays closed.
	other := s2.Partition(top.ID, 1)
	for range 3 {
		mustAppend(t, s2, other, testBatch{pid: -1, values: values(4, 300)}, 0)
	}
	if err := s2.Close(); err != nil {
		t.Fatal(err)
	}

	s3 := openStore(t, cfg, top)
	a3 := s3.Partition(top.ID, 0)
	if a3.LogEndOffset() != 3 {
		t.Fatalf("after a clean restart: log end %d, want 3", a3.LogEndOffset())
	}
	checkValues(t, a3, kept)
	again := values(3, 70)
	if res := mustAppend(t, s3, a3, testBatch{pid: -1, values: again}, 0); res.BaseOffset != 3 {
		t.Fatalf("next batch at %d, want 3", res.BaseOffset)
	}
	checkValues(t, a3, append(kept, again...))
}

// TestLazyQueueRebuiltWhenDamaged: a closed queue that lacks batches its
// checkpoint counts (a file cut short) is indexed again from the commit
// log when it opens.
func TestLazyQueueRebuiltWhenDamaged(t *testing.T) {
	cfg := testStoreConfig(t, FlushAsync)
	top := spec(0, 1)
	s, _, err := Open(cfg, []TopicSpec{top})
	if err != nil {
		t.Fatal(err)
	}
	p := s.Partition(top.ID, 0)
	var want [][]byte
	for n := range 5 {
		vs := values(2, 10+n)
		mustAppend(t, s, p, testBatch{pid: -1, values: vs}, 0)
		want = append(want, vs...)
	}
	dir := p.dir
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// Keep the first entry of the first file only.
	if err := os.Truncate(filepath.Join(dir, klog.FileName(0)), 40); err != nil {
		t.Fatal(err)
	}
	s2 := openStore(t, cfg, top)
	p2 := s2.Partition(top.ID, 0)
	if queueOpen(p2) {
		t.Fatal("queue open after a clean start")
	}
	checkValues(t, p2, want)
	vs := values(1, 3)
	mustAppend(t, s2, p2, testBatch{pid: -1, values: vs}, 0)
	checkValues(t, p2, append(want, vs...))
}

// TestCheckpointWithoutEndsOpensQueues: a checkpoint written before it
// recorded each partition's last position does not say what the log
// kept, so every queue opens at start-up as before.
func TestCheckpointWithoutEndsOpensQueues(t *testing.T) {
	cfg := testStoreConfig(t, FlushAsync)
	top := spec(0, 2)
	s, _, err := Open(cfg, []TopicSpec{top})
	if err != nil {
		t.Fatal(err)
	}
	mustAppend(t, s, s.Partition(top.ID, 0), testBatch{pid: -1, values: values(2, 10)}, 0)
	metaDir := s.metaDir
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	cp, err := readCheckpoint(metaDir)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range cp.Partitions {
		v.End = nil
		cp.Partitions[k] = v
	}
	if err := writeCheckpoint(metaDir, cp); err != nil {
		t.Fatal(err)
	}
	s2 := openStore(t, cfg, top)
	for i := range top.Partitions {
		if !queueOpen(s2.Partition(top.ID, i)) {
			t.Fatalf("partition %d: queue closed after an old checkpoint", i)
		}
	}
	checkValues(t, s2.Partition(top.ID, 0), values(2, 10))
}

// TestLazyQueueConcurrentFirstUse: readers and an appender that reach a
// closed queue at once open it once, and all see every batch.
func TestLazyQueueConcurrentFirstUse(t *testing.T) {
	cfg := testStoreConfig(t, FlushAsync)
	top := spec(0, 1)
	s, _, err := Open(cfg, []TopicSpec{top})
	if err != nil {
		t.Fatal(err)
	}
	var want [][]byte
	for n := range 4 {
		vs := values(2, 20+n)
		mustAppend(t, s, s.Partition(top.ID, 0), testBatch{pid: -1, values: vs}, 0)
		want = append(want, vs...)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s2 := openStore(t, cfg, top)
	p := s2.Partition(top.ID, 0)
	var wg sync.WaitGroup
	errs := make(chan error, 9)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, ranges, err := p.Read(0, 1<<20, true, nil)
			ReleaseRanges(ranges)
			if err == nil && res.NextOffset < int64(len(want)) {
				err = fmt.Errorf("read up to %d, want at least %d", res.NextOffset, len(want))
			}
			errs <- err
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		res, err := p.Append(testBatch{pid: -1, values: values(1, 5)}.encode(), 9, 0)
		if err == nil && res.BaseOffset != int64(len(want)) {
			err = fmt.Errorf("append at %d, want %d", res.BaseOffset, len(want))
		}
		errs <- err
	}()
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	checkValues(t, p, append(want, values(1, 5)...))
}

// TestLazyQueueDeletedUnopened: deleting a topic whose queues never
// opened removes them from disk, and they do not open afterwards.
func TestLazyQueueDeletedUnopened(t *testing.T) {
	cfg := testStoreConfig(t, FlushAsync)
	top := spec(0, 2)
	s, _, err := Open(cfg, []TopicSpec{top})
	if err != nil {
		t.Fatal(err)
	}
	mustAppend(t, s, s.Partition(top.ID, 0), testBatch{pid: -1, values: values(2, 10)}, 0)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s2 := openStore(t, cfg, top)
	p := s2.Partition(top.ID, 0)
	if err := s2.DeleteTopic(top.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Dir(p.dir)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the deleted topic's queue directory: %v, want it gone", err)
	}
	if _, _, err := p.Read(0, 1<<20, true, nil); err == nil {
		t.Fatal("a read of a deleted partition succeeded")
	}
	if queueOpen(p) {
		t.Fatal("a deleted partition's queue opened")
	}
}
