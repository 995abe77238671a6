package log

import (
	"bytes"
	"encoding/binary"
	"os"
	"testing"
)

// FuzzRecover writes arbitrary bytes after a few valid, unflushed entries
// and recovers. Recovery must never panic, must keep every valid entry,
// must end on an entry boundary that Iterate agrees with, and must give the
// same answer when run twice.
func FuzzRecover(f *testing.F) {
	f.Add([]byte{}, uint16(0))
	f.Add([]byte{0, 0, 0, 64, 0x4b, 0x42, 0x45, 0x31, 1, 2, 3, 4}, uint16(0))
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0x4b, 0x42, 0x42, 0x46}, uint16(3))
	valid := make([]byte, 60)
	binary.BigEndian.PutUint32(valid[0:], 60)
	binary.BigEndian.PutUint32(valid[4:], EntryMagic)
	binary.BigEndian.PutUint32(valid[8:], entryChecksum(valid[12:32], valid[32:]))
	f.Add(valid, uint16(0))
	f.Add(append(bytes.Clone(valid), 0xde, 0xad), uint16(1))

	f.Fuzz(func(t *testing.T, garbage []byte, skip uint16) {
		cfg := Config{Dir: t.TempDir(), FileSize: 8192, KeySize: 20, Warm: WarmNone}
		l, _, err := Open(cfg, 0, nil)
		if err != nil {
			t.Fatal(err)
		}
		var res []AppendResult
		for i := 0; i < 3; i++ {
			r, err := l.Append(key(i), payload(i, 100*i))
			if err != nil {
				t.Fatal(err)
			}
			res = append(res, r)
		}
		crash(l)
		end := res[len(res)-1].End()
		// Write the garbage at the end of the data, or a little later.
		at := end + int64(skip%64)
		if room := cfg.FileSize - at%cfg.FileSize; int64(len(garbage)) > room {
			garbage = garbage[:room]
		}
		fh, err := os.OpenFile(segmentPath(cfg, at), os.O_RDWR, 0)
		if err != nil {
			t.Fatal(err)
		}
		fh.WriteAt(garbage, at%cfg.FileSize)
		fh.Close()

		var ends [2]int64
		for run := 0; run < 2; run++ {
			l, r, err := Open(cfg, 0, nil)
			if err != nil {
				t.Fatalf("run %d: recover: %v", run, err)
			}
			if r.End < end {
				t.Fatalf("run %d: end %d cuts valid entries ending at %d", run, r.End, end)
			}
			var got []Entry
			if err := l.Iterate(0, func(e Entry) error {
				got = append(got, Entry{Pos: e.Pos, Size: e.Size, Payload: bytes.Clone(e.Payload)})
				return nil
			}); err != nil {
				t.Fatalf("run %d: iterate: %v", run, err)
			}
			for i, want := range res {
				if got[i].Pos != want.Pos || !bytes.Equal(got[i].Payload, payload(i, 100*i)) {
					t.Fatalf("run %d: entry %d damaged", run, i)
				}
			}
			if last := got[len(got)-1]; last.End() != r.End && r.End%cfg.FileSize != 0 {
				t.Fatalf("run %d: log ends at %d but the last entry ends at %d", run, r.End, last.End())
			}
			ends[run] = r.End
			crash(l)
		}
		if ends[0] != ends[1] {
			t.Fatalf("recoveries disagree: %d then %d", ends[0], ends[1])
		}
	})
}
