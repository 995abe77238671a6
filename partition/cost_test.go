package partition

import (
	"io/fs"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"
)

// duBytes is what du counts under dir: the allocated blocks of every file
// and directory.
func duBytes(t *testing.T, dir string) int64 {
	t.Helper()
	var n int64
	err := filepath.WalkDir(dir, func(path string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		var st syscall.Stat_t
		if err := syscall.Lstat(path, &st); err != nil {
			return err
		}
		n += st.Blocks * 512
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// heapInUse is the live heap after a full collection.
func heapInUse() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// TestPartitionCost: with the broker's default consume-queue files (10 MiB
// each), an empty partition costs no disk and under 16 KiB of heap, and a
// partition with one batch at most 64 KiB of disk outside the commit log:
// disk follows the data, not the partition count.
func TestPartitionCost(t *testing.T) {
	const topics, parts = 30, 10
	cfg := testStoreConfig(t, FlushAsync)
	cfg.ConsumeQueueEntries = 0 // the default
	var specs []TopicSpec
	for i := range topics {
		specs = append(specs, spec(byte(i), parts))
	}
	before := heapInUse()
	s, _, err := Open(cfg, specs)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	after := heapInUse()
	cqDir := filepath.Join(cfg.Dir, "consumequeue")
	n := int64(topics * parts)
	if perPart := (int64(after) - int64(before)) / n; perPart > 16<<10 {
		t.Errorf("heap per empty partition %d bytes, want at most 16 KiB", perPart)
	} else {
		t.Logf("heap per empty partition: %d bytes", perPart)
	}
	if du := duBytes(t, cqDir); du > 64<<10 {
		t.Errorf("%d empty partitions hold %d bytes of consume queues, want (next to) none", n, du)
	}
	for i := range topics {
		for j := range int32(parts) {
			if _, err := s.Partition(topicID(byte(i)), j).Append(testBatch{values: [][]byte{make([]byte, 100)}, pid: -1}.encode(), 9, 1000); err != nil {
				t.Fatal(err)
			}
		}
	}
	if perPart := duBytes(t, cqDir) / n; perPart > 64<<10 {
		t.Errorf("a partition with one batch holds %d bytes of consume queue, want at most 64 KiB", perPart)
	} else {
		t.Logf("disk per partition with one batch: %d bytes", perPart)
	}
}
