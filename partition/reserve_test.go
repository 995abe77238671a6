package partition

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kbroker/kbroker/log"
)

// TestAppendRefusedByConsumeQueueFile: when the consume queue cannot
// create its next file (a full disk; here a directory in the way), the
// batch is refused with KAFKA_STORAGE_ERROR before it reaches the commit
// log, and the partition is not left broken: once the file can be
// created, the next batch gets the offset the refused one would have had,
// and after a restart nothing else is there.
func TestAppendRefusedByConsumeQueueFile(t *testing.T) {
	cfg := testStoreConfig(t, FlushAsync)
	cfg.ConsumeQueueEntries = 2
	s, _, err := Open(cfg, []TopicSpec{spec(1, 1)})
	if err != nil {
		t.Fatal(err)
	}
	p := s.Partition(topicID(1), 0)
	value := func(i int) []byte { return []byte{byte('a' + i)} }
	for i := range 2 {
		if _, err := p.Append(testBatch{values: [][]byte{value(i)}, pid: -1}.encode(), 9, 1000); err != nil {
			t.Fatal(err)
		}
	}
	block := filepath.Join(p.dir, log.FileName(2))
	if err := os.Mkdir(block, 0o755); err != nil {
		t.Fatal(err)
	}
	wrote := s.CommitLog().WrotePosition()
	_, err = p.Append(testBatch{values: [][]byte{[]byte("refused")}, pid: -1}.encode(), 9, 1000)
	if !errors.Is(err, kerr.KafkaStorageError) {
		t.Fatalf("append without room for the consume-queue file: %v, want KAFKA_STORAGE_ERROR", err)
	}
	if got := s.CommitLog().WrotePosition(); got != wrote {
		t.Fatalf("the refused batch reached the commit log: position %d, was %d", got, wrote)
	}
	if err := os.Remove(block); err != nil {
		t.Fatal(err)
	}
	res, err := p.Append(testBatch{values: [][]byte{value(2)}, pid: -1}.encode(), 9, 1000)
	if err != nil {
		t.Fatalf("append once the file can be created: %v", err)
	}
	if res.BaseOffset != 2 {
		t.Fatalf("base offset %d after a refused batch, want 2", res.BaseOffset)
	}
	check := func(p *Partition) {
		t.Helper()
		recs, _ := readRecords(t, p, 0)
		if len(recs) != 3 {
			t.Fatalf("%d records, want 3", len(recs))
		}
		for i, r := range recs {
			if r.offset != int64(i) || string(r.value) != string(value(i)) {
				t.Fatalf("record %d: offset %d value %q", i, r.offset, r.value)
			}
		}
	}
	check(p)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openStore(t, cfg, spec(1, 1))
	check(s.Partition(topicID(1), 0))
}
