package partition

import (
	"os"
	"path/filepath"
	"testing"
)

// TestProducerIDsFile: the block bound is persisted before ids
// from it are used, and a damaged file is refused rather than guessed at.
func TestProducerIDsFile(t *testing.T) {
	dir := t.TempDir()
	m, err := OpenProducerIDs(dir)
	if err != nil {
		t.Fatal(err)
	}
	for want := int64(0); want < 1500; want++ {
		if id, err := m.Next(); err != nil || id != want {
			t.Fatalf("got %d, %v, want %d", id, err, want)
		}
	}
	m, err = OpenProducerIDs(dir)
	if err != nil {
		t.Fatal(err)
	}
	if id, err := m.Next(); err != nil || id != 2000 {
		t.Fatalf("after reopen got %d, %v, want 2000", id, err)
	}
	path := filepath.Join(dir, producerIDsFile)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)/2] ^= 1
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenProducerIDs(dir); err == nil {
		t.Fatal("damaged file accepted")
	}
}
