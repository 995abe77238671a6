package integration

// A simulated power loss: after a SIGKILL of a sync-mode broker,
// everything that was not known to be on disk is destroyed before the
// restart.

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/kbroker/kbroker/internal/testenv"
	kblog "github.com/kbroker/kbroker/log"
)

// TestPowerLoss: the binary in sync mode, under the full load of
// reliability_helpers_test.go, is killed with SIGKILL; then what a power
// loss could take is destroyed: every commit-log byte past the durable
// position its checkpoint records (log.ReadCheckpoint), and every
// consume-queue entry past what the surviving data covers. "garbage"
// overwrites those bytes with random ones; "truncate" cuts the files there
// (files wholly past it are truncated to nothing, or removed in even
// rounds) and also drops the queue entries past the partitions'
// checkpoint, which is all a power loss is sure to leave of them;
// "log-only" overwrites the commit log's bytes with random ones but keeps
// every consume-queue entry (their pages reached the disk, the log's did
// not), so that the queues index batches that are gone. In even
// rounds one slot of the checkpoint file is torn as well (a torn
// checkpoint write: the other slot, older or newer, is used). Then the
// broker starts again: recovery must succeed without an error in the log,
// and everything acknowledged in sync mode must be there, checked as
// TestReliabilityCrash does (records, committed offsets, committed and
// aborted transactions, transactions open at the loss aborted by the
// broker). KBROKER_POWER_LOSS_ROUNDS rounds of each (2 by default).
func TestPowerLoss(t *testing.T) {
	t.Parallel()
	rounds := testenv.Count(t, "KBROKER_POWER_LOSS_ROUNDS", 2)
	for _, how := range []string{"garbage", "truncate", "log-only"} {
		t.Run(how, func(t *testing.T) {
			t.Parallel()
			start := time.Now()
			r := startRel(t, relOpts("sync"), false, 256)
			// Unpaced, so that appends wait for the group commit at
			// every moment: a power loss then takes batches whose
			// consume-queue entries exist.
			r.paced = false
			for round := 1; round <= rounds; round++ {
				r.round(round, func() {
					r.kill()
					powerLoss(t, r.b.dir, round, how)
				})
				if clean := r.restart(round); clean {
					t.Errorf("round %d: the store was clean after a power loss", round)
				}
				r.verify(round, round == rounds)
				if t.Failed() {
					return
				}
			}
			r.report("power loss ("+how+")", time.Since(start))
		})
	}
}

// powerLoss destroys, in the data directory dir of a killed broker, what
// a power loss could have taken; see TestPowerLoss.
func powerLoss(t *testing.T, dir string, round int, how string) {
	t.Helper()
	garbage := how != "truncate"
	cp, err := kblog.ReadCheckpoint(dir)
	if err != nil {
		t.Fatalf("round %d: %v", round, err)
	}
	remove := !garbage && round%2 == 0
	logBytes, logFiles := destroyPast(t, filepath.Join(dir, "commitlog"), func(from, size int64) int64 {
		return min(max(cp.Durable-from, 0), size)
	}, garbage, remove)

	// The consume queues keep the entries whose batch lies below the
	// durable position ("truncate": also below the position the
	// partitions' checkpoint says the queues were flushed up to).
	keep := cp.Durable
	if !garbage {
		keep = min(keep, partitionsDispatched(t, dir))
	}
	cqEntries := 0 // valid entries past keep
	cqDirs, err := filepath.Glob(filepath.Join(dir, "consumequeue", "*", "*"))
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range cqDirs {
		destroyPast(t, d, func(from, size int64) int64 {
			k, past := cqKeep(t, filepath.Join(d, kblog.FileName(from)), keep)
			cqEntries += past
			if how == "log-only" {
				return size // counted, kept
			}
			return k
		}, garbage, remove)
	}
	cqWhat := "destroyed"
	if how == "log-only" {
		cqWhat = "kept"
	}

	torn := ""
	if round%2 == 0 {
		slot := rand.IntN(2)
		tearCheckpointSlot(t, filepath.Join(dir, "checkpoint"), slot)
		torn = fmt.Sprintf(", tore checkpoint slot %d", slot)
	}
	t.Logf("round %d: power loss past the durable position %d: %d commit-log bytes destroyed (%d files touched); %d consume-queue entries past position %d %s, in %d queues%s",
		round, cp.Durable, logBytes, logFiles, cqEntries, keep, cqWhat, len(cqDirs), torn)
}

