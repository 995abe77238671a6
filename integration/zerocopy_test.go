package integration

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"io"
	"net"
	"net/http"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/broker"
	"github.com/kbroker/kbroker/internal/testenv"
	"github.com/kbroker/kbroker/protocol"
)

// TestBinaryZeroCopyFetch proves that the kbroker binary serves consumers
// from its commit-log files without the record bytes entering its Go heap:
// about 64 MiB of 64 KiB batches (above the default copy threshold of
// 16 KiB) are produced and then consumed five times from the start by a
// kgo consumer in this process, 320 MiB in all. The broker's /debug/vars
// (--debug-listen) is read before and after, each time right after a
// forced collection (/debug/pprof/heap?gc=1): the heap in use and the heap
// reserved grow by less than 16 MiB, the bytes allocated over the whole
// consumption are a small fraction of the bytes served, nothing goes
// through the pread+write fallback, and sendfile(2) moves at least every
// batch of every pass. It runs with kbroker.log.huge.pages off: with it,
// batches in the last 16 MiB of the file being written go from the mapping
// with writev instead (no heap either; broker's
// TestFetchTailFromHugePageMapping).
func TestBinaryZeroCopyFetch(t *testing.T) {
	t.Parallel()
	const (
		recordsPerBatch = 16
		valueSize       = 4000 // 16 records of 4000 B: batches of 64,205 B
		batches         = 1045 // 67.1 MB, 64.0 MiB
		passes          = 5
		fetchMax        = 16 << 20
	)
	b := startBinary(t, "--debug-listen", "127.0.0.1:0", "--log-format", "json", "--set", "kbroker.log.huge.pages=false")
	debug := awaitDebugAddr(t, b.logs)
	topic := topicName(t)
	created, err := newAdmin(t, b.Addr()).CreateTopic(testCtx(t), 1, 1, nil, topic)
	if err != nil || created.Err != nil {
		t.Fatalf("CreateTopic: %v %v", err, created.Err)
	}
	batch := rawRecordBatch(recordsPerBatch, valueSize, 'z')
	if len(batch) < 64000 || len(batch) > 64<<10 {
		t.Fatalf("batch of %d bytes, want about 64 KiB", len(batch))
	}
	start := time.Now()
	produceRawBatches(t, b.Addr(), topic, batch, batches)
	dataBytes := int64(len(batch)) * batches
	t.Logf("produced %d batches of %d B (%.1f MiB) in %v", batches, len(batch), float64(dataBytes)/(1<<20), time.Since(start).Round(time.Millisecond))

	// The snapshot comes first: the client starts fetching at once.
	before := readDebugVars(t, debug, true)
	start = time.Now()
	r := newRereader(t, b.Addr(), topic, fetchMax)
	var records int64
	for range passes {
		records += r.readAll(t, batches*recordsPerBatch)
	}
	took := time.Since(start)
	after := readDebugVars(t, debug, true)
	fetched := r.hooks.fetchBytes.Load()

	mib := func(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }
	heapGrowth := int64(after.Memstats.HeapAlloc) - int64(before.Memstats.HeapAlloc)
	sysGrowth := int64(after.Memstats.HeapSys) - int64(before.Memstats.HeapSys)
	allocated := int64(after.Memstats.TotalAlloc - before.Memstats.TotalAlloc)
	sent := after.Kbroker.SendfileBytes - before.Kbroker.SendfileBytes
	copied := after.Kbroker.CopiedBytes - before.Kbroker.CopiedBytes
	t.Logf("consumed %d records, %s in %d fetch responses in %v (%.0f MB/s)",
		records, mib(fetched), r.hooks.fetches.Load(), took.Round(time.Millisecond), float64(fetched)/1e6/took.Seconds())
	t.Logf("broker heap after GC: in use %s -> %s (%+d B), reserved (HeapSys) %s -> %s (%+d B)",
		mib(int64(before.Memstats.HeapAlloc)), mib(int64(after.Memstats.HeapAlloc)), heapGrowth,
		mib(int64(before.Memstats.HeapSys)), mib(int64(after.Memstats.HeapSys)), sysGrowth)
	t.Logf("broker allocated %s in %d objects while serving %s (%d GCs)",
		mib(allocated), after.Memstats.Mallocs-before.Memstats.Mallocs, mib(fetched), after.Memstats.NumGC-before.Memstats.NumGC)
	t.Logf("broker counters: sendfile %+d B (%s), fallback %d B, copied %+d B (total copied %d B)",
		sent, mib(sent), after.Kbroker.FallbackBytes, copied, after.Kbroker.CopiedBytes)

	if records != passes*batches*recordsPerBatch {
		t.Errorf("consumed %d records, want %d", records, passes*batches*recordsPerBatch)
	}
	if want := passes * dataBytes; sent < want {
		t.Errorf("sendfile sent %s, want at least %s (every batch of %d passes)", mib(sent), mib(want), passes)
	}
	if after.Kbroker.FallbackBytes != 0 {
		t.Errorf("%d bytes went through the pread+write fallback, want 0", after.Kbroker.FallbackBytes)
	}
	if heapGrowth >= 16<<20 {
		t.Errorf("broker heap in use grew by %s, want less than 16 MiB", mib(heapGrowth))
	}
	if sysGrowth >= 16<<20 {
		t.Errorf("broker heap reserved grew by %s, want less than 16 MiB", mib(sysGrowth))
	}
	// Requests, the responses' framing and ranges, and the /debug/vars
	// and heap profile answers allocate a few MiB. Records read into
	// buffers of their own would allocate at least what was served; records
	// copied through a reused buffer show in the counters above instead.
	if allocated > fetched/8 {
		t.Errorf("broker allocated %s while serving %s: record bytes went through its heap", mib(allocated), mib(fetched))
	}
}

