package broker

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"net"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"

	"github.com/kbroker/kbroker/topic"
)

// BenchmarkProduceMultiPartition sends produce requests as idempotent kgo
// producers do to a topic of several partitions: one request carries one
// batch for each partition (v13, topic by id, acks=-1), each batch a few
// dozen 100 B or 1 KiB records with the next sequence number. Each
// producer sends its requests over a raw connection and reads each
// response before the next (rawProducer), so that the allocations
// counted are the broker's (the clients reuse their buffers).
// "allocMB/GB" is what the whole process allocated per GB of record
// batches produced, the figure issue 18 bounds at 10.
//
// The conns=8 cases are kbench's "64 partitions, 8 producers" shape:
// eight connections at once (an op is one request from each), requests
// of 1–4 MB that change size from one to the next, so that they go
// through the broker's shared cache of large request buffers
// (frame_cache.go), in async and in sync flush mode.
//
//	go test -run '^$' -bench BenchmarkProduceMultiPartition -benchtime 2000x ./broker/
func BenchmarkProduceMultiPartition(b *testing.B) {
	for _, c := range []struct {
		conns, partitions int
		records           []int
		valueSize         int
		flush             string
	}{
		{1, 1, []int{64}, 100, "async"}, {1, 8, []int{64}, 100, "async"}, {1, 64, []int{16}, 100, "async"},
		{1, 8, []int{16}, 1024, "async"}, {1, 64, []int{4}, 1024, "async"},
		// A quarter of 1,000 partitions, as one of kbench raw's four connections sends them.
		{1, 250, []int{4}, 1024, "async"},
		{8, 64, []int{32, 128, 64}, 100, "async"},
		{8, 64, []int{16, 64, 32}, 1024, "async"},
		{8, 64, []int{16, 64, 32}, 1024, "sync"},
	} {
		name := fmt.Sprintf("partitions=%d/batch=%dx%dB", c.partitions, c.records[0], c.valueSize)
		if c.conns > 1 {
			name = fmt.Sprintf("conns=%d/partitions=%d/batch=%vx%dB/flush=%s", c.conns, c.partitions, c.records, c.valueSize, c.flush)
		}
		b.Run(name, func(b *testing.B) {
			srv := newQuietServer(b, func(cfg *Config) { cfg.SegmentBytes, cfg.FlushMode = 128<<20, c.flush })
			tp := dataTopic(b, srv, "t", int32(c.partitions), nil)
			ps := make([]*rawProducer, c.conns)
			for i := range ps {
				ps[i] = newRawProducer(b, srv, tp, c.partitions, c.valueSize, c.records...)
			}
			round := rawRounds(b, ps)
			for range 20 {
				round() // warm-up: the connections, producer state, the first files, the request buffers
			}
			for _, p := range ps {
				checkProduced(b, p.resp)
			}
			var payload int64 // per op: a request of each producer, of the sizes they cycle through
			for _, p := range ps {
				payload += p.payload / int64(len(p.reqs))
			}
			b.SetBytes(payload)
			b.ReportAllocs()
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			cpu0 := processCPU(b)
			for b.Loop() {
				round()
			}
			cpu := processCPU(b) - cpu0
			runtime.ReadMemStats(&after)
			// CPU time (broker and client, user and system) is less
			// sensitive than wall time to a loaded machine.
			b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-µs/op")
			for _, p := range ps {
				checkProduced(b, p.resp)
			}
			b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/1e6/(float64(payload)*float64(b.N)/1e9), "allocMB/GB")
		})
	}
}

// rawProducer is one idempotent producer on its own connection, sending
// prebuilt Produce v13 requests (topic by id, acks=-1) that carry one
// batch for every partition of a topic. Its requests cycle through
// batches of the given record counts, so that request sizes change from
// one to the next as a kgo producer's do; before each send every batch
// gets the next sequence number and its CRC. It reuses its buffers: what
// the process allocates while it runs is the broker's.
type rawProducer struct {
	nc   net.Conn
	reqs []rawProduceRequest
	next int
	seq  int32
	size [4]byte
	// resp is the last response, without its size.
	resp []byte
	// payload is the bytes of batches of one request of each size.
	payload int64
}

// rawProduceRequest is one prebuilt request of a rawProducer.
type rawProduceRequest struct {
	frame []byte
	// at is where each batch starts in frame, batch its length.
	at      []int
	batch   int
	records int
}

