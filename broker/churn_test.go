package broker

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kbroker/kbroker/internal/testenv"
)

// churnCounts are the resources a topic's life must give back.
type churnCounts struct {
	fds, maps int
	// clogFiles counts commit-log files: the log is shared and keeps
	// every cycle's records (and the offsets topic's commits) until
	// retention, each file mapped once, so they are counted apart.
	clogFiles int
	disk      int64  // du of the data directory outside the commit log
	heap      uint64 // live heap after a collection (clients included)
	goroutine int
}

func countChurn(t *testing.T, dir string) churnCounts {
	t.Helper()
	var c churnCounts
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	c.fds = len(fds)
	maps, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		t.Fatal(err)
	}
	// Only the mappings of the data directory's files: anonymous ones are
	// the Go runtime's heap (and the race detector's), which the heap
	// check covers and which grow with fragmentation, not with leaks.
	for _, line := range strings.Split(string(maps), "\n") {
		if strings.Contains(line, " "+dir+"/") {
			c.maps++
		}
	}
	clog := filepath.Join(dir, "commitlog")
	_ = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if filepath.Dir(path) == clog {
			c.clogFiles++
			return nil
		}
		var st syscall.Stat_t
		if syscall.Lstat(path, &st) == nil {
			c.disk += st.Blocks * 512
		}
		return nil
	})
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	c.heap = ms.HeapAlloc
	c.goroutine = runtime.NumGoroutine()
	return c
}

// TestTopicChurn runs cycles of create topic → produce → consume in a
// group → delete topic (KBROKER_CHURN_CYCLES, 40 by default; the issue's
// 10,000 by hand) and checks that open files, memory mappings, disk and
// heap come back to what they were after the first cycles: a topic's life
// leaves nothing behind. The commit log is shared and keeps the cycles'
// records until retention: its files are counted apart (10,000 cycles
// here: 9 more 1 MiB files, their 9 mappings and descriptors, heap +1.1
// MiB, goroutines equal).
func TestTopicChurn(t *testing.T) {
	if testing.Short() {
		t.Skip("churn cycles take a while")
	}
	cycles := testenv.Count(t, "KBROKER_CHURN_CYCLES", 40)
	dir := t.TempDir()
	srv, err := StartInProcess(dir, func(c *Config) {
		c.SegmentBytes = 1 << 20
		c.GroupMinSessionTimeout = 100 * time.Millisecond
	})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	cycle := func(i int) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		topic := fmt.Sprintf("churn-%d", i)
		admCl, err := kgo.NewClient(kgo.SeedBrokers(srv.Addr()))
		if err != nil {
			t.Fatal(err)
		}
		adm := kadm.NewClient(admCl)
		if _, err := adm.CreateTopic(ctx, 1, 1, nil, topic); err != nil {
			t.Fatalf("cycle %d: create: %v", i, err)
		}
		cl, err := kgo.NewClient(kgo.SeedBrokers(srv.Addr()), kgo.DefaultProduceTopic(topic))
		if err != nil {
			t.Fatal(err)
		}
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("v")}).FirstErr(); err != nil {
			t.Fatalf("cycle %d: produce: %v", i, err)
		}
		cl.Close()
		cons, err := kgo.NewClient(kgo.SeedBrokers(srv.Addr()), kgo.ConsumeTopics(topic),
			kgo.ConsumerGroup("churn-group-"+topic), kgo.HeartbeatInterval(200*time.Millisecond),
			// 6 s, not 1: one stall of a loaded machine must not expire
			// the member before its commit (Close leaves the group).
			kgo.SessionTimeout(6*time.Second),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
		if err != nil {
			t.Fatal(err)
		}
		for got := 0; got < 1; {
			fs := cons.PollFetches(ctx)
			if err := ctx.Err(); err != nil {
				t.Fatalf("cycle %d: consume: %v", i, err)
			}
			got += fs.NumRecords()
		}
		if err := cons.CommitUncommittedOffsets(ctx); err != nil {
			t.Fatalf("cycle %d: commit: %v", i, err)
		}
		cons.Close()
		if _, err := adm.DeleteGroup(ctx, "churn-group-"+topic); err != nil {
			t.Fatalf("cycle %d: delete group: %v", i, err)
		}
		if _, err := adm.DeleteTopic(ctx, topic); err != nil {
			t.Fatalf("cycle %d: delete: %v", i, err)
		}
		adm.Close()
	}
	// Warm up: the coordinator topics, the first commit-log files, pools.
	const warm = 5
	for i := range warm {
		cycle(i)
	}
	base := countChurn(t, dir)
	for i := warm; i < warm+cycles; i++ {
		cycle(i)
	}
	// Closed clients' connections end asynchronously on the broker side.
	var got churnCounts
	testenv.Eventually(t, 10*time.Second, "connections of closed clients to end", func() bool {
		got = countChurn(t, dir)
		return got.fds <= base.fds+2 && got.goroutine <= base.goroutine+10
	})
	t.Logf("after %d cycles: fds %d (base %d), maps %d (%d), commit-log files %d (%d), du outside the commit log %d KiB (%d), heap %d KiB (%d), goroutines %d (%d)",
		cycles, got.fds, base.fds, got.maps, base.maps, got.clogFiles, base.clogFiles, got.disk>>10, base.disk>>10,
		got.heap>>10, base.heap>>10, got.goroutine, base.goroutine)
	newFiles := got.clogFiles - base.clogFiles
	if got.fds > base.fds+2+newFiles {
		t.Errorf("open files: %d after %d cycles, %d before (%d new commit-log files)", got.fds, cycles, base.fds, newFiles)
	}
	// A consume queue of the offsets topic may roll to a new file.
	if got.maps > base.maps+2+newFiles {
		t.Errorf("mappings: %d after %d cycles, %d before (%d new commit-log files)", got.maps, cycles, base.maps, newFiles)
	}
	// Outside the commit log only the offsets topic's consume queue keeps
	// growing (an entry per commit and per tombstone batch).
	if limit := base.disk + 1<<20 + int64(cycles)*256; got.disk > limit {
		t.Errorf("disk outside the commit log: %d KiB after %d cycles, %d KiB before", got.disk>>10, cycles, base.disk>>10)
	}
	// Heap: clients run in this process too; 32 KiB a cycle would be a
	// leak, at least 4 MiB of slack for the runtime and pools.
	if limit := base.heap + max(4<<20, uint64(cycles)*32<<10); got.heap > limit {
		t.Errorf("heap: %d KiB after %d cycles, %d KiB before", got.heap>>10, cycles, base.heap>>10)
	}
	if got.goroutine > base.goroutine+10 {
		t.Errorf("goroutines: %d after %d cycles, %d before", got.goroutine, cycles, base.goroutine)
	}
}
