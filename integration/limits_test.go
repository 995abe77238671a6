package integration

// Resource limits of the broker binary: 2,000 connections at once, most of
// them claiming 100 MiB frames they never finish (the request budget,
// queued.max.request.bytes, must hold, and memory must stay bounded); a
// client that sends requests and never reads the answers (the in-flight
// limit must stop the broker reading from it); and max.connections and
// max.connections.per.ip.

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/internal/testenv"
)

// needFDs raises this process's RLIMIT_NOFILE soft limit to at least n
// (the broker it starts inherits the hard limit and raises its own soft
// limit, as every Go program does), or skips the test if the hard limit is
// lower.
func needFDs(t *testing.T, n uint64) {
	t.Helper()
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		t.Skipf("cannot read RLIMIT_NOFILE: %v", err)
	}
	if rl.Cur >= n {
		return
	}
	if rl.Max < n {
		t.Skipf("needs %d file descriptors, the hard limit RLIMIT_NOFILE is %d (raise it, e.g. ulimit -Hn %d)", n, rl.Max, n)
	}
	rl.Cur = rl.Max
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		t.Skipf("cannot raise RLIMIT_NOFILE to %d: %v", n, err)
	}
}

// claimFrameHeader is the start of a Produce request frame whose size prefix
// claims size bytes.
func claimFrameHeader(size int32) []byte {
	b := binary.BigEndian.AppendUint32(nil, uint32(size))
	b = binary.BigEndian.AppendUint16(b, 0) // Produce
	b = binary.BigEndian.AppendUint16(b, 9)
	b = binary.BigEndian.AppendUint32(b, 1)
	b = binary.BigEndian.AppendUint16(b, 4)
	return append(b, "slow"...)
}

// apiVersionsRoundTrip sends an ApiVersions request on nc and reads the answer.
func apiVersionsRoundTrip(nc net.Conn, br *bufio.Reader, corr int32) error {
	nc.SetDeadline(time.Now().Add(20 * time.Second))
	body := hostileFrameOf(kmsg.NewPtrApiVersionsRequest(), 3, corr, "active")
	if _, err := nc.Write(append(binary.BigEndian.AppendUint32(nil, uint32(len(body))), body...)); err != nil {
		return err
	}
	var hdr [4]byte
	if _, err := io.ReadFull(br, hdr[:]); err != nil {
		return err
	}
	_, err := io.CopyN(io.Discard, br, int64(binary.BigEndian.Uint32(hdr[:])))
	return err
}

