package topic

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
)

// Concurrent mutations all succeed, OnChange sees each once in an order
// consistent with publication, and a reopened registry has them all.
func TestConcurrentCreatesAreDurable(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var seen []string
	var reg atomic.Pointer[Registry]
	r, dir := newTestRegistry(t, WithOnChange(func(_, nu *Topic) {
		mu.Lock()
		seen = append(seen, nu.Name)
		mu.Unlock()
		// What OnChange is told is already visible to lookups.
		if _, ok := reg.Load().Get(nu.Name); !ok {
			t.Errorf("OnChange for %s before it is visible", nu.Name)
		}
	}))
	reg.Store(r)
	const n = 200
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := r.Create(fmt.Sprintf("t%03d", i), 1, nil, false); err != nil {
				t.Errorf("create t%03d: %v", i, err)
			}
		}()
	}
	wg.Wait()
	if len(seen) != n {
		t.Fatalf("OnChange called %d times, want %d", len(seen), n)
	}
	want := r.List()
	r.journal.close()
	r2, err := Open(dir, KafkaDefaults())
	if err != nil {
		t.Fatal(err)
	}
	defer r2.Close()
	sameTopics(t, r2.List(), want)
}

// A journal longer than the threshold is compacted into the topics file
// by the next mutation; nothing is lost across compactions and a reopen.
func TestJournalCompaction(t *testing.T) {
	t.Parallel()
	r, dir := newTestRegistry(t)
	r.compactBytes = 2 << 10
	for i := range 100 {
		mustCreate(t, r, fmt.Sprintf("c%03d", i), 2, nil)
		if i%3 == 0 {
			if _, err := r.Delete(fmt.Sprintf("c%03d", i)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if tail := r.journal.tail.Load(); tail > r.compactBytes+1024 {
		t.Fatalf("journal holds %d bytes, want it compacted below about %d", tail, r.compactBytes)
	}
	data, err := os.ReadFile(filepath.Join(dir, "topics"))
	if err != nil {
		t.Fatal(err)
	}
	if len(data) < 1000 {
		t.Fatalf("topics file of %d bytes after compactions", len(data))
	}
	want := r.List()
	if len(want) != 66 {
		t.Fatalf("%d topics, want 66", len(want))
	}
	r.journal.close()
	r2, err := Open(dir, KafkaDefaults())
	if err != nil {
		t.Fatal(err)
	}
	defer r2.Close()
	sameTopics(t, r2.List(), want)
}

// A journal whose base is not the topics file (left from before a
// compaction that finished) is ignored; one whose records are garbage
// after valid ones ends at the last valid record.
func TestJournalBaseAndTail(t *testing.T) {
	t.Parallel()
	r, dir := newTestRegistry(t)
	mustCreate(t, r, "a", 1, nil)
	mustCreate(t, r, "b", 1, nil)
	path := filepath.Join(dir, journalName)
	stale, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	tail := r.journal.tail.Load()
	compact(t, r)
	mustCreate(t, r, "c", 1, nil)
	r.journal.close()
	// Put the old journal back: its base is the old topics file.
	if err := os.WriteFile(path, stale, 0o644); err != nil {
		t.Fatal(err)
	}
	r2, err := Open(dir, KafkaDefaults())
	if err != nil {
		t.Fatal(err)
	}
	// c was only in the replaced journal: lost, as the stale journal must
	// not be applied to the newer file (which has a and b).
	if got := names(r2.List()); !slices.Equal(got, []string{"a", "b"}) {
		t.Fatalf("topics with a stale journal: %v, want [a b]", got)
	}
	mustCreate(t, r2, "d", 1, nil)
	mustCreate(t, r2, "e", 1, nil)
	tail = r2.journal.tail.Load()
	r2.journal.close()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	// Garbage where the third record would go.
	if _, err := f.WriteAt([]byte{0, 0, 0, 9, 1, 2, 3, 4, 'x', 'y', 'z'}, tail); err != nil {
		t.Fatal(err)
	}
	f.Close()
	r3, err := Open(dir, KafkaDefaults())
	if err != nil {
		t.Fatal(err)
	}
	defer r3.Close()
	if got := names(r3.List()); !slices.Equal(got, []string{"a", "b", "d", "e"}) {
		t.Fatalf("topics with a torn tail: %v, want [a b d e]", got)
	}
}

// withCrashHook sets the registry's crash hook before Open loads, so that
// tests can fail the writes Open makes.
func withCrashHook(h func(step, tmp string) error) Option {
	return func(r *Registry) { r.crashHook = h }
}

// On a full disk Open still opens (a restart must need no space): with
// journal records to compact it opens without a journal and mutations
// fail until one can be started; with none it appends to the journal it
// found. Once space is back, nothing is lost.
func TestOpenOnFullDisk(t *testing.T) {
	t.Parallel()
	diskFull := errors.New("no space left on device")
	for _, pending := range []bool{true, false} {
		t.Run(fmt.Sprintf("records=%t", pending), func(t *testing.T) {
			t.Parallel()
			var full atomic.Bool
			hook := func(step, _ string) error {
				if full.Load() && (step == "written" || step == "journal-create") {
					return diskFull
				}
				return nil
			}
			r, dir := newTestRegistry(t)
			mustCreate(t, r, "a", 1, nil)
			if !pending {
				compact(t, r)
			}
			r.Close()
			full.Store(true)
			r2, err := Open(dir, KafkaDefaults(), withCrashHook(hook))
			if err != nil {
				t.Fatalf("Open on a full disk: %v", err)
			}
			if _, ok := r2.Get("a"); !ok {
				t.Fatal("topic a missing after Open on a full disk")
			}
			_, err = r2.Create("b", 1, nil, false)
			if pending && !errors.Is(err, diskFull) {
				t.Fatalf("create with no journal on a full disk: %v, want the disk's error", err)
			}
			if !pending && err != nil {
				t.Fatalf("create appending to the found journal: %v", err)
			}
			full.Store(false)
			if pending {
				mustCreate(t, r2, "b", 1, nil)
			}
			mustCreate(t, r2, "c", 1, nil)
			want := r2.List()
			r2.Close()
			r3, err := Open(dir, KafkaDefaults())
			if err != nil {
				t.Fatal(err)
			}
			defer r3.Close()
			sameTopics(t, r3.List(), want)
			if got := names(want); !slices.Equal(got, []string{"a", "b", "c"}) {
				t.Fatalf("topics %v, want [a b c]", got)
			}
		})
	}
}
