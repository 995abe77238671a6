package topic

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
)

// TestConcurrentReads runs Get, ByID and List against Creates, Deletes and
// config changes; under -race it checks that lookups need no lock, and each
// reader checks it only ever sees whole, consistent topics.
func TestConcurrentReads(t *testing.T) {
	t.Parallel()
	r, _ := newTestRegistry(t)
	stable := mustCreate(t, r, "stable", 2, map[string]*string{"retention.ms": strp("1000")})
	var stop atomic.Bool
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				if tp, ok := r.Get("stable"); !ok || tp.ID != stable.ID || tp.Configs.RetentionMs() != 1000 {
					errs <- fmt.Errorf("Get(stable) = %+v, %t", tp, ok)
					return
				}
				for i := range 4 {
					name := fmt.Sprintf("t%d", i)
					tp, ok := r.Get(name)
					if !ok {
						continue
					}
					if tp.Name != name || tp.Partitions < 1 || tp.ID.IsZero() {
						errs <- fmt.Errorf("Get(%s) = %+v", name, tp)
						return
					}
					if back, ok := r.ByID(tp.ID); ok && back.Name != name {
						errs <- fmt.Errorf("ByID(%v) = %s, want %s", tp.ID, back.Name, name)
						return
					}
				}
				list := r.List()
				for i := 1; i < len(list); i++ {
					if list[i-1].Name >= list[i].Name {
						errs <- fmt.Errorf("List not sorted: %v", names(list))
						return
					}
				}
			}
		}()
	}
	for round := range 3 {
		for i := range 4 {
			name := fmt.Sprintf("t%d", i)
			mustCreate(t, r, name, int32(1+round%3), nil)
			if _, err := r.IncrementalAlterConfigs(name, []AlterOp{{Name: "retention.ms", Op: OpSet, Value: strp("5")}}, false); err != nil {
				t.Error(err)
			}
		}
		for i := range 4 {
			if _, err := r.Delete(fmt.Sprintf("t%d", i)); err != nil {
				t.Error(err)
			}
		}
	}
	stop.Store(true)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestConcurrentMutations creates topics from many goroutines: every one is
// created exactly once and all survive a reopen.
func TestConcurrentMutations(t *testing.T) {
	t.Parallel()
	r, dir := newTestRegistry(t)
	var wg sync.WaitGroup
	var created atomic.Int32
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 3 {
				// Two goroutines race for each name; one must win.
				if _, err := r.Create(fmt.Sprintf("n%d", (g/2)*3+i), 1, nil, false); err == nil {
					created.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	if created.Load() != 12 || len(r.List()) != 12 {
		t.Fatalf("created %d, listed %d; want 12", created.Load(), len(r.List()))
	}
	r2, err := Open(dir, KafkaDefaults())
	if err != nil {
		t.Fatal(err)
	}
	sameTopics(t, r2.List(), r.List())
}

// TestLookupsDoNotAllocate holds the hot path to zero allocations: the
// produce and fetch handlers call Get or ByID for every partition.
func TestLookupsDoNotAllocate(t *testing.T) {
	r, _ := newTestRegistry(t)
	tp := mustCreate(t, r, "orders", 3, map[string]*string{"max.message.bytes": strp("2048")})
	mustCreate(t, r, "other", 1, nil)
	var sink int64
	allocs := testing.AllocsPerRun(1000, func() {
		got, _ := r.Get("orders")
		sink += int64(got.Configs.MaxMessageBytes()) + got.Configs.RetentionMs() + int64(got.Configs.TimestampType())
		byID, _ := r.ByID(tp.ID)
		sink += int64(byID.Partitions)
		_, ok := r.Get("missing")
		if ok {
			sink++
		}
	})
	if allocs != 0 {
		t.Fatalf("Get/ByID allocate %.1f times per call, want 0", allocs)
	}
	_ = sink
}

func BenchmarkGet(b *testing.B) {
	r, err := Open(b.TempDir(), KafkaDefaults())
	if err != nil {
		b.Fatal(err)
	}
	for i := range 100 {
		if _, err := r.Create(fmt.Sprintf("topic-%03d", i), 1, nil, false); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	var sink int32
	for b.Loop() {
		t, _ := r.Get("topic-042")
		sink += t.Configs.MaxMessageBytes()
	}
	_ = sink
}

func BenchmarkByID(b *testing.B) {
	r, err := Open(b.TempDir(), KafkaDefaults())
	if err != nil {
		b.Fatal(err)
	}
	var id ID
	for i := range 100 {
		t, err := r.Create(fmt.Sprintf("topic-%03d", i), 1, nil, false)
		if err != nil {
			b.Fatal(err)
		}
		id = t.ID
	}
	b.ReportAllocs()
	var sink int32
	for b.Loop() {
		t, _ := r.ByID(id)
		sink += t.Partitions
	}
	_ = sink
}
