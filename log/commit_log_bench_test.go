package log

import (
	"fmt"
	"sync"
	"syscall"
	"testing"
	"time"
)

var benchSizes = []int{100, 1 << 10, 16 << 10}

func sizeName(n int) string {
	if n >= 1<<10 {
		return fmt.Sprintf("%dKiB", n>>10)
	}
	return fmt.Sprintf("%dB", n)
}

// benchLog opens a log for a benchmark of n appends of size bytes. With
// prewarm, every file the run will need is created and warmed before the
// timer starts: appends then measure the copy into warm pages alone.
func benchLog(b *testing.B, cfg Config, n, size int, prewarm bool) *CommitLog {
	b.Helper()
	l, _, err := Open(cfg, 0, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { l.Close() })
	if prewarm {
		need := int64(n)*int64(size+l.headerLen) + 2*cfg.FileSize
		for from := int64(0); from < need; from += cfg.FileSize {
			if err := l.alloc.prebuild(from); err != nil {
				b.Fatal(err)
			}
		}
	}
	return l
}

// BenchmarkCommitLogAppend measures one goroutine appending without
// waiting for durability (async mode), in several set-ups:
//
//	prewarmed  files already allocated and warmed by the allocator
//	sustained  the allocator warms the next file while appends run
//	cold       no warm-up: every first touch of a page faults on the append path
//	pool       appends into transient-pool buffers, committed in the background
//	pwrite     each append a pwritev(2) into a fresh file, no warm-up (AppendPwrite)
func BenchmarkCommitLogAppend(b *testing.B) {
	for _, mode := range []string{"prewarmed", "sustained", "cold", "pool", "pwrite"} {
		for _, size := range benchSizes {
			b.Run(fmt.Sprintf("mode=%s/size=%s", mode, sizeName(size)), func(b *testing.B) {
				cfg := Config{Dir: b.TempDir(), FileSize: 64 << 20, KeySize: 20}
				switch mode {
				case "cold":
					cfg.Warm = WarmNone
				case "pool":
					cfg.PoolBuffers = 3
				case "pwrite":
					cfg.Append = AppendPwrite
				}
				l := benchLog(b, cfg, b.N, size, mode == "prewarmed")
				stop := make(chan struct{})
				var wg sync.WaitGroup
				if mode == "pool" {
					// Stand-in for the CommitRealTimeService: commit every 200 ms
					// so that buffers come back to the pool.
					wg.Add(1)
					go func() {
						defer wg.Done()
						t := time.NewTicker(20 * time.Millisecond)
						defer t.Stop()
						for {
							select {
							case <-stop:
								return
							case <-t.C:
								l.Commit(4)
							}
						}
					}()
				}
				k, p := key(1), payload(1, size)
				var ru0, ru1 syscall.Rusage
				syscall.Getrusage(syscall.RUSAGE_SELF, &ru0)
				b.SetBytes(int64(size))
				b.ReportAllocs()
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					if _, err := l.Append(k, p); err != nil {
						b.Fatal(err)
					}
				}
				b.StopTimer()
				syscall.Getrusage(syscall.RUSAGE_SELF, &ru1)
				close(stop)
				wg.Wait()
				cpu := time.Duration(ru1.Utime.Nano()+ru1.Stime.Nano()-ru0.Utime.Nano()-ru0.Stime.Nano()) * time.Nanosecond
				gb := float64(b.N) * float64(size) / 1e9
				if gb > 0 {
					b.ReportMetric(cpu.Seconds()/gb, "cpu-s/GB")
				}
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "entries/s")
			})
		}
	}
}

// BenchmarkWarm compares the warm-up methods on one 64 MiB file: a write
// fault per page (atomic add of zero), the seeds' page-by-page zero
// store, and one madvise(MADV_POPULATE_WRITE) per chunk.
func BenchmarkWarm(b *testing.B) {
	for _, mode := range []WarmMode{WarmFault, WarmTouch, WarmPopulate} {
		b.Run(mode.String(), func(b *testing.B) {
			const size = 64 << 20
			dir := b.TempDir()
			cfg := Config{FileSize: size, WarmFlushPages: 4096, Warm: mode}
			b.SetBytes(size)
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				m, err := createMappedFile(dir, int64(i)*size, size, size, true, nil)
				if err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				warmRange(m, &cfg, 0, size, nil)
				b.StopTimer()
				m.unlink.Store(true)
				m.retire()
				b.StartTimer()
			}
		})
	}
}
