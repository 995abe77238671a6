package log

import (
	"os"
	"testing"
	"testing/synctest"
)

// threadIDs returns the ids of the process's threads.
func threadIDs(t *testing.T) map[string]bool {
	t.Helper()
	entries, err := os.ReadDir("/proc/self/task")
	if err != nil {
		t.Skipf("no /proc/self/task: %v", err)
	}
	ids := make(map[string]bool, len(entries))
	for _, e := range entries {
		ids[e.Name()] = true
	}
	return ids
}

// warmedFile returns a file of two chunks, warmed by touching, as the
// allocator warms mapped appends' files.
func warmedFile(t *testing.T) (*MappedFile, *Config) {
	t.Helper()
	cfg := testConfig(t, 1<<20)
	cfg.Warm, cfg.WarmFlushPages = WarmTouch, 128
	m, err := createMappedFile(t.TempDir(), 0, cfg.FileSize, cfg.FileSize, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Destroy(t.Context()) })
	return m, &cfg
}

// TestWarmUpEndsNoThread: warming up runs on the shared low-priority
// thread and ends no thread. A goroutine that locks a thread, lowers its
// priority and exits makes the runtime end the thread, and a child process
// started from it with a parent-death signal (os/exec with Pdeathsig) dies
// with it; the warm-up of mapped appends did that once per file.
func TestWarmUpEndsNoThread(t *testing.T) {
	m, cfg := warmedFile(t)
	before := threadIDs(t)
	for range 20 {
		warmLowPriority(m, cfg, 0, m.size, nil)
	}
	after := threadIDs(t)
	for id := range before {
		if !after[id] {
			t.Errorf("thread %s ended during the warm-ups", id)
		}
	}
}

// TestLowPriorityThreadInBubble: work handed to the low-priority thread
// from inside a testing/synctest bubble runs, and the bubble ends. The
// thread was started by the first fill or warm-up; started inside a bubble
// it never ended and deadlocked it, and started outside, it stopped the
// process when it closed a channel the bubble had made.
func TestLowPriorityThreadInBubble(t *testing.T) {
	m, cfg := warmedFile(t)
	synctest.Test(t, func(t *testing.T) {
		stop := make(chan struct{})
		ran := false
		if !onLowPriorityThread(stop, func() { ran = true }) || !ran {
			t.Fatal("the function did not run")
		}
		m.data[0] = 1
		warmLowPriority(m, cfg, 0, m.size, stop)
		if m.data[0] != 0 {
			t.Error("the warm-up did not touch the first page")
		}
	})
}
