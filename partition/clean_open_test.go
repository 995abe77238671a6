package partition

import "testing"

// TestCleanReopenReadsNoLog: after a clean stop the checkpoint covers
// the whole commit log, so reopening reads no entry of it (start-up time
// and resident memory must not grow with the last file's fill, issue 14),
// and every partition still has its records and takes new ones.
func TestCleanReopenReadsNoLog(t *testing.T) {
	cfg := testStoreConfig(t, FlushAsync)
	a := spec(0, 2)
	s, _, err := Open(cfg, []TopicSpec{a})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 12 {
		mustAppend(t, s, s.Partition(a.ID, int32(i%2)), testBatch{pid: -1, values: values(3, 500)}, 0)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s2, r, err := Open(cfg, []TopicSpec{a})
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	if !r.Log.Clean || r.Log.End == 0 || r.Log.End%cfg.Log.FileSize == 0 ||
		r.Log.ScannedFrom != r.Log.End || r.Log.Entries != 0 || r.Indexed != 0 || len(r.Rebuilt) != 0 {
		t.Fatalf("clean reopen read the log: %+v", r)
	}
	for i := range int32(2) {
		p := s2.Partition(a.ID, i)
		if got, _ := readRecords(t, p, 0); len(got) != 18 {
			t.Fatalf("partition %d: %d records after a clean reopen, want 18", i, len(got))
		}
		res := mustAppend(t, s2, p, testBatch{pid: -1, values: values(1, 10)}, 0)
		if res.BaseOffset != 18 {
			t.Fatalf("partition %d: next append at offset %d, want 18", i, res.BaseOffset)
		}
	}
}
