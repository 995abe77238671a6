package main

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The raw workload (--only raw) produces without a Kafka client, so that
// the broker, not the client, is what limits the rate: kgo spends 3–9
// CPU-s/GB encoding small records and drops to a quarter of its rate when
// it spreads them over 1,000 partitions (docs/BENCHMARKS.md, "Produce to
// many partitions"), and the floor broker drops with it.
//
// Each of --raw-conns connections sends Produce requests built once, over
// and over: acks=all, non-idempotent batches (no producer id, no
// sequence), which a broker may store any number of times, with correct
// CRCs and offset deltas 0..n-1. Connection c carries the partitions p
// with p mod conns = c. By default it sends one request with a batch for
// each of its partitions, the records of a request (about
// --raw-request-kb of values) spread evenly over them, so 1 partition gets
// one batch of ~1,000 1 KiB records and 1,000 partitions on 4 connections
// get batches of 4. With --raw-batch-kb a batch holds that many KiB of
// values instead (16 is the Java producer's default batch.size), a
// request as many batches as --raw-request-kb holds, and the connection's
// requests take its partitions in turn, as a producer with a full buffer
// sends them. Up to --raw-inflight requests are outstanding per
// connection. The client's work per request is one write and reading and
// checking the response (every partition's error code), so its CPU per GB
// stays far below the broker's.
//
// After the run the topic's end offsets must add up to the records sent
// (brokers that answer ListOffsets): a broker that dropped or refused
// batches cannot look fast.
type rawCase struct {
	size, partitions int
}

func (c rawCase) name() string {
	return fmt.Sprintf("raw, %s × %d partition%s", sizeName(c.size), c.partitions, plural(c.partitions))
}

func (c rawCase) topic(tag string) string {
	return fmt.Sprintf("raw-%d-%d-%s", c.size, c.partitions, tag)
}

// rawCases: issue 15 item 4 compares 1 KiB records over 1,000 partitions
// with one partition; the 100 B rows show the per-record cost; 8 and 64
// partitions are issue 18's produce cases, where one kgo producer of 100 B
// records limits every broker (floor-write included) and so hides how
// they compare.
var rawCases = []rawCase{
	{1024, 1}, {1024, 8}, {1024, 64}, {1024, 1000},
	{100, 1}, {100, 8}, {100, 64}, {100, 1000},
}

// rawOptions are the raw workload's flags.
type rawOptions struct {
	conns, inflight, requestKB int
	// batchKB, when above 0, is the KiB of values per batch; 0 spreads
	// the values of a request evenly over all of a connection's
	// partitions.
	batchKB int
}

// rawProduceVersion is v11: topics by name (v13 names them by id), the
// flexible encoding, and within every broker kbench starts, floors
// included.
const rawProduceVersion = 11

