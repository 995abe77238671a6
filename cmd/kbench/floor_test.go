package main

import (
	"context"
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