// debugAddrRE finds the debug server's address in kbroker's log (console
// or JSON).
var debugAddrRE = regexp.MustCompile(`admin listening on.*?"addr": ?"([^"]+)"`)

// awaitDebugAddr returns the address of a broker's debug server
// (--debug-listen) from its log. The line is logged before the listening
// line is printed, but stderr and stdout are separate pipes: wait for it
// a little.
func awaitDebugAddr(tb testing.TB, log *lockedBuffer) string {
	tb.Helper()
	var m []string
	testenv.Eventually(tb, 10*time.Second, "an \"admin listening on\" line in the log", func() bool {
		m = debugAddrRE.FindStringSubmatch(log.String())
		return m != nil
	})
	return m[1]
}

// debugVars is what the tests read of kbroker's /debug/vars.
type debugVars struct {
	Kbroker  broker.Stats
	Memstats struct {
		HeapAlloc, HeapSys, TotalAlloc, Mallocs uint64
		NumGC                                   uint32
	}
}

// debugVarsClient keeps no idle connections to the broker's debug server.
var debugVarsClient = &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}

// readDebugVars reads /debug/vars from the debug server at addr. With gc, a
// heap profile with gc=1 is asked for first, which makes the broker run a
// full collection: HeapAlloc is then the live heap.
func readDebugVars(tb testing.TB, addr string, gc bool) debugVars {
	tb.Helper()
	get := func(path string) []byte {
		resp, err := debugVarsClient.Get("http://" + addr + path)
		if err != nil {
			tb.Fatalf("GET %s: %v", path, err)
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil || resp.StatusCode != http.StatusOK {
			tb.Fatalf("GET %s: status %d, %v", path, resp.StatusCode, err)
		}
		return body
	}
	if gc {
		get("/debug/pprof/heap?gc=1")
	}
	var v debugVars
	if err := json.Unmarshal(get("/debug/vars"), &v); err != nil {
		tb.Fatalf("/debug/vars: %v", err)
	}
	return v
}

// rawRecordBatch encodes an uncompressed, non-idempotent batch of n records
// with values of size bytes of fill, timestamped now.
func rawRecordBatch(n, size int, fill byte) []byte {
	now := time.Now().UnixMilli()
	value := []byte(strings.Repeat(string(fill), size))
	var records []byte
	for i := range n {
		r := kmsg.Record{OffsetDelta: int32(i), Value: value}
		r.Length = int32(len(r.AppendTo(nil)) - 1) // Length 0 took one byte
		records = r.AppendTo(records)
	}
	rb := kmsg.RecordBatch{
		Magic: 2, FirstTimestamp: now, MaxTimestamp: now, ProducerID: -1, ProducerEpoch: -1, FirstSequence: -1,
		LastOffsetDelta: int32(n - 1), NumRecords: int32(n), Records: records,
	}
	b := rb.AppendTo(nil)
	binary.BigEndian.PutUint32(b[8:], uint32(len(b)-12))
	binary.BigEndian.PutUint32(b[17:], crc32.Checksum(b[21:], crc32.MakeTable(crc32.Castagnoli)))
	return b
}

// produceRawBatches appends count copies of batch to partition 0 of topic:
// one Produce request (v9, acks=1) per batch, pipelined on one connection
// with up to 64 unanswered, every answer checked. Much faster than a
// client for many tiny batches, and the batches are exactly what the
// caller made.
func produceRawBatches(tb testing.TB, addr, topic string, batch []byte, count int) {
	tb.Helper()
	nc, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		tb.Fatal(err)
	}
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(5 * time.Minute))

	req := kmsg.NewPtrProduceRequest()
	req.Version, req.Acks, req.TimeoutMillis = 9, 1, 30000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Records = batch
	rt.Partitions = []kmsg.ProduceRequestTopicPartition{rp}
	req.Topics = []kmsg.ProduceRequestTopic{rt}
	// The body is the same for every request: encode it once.
	body := req.AppendTo(nil)

	window := make(chan struct{}, 64)
	werr := make(chan error, 1)
	done := make(chan struct{}) // the reader gave up
	defer close(done)
	go func() {
		bw := bufio.NewWriterSize(nc, 256<<10)
		var frame []byte
		for i := range count {
			select {
			case window <- struct{}{}:
			case <-done:
				werr <- nil
				return
			}
			frame = appendRequestHeader(frame[:0], 0, 9, int32(i), len(body))
			if _, err := bw.Write(frame); err != nil {
				werr <- err
				return
			}
			if _, err := bw.Write(body); err != nil {
				werr <- err
				return
			}
			if len(window) == cap(window) || i == count-1 {
				if err := bw.Flush(); err != nil {
					werr <- err
					return
				}
			}
		}
		werr <- bw.Flush()
	}()

	br := bufio.NewReaderSize(nc, 64<<10)
	var buf []byte
	for i := range count {
		n, err := protocol.ReadSize(br, 1<<20)
		if err == nil {
			buf, err = protocol.ReadBody(br, n, buf[:0])
		}
		if err != nil {
			tb.Fatalf("produce response %d of %d: %v", i, count, err)
		}
		<-window
		// Response header v1: correlation id, then empty tagged fields.
		if len(buf) < 5 || int32(binary.BigEndian.Uint32(buf)) != int32(i) || buf[4] != 0 {
			tb.Fatalf("produce response %d: bad header % x", i, buf[:min(len(buf), 5)])
		}
		resp := kmsg.NewPtrProduceResponse()
		resp.Version = 9
		if err := resp.ReadFrom(buf[5:]); err != nil {
			tb.Fatalf("produce response %d: %v", i, err)
		}
		for _, t := range resp.Topics {
			for _, p := range t.Partitions {
				if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
					tb.Fatalf("produce %d to %s-%d: %v", i, t.Topic, p.Partition, err)
				}
			}
		}
	}
	if err := <-werr; err != nil {
		tb.Fatalf("writing produce requests: %v", err)
	}
}

