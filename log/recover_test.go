package log

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"os"
	"testing"
)

// writeCrashed appends n entries, flushing all but the last unflushed ones
// (the durable position ends before them), then crashes. It returns the
// results of every append.
func writeCrashed(t *testing.T, cfg Config, n, unflushed int) []AppendResult {
	t.Helper()
	l, _, err := Open(cfg, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	var res []AppendResult
	for i := 0; i < n; i++ {
		if i == n-unflushed {
			if _, err := l.Flush(0); err != nil {
				t.Fatal(err)
			}
		}
		r, err := l.Append(key(i), payload(i, 50+i*13%400))
		if err != nil {
			t.Fatal(err)
		}
		res = append(res, r)
	}
	crash(l)
	return res
}

// reopenTwice recovers cfg twice (a crash after the first recovery, too) and
// checks that both give the same end and entries. It returns the first
// report and the entries.
func reopenTwice(t *testing.T, cfg Config) (RecoveryReport, []Entry) {
	t.Helper()
	l, r1, err := Open(cfg, 0, nil)
	if err != nil {
		t.Fatalf("recover: %v", err)
	}
	e1 := readAll(t, l, 0)
	crash(l)
	l, r2, err := Open(cfg, 0, nil)
	if err != nil {
		t.Fatalf("second recover: %v", err)
	}
	e2 := readAll(t, l, 0)
	crash(l)
	if r1.End != r2.End || len(e1) != len(e2) {
		t.Fatalf("second recovery differs: end %d vs %d, %d vs %d entries", r1.End, r2.End, len(e1), len(e2))
	}
	return r1, e1
}

func checkPrefix(t *testing.T, got []Entry, want []AppendResult) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("recovered %d entries, want %d", len(got), len(want))
	}
	for i, e := range got {
		if e.Pos != want[i].Pos || !bytes.Equal(e.Payload, payload(i, 50+i*13%400)) || !bytes.Equal(e.Key, key(i)) {
			t.Fatalf("entry %d differs after recovery", i)
		}
	}
}

