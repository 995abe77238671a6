package broker

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/kbroker/kbroker/internal/testenv"
	klog "github.com/kbroker/kbroker/log"
)

// TestFetchMappedSharedReaders: four connections, each reading its own
// two of eight partitions that interleave in the commit log, so that
// their responses come from the same stretches of the log, all get every
// record with the right bytes; while they read several times the sent
// spans' budget, the commit-log pages resident stay within the budget and
// what the responses in flight map, and once they stop, every page goes
// (spans are widened by the fault-around window).
func TestFetchMappedSharedReaders(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	const budget = 1 << 20
	srv, err := StartInProcess(dir, smallPages, WithLogger(zaptest.NewLogger(t)),
		func(b *Broker) { b.sent.budget = budget })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	il := fillInterleaved(t, srv, "shared", 320)
	// The commit log's pages only: a reader also maps consume-queue
	// pages, which the set does not hold.
	dir = filepath.Join(dir, "commitlog")
	before := mappingRSS(t, dir)
	copiedBefore := srv.Stats().CopiedBytes

	var peak atomic.Int64
	stop, sampled := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			select {
			case <-stop:
				return
			default:
			}
			if n, err := residentMapped(dir); err == nil && n > peak.Load() {
				peak.Store(n)
			}
			time.Sleep(2 * time.Millisecond)
		}
	}()
	t.Run("readers", func(t *testing.T) {
		for r := range int32(4) {
			rd := il.reader(2*r, 2*r+1)
			// Responses of 128 KiB: many spans, each small against the
			// budget.
			rd.partMax = 64 << 10
			t.Run("", func(t *testing.T) {
				t.Parallel()
				cl := newClient(t, srv)
				for !rd.check(t, rawFetch(t, cl, rd.request())) {
				}
			})
		}
	})
	close(stop)
	<-sampled
	if copied := srv.Stats().CopiedBytes - copiedBefore; copied != il.small {
		t.Errorf("%d bytes written from the mapping, want the %d of the batches under the threshold", copied, il.small)
	}
	// Each of the four responses in flight maps a span of up to about
	// four times its 128 KiB (the other readers' batches between), plus
	// fault-around (64 KiB) at the edges: 8 MiB is generous.
	if grown := peak.Load() - before; grown > budget+8<<20 {
		t.Errorf("commit-log mappings grew by up to %d KiB resident while reading %d KiB from them, budget %d KiB",
			grown>>10, il.small>>10, budget>>10)
	}
	var after int64
	testenv.Eventually(t, 20*time.Second, "the sent pages unmapped", func() bool {
		after = mappingRSS(t, dir)
		return after-before <= 64<<10
	})
	t.Logf("read %d KiB from the mapping; its resident pages %d → peak %d → %d KiB",
		il.small>>10, before>>10, peak.Load()>>10, after>>10)
}

// TestSentSpansHoldFile: a file with a pending sent span cannot be
// deleted (its deletion waits for the set's reference, so no madvise ever
// reaches an address range that was unmapped and reused), and once the
// set unmaps the span, the deletion completes and the file is gone.
func TestSentSpansHoldFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	m, err := klog.CreateMappedFile(dir, 0, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.AppendBytes(make([]byte, 256<<10)); err != nil {
		t.Fatal(err)
	}
	s := &sentSpans{lg: zaptest.NewLogger(t)}
	// As writeFetch: the response holds the file while it is sent and
	// hands its spans to the set before it releases the file.
	if !m.Hold() {
		t.Fatal("Hold of an open file failed")
	}
	due := s.add(mappedSpans{{m: m, lo: 0, hi: 64 << 10}, {m: m, lo: 128 << 10, hi: 192 << 10}}, time.Now())
	if len(due) != 0 {
		t.Fatalf("%d spans due at once, want none", len(due))
	}
	m.Release()

	done, cancel := context.WithCancel(context.Background())
	cancel()
	if err := m.Destroy(done); !errors.Is(err, context.Canceled) {
		t.Fatalf("Destroy with a span pending: %v, want it to wait for the set", err)
	}
	if _, err := os.Stat(m.Path()); err != nil {
		t.Fatalf("file with a span pending: %v", err)
	}
	// The two ranges merged into one span; unmapping it drops the set's
	// one reference.
	s.close()
	ctx, stop := context.WithTimeout(context.Background(), 10*time.Second)
	defer stop()
	if err := m.Destroy(ctx); err != nil {
		t.Fatalf("Destroy after the set was closed: %v", err)
	}
	if _, err := os.Stat(m.Path()); !os.IsNotExist(err) {
		t.Fatalf("file after Destroy: %v, want it removed", err)
	}
	// Spans sent after close are unmapped and released at once.
	m2, err := klog.CreateMappedFile(dir, 1<<20, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	defer m2.Close()
	m2.Hold()
	if due := s.add(mappedSpans{{m: m2, lo: 0, hi: 4096}}, time.Now()); len(due) != 1 {
		t.Fatalf("%d spans due after close, want 1", len(due))
	} else {
		s.unmap(due)
	}
	m2.Release()
}

// TestSentSpansDue: the set unmaps its oldest spans first once it holds
// more than its budget, and every span older than sentSpanAge.
func TestSentSpansDue(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := &sentSpans{lg: zaptest.NewLogger(t), budget: 3 << 20}
	t.Cleanup(s.close)
	var files []*klog.MappedFile
	for i := range int64(4) {
		m, err := klog.CreateMappedFile(dir, i<<20, 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(m.Close)
		files = append(files, m)
	}
	now := time.Now()
	add := func(m *klog.MappedFile, at time.Time) mappedSpans {
		t.Helper()
		m.Hold()
		due := s.add(mappedSpans{{m: m, lo: 0, hi: 1 << 20}}, at)
		m.Release()
		return due
	}
	for _, m := range files[:3] {
		if due := add(m, now); len(due) != 0 {
			t.Fatalf("%d spans due within the budget", len(due))
		}
	}
	due := add(files[3], now)
	if len(due) != 1 || due[0].m != files[0] {
		t.Fatalf("due over the budget: %v, want the oldest span only", due)
	}
	s.unmap(due)
	due = add(files[0], now.Add(sentSpanAge+time.Millisecond))
	if len(due) != 3 {
		t.Fatalf("%d spans due a sentSpanAge later, want the 3 older ones", len(due))
	}
	s.unmap(due)
}