// appendRequestHeader appends the size and a v2 request header (flexible
// versions: client id, then empty tagged fields) for a body of bodyLen
// bytes.
func appendRequestHeader(dst []byte, key, version int16, corr int32, bodyLen int) []byte {
	const clientID = "kbroker-test"
	size := 2 + 2 + 4 + 2 + len(clientID) + 1 + bodyLen
	dst = binary.BigEndian.AppendUint32(dst, uint32(size))
	dst = binary.BigEndian.AppendUint16(dst, uint16(key))
	dst = binary.BigEndian.AppendUint16(dst, uint16(version))
	dst = binary.BigEndian.AppendUint32(dst, uint32(corr))
	dst = binary.BigEndian.AppendUint16(dst, uint16(len(clientID)))
	dst = append(dst, clientID...)
	return append(dst, 0)
}

// rereader is a kgo consumer (no group) that reads partition 0 of a topic
// from the start again and again: one client, as a consumer catching up on
// a backlog (kgo may reconnect when a rewind cancels a fetch in flight).
type rereader struct {
	cl    *kgo.Client
	topic string
	hooks rereaderHooks
	reads int
}

// newRereader returns a rereader for topic at addr that fetches up to
// fetchMax bytes at a time, closed at cleanup. Its fetches wait at most
// 10 ms at the end of the partition (kgo's minimum), so that the fetch
// that parks there when a pass ends holds the next one up only briefly.
func newRereader(tb testing.TB, addr, topic string, fetchMax int32) *rereader {
	tb.Helper()
	r := &rereader{topic: topic}
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(addr),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().At(0)}}),
		kgo.FetchMaxBytes(fetchMax),
		kgo.FetchMaxPartitionBytes(fetchMax),
		kgo.FetchMaxWait(10*time.Millisecond),
		kgo.WithHooks(&r.hooks),
	)
	if err != nil {
		tb.Fatal(err)
	}
	r.cl = cl
	tb.Cleanup(cl.Close)
	return r
}