// runRawProduce produces volume bytes of record values to a new topic
// with prebuilt requests and reports what runProduce reports.
func runRawProduce(ctx context.Context, bp *brokerProc, c rawCase, topic string, volume int64, o rawOptions, lw *latencyFile) (metrics, error) {
	if err := createTopic(ctx, bp.addr, topic, c.partitions); err != nil {
		return nil, err
	}
	conns := min(o.conns, c.partitions)
	value := randomValue(c.size)
	var gens []*rawConn
	defer func() {
		for _, g := range gens {
			g.conn.Close()
		}
	}()
	var recordsPerReq float64 // the mean over every connection's requests
	for i := range conns {
		var parts []int32
		for p := i; p < c.partitions; p += conns {
			parts = append(parts, int32(p))
		}
		reqs, recs := buildRawRequests(topic, parts, value, max(1, o.requestKB*1024/c.size), o.batchKB*1024/c.size)
		conn, err := net.Dial("tcp", bp.addr)
		if err != nil {
			return nil, err
		}
		gens = append(gens, &rawConn{conn: conn, reqs: reqs, records: recs, inflight: o.inflight})
		var sum int64
		for _, r := range recs {
			sum += r
		}
		recordsPerReq += float64(sum) / float64(len(recs)) / float64(conns)
	}
	rtt := &latencies{log: lw.writer()}
	// Bytes of values per request; runRawConns counts requests over all
	// connections, so volume/perReq of them carry volume bytes.
	perReq := max(int64(recordsPerReq*float64(c.size)), 1)
	// Warm-up: buffers and files of the broker at their steady size, and
	// every partition written (its first batch creates its files).
	warm := max(int64(len(gens)*o.inflight*2), min(volume/8, 64e6)/perReq)
	for _, g := range gens {
		warm = max(warm, int64(len(g.reqs)*len(gens)))
	}
	if _, err := runRawConns(ctx, gens, warm, nil); err != nil {
		return nil, err
	}
	n := max(volume/perReq, 1)
	m := startMeasure(bp)
	rtt.start()
	records, err := runRawConns(ctx, gens, n, rtt)
	if err != nil {
		return nil, err
	}
	payload := records * int64(c.size)
	out := m.finish(payload)
	out.setRate(records, payload)
	lat := rtt.stop()
	out["ack_p50"], out["ack_p99"] = ms(percentile(lat, 50)), ms(percentile(lat, 99))
	if !strings.HasPrefix(bp.spec.name, "floor") {
		var sent int64
		for _, g := range gens {
			sent += g.acked.Load()
		}
		if err := checkEndOffsets(ctx, bp.addr, topic, sent); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// rawConn is one connection of the raw workload and its prebuilt
// requests, sent in turn.
type rawConn struct {
	conn     net.Conn
	reqs     [][]byte // whole requests, size prefix included
	records  []int64  // the records of each request
	inflight int
	// next is the request sent next and corr the last correlation id
	// sent, carried from one run to the next.
	next  int
	corr  uint32
	acked atomic.Int64 // records acknowledged, over the whole case
}

// runRawConns sends requests requests spread over the connections (each
// its share, all at once) and returns the records acknowledged; rtt, if
// set, gets every request's round trip.
func runRawConns(ctx context.Context, gens []*rawConn, requests int64, rtt *latencies) (int64, error) {
	return sumEach(gens, func(i int, g *rawConn) (int64, error) {
		share := requests / int64(len(gens))
		if int64(i) < requests%int64(len(gens)) {
			share++
		}
		return g.run(ctx, share, rtt)
	})
}

// sumEach runs f on every connection at once and returns the sum of the
// counts they return and their errors, joined.
func sumEach[T any](conns []T, f func(int, T) (int64, error)) (int64, error) {
	var (
		wg     sync.WaitGroup
		counts = make([]int64, len(conns))
		errs   = make([]error, len(conns))
	)
	for i, c := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			counts[i], errs[i] = f(i, c)
		}()
	}
	wg.Wait()
	var n int64
	for _, c := range counts {
		n += c
	}
	return n, errors.Join(errs...)
}

