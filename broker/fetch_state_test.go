package broker

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/partition"
	"github.com/kbroker/kbroker/protocol"
)

// wakeLoop drives the end-to-end shape of a fetch in process: a session
// consumer that is caught up sends an incremental fetch naming its
// partition at the next offset (as kgo does), the broker finds nothing and
// parks it, one record is appended, and the parked fetch wakes and answers
// it. Requests go through the connection's decoding (parseBody), as on the
// wire; the appended batches and the request frames are made beforehand.
type wakeLoop struct {
	tb     testing.TB
	c      *conn
	p      *partition.Partition
	frames [][]byte
	// batches are appended one per cycle.
	batches [][]byte
	n       int
}

// newWakeLoop prepares cycles cycles; with session, it first opens the
// session with a full fetch, else the fetches are sessionless (as
// librdkafka's).
func newWakeLoop(tb testing.TB, cycles int, session bool) *wakeLoop {
	srv := newTestServer(tb, nil)
	tp, err := srv.Topics().Create("e2e", 1, nil, false)
	if err != nil {
		tb.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	tb.Cleanup(cancel)
	c := &conn{b: srv.Broker, l: srv.listeners[0], lg: srv.lg, principal: anonymous, ctx: ctx, cancel: cancel}
	w := &wakeLoop{tb: tb, c: c, p: srv.Store().Partition(partition.TopicID(tp.ID), 0)}
	const version = 16
	newReq := func(id, epoch int32, offset int64) []byte {
		req := kmsg.NewPtrFetchRequest()
		req.ReplicaID, req.MaxWaitMillis, req.MinBytes, req.MaxBytes = -1, 30000, 1, 50<<20
		req.SessionID, req.SessionEpoch = id, epoch
		rt := kmsg.NewFetchRequestTopic()
		rt.TopicID = tp.ID
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.FetchOffset, rp.PartitionMaxBytes = offset, 1<<20
		rt.Partitions = []kmsg.FetchRequestTopicPartition{rp}
		req.Topics = []kmsg.FetchRequestTopic{rt}
		return requestFrame(req, version, 1)[4:]
	}
	tmpl := benchBatch(1, 1024)
	if !session {
		for i := range cycles {
			w.frames = append(w.frames, newReq(0, -1, int64(i)))
			w.batches = append(w.batches, bytes.Clone(tmpl))
		}
		return w
	}
	// The full fetch that opens the session returns at once (max wait 0
	// is not what a consumer sends, but no data is needed here).
	open := newReq(0, 0, 0)
	h, rest, err := protocol.ParseHeader(open)
	if err != nil {
		tb.Fatal(err)
	}
	req, err := c.parseBody(h, rest)
	if err != nil {
		tb.Fatal(err)
	}
	req.(*kmsg.FetchRequest).MaxWaitMillis = 0
	res, err := srv.handleFetch(c, req.(*kmsg.FetchRequest))
	if err != nil || res.fetch.parked != nil {
		tb.Fatalf("opening fetch: %v, parked %v", err, res.fetch.parked != nil)
	}
	resp := kmsg.NewPtrFetchResponse()
	resp.Version = version
	if err := resp.ReadFrom(res.fetch.frame.Bytes[4+4+1:]); err != nil || resp.SessionID == 0 {
		tb.Fatalf("open session: %v, session %d", err, resp.SessionID)
	}
	res.fetch.recycle()
	for i := range cycles {
		w.frames = append(w.frames, newReq(resp.SessionID, int32(i+1), int64(i)))
		w.batches = append(w.batches, bytes.Clone(tmpl))
	}
	return w
}

// cycle runs the next fetch: it must park, and answer the record appended
// while it waits.
func (w *wakeLoop) cycle() {
	h, rest, err := protocol.ParseHeader(w.frames[w.n])
	if err != nil {
		w.tb.Fatal(err)
	}
	req, err := w.c.parseBody(h, rest)
	if err != nil {
		w.tb.Fatal(err)
	}
	res, err := w.c.b.handleFetch(w.c, req.(*kmsg.FetchRequest))
	w.c.releaseUnclaimedFetch() // as handleFrame does
	if err != nil {
		w.tb.Fatal(err)
	}
	if res.fetch.parked == nil {
		w.tb.Fatalf("fetch %d did not park", w.n)
	}
	if _, err := w.p.Append(w.batches[w.n], 9, 0); err != nil {
		w.tb.Fatal(err)
	}
	w.c.b.finishParked(w.c, res.fetch) // as the connection's writer does
	if len(res.fetch.frame.Splices) == 0 && len(res.fetch.frame.Bytes) < 1024 {
		w.tb.Fatalf("fetch %d woke without the record (%d bytes)", w.n, len(res.fetch.frame.Bytes))
	}
	res.fetch.recycle()
	w.n++
}

// TestParkedFetchAllocations bounds what a parked session fetch woken by an
// append allocates, the end-to-end case of one record per fetch: the
// decoding, the plan, the session's topic list and the timer are reused
// from the connection's fetch state, and the connection's writer waits
// (no goroutine, no channel per park). It was 22 allocations before the
// state existed.
// A sessionless fetch (librdkafka's) of one partition parks in a plain
// select; of several, in a reflect.Select, which allocates its own arrays
// (2 allocations).
func TestParkedFetchAllocations(t *testing.T) {
	for _, tc := range []struct {
		session bool
		max     float64
	}{{true, 1}, {false, 1}} {
		t.Run(fmt.Sprintf("session=%v", tc.session), func(t *testing.T) {
			const runs = 200
			w := newWakeLoop(t, runs+2, tc.session)
			w.cycle() // the state's arrays and timer come into being
			allocs := testing.AllocsPerRun(runs, w.cycle)
			t.Logf("%.1f allocations per parked fetch", allocs)
			if !raceEnabled && allocs > tc.max {
				t.Fatalf("got %.1f allocations per parked fetch and wake, want at most %v", allocs, tc.max)
			}
		})
	}
}

// BenchmarkFetchWake is TestParkedFetchAllocations's cycle timed: one
// incremental session fetch that parks, an append of one 1 KiB record, and
// the wake that answers it, in process (no socket).
func BenchmarkFetchWake(b *testing.B) {
	w := newWakeLoop(b, b.N+1, true)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		w.cycle()
	}
}