// newRawProducer connects to srv, takes a producer id and builds the
// requests, one per record count.
func newRawProducer(tb testing.TB, srv *InProcess, tp topic.Topic, partitions, valueSize int, records ...int) *rawProducer {
	tb.Helper()
	w := dialWire(tb, srv)
	w.nc.SetDeadline(time.Now().Add(10 * time.Minute))
	ipr := w.do(kmsg.NewPtrInitProducerIDRequest()).(*kmsg.InitProducerIDResponse)
	if ipr.ErrorCode != 0 {
		tb.Fatalf("init producer id: error %d", ipr.ErrorCode)
	}
	p := &rawProducer{nc: w.nc, resp: make([]byte, 0, 64<<10)}
	for _, n := range records {
		t := plainBatch(n)
		t.valueSize = valueSize
		t.producerID, t.producerEpoch, t.baseSequence = ipr.ProducerID, ipr.ProducerEpoch, 0
		one := t.encode()
		req := kmsg.NewPtrProduceRequest()
		req.Version, req.Acks, req.TimeoutMillis = 13, -1, 10000
		rt := kmsg.NewProduceRequestTopic()
		rt.TopicID = tp.ID
		for i := range partitions {
			rp := kmsg.NewProduceRequestTopicPartition()
			rp.Partition, rp.Records = int32(i), one
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
		r := rawProduceRequest{frame: kmsg.NewRequestFormatter(kmsg.FormatterClientID("kgo")).AppendRequest(nil, req, 1),
			batch: len(one), records: n}
		for off := 0; len(r.at) < partitions; {
			i := bytes.Index(r.frame[off:], one)
			if i < 0 {
				tb.Fatal("batch not found in the request frame")
			}
			r.at = append(r.at, off+i)
			off += i + len(one)
		}
		p.reqs = append(p.reqs, r)
		p.payload += int64(len(one) * partitions)
	}
	return p
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// roundTrip sends the next request and reads its response.
func (p *rawProducer) roundTrip() error { return p.roundTripPausing(nil) }

// roundTripPausing is roundTrip calling pause, unless nil, when half the
// request is written.
func (p *rawProducer) roundTripPausing(pause func()) error {
	r := &p.reqs[p.next]
	p.next = (p.next + 1) % len(p.reqs)
	for _, i := range r.at {
		bb := r.frame[i : i+r.batch]
		binary.BigEndian.PutUint32(bb[53:], uint32(p.seq))
		binary.BigEndian.PutUint32(bb[17:], crc32.Checksum(bb[21:], castagnoli))
	}
	p.seq += int32(r.records)
	frame := r.frame
	if pause != nil {
		if _, err := p.nc.Write(frame[:len(frame)/2]); err != nil {
			return err
		}
		pause()
		frame = frame[len(frame)/2:]
	}
	if _, err := p.nc.Write(frame); err != nil {
		return err
	}
	if _, err := io.ReadFull(p.nc, p.size[:]); err != nil {
		return err
	}
	n := int(binary.BigEndian.Uint32(p.size[:]))
	if n > cap(p.resp) {
		return fmt.Errorf("response of %d bytes", n)
	}
	p.resp = p.resp[:n]
	_, err := io.ReadFull(p.nc, p.resp)
	return err
}

// rawRounds starts a goroutine per producer and returns a function that
// makes each send one request at once and waits for every response.
func rawRounds(tb testing.TB, ps []*rawProducer) func() {
	tb.Helper()
	if len(ps) == 1 {
		return func() {
			if err := ps[0].roundTrip(); err != nil {
				tb.Fatal(err)
			}
		}
	}
	starts := make([]chan struct{}, len(ps))
	done := make(chan error, len(ps))
	for i, p := range ps {
		starts[i] = make(chan struct{})
		go func() {
			for range starts[i] {
				done <- p.roundTrip()
			}
		}()
	}
	tb.Cleanup(func() {
		for _, s := range starts {
			close(s)
		}
	})
	return func() {
		for _, s := range starts {
			s <- struct{}{}
		}
		var first error
		for range ps {
			if err := <-done; err != nil && first == nil {
				first = err
			}
		}
		if first != nil {
			tb.Fatal(first)
		}
	}
}

// processCPU is the process's user and system time so far.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// newQuietServer is newTestServer logging at Info: a benchmark counts
// allocations, and the per-request Debug lines of the test logger would be
// most of them.
func newQuietServer(b *testing.B, edit func(*Config)) *InProcess {
	b.Helper()
	ip, err := StartInProcess(b.TempDir(), edit, WithLogger(zaptest.NewLogger(b, zaptest.Level(zap.InfoLevel))))
	if err != nil {
		b.Fatalf("start broker: %v", err)
	}
	b.Cleanup(func() {
		if err := ip.Close(); err != nil {
			b.Errorf("close broker: %v", err)
		}
	})
	return ip
}

// checkProduced fails the benchmark unless frame (a produce response
// without its size: correlation id, tags, body) has no partition error.
func checkProduced(b testing.TB, frame []byte) {
	b.Helper()
	resp := kmsg.NewPtrProduceResponse()
	resp.Version = 13
	if err := resp.ReadFrom(frame[5:]); err != nil { // correlation id, empty header tags
		b.Fatal(err)
	}
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if p.ErrorCode != 0 {
				b.Fatalf("partition %d: error %d", p.Partition, p.ErrorCode)
			}
		}
	}
}

