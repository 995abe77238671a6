package partition

import (
	"testing"

	"github.com/kbroker/kbroker/partition/batch"
)

// FuzzCleanStoreIndex feeds arbitrary data files to the index rebuild of
// a clean store: it never panics, and what it accepts is a sequence of
// whole batches with increasing offsets below the clean end.
func FuzzCleanStoreIndex(f *testing.F) {
	f.Add(keyedBatch([]keyed{{[]byte("k"), []byte("v")}}, 1, -1, 0, 0, false), int64(10))
	two := append(keyedBatch([]keyed{{[]byte("a"), nil}}, 1, -1, 0, 0, false), keyedBatch([]keyed{{[]byte("b"), []byte("v")}}, 1, -1, 0, 0, false)...)
	f.Add(two, int64(2))
	f.Fuzz(func(t *testing.T, data []byte, end int64) {
		entries, _, err := indexBatches(data, end)
		if err != nil {
			return
		}
		var pos int64
		next := int64(-1)
		for _, e := range entries {
			if e.Pos != pos || e.Size < batch.HeaderSize || e.BaseOffset < next || e.NextOffset() > end {
				t.Fatalf("accepted entry %+v at %d after %d, end %d", e, pos, next, end)
			}
			pos += int64(e.Size)
			next = e.NextOffset()
		}
		if pos != int64(len(data)) {
			t.Fatalf("entries cover %d of %d bytes", pos, len(data))
		}
	})
}

// FuzzManifest: decodeManifest never panics and accepts only what encode
// produces.
func FuzzManifest(f *testing.F) {
	f.Add(manifest{generation: 3, logStart: 1, deduped: 5, cleanEnd: 10, dataSize: 100}.encode())
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := decodeManifest(b)
		if err != nil {
			return
		}
		if string(m.encode()) != string(b) {
			t.Fatalf("accepted %x, which re-encodes as %x", b, m.encode())
		}
	})
}