// run sends n requests on the connection with up to inflight outstanding,
// checks every response and returns the records acknowledged.
func (g *rawConn) run(ctx context.Context, n int64, rtt *latencies) (int64, error) {
	if n == 0 {
		return 0, nil
	}
	stop := context.AfterFunc(ctx, func() { g.conn.SetDeadline(time.Now()) })
	defer stop()
	sentAt := make(chan time.Time, g.inflight)
	writeErr := make(chan error, 1)
	done := make(chan struct{})
	defer close(done) // a reader that gives up releases the writer
	startCorr, startReq := g.corr, g.next
	// The next run goes on from here (a failed one leaves the connection
	// out of step, and the case fails with it).
	g.corr, g.next = startCorr+uint32(n), (startReq+int(n%int64(len(g.reqs))))%len(g.reqs)
	go func() {
		defer close(sentAt)
		corr, k := startCorr, startReq
		for range n {
			select {
			case sentAt <- time.Now():
			case <-done:
				return
			}
			corr++
			req := g.reqs[k]
			k = (k + 1) % len(g.reqs)
			binary.BigEndian.PutUint32(req[8:], corr) // the broker echoes it; the reader checks the order
			if _, err := g.conn.Write(req); err != nil {
				writeErr <- err
				return
			}
		}
	}()
	r := bufio.NewReaderSize(g.conn, 64<<10)
	var (
		buf   []byte
		resp  kmsg.ProduceResponse
		acked int64
	)
	resp.Version = rawProduceVersion
	want, k := startCorr+1, startReq
	for t := range sentAt {
		var size [4]byte
		if _, err := io.ReadFull(r, size[:]); err != nil {
			return acked, g.fail(writeErr, fmt.Errorf("read response: %w", err))
		}
		l := int(binary.BigEndian.Uint32(size[:]))
		if l < 5 || l > 64<<20 {
			return acked, fmt.Errorf("response of %d bytes", l)
		}
		if cap(buf) < l {
			buf = make([]byte, l)
		}
		buf = buf[:l]
		if _, err := io.ReadFull(r, buf); err != nil {
			return acked, g.fail(writeErr, fmt.Errorf("read response: %w", err))
		}
		if rtt != nil {
			rtt.add(time.Since(t))
		}
		if corr := binary.BigEndian.Uint32(buf); corr != want {
			return acked, fmt.Errorf("response to request %d, want %d", corr, want)
		}
		want++
		// Correlation id, then the flexible response header's empty tag
		// section, then the body.
		if err := resp.ReadFrom(buf[5:]); err != nil {
			return acked, fmt.Errorf("decode produce response: %w", err)
		}
		for _, tp := range resp.Topics {
			for _, pp := range tp.Partitions {
				if err := kerr.ErrorForCode(pp.ErrorCode); err != nil {
					return acked, fmt.Errorf("produce %s[%d]: %w", tp.Topic, pp.Partition, err)
				}
			}
		}
		acked += g.records[k]
		g.acked.Add(g.records[k])
		k = (k + 1) % len(g.reqs)
	}
	select {
	case err := <-writeErr:
		return acked, fmt.Errorf("write request: %w", err)
	default:
		return acked, nil
	}
}

// fail prefers the writer's error, the cause, to the reader's.
func (g *rawConn) fail(writeErr chan error, err error) error {
	select {
	case werr := <-writeErr:
		return fmt.Errorf("write request: %w", werr)
	default:
		return err
	}
}

// maxRawBatchBytes bounds a raw batch: kgo's largest batch
// (ProducerBatchMaxBytes, 1,000,012 bytes), within every broker's default
// max.message.bytes.
const maxRawBatchBytes = 1_000_000

// buildRawRequests encodes the Produce requests (v11, acks=all, 30 s
// timeout) that carry batches of value to partitions of topic, about
// perRequest records a request, and returns them with their size prefixes
// and their numbers of records. With perBatch 0, one request has a batch
// for every partition, the records spread evenly (at least one a batch);
// otherwise the batches hold perBatch records, perRequest/perBatch of
// them (at least one) in a request, and the requests take the partitions
// in order.
func buildRawRequests(topic string, partitions []int32, value []byte, perRequest, perBatch int) ([][]byte, []int64) {
	limit := (maxRawBatchBytes - 61) / (len(value) + 16)
	if perBatch <= 0 {
		req, recs := buildRawRequest(topic, partitions, value, max(1, min(perRequest/len(partitions), limit)))
		return [][]byte{req}, []int64{recs}
	}
	perBatch = min(perBatch, limit)
	per := max(1, perRequest/perBatch) // partitions a request
	var (
		reqs [][]byte
		recs []int64
	)
	for from := 0; from < len(partitions); from += per {
		req, n := buildRawRequest(topic, partitions[from:min(from+per, len(partitions))], value, perBatch)
		reqs, recs = append(reqs, req), append(recs, n)
	}
	return reqs, recs
}

