package partition

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kbroker/kbroker/log"
)

// TestConsumeQueueReserve: Reserve creates the next file only when the
// next Append would start one, without listing it; that Append takes it;
// a reservation for another base offset is replaced; Close removes an
// unused one, and the queue reopens as it was.
func TestConsumeQueueReserve(t *testing.T) {
	dir := t.TempDir()
	q := cqOpen(t, dir, 2)
	bs := cqTestBatches(5)
	cqAppend(t, q, bs[0])
	if err := q.Reserve(bs[1].base); err != nil {
		t.Fatal(err)
	}
	if got := cqFileNames(t, dir); !slices.Equal(got, []int64{bs[0].base}) {
		t.Fatalf("files %v after a Reserve with room left: want only the first", got)
	}
	cqAppend(t, q, bs[1])

	// The file is full: Reserve creates the next one, unlisted.
	if err := q.Reserve(bs[2].base); err != nil {
		t.Fatal(err)
	}
	if got := cqFileNames(t, dir); !slices.Equal(got, []int64{bs[0].base, bs[2].base}) {
		t.Fatalf("files %v after Reserve(%d)", got, bs[2].base)
	}
	cqCheck(t, q, cqWant(bs[:2]))
	if err := q.Reserve(bs[2].base); err != nil { // again: nothing new
		t.Fatal(err)
	}
	cqAppend(t, q, bs[2])
	cqCheck(t, q, cqWant(bs[:3]))

	// A reservation for another offset is dropped when the Append that
	// comes is a different one.
	cqAppend(t, q, bs[3])
	if err := q.Reserve(bs[4].base + 100); err != nil {
		t.Fatal(err)
	}
	cqAppend(t, q, bs[4])
	if got := cqFileNames(t, dir); !slices.Equal(got, []int64{bs[0].base, bs[2].base, bs[4].base}) {
		t.Fatalf("files %v: the stale reservation must be gone", got)
	}
	cqCheck(t, q, cqWant(bs))

	// Close removes an unused reservation.
	next := bs[4].base + int64(bs[4].delta) + 1
	cqAppend(t, q, cqBatch{pos: 1 << 20, size: 61, base: next, ts: 5000})
	if err := q.Reserve(next + 1); err != nil {
		t.Fatal(err)
	}
	want := cqAll(q)
	if err := q.Close(); err != nil {
		t.Fatal(err)
	}
	if got := cqFileNames(t, dir); slices.Contains(got, next+1) {
		t.Fatalf("files %v: Close left the reserved file %d", got, next+1)
	}
	q2 := cqOpen(t, dir, 2)
	cqCheck(t, q2, want)
}

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