// TestTakeCopyChunk: a response whose ranges below the threshold add up
// to a small chunk's size gets a small chunk; more, a full one; ranges
// sent with sendfile do not count.
func TestTakeCopyChunk(t *testing.T) {
	splices := func(lens ...int64) []protocol.Splice {
		var out []protocol.Splice
		for _, n := range lens {
			out = append(out, protocol.Splice{Range: protocol.FetchRange{Len: n}})
		}
		return out
	}
	for _, tc := range []struct {
		name      string
		s         []protocol.Splice
		threshold int64
		want      int
	}{
		{"one record", splices(1100), 16 << 10, smallCopyChunk},
		{"exactly small", splices(smallCopyChunk/2, smallCopyChunk/2), 1 << 20, smallCopyChunk},
		{"past small", splices(smallCopyChunk/2, smallCopyChunk/2, 1), 1 << 20, copyChunk},
		{"past small in small ranges", splices(slices.Repeat([]int64{1000}, 66)...), 16 << 10, copyChunk},
		{"large ranges go with sendfile", splices(1<<20, 1000, 1<<20), 16 << 10, smallCopyChunk},
	} {
		c := takeCopyChunk(tc.s, tc.threshold)
		if cap(*c) != tc.want || len(*c) != 0 {
			t.Errorf("%s: chunk of cap %d len %d, want cap %d", tc.name, cap(*c), len(*c), tc.want)
		}
		putCopyChunk(c)
	}
}