// buildRawRequest encodes one Produce request to topic's partitions, each
// with one batch of perBatch records of value, and returns it with its
// size prefix and its number of records.
func buildRawRequest(topic string, partitions []int32, value []byte, perBatch int) ([]byte, int64) {
	b := rawBatch(value, perBatch)
	req := kmsg.NewPtrProduceRequest()
	req.Version = rawProduceVersion
	req.Acks = -1
	req.TimeoutMillis = 30000
	t := kmsg.NewProduceRequestTopic()
	t.Topic = topic
	for _, p := range partitions {
		pp := kmsg.NewProduceRequestTopicPartition()
		pp.Partition = p
		pp.Records = b
		t.Partitions = append(t.Partitions, pp)
	}
	req.Topics = append(req.Topics, t)
	out := kmsg.NewRequestFormatter(kmsg.FormatterClientID("kbench-raw")).AppendRequest(nil, req, 0)
	return out, int64(perBatch * len(partitions))
}

// rawBatch is a v2 record batch of n records of value: no key, no
// headers, CreateTime now, no producer id, uncompressed, CRC-32C set.
func rawBatch(value []byte, n int) []byte {
	now := time.Now().UnixMilli()
	b := make([]byte, 61, 61+n*(len(value)+16))
	binary.BigEndian.PutUint64(b[0:], 0)           // base offset
	binary.BigEndian.PutUint32(b[12:], 0xffffffff) // partition leader epoch -1
	b[16] = 2                                      // magic
	binary.BigEndian.PutUint16(b[21:], 0)          // attributes
	binary.BigEndian.PutUint32(b[23:], uint32(n-1))
	binary.BigEndian.PutUint64(b[27:], uint64(now))
	binary.BigEndian.PutUint64(b[35:], uint64(now))
	binary.BigEndian.PutUint64(b[43:], 0xffffffffffffffff) // producer id -1
	binary.BigEndian.PutUint16(b[51:], 0xffff)             // producer epoch -1
	binary.BigEndian.PutUint32(b[53:], 0xffffffff)         // base sequence -1
	binary.BigEndian.PutUint32(b[57:], uint32(n))
	var body []byte
	for i := range n { // a record's framing above its value is under 16 bytes
		body = body[:0]
		body = append(body, 0)              // attributes
		body = binary.AppendVarint(body, 0) // timestamp delta
		body = binary.AppendVarint(body, int64(i))
		body = binary.AppendVarint(body, -1) // null key
		body = binary.AppendVarint(body, int64(len(value)))
		body = append(body, value...)
		body = binary.AppendVarint(body, 0) // no headers
		b = binary.AppendVarint(b, int64(len(body)))
		b = append(b, body...)
	}
	binary.BigEndian.PutUint32(b[8:], uint32(len(b)-12))
	binary.BigEndian.PutUint32(b[17:], crc32.Checksum(b[21:], crc32.MakeTable(crc32.Castagnoli)))
	return b
}

// checkEndOffsets fails unless the end offsets of topic's partitions add
// up to want.
func checkEndOffsets(ctx context.Context, addr, topic string, want int64) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	ends, err := kadm.NewClient(cl).ListEndOffsets(ctx, topic)
	if err != nil {
		return fmt.Errorf("end offsets of %s: %w", topic, err)
	}
	if err := ends.Error(); err != nil {
		return fmt.Errorf("end offsets of %s: %w", topic, err)
	}
	var got int64
	ends.Each(func(o kadm.ListedOffset) { got += o.Offset })
	if got != want {
		return fmt.Errorf("%s holds %d records, %d were acknowledged", topic, got, want)
	}
	return nil
}

// rawCases runs the raw cases that match on each broker of the round.
func (b *bench) rawCases(ctx context.Context, order []*brokerProc, tag string, round int, match func(string) bool) error {
	for _, rc := range rawCases {
		if !match(rc.name()) {
			continue
		}
		for _, bp := range order {
			m, err := b.measureLogged(bp, "raw", rc.name(), round, func(lw *latencyFile) (metrics, error) {
				return runRawProduce(ctx, bp, rc, rc.topic(tag), b.o.produceMB*1e6, b.o.raw, lw)
			})
			if err != nil {
				return err
			}
			b.record("raw", rc.name(), bp, round, m, "records_s", "mb_s", "ack_p99", "broker_cpu", "client_cpu")
		}
	}
	return nil
}
