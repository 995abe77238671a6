package main

import (
	"context"
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestFloorWrite: an idempotent kgo producer works against floor-write,
// which numbers the records densely per partition and leaves every batch
// in the partition's file.
func TestFloorWrite(t *testing.T) {
	dir := t.TempDir()
	s, err := startFloor("127.0.0.1:0", dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.stop()
	srv := s.addr()

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := createTopic(ctx, srv, "t", 2); err != nil {
		t.Fatal(err)
	}
	cl, err := kgo.NewClient(append(produceOpts(srv), kgo.DefaultProduceTopic("t"), kgo.RecordPartitioner(kgo.ManualPartitioner()))...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	const n = 2000
	next := map[int32]int64{}
	value := randomValue(100)
	for i := 0; i < n; i++ {
		r := cl.ProduceSync(ctx, &kgo.Record{Value: value, Partition: int32(i % 2)})
		if err := r.FirstErr(); err != nil {
			t.Fatal(err)
		}
		rec, _ := r.First()
		if rec.Offset != next[rec.Partition] {
			t.Fatalf("partition %d: offset %d, want %d", rec.Partition, rec.Offset, next[rec.Partition])
		}
		next[rec.Partition]++
	}
	if err := s.stop(); err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*"))
	var size int64
	for _, f := range files {
		fi, err := os.Stat(f)
		if err != nil {
			t.Fatal(err)
		}
		size += fi.Size()
	}
	if len(files) != 2 || size < n*100 {
		t.Fatalf("%d files of %d bytes in all, want 2 holding at least %d", len(files), size, n*100)
	}
}

// TestFloorRead: floor-read serves back what was produced to it, to a
// direct kgo consumer reading from the start and to one reading from the
// middle of a batch, through fetches small enough to need many, and a
// fetch waiting at the end wakes when records arrive.
func TestFloorRead(t *testing.T) {
	s, err := startFloorRead("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer s.stop()
	srv := s.addr()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := createTopic(ctx, srv, "t", 2); err != nil {
		t.Fatal(err)
	}
	prod, err := kgo.NewClient(append(produceOpts(srv), kgo.DefaultProduceTopic("t"), kgo.RecordPartitioner(kgo.ManualPartitioner()))...)
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	const n = 3000
	produce := func(from, to int) {
		for i := from; i < to; i++ {
			v := make([]byte, 100)
			binary.BigEndian.PutUint64(v, uint64(i))
			prod.Produce(ctx, &kgo.Record{Value: v, Partition: int32(i % 2)}, func(_ *kgo.Record, err error) {
				if err != nil {
					t.Error(err)
				}
			})
		}
		if err := prod.Flush(ctx); err != nil {
			t.Error(err)
		}
	}
	produce(0, n)
	if got, err := topicRecords(ctx, srv, "t"); err != nil || got != n {
		t.Fatalf("end offsets sum to %d (%v), want %d", got, err, n)
	}
	// The consumer fetches at most 4 KiB per partition, so it needs many
	// fetches; it starts partition 1 at offset 700, inside a batch.
	cons, err := kgo.NewClient(kgo.SeedBrokers(srv), kgo.FetchMaxPartitionBytes(4096), kgo.FetchMaxWait(100*time.Millisecond),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"t": {0: kgo.NewOffset().AtStart(), 1: kgo.NewOffset().At(700)}}))
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	next := map[int32]int64{0: 0, 1: 700}
	read := func(total int64) {
		for got := int64(0); got < total; {
			fs := cons.PollFetches(ctx)
			if err := fs.Err0(); err != nil {
				t.Fatal(err)
			}
			fs.EachRecord(func(r *kgo.Record) {
				if r.Offset != next[r.Partition] {
					t.Fatalf("partition %d: offset %d, want %d", r.Partition, r.Offset, next[r.Partition])
				}
				// record i went to partition i%2 at offset i/2
				if want := uint64(2*r.Offset) + uint64(r.Partition); binary.BigEndian.Uint64(r.Value) != want {
					t.Fatalf("partition %d offset %d holds record %d, want %d", r.Partition, r.Offset, binary.BigEndian.Uint64(r.Value), want)
				}
				next[r.Partition]++
				got++
			})
		}
	}
	read(n/2 + n/2 - 700)
	cons.Close()

	// Caught up: a fetch waits (for longer than the test may run), and
	// records produced then wake it.
	tail, err := kgo.NewClient(kgo.SeedBrokers(srv), kgo.FetchMaxWait(time.Minute),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"t": {0: kgo.NewOffset().At(n / 2)}}))
	if err != nil {
		t.Fatal(err)
	}
	defer tail.Close()
	polled := make(chan kgo.Fetches, 1)
	go func() { polled <- tail.PollFetches(ctx) }()
	for s.mem.waiting.Load() == 0 {
		select {
		case <-ctx.Done():
			t.Fatal("no fetch waits")
		case <-time.After(time.Millisecond):
		}
	}
	produce(n, n+2)
	fs := <-polled
	if err := fs.Err0(); err != nil {
		t.Fatal(err)
	}
	if recs := fs.Records(); len(recs) != 1 || recs[0].Offset != n/2 {
		t.Fatalf("after the wait: %d records, want the one at offset %d", len(recs), n/2)
	}
}
