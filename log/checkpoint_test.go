package log

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// TestReadCheckpoint: ReadCheckpoint sees what a running log recorded
// (the durable position after a flush, without a clean stop), what a clean
// Close recorded, the older slot when the newer one is torn, and fails on
// a missing file or one without a valid slot, without creating anything.
func TestReadCheckpoint(t *testing.T) {
	cfg := testConfig(t, 64<<10)
	if _, err := ReadCheckpoint(cfg.Dir); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("ReadCheckpoint of a directory without a store: %v, want os.ErrNotExist", err)
	}
	if _, err := os.Stat(filepath.Join(cfg.Dir, "checkpoint")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("ReadCheckpoint created the checkpoint file (stat: %v)", err)
	}

	l, _, err := Open(cfg, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	r1, _ := l.Append(key(1), payload(1, 1000))
	if _, err := l.Flush(0); err != nil {
		t.Fatal(err)
	}
	r2, _ := l.Append(key(2), payload(2, 1000)) // not flushed
	cp, err := ReadCheckpoint(cfg.Dir)
	if err != nil || cp.Durable != r1.End() || cp.Time == 0 {
		t.Fatalf("ReadCheckpoint while running: %+v, %v; want durable %d and a time", cp, err, r1.End())
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	cp, err = ReadCheckpoint(cfg.Dir)
	if err != nil || cp.Durable != r2.End() || cp.End != r2.End() {
		t.Fatalf("ReadCheckpoint after Close: %+v, %v; want durable and end %d", cp, err, r2.End())
	}

	// Tear the newer slot: the older one (the flush of r2 by Close,
	// before the end was written) is read.
	path := filepath.Join(cfg.Dir, "checkpoint")
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var newer int
	for _, off := range []int{0, checkpointSlotGap} {
		if _, c, ok := decodeCheckpointSlot(raw[off : off+checkpointSlotSize]); ok && c == cp {
			newer = off
		}
	}
	torn := append([]byte(nil), raw...)
	torn[newer+20] ^= 0xff
	if err := os.WriteFile(path, torn, 0o644); err != nil {
		t.Fatal(err)
	}
	older, err := ReadCheckpoint(cfg.Dir)
	if err != nil || older == cp || older.Durable > cp.Durable {
		t.Fatalf("ReadCheckpoint with the newer slot torn: %+v, %v; want the older slot (newer was %+v)", older, err, cp)
	}

	// Both slots torn.
	torn[checkpointSlotGap-newer+20] ^= 0xff
	if err := os.WriteFile(path, torn, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadCheckpoint(cfg.Dir); !errors.Is(err, ErrNoCheckpoint) {
		t.Fatalf("ReadCheckpoint with both slots torn: %v, want ErrNoCheckpoint", err)
	}
	if got, err := os.ReadFile(path); err != nil || string(got) != string(torn) {
		t.Fatalf("ReadCheckpoint changed the file (%v)", err)
	}
}