// TestLimits2000Connections: 2,000 connections to the binary at once, with
// the default socket.request.max.bytes (100 MiB) and
// queued.max.request.bytes (256 MiB). 1,400 send a frame header claiming
// 100 MiB: half trickle 512 KiB of it, 64 KiB every 20 ms, half stall
// right after the header. 400 are idle, 200 make a request every 200 ms.
// Meanwhile a kgo client produces and consumes. The broker must keep every
// connection, answer the active ones and the kgo client, and its memory
// must stay bounded: the budget lets two of the 100 MiB frames be read at a
// time (what the other 698 trickle waits in socket buffers; without the
// budget the broker would read it all: 350 MiB, in buffers that double as
// they grow), and a frame's buffer grows only with the bytes that arrive,
// so the claims (140 GB in all) cost nothing; what 2,000 connections cost
// is their goroutines and buffers. The peak is reported.
func TestLimits2000Connections(t *testing.T) {
	t.Parallel()
	needProc(t)
	const (
		conns    = 2000
		claimers = 1400
		idle     = 400
	)
	needFDs(t, conns+512)
	b := startBinary(t)
	pid := b.cmd.Process.Pid
	start, err := readProcMem(pid)
	if err != nil {
		t.Fatal(err)
	}
	mem := startMemSampler(pid)
	began := time.Now()

	// Connect all 2,000, 32 at a time.
	ncs := make([]net.Conn, conns)
	var dialErrs atomic.Int64
	var wg sync.WaitGroup
	sem := make(chan struct{}, 32)
	for i := range ncs {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			nc, err := net.DialTimeout("tcp", b.Addr(), 10*time.Second)
			if err != nil {
				dialErrs.Add(1)
				return
			}
			ncs[i] = nc
		}()
	}
	wg.Wait()
	defer func() {
		for _, nc := range ncs {
			if nc != nil {
				nc.Close()
			}
		}
	}()
	if n := dialErrs.Load(); n > 0 {
		t.Fatalf("%d of %d connections could not be made", n, conns)
	}
	connected := time.Since(began)

	// Claimers, idle and active connections until stop.
	stop := make(chan struct{})
	var trickled, stalled, answers atomic.Int64
	errs := make(chan error, conns)
	for i, nc := range ncs {
		switch {
		case i < claimers:
			wg.Add(1)
			go func() {
				defer wg.Done()
				nc.SetWriteDeadline(time.Now().Add(time.Minute))
				if _, err := nc.Write(claimFrameHeader(100 << 20)); err != nil {
					errs <- fmt.Errorf("claimer %d: header: %w", i, err)
					return
				}
				if i%2 == 1 {
					return // stalls
				}
				// Trickle up to 512 KiB: what the broker does not read
				// waits in the socket buffers.
				chunk := make([]byte, 64<<10)
				for range 8 {
					select {
					case <-stop:
						return
					case <-time.After(20 * time.Millisecond):
					}
					nc.SetWriteDeadline(time.Now().Add(time.Second))
					n, err := nc.Write(chunk)
					trickled.Add(int64(n))
					if errors.Is(err, os.ErrDeadlineExceeded) {
						stalled.Add(1)
						return
					}
					if err != nil {
						errs <- fmt.Errorf("claimer %d: trickle: %w", i, err)
						return
					}
				}
			}()
		case i < claimers+idle:
		default:
			wg.Add(1)
			go func() {
				defer wg.Done()
				br := bufio.NewReader(nc)
				for corr := int32(0); ; corr++ {
					if err := apiVersionsRoundTrip(nc, br, corr); err != nil {
						errs <- fmt.Errorf("active connection %d: %w", i, err)
						return
					}
					answers.Add(1)
					select {
					case <-stop:
						return
					case <-time.After(200 * time.Millisecond):
					}
				}
			}()
		}
	}

	// A well-behaved client works meanwhile.
	topic := topicName(t)
	produceKgo(t, b.Addr(), topic, 500, nil, kgo.AllowAutoTopicCreation())
	consumed := consumePartition0(t, b.Addr(), topic, 500)
	time.Sleep(3 * time.Second) // let the claimers trickle
	close(stop)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}

	// Every idle connection is still open: a read times out rather than
	// seeing the broker close it.
	closed := 0
	for _, nc := range ncs[claimers : claimers+idle] {
		nc.SetReadDeadline(time.Now().Add(5 * time.Millisecond))
		if _, err := nc.Read(make([]byte, 1)); !errors.Is(err, os.ErrDeadlineExceeded) {
			closed++
		}
	}
	if closed > 0 {
		t.Errorf("%d of %d idle connections were closed by the broker", closed, idle)
	}
	last, peakAnon := mem.finish()
	// Two frames read at a time, 1 MiB each at most (512 KiB trickled,
	// the buffer doubling), 128 KiB per connection for its goroutines
	// and buffers, 128 MiB for the rest; three times that under -race.
	bound := start.Anon + 2<<20 + conns*128<<10 + 128<<20
	if raceEnabled {
		bound = start.Anon + 3*(2<<20+conns*128<<10+128<<20)
	}
	t.Logf("%d connections in %v (%d claiming 100 MiB frames, %s trickled into them, %d of %d tricklers stalled on full socket buffers; %d idle; %d active, %d answers); kgo: 500 records produced and %d consumed meanwhile",
		conns, connected.Round(time.Millisecond), claimers, fmtMiB(trickled.Load()), stalled.Load(), claimers/2, idle, conns-claimers-idle, answers.Load(), consumed)
	t.Logf("broker memory with %d connections: peak VmHWM %s, peak anon %s (bound %s); at start %v; at the end %v",
		conns, fmtMiB(last.HWM), fmtMiB(peakAnon), fmtMiB(bound), start, last)
	if peakAnon > bound {
		t.Errorf("anonymous memory peaked at %s with %d connections, above the bound of %s", fmtMiB(peakAnon), conns, fmtMiB(bound))
	}
	if p := brokerLogProblems(b.logs.String()); len(p) > 0 {
		t.Errorf("the broker logged %d problem lines, the first:\n%s", len(p), strings.Join(p[:min(len(p), 20)], "\n"))
	}
}

