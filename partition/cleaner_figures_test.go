package partition

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/kbroker/kbroker/internal/testenv"
	klog "github.com/kbroker/kbroker/log"
)

// TestCompactionFigures measures what docs/BENCHMARKS.md reports for the
// log cleaner: cleaning throughput (MB/s, CPU-seconds per GB), space before
// and after, and append latency on another partition while a large
// partition is cleaned. It is a measurement, not an assertion; it runs only
// with KBROKER_COMPACTION_FIGURES=1:
//
//	KBROKER_COMPACTION_FIGURES=1 go test -run TestCompactionFigures -v ./partition/
func TestCompactionFigures(t *testing.T) {
	if !testenv.Flag(t, "KBROKER_COMPACTION_FIGURES") {
		t.Skip("set KBROKER_COMPACTION_FIGURES=1 to measure the cleaner")
	}
	const (
		updates   = 1_000_000
		keys      = 1000
		perBatch  = 100
		valueSize = 100
	)
	cfg := Config{
		Dir:                    t.TempDir(),
		Log:                    klog.Config{FileSize: 64 << 20, Warm: klog.WarmNone},
		FlushMode:              FlushAsync,
		CheckpointInterval:     time.Hour,
		RetentionCheckInterval: time.Hour,
	}
	other := spec(2, 1)
	s := openStore(t, cfg, compactTopic(1), other)
	p, q := s.Partition(topicID(1), 0), s.Partition(topicID(2), 0)
	value := make([]byte, valueSize)
	now := time.Now().UnixMilli()
	recs := make([]keyed, perBatch)
	for i := 0; i < updates; i += perBatch {
		for j := range recs {
			recs[j] = keyed{fmt.Appendf(nil, "key-%04d", (i+j)%keys), value}
		}
		mustAppendKeyed(t, p, recs, now, -1, 0, false)
	}
	mustAppendKeyed(t, p, []keyed{{[]byte("tail"), value}}, now, -1, 0, false)
	logBytes := s.clog.WrotePosition() - s.clog.MinOffset()

	// Append latency on another partition, before and during cleaning.
	latencies := func(stop <-chan struct{}) []time.Duration {
		var out []time.Duration
		b := testBatch{pid: -1, values: values(10, valueSize), baseTs: now}.encode()
		for {
			select {
			case <-stop:
				return out
			default:
			}
			start := time.Now()
			if _, err := q.Append(append([]byte(nil), b...), 9, now); err != nil {
				t.Error(err)
				return out
			}
			out = append(out, time.Since(start))
			time.Sleep(200 * time.Microsecond) // a steady producer, not a saturating one
		}
	}
	pct := func(ls []time.Duration, p float64) time.Duration {
		slices.Sort(ls)
		if len(ls) == 0 {
			return 0
		}
		return ls[int(float64(len(ls)-1)*p)]
	}
	stop := make(chan struct{})
	time.AfterFunc(2*time.Second, func() { close(stop) })
	idle := latencies(stop)

	var ru0, ru1 syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru0)
	stop = make(chan struct{})
	var during []time.Duration
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); during = latencies(stop) }()
	start := time.Now()
	stats, err := s.Clean(context.Background(), true)
	took := time.Since(start)
	close(stop)
	wg.Wait()
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru1)
	if err != nil {
		t.Fatal(err)
	}
	cpu := time.Duration(ru1.Utime.Nano()+ru1.Stime.Nano()-ru0.Utime.Nano()-ru0.Stime.Nano()) * time.Nanosecond

	if _, err := s.EnforceRetention(context.Background()); err != nil {
		t.Fatal(err)
	}
	var cleanBytes int64
	_ = filepath.Walk(filepath.Join(cfg.Dir, "compacted"), func(_ string, fi os.FileInfo, _ error) error {
		if fi != nil && !fi.IsDir() {
			cleanBytes += fi.Size()
		}
		return nil
	})
	var logFiles int
	des, _ := os.ReadDir(filepath.Join(cfg.Dir, "commitlog"))
	logFiles = len(des)
	mb := float64(stats.BytesRead) / 1e6
	t.Logf("partition: %d updates over %d keys, %d-byte values, %d records a batch", updates, keys, valueSize, perBatch)
	t.Logf("commit log before: %.1f MB in use", float64(logBytes)/1e6)
	t.Logf("cleaning: %d passes, read %.1f MB, wrote %.3f MB, removed %d records, %v: %.0f MB/s, %.2f CPU-s per GB read (process CPU, producer included)",
		stats.Partitions, mb, float64(stats.BytesWritten)/1e6, stats.RecordsRemoved, took.Round(time.Millisecond),
		mb/took.Seconds(), cpu.Seconds()/(mb/1000))
	t.Logf("after: clean store %.3f MB; commit-log files left %d of %d MiB (the current one, preallocated, and the next)",
		float64(cleanBytes)/1e6, logFiles, cfg.Log.FileSize>>20)
	t.Logf("append latency on another partition: idle p50 %v p99 %v max %v (%d appends); during cleaning p50 %v p99 %v max %v (%d appends)",
		pct(idle, 0.5), pct(idle, 0.99), pct(idle, 1), len(idle), pct(during, 0.5), pct(during, 0.99), pct(during, 1), len(during))
}