// readAll reads the partition from offset 0 up to end, checking that the
// offsets are dense, and returns the number of records; it fails the test
// after 2 minutes.
func (r *rereader) readAll(tb testing.TB, end int64) int64 {
	tb.Helper()
	if r.reads > 0 {
		r.cl.SetOffsets(map[string]map[int32]kgo.EpochOffset{r.topic: {0: {Epoch: -1, Offset: 0}}})
	}
	r.reads++
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	next := int64(0)
	for next < end {
		fs := r.cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			tb.Fatalf("consumed %s-0 up to offset %d of %d: %v", r.topic, next, end, err)
		}
		if errs := fs.Errors(); len(errs) > 0 {
			tb.Fatalf("fetch %s-%d: %v", errs[0].Topic, errs[0].Partition, errs[0].Err)
		}
		fs.EachPartition(func(fp kgo.FetchTopicPartition) {
			for _, rec := range fp.Records {
				if rec.Offset != next {
					tb.Fatalf("offset %d after %d", rec.Offset, next-1)
				}
				next++
			}
		})
	}
	return next
}

// rereaderHooks count what the client read, from its own goroutines.
type rereaderHooks struct {
	batches    atomic.Int64 // record batches decoded
	fetchBytes atomic.Int64 // bytes of Fetch responses
	fetches    atomic.Int64 // Fetch responses
	dials      atomic.Int64 // connections opened
}

func (h *rereaderHooks) OnBrokerConnect(_ kgo.BrokerMetadata, _ time.Duration, _ net.Conn, err error) {
	if err == nil {
		h.dials.Add(1)
	}
}

func (h *rereaderHooks) OnBrokerRead(_ kgo.BrokerMetadata, key int16, n int, _, _ time.Duration, err error) {
	if key == int16(kmsg.Fetch) && err == nil {
		h.fetchBytes.Add(int64(n))
		h.fetches.Add(1)
	}
}

func (h *rereaderHooks) OnFetchBatchRead(kgo.BrokerMetadata, string, int32, kgo.FetchBatchMetrics) {
	h.batches.Add(1)
}