// TestProduceAllocations: once warm, the produce path allocates nothing
// per request, in async and in sync flush mode: two producers at once on
// their own connections, to 8 partitions, with requests of 70 KB and of
// 1.4 MB in turn (the large ones through the broker's cache of request
// buffers). testing.AllocsPerRun counts the whole process, the broker's
// background work too (a checkpoint, a new file), so an attempt may see a
// few stray allocations; one per request would show in every attempt, and
// the test passes when one of three sees none.
func TestProduceAllocations(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector's sync.Pool drops pooled objects at random")
	}
	for _, flush := range []string{"async", "sync"} {
		t.Run(flush, func(t *testing.T) {
			srv, err := StartInProcess(t.TempDir(), func(cfg *Config) { cfg.SegmentBytes, cfg.FlushMode = 256<<20, flush },
				WithLogger(zaptest.NewLogger(t, zaptest.Level(zap.InfoLevel))))
			if err != nil {
				t.Fatalf("start broker: %v", err)
			}
			t.Cleanup(func() { srv.Close() })
			tp := dataTopic(t, srv, "t", 8, nil)
			ps := []*rawProducer{
				newRawProducer(t, srv, tp, 8, 1024, 8, 160),
				newRawProducer(t, srv, tp, 8, 1024, 160, 8),
			}
			if small, large := len(ps[0].reqs[0].frame), len(ps[0].reqs[1].frame); small > keptFrame || large <= keptFrame {
				t.Fatalf("requests of %d and %d bytes: want one above keptFrame and one below",
					len(ps[0].reqs[0].frame), len(ps[0].reqs[1].frame))
			}
			round := rawRounds(t, ps)
			for range 10 {
				round()
			}
			var allocs []float64
			for range 3 {
				n := testing.AllocsPerRun(20, round)
				if allocs = append(allocs, n); n == 0 {
					break
				}
			}
			for _, p := range ps {
				checkProduced(t, p.resp)
			}
			if allocs[len(allocs)-1] != 0 {
				t.Fatalf("allocations per round of two produce requests, in three attempts: %v; want 0 in one", allocs)
			}
		})
	}
}

// TestProduceBuffersSettle: once each producer has sent one large request,
// the broker makes no new request buffer when two large requests arrive
// at once, nor for a request of under keptFrame bytes after large ones.
// Large request buffers used to be shared: the first time two connections
// read large requests at once a second buffer was made, which eight
// producers to 64 partitions met long after they had started. And a
// connection whose large requests came from the cache grew its own small
// buffer, in doubling steps, at its first request of a few hundred KB.
func TestProduceBuffersSettle(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates as the broker runs")
	}
	srv, err := StartInProcess(t.TempDir(), func(cfg *Config) { cfg.SegmentBytes = 256 << 20 },
		WithLogger(zaptest.NewLogger(t, zaptest.Level(zap.InfoLevel))))
	if err != nil {
		t.Fatalf("start broker: %v", err)
	}
	t.Cleanup(func() { srv.Close() })
	tp := dataTopic(t, srv, "t", 8, nil)
	a := newRawProducer(t, srv, tp, 8, 1024, 160, 160, 40)
	b := newRawProducer(t, srv, tp, 8, 1024, 160, 160, 40)
	if large, small := len(a.reqs[0].frame), len(a.reqs[2].frame); large <= keptFrame || small > keptFrame || small < 128<<10 {
		t.Fatalf("requests of %d and %d bytes: want one above keptFrame and one between 128 KiB and keptFrame", large, small)
	}
	for _, p := range []*rawProducer{a, b} { // one large request each, one after the other
		if err := p.roundTrip(); err != nil {
			t.Fatal(err)
		}
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	held := srv.cfg.QueuedMaxRequestBytes - int64(len(a.reqs[1].frame)-4) // the budget once a's reader holds its request
	err = a.roundTripPausing(func() {
		// b's large request comes while a's reader holds a buffer for
		// its own: it has taken the request's budget, just before the
		// buffer.
		deadline := time.Now().Add(10 * time.Second)
		for {
			srv.budget.mu.Lock()
			avail := srv.budget.avail
			srv.budget.mu.Unlock()
			if avail <= held {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("a's reader did not start reading its large request")
			}
			time.Sleep(time.Millisecond)
		}
		if err := b.roundTrip(); err != nil {
			t.Fatal(err)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []*rawProducer{a, b} { // a smaller request each
		if err := p.roundTrip(); err != nil {
			t.Fatal(err)
		}
	}
	runtime.ReadMemStats(&after)
	for _, p := range []*rawProducer{a, b} {
		checkProduced(t, p.resp)
	}
	if got := after.TotalAlloc - before.TotalAlloc; got > 256<<10 {
		t.Fatalf("the broker allocated %d bytes for four requests after the first two: want none for their buffers", got)
	}
}
