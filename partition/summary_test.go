package partition

import (
	"context"
	"testing"
	"time"
)

// TestRetentionAndSizeLeaveClosedQueuesClosed: after a restart, retention
// and Size (the metrics scrape) work from the checkpoint's summaries
// without opening idle partitions' queues, open only the queue of a
// partition with data to drop, and keep the commit-log files that a
// closed queue's batches are in.
func TestRetentionAndSizeLeaveClosedQueuesClosed(t *testing.T) {
	now := int64(1_700_000_000_000)
	cfg := testStoreConfig(t, FlushAsync)
	cfg.Now = func() time.Time { return time.UnixMilli(now) }
	young, old, big := spec(0, 4), spec(1, 1), spec(2, 1)
	topics := []TopicSpec{young, old, big}
	s, _, err := Open(cfg, topics)
	if err != nil {
		t.Fatal(err)
	}
	sizes := make([]int64, young.Partitions)
	want := make([][][]byte, young.Partitions)
	for i := range young.Partitions {
		p := s.Partition(young.ID, i)
		want[i] = values(3, 40+int(i))
		mustAppend(t, s, p, testBatch{pid: -1, values: want[i], baseTs: now - 1000}, now)
		sizes[i] = p.Size()
	}
	mustAppend(t, s, s.Partition(old.ID, 0), testBatch{pid: -1, values: values(2, 10), baseTs: now - 8*24*3600*1000}, now)
	for range 40 { // several commit-log files (64 KiB each) past the young batches
		mustAppend(t, s, s.Partition(big.ID, 0), testBatch{pid: -1, values: values(4, 1000), baseTs: now}, now)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	for round := range 2 {
		s2, _, err := Open(cfg, topics)
		if err != nil {
			t.Fatal(err)
		}
		if round == 0 {
			if _, err := s2.Partition(big.ID, 0).DeleteRecords(-1); err != nil {
				t.Fatal(err)
			}
		}
		deleted, err := s2.EnforceRetention(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if deleted != 0 {
			t.Fatalf("round %d: retention deleted %d commit-log files; the first holds live batches of closed queues", round, deleted)
		}
		for i := range young.Partitions {
			p := s2.Partition(young.ID, i)
			if got := p.Size(); got != sizes[i] {
				t.Fatalf("round %d: %s-%d: size %d, want %d", round, p.topic, i, got, sizes[i])
			}
			if queueOpen(p) {
				t.Fatalf("round %d: %s-%d: retention or Size opened an idle partition's queue", round, p.topic, i)
			}
			if p.LogStartOffset() != 0 {
				t.Fatalf("round %d: %s-%d: log start %d, want 0", round, p.topic, i, p.LogStartOffset())
			}
		}
		if p := s2.Partition(old.ID, 0); p.LogStartOffset() != 2 || p.Size() != 0 {
			t.Fatalf("round %d: expired partition: log start %d, size %d; want 2, 0", round, p.LogStartOffset(), p.Size())
		}
		if p := s2.Partition(big.ID, 0); p.LogStartOffset() != 160 || p.Size() != 0 {
			t.Fatalf("round %d: emptied partition: log start %d, size %d; want 160, 0", round, p.LogStartOffset(), p.Size())
		}
		if err := s2.Close(); err != nil {
			t.Fatal(err)
		}
	}

	// The young partitions' batches are all still readable, and opening a
	// queue gives the size the summary did.
	s3 := openStore(t, cfg, topics...)
	for i := range young.Partitions {
		p := s3.Partition(young.ID, i)
		checkValues(t, p, want[i])
		if !queueOpen(p) {
			t.Fatalf("%s-%d: the read did not open the queue", p.topic, i)
		}
		if got := p.Size(); got != sizes[i] {
			t.Fatalf("%s-%d: size %d from the open queue, want %d", p.topic, i, got, sizes[i])
		}
	}
	// Retention still drops what expires (the queues are open now).
	now += 8 * 24 * 3600 * 1000
	if _, err := s3.EnforceRetention(context.Background()); err != nil {
		t.Fatal(err)
	}
	if p := s3.Partition(big.ID, 0); queueOpen(p) {
		t.Fatal("retention opened the queue of an empty partition")
	}
	for i := range young.Partitions {
		if p := s3.Partition(young.ID, i); p.LogStartOffset() != 3 || p.Size() != 0 {
			t.Fatalf("%s-%d after expiry: log start %d, size %d; want 3, 0", p.topic, i, p.LogStartOffset(), p.Size())
		}
	}
}
