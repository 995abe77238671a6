package flush_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/kbroker/kbroker/flush"
	klog "github.com/kbroker/kbroker/log"
)

// countingStore counts the flushes that reach the commit log.
type countingStore struct {
	*klog.CommitLog
	flushes atomic.Int64
}

func (c *countingStore) Flush(leastPages int) (int64, error) {
	c.flushes.Add(1)
	return c.CommitLog.Flush(leastPages)
}

func openCommitLog(t testing.TB, fileSize int64) *klog.CommitLog {
	t.Helper()
	l, _, err := klog.Open(klog.Config{Dir: t.TempDir(), FileSize: fileSize, SyncFlush: true}, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

// TestGroupCommitOnCommitLog: a sync append returns only once the real
// commit log's flushed position covers it, and concurrent writers share
// flushes.
func TestGroupCommitOnCommitLog(t *testing.T) {
	l := openCommitLog(t, 1<<20)
	store := &countingStore{CommitLog: l}
	var hwm atomic.Int64
	gc := flush.NewGroupCommitService(store, flush.GroupCommitConfig{}, flush.WithOnFlushed(func(p int64) { hwm.Store(p) }))
	gc.Start()
	defer gc.Close()

	const writers, per = 16, 40
	var wg sync.WaitGroup
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			key := make([]byte, 20)
			key[0] = byte(w)
			for i := 0; i < per; i++ {
				r, err := l.Append(key, make([]byte, 500))
				if err != nil {
					t.Error(err)
					return
				}
				if err := gc.Await(context.Background(), r.End()); err != nil {
					t.Error(err)
					return
				}
				if got := l.FlushedPosition(); got < r.End() {
					t.Errorf("Await returned with flushed %d < end %d", got, r.End())
					return
				}
				if got := hwm.Load(); got < r.End() {
					t.Errorf("OnFlushed reported %d < end %d before completion", got, r.End())
					return
				}
			}
		}(w)
	}
	wg.Wait()
	if n := store.flushes.Load(); n >= writers*per {
		t.Fatalf("%d flushes for %d appends: no group commit", n, writers*per)
	}
	t.Logf("%d appends, %d flushes", writers*per, store.flushes.Load())
}

// BenchmarkSyncAppend measures appends that each wait for durability
// through the GroupCommitService on the real commit log, with 1 and 16
// concurrent writers, and reports appends per flush.
func BenchmarkSyncAppend(b *testing.B) {
	for _, size := range []int{100, 1 << 10, 16 << 10} {
		for _, writers := range []int{1, 16} {
			b.Run(fmt.Sprintf("size=%d/writers=%d", size, writers), func(b *testing.B) {
				l := openCommitLog(b, 64<<20)
				store := &countingStore{CommitLog: l}
				gc := flush.NewGroupCommitService(store, flush.GroupCommitConfig{})
				gc.Start()
				defer gc.Close()
				payload := make([]byte, size)
				b.SetBytes(int64(size))
				b.ReportAllocs()
				// Exactly `writers` goroutines share b.N appends.
				var next atomic.Int64
				var wg sync.WaitGroup
				b.ResetTimer()
				for w := 0; w < writers; w++ {
					wg.Add(1)
					go func() {
						defer wg.Done()
						key := make([]byte, 20)
						for next.Add(1) <= int64(b.N) {
							r, err := l.Append(key, payload)
							if err != nil {
								b.Error(err)
								return
							}
							if err := gc.Await(context.Background(), r.End()); err != nil {
								b.Error(err)
								return
							}
						}
					}()
				}
				wg.Wait()
				b.StopTimer()
				if f := store.flushes.Load(); f > 0 {
					b.ReportMetric(float64(b.N)/float64(f), "appends/flush")
				}
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "appends/s")
			})
		}
	}
}