// destroyPast destroys the files of dir named by their first offset (as
// commit-log and consume-queue files are): from keep(from, size) bytes on
// in each, overwritten with random bytes (garbage: up to 1 MiB of them)
// or cut off; a file with nothing to keep is truncated to nothing, or
// removed. It returns how many bytes it destroyed and in how many files.
func destroyPast(t *testing.T, dir string, keep func(from, size int64) int64, garbage, remove bool) (bytes int64, files int) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var froms []int64
	for _, e := range ents {
		if from, ok := kblog.ParseFileName(e.Name()); ok {
			froms = append(froms, from)
		}
	}
	slices.Sort(froms)
	for _, from := range froms {
		path := filepath.Join(dir, kblog.FileName(from))
		st, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		size := st.Size()
		k := keep(from, size)
		if k >= size {
			continue
		}
		files++
		switch {
		case garbage:
			f, err := os.OpenFile(path, os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			// At most 1 MiB: past what was written, a pre-allocated file
			// holds zeros, which a power loss leaves as they are.
			junk := make([]byte, min(size-k, 1<<20))
			rng := rand.NewChaCha8([32]byte{byte(from), byte(k), byte(size)})
			rng.Read(junk)
			bytes += int64(len(junk))
			_, err = f.WriteAt(junk, k)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				t.Fatal(err)
			}
		case k == 0 && remove:
			bytes += size
			if err := os.Remove(path); err != nil {
				t.Fatal(err)
			}
		default:
			bytes += size - k
			if err := os.Truncate(path, k); err != nil {
				t.Fatal(err)
			}
		}
	}
	return bytes, files
}

// plCQEntrySize is consumequeue.EntrySize: the consume-queue entry is
// decoded here from its documented layout rather than with the package's
// own code, which is under test.
const plCQEntrySize = 40

// cqKeep is how many bytes of the consume-queue file at path to keep:
// its valid entries up to the first whose batch does not end at or below
// position keep; and how many valid entries follow them.
func cqKeep(t *testing.T, path string, keep int64) (int64, int) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	castagnoli := crc32.MakeTable(crc32.Castagnoli)
	kept, n := int64(-1), int64(0)
	for ; (n+1)*plCQEntrySize <= int64(len(b)); n++ {
		e := b[n*plCQEntrySize : (n+1)*plCQEntrySize]
		if binary.BigEndian.Uint32(e[36:]) != crc32.Checksum(e[:36], castagnoli) {
			break // zeros or a torn entry: the end of the queue
		}
		pos := int64(binary.BigEndian.Uint64(e[0:]))
		size := int64(binary.BigEndian.Uint32(e[24:]))
		if kept < 0 && pos+size > keep {
			kept = n
		}
	}
	if kept < 0 {
		kept = n
	}
	return kept * plCQEntrySize, int(n - kept)
}

// partitionsDispatched is the position up to which the partitions'
// checkpoint (metadata/partitions) says every consume queue was complete
// and flushed.
func partitionsDispatched(t *testing.T, dir string) int64 {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "metadata", "partitions"))
	if os.IsNotExist(err) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	var cp struct {
		Dispatched int64 `json:"dispatched"`
	}
	if err := json.Unmarshal(b, &cp); err != nil {
		t.Fatalf("metadata/partitions: %v", err)
	}
	return cp.Dispatched
}

// tearCheckpointSlot flips a byte in slot (0 or 1) of the checkpoint file
// (log/checkpoint.go: 44-byte slots at offsets 0 and 512), as a torn write
// of it would.
func tearCheckpointSlot(t *testing.T, path string, slot int) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var b [1]byte
	off := int64(slot*512 + 20) // inside the durable position
	if _, err := f.ReadAt(b[:], off); err != nil {
		t.Fatal(err)
	}
	b[0] ^= 0x5a
	if _, err := f.WriteAt(b[:], off); err != nil {
		t.Fatal(err)
	}
}