// copyDir copies a data directory so each case starts from the same state.
func copyDir(t *testing.T, src string) string {
	t.Helper()
	dst := t.TempDir()
	if err := os.CopyFS(dst, os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
	return dst
}

// TestTornTailEveryByte cuts the last entry at every byte boundary, and
// separately flips every byte of it; recovery keeps exactly the entries
// before it, and a second recovery agrees.
func TestTornTailEveryByte(t *testing.T) {
	base := testConfig(t, 64<<10)
	res := writeCrashed(t, base, 12, 1)
	last := res[len(res)-1]
	off := last.Pos % base.FileSize
	for b := int64(0); b < int64(last.Size); b++ {
		for _, mode := range []string{"truncate", "flip"} {
			cfg := base
			cfg.Dir = copyDir(t, base.Dir)
			p := segmentPath(cfg, last.Pos)
			switch mode {
			case "truncate":
				if err := os.Truncate(p, off+b); err != nil {
					t.Fatal(err)
				}
			case "flip":
				f, _ := os.OpenFile(p, os.O_RDWR, 0)
				var one [1]byte
				f.ReadAt(one[:], off+b)
				one[0] ^= 0x5a
				f.WriteAt(one[:], off+b)
				f.Close()
			}
			r, got := reopenTwice(t, cfg)
			if r.End != last.Pos {
				t.Fatalf("%s at byte %d: end %d, want %d (%+v)", mode, b, r.End, last.Pos, r)
			}
			// A cut within the first bytes of the length field can leave only
			// zeros, which is the ordinary end of data, not a reported cut.
			if (mode == "flip" || b >= 5) && !r.Cut {
				t.Fatalf("%s at byte %d: cut not reported", mode, b)
			}
			checkPrefix(t, got, res[:len(res)-1])
		}
	}
}

// TestGarbageAfterValidEntries appends random bytes after the last entry;
// every entry survives and the garbage is cut.
func TestGarbageAfterValidEntries(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for round := 0; round < 20; round++ {
		cfg := testConfig(t, 16<<10)
		res := writeCrashed(t, cfg, 5+round%7, 0)
		end := res[len(res)-1].End()
		garbage := make([]byte, 1+rng.IntN(3000))
		for i := range garbage {
			garbage[i] = byte(rng.Uint32())
		}
		if round%4 == 0 {
			// A plausible header: right magic, wrong checksum.
			copy(garbage, []byte{0, 0, 0, 64, 0x4b, 0x42, 0x45, 0x31})
		}
		f, _ := os.OpenFile(segmentPath(cfg, end), os.O_RDWR, 0)
		n := min(int64(len(garbage)), cfg.FileSize-end%cfg.FileSize)
		f.WriteAt(garbage[:n], end%cfg.FileSize)
		f.Close()
		r, got := reopenTwice(t, cfg)
		if r.End != end {
			t.Fatalf("round %d: end %d, want %d", round, r.End, end)
		}
		checkPrefix(t, got, res)
		// The log accepts appends at the cut, and they survive.
		l, _, err := Open(cfg, 0, nil)
		if err != nil {
			t.Fatal(err)
		}
		a, err := l.Append(key(99), payload(99, 10))
		if err != nil || a.Pos != end {
			t.Fatalf("append after cut at %d: %v, %v", end, a, err)
		}
		crash(l)
		_, got = reopenTwice(t, cfg)
		if len(got) != len(res)+1 {
			t.Fatalf("round %d: %d entries after append, want %d", round, len(got), len(res)+1)
		}
	}
}

// TestCorruptionBelowDurable flips a byte in a flushed entry: Open refuses,
// naming the file and offset, unless TruncateCorrupt is set.
func TestCorruptionBelowDurable(t *testing.T) {
	cfg := testConfig(t, 64<<10)
	res := writeCrashed(t, cfg, 10, 0)
	l, _, err := Open(cfg, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Flush(0); err != nil {
		t.Fatal(err)
	}
	crash(l)
	victim := res[4]
	f, _ := os.OpenFile(segmentPath(cfg, victim.Pos), os.O_RDWR, 0)
	f.WriteAt([]byte{0xff}, victim.Pos%cfg.FileSize+40)
	f.Close()

	_, _, err = Open(cfg, 0, nil)
	var ce *CorruptionError
	if !errors.As(err, &ce) {
		t.Fatalf("Open = %v, want a *CorruptionError", err)
	}
	if ce.Pos != victim.Pos || ce.Offset != victim.Pos%cfg.FileSize || ce.File != segmentPath(cfg, victim.Pos) {
		t.Fatalf("corruption at %+v, want position %d", ce, victim.Pos)
	}
	cfg.TruncateCorrupt = true
	l, r, err := Open(cfg, 0, nil)
	if err != nil {
		t.Fatalf("Open with TruncateCorrupt: %v", err)
	}
	defer l.Close()
	if r.End != victim.Pos || r.Corruption == nil || !r.Cut {
		t.Fatalf("report %+v, want end %d with corruption", r, victim.Pos)
	}
	checkPrefix(t, readAll(t, l, 0), res[:4])
}

// TestShortLastFileIsExtended cuts the last file short (after its data):
// it is re-extended and nothing is lost.
func TestShortLastFileIsExtended(t *testing.T) {
	cfg := testConfig(t, 64<<10)
	res := writeCrashed(t, cfg, 8, 0)
	end := res[len(res)-1].End()
	p := segmentPath(cfg, end)
	if err := os.Truncate(p, end%cfg.FileSize+100); err != nil {
		t.Fatal(err)
	}
	r, got := reopenTwice(t, cfg)
	if r.End != end {
		t.Fatalf("end %d, want %d", r.End, end)
	}
	checkPrefix(t, got, res)
	if st, _ := os.Stat(p); st.Size() != cfg.FileSize {
		t.Fatalf("last file is %d bytes, want %d", st.Size(), cfg.FileSize)
	}
}

// TestReplayVisitsFromPosition checks the callback that rebuilds indexes.
func TestReplayVisitsFromPosition(t *testing.T) {
	cfg := testConfig(t, 8<<10)
	res := writeCrashed(t, cfg, 40, 3)
	for _, clean := range []bool{false, true} {
		from := res[17].Pos
		var seen []int64
		l, r, err := Open(cfg, from, func(e Entry) error {
			seen = append(seen, e.Pos)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if r.Clean != clean {
			t.Fatalf("clean = %v, want %v", r.Clean, clean)
		}
		if len(seen) != len(res)-17 || seen[0] != from {
			t.Fatalf("visited %d entries from %v, want %d from %d", len(seen), seen[:1], len(res)-17, from)
		}
		l.Close()
	}
	// A visit error stops Open.
	boom := errors.New("index broken")
	if _, _, err := Open(cfg, 0, func(Entry) error { return boom }); !errors.Is(err, boom) {
		t.Fatalf("Open = %v, want %v", err, boom)
	}
}

// TestShortFileBelowDurableIsCorruption: a file cut below the durable
// position lost acknowledged data.
func TestShortFileBelowDurableIsCorruption(t *testing.T) {
	cfg := testConfig(t, 64<<10)
	res := writeCrashed(t, cfg, 8, 0)
	l, _, err := Open(cfg, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	l.Flush(0)
	crash(l)
	if err := os.Truncate(segmentPath(cfg, 0), res[3].Pos+5); err != nil {
		t.Fatal(err)
	}
	var ce *CorruptionError
	if _, _, err := Open(cfg, 0, nil); !errors.As(err, &ce) || ce.Pos != res[3].Pos+5 {
		t.Fatalf("Open = %v, want corruption at %d", err, res[3].Pos+5)
	}
	cfg.TruncateCorrupt = true
	r, got := reopenTwice(t, cfg)
	if r.End != res[3].Pos {
		t.Fatalf("end %d, want %d", r.End, res[3].Pos)
	}
	checkPrefix(t, got, res[:3])
}

// TestCleanOpenAtEndReadsNothing: after a clean stop, opening with
// nothing to replay (replayFrom at the end, as the partition store does
// after a clean stop) reads no entry of the last file, and the log is
// whole: every entry reads back and appends go on at the end.
func TestCleanOpenAtEndReadsNothing(t *testing.T) {
	cfg := testConfig(t, 64<<10)
	l, _, err := Open(cfg, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	var res []AppendResult
	for i := range 30 {
		r, err := l.Append(key(i), payload(i, 50+i*13%400))
		if err != nil {
			t.Fatal(err)
		}
		res = append(res, r)
	}
	end := res[len(res)-1].End()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	visited := 0
	l, r, err := Open(cfg, end, func(Entry) error { visited++; return nil })
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if !r.Clean || r.End != end || r.ScannedFrom != end || r.Entries != 0 || visited != 0 {
		t.Fatalf("report %+v, %d visited; want clean, end %d, nothing scanned or visited", r, visited, end)
	}
	checkPrefix(t, readAll(t, l, 0), res)
	if next, err := l.Append(key(30), payload(30, 50)); err != nil || next.Pos != end {
		t.Fatalf("append after reopen at %d (%v), want %d", next.Pos, err, end)
	}
}