// consumePartition0 reads n records of topic's partition 0 from the start.
func consumePartition0(t *testing.T, addr, topic string, n int) int {
	t.Helper()
	cl := newKgo(t, addr, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}), kgo.FetchMaxWait(100*time.Millisecond))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	got := 0
	for got < n {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consumed %d of %d records of %s within 60 s", got, n, topic)
		}
		fs.EachError(func(_ string, _ int32, err error) { t.Fatalf("consume %s: %v", topic, err) })
		got += fs.NumRecords()
	}
	return got
}

// TestLimitsNonReadingClient: a client that pipelines fetch requests for
// megabytes of data, and DescribeConfigs requests with documentation,
// and never reads an answer. The broker queues at most
// kbroker.max.inflight.requests.per.connection (128) answers, then stops
// reading the connection, so the client's writes stall; the broker's
// memory does not grow with what the client sends, and other clients are
// served meanwhile.
func TestLimitsNonReadingClient(t *testing.T) {
	t.Parallel()
	needProc(t)
	b := startBinary(t)
	topic := topicName(t)
	// 16 MiB in the topic, in 64 KiB records.
	cl := newKgo(t, b.Addr(), kgo.DefaultProduceTopic(topic), kgo.AllowAutoTopicCreation(), kgo.ProducerBatchMaxBytes(1<<20))
	var recs []*kgo.Record
	for i := range 256 {
		recs = append(recs, &kgo.Record{Key: fmt.Appendf(nil, "%d", i), Value: make([]byte, 64<<10)})
	}
	if err := cl.ProduceSync(testCtx(t), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	pid := b.cmd.Process.Pid
	start, err := readProcMem(pid)
	if err != nil {
		t.Fatal(err)
	}
	mem := startMemSampler(pid)

	var frames [][]byte
	fetch := kmsg.NewPtrFetchRequest()
	fetch.ReplicaID, fetch.MaxBytes, fetch.MaxWaitMillis = -1, 64<<20, 0
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic = topic
	fp := kmsg.NewFetchRequestTopicPartition()
	fp.PartitionMaxBytes, fp.CurrentLeaderEpoch, fp.LogStartOffset = 32<<20, -1, -1
	ft.Partitions = append(ft.Partitions, fp)
	fetch.Topics = append(fetch.Topics, ft)
	dc := kmsg.NewPtrDescribeConfigsRequest()
	res := kmsg.NewDescribeConfigsRequestResource()
	res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeTopic, topic
	dc.Resources = append(dc.Resources, res)
	dc.IncludeSynonyms, dc.IncludeDocumentation = true, true
	for i, req := range []kmsg.Request{fetch, dc} {
		body := hostileFrameOf(req, []int16{12, 4}[i], int32(i), "no-reader")
		frames = append(frames, append(binary.BigEndian.AppendUint32(nil, uint32(len(body))), body...))
	}

	// Two such clients; each writes until a write stalls for 3 s.
	type result struct {
		sent  int
		bytes int64
		err   error
	}
	results := make(chan result, 2)
	for i := range 2 {
		go func() {
			nc, err := net.Dial("tcp", b.Addr())
			if err != nil {
				results <- result{err: err}
				return
			}
			defer nc.Close()
			var r result
			for {
				f := frames[i]
				nc.SetWriteDeadline(time.Now().Add(3 * time.Second))
				n, err := nc.Write(f)
				r.bytes += int64(n)
				if err != nil {
					if !errors.Is(err, os.ErrDeadlineExceeded) {
						r.err = err
					}
					break
				}
				r.sent++
				if r.sent > 10_000_000 {
					r.err = errors.New("the broker read 10 million requests without an answer being read")
					break
				}
			}
			// Hold the connection a moment with the broker stuck on it.
			time.Sleep(time.Second)
			results <- r
		}()
	}
	// Others are served meanwhile.
	produceKgo(t, b.Addr(), topic+".other", 100, nil, kgo.AllowAutoTopicCreation())
	var sent []result
	for range 2 {
		r := <-results
		if r.err != nil {
			t.Fatalf("non-reading client: %v", r.err)
		}
		sent = append(sent, r)
	}
	last, peakAnon := mem.finish()
	bound := start.Anon + 128<<20
	if raceEnabled {
		bound = start.Anon + 512<<20
	}
	t.Logf("non-reading clients: fetch %d requests (%s) and DescribeConfigs %d requests (%s) sent before the broker stopped reading; broker memory: peak anon %s (bound %s), at start %v, at the end %v",
		sent[0].sent, fmtMiB(sent[0].bytes), sent[1].sent, fmtMiB(sent[1].bytes), fmtMiB(peakAnon), fmtMiB(bound), start, last)
	if peakAnon > bound {
		t.Errorf("anonymous memory peaked at %s with clients that never read, above the bound of %s", fmtMiB(peakAnon), fmtMiB(bound))
	}
}

// TestLimitsMaxConnections: with max.connections=20 and
// max.connections.per.ip=10, the 11th connection from one address and the
// 21st in all are closed right after accept; closing one makes room; a
// kgo client then works.
func TestLimitsMaxConnections(t *testing.T) {
	t.Parallel()
	o := brokerOpts{props: map[string]string{"max.connections": "20", "max.connections.per.ip": "10"}}
	o.check(t)
	b := startBinary(t, o.args(t)...)
	dial := func(ip string) net.Conn {
		t.Helper()
		d := net.Dialer{Timeout: 10 * time.Second, LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}
		nc, err := d.Dial("tcp", b.Addr())
		if err != nil {
			t.Fatalf("dial from %s: %v", ip, err)
		}
		t.Cleanup(func() { nc.Close() })
		return nc
	}
	served := func(nc net.Conn) bool {
		return apiVersionsRoundTrip(nc, bufio.NewReader(nc), 1) == nil
	}
	var first []net.Conn
	for i := range 10 {
		nc := dial("127.0.0.1")
		if !served(nc) {
			t.Fatalf("connection %d from 127.0.0.1 was not served", i+1)
		}
		first = append(first, nc)
	}
	if served(dial("127.0.0.1")) {
		t.Fatal("an 11th connection from 127.0.0.1 was served with max.connections.per.ip=10")
	}
	for i := range 10 {
		if !served(dial("127.0.0.2")) {
			t.Fatalf("connection %d from 127.0.0.2 was not served", i+1)
		}
	}
	if served(dial("127.0.0.3")) {
		t.Fatal("a 21st connection was served with max.connections=20")
	}
	// Closing connections makes room: for one from 127.0.0.3, then for a
	// kgo client (a seed connection, then up to three to the broker for
	// metadata, produce and fetch requests).
	for _, nc := range first[:6] {
		nc.Close()
	}
	testenv.Eventually(t, 10*time.Second, "a connection served after some were closed", func() bool { return served(dial("127.0.0.3")) })
	produceKgo(t, b.Addr(), topicName(t), 20, nil, kgo.AllowAutoTopicCreation())
	if n := strings.Count(b.logs.String(), "refused connection"); n < 2 {
		t.Errorf("the broker logged %d refused connections, want at least 2", n)
	}
}
