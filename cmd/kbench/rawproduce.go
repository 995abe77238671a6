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
// Each of --raw-conns connections sends one Produce request over and over,
// built once: acks=all, non-idempotent batches (no producer id, no
// sequence), which a broker may store any number of times, with correct
// CRCs and offset deltas 0..n-1. Connection c carries the partitions p
// with p mod conns = c, a batch for each in every request; the records of
// a request (about --raw-request-kb of values) are spread evenly over its
// partitions, so 1 partition gets one batch of ~1,000 1 KiB records and
// 1,000 partitions on 4 connections get batches of 4. Up to --raw-inflight
// requests are outstanding per connection. The client's work per request
// is one write and reading and checking the response (every partition's
// error code), so its CPU per GB stays far below the broker's.
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
// with one partition; the 100 B rows show the per-record cost.
var rawCases = []rawCase{{1024, 1}, {1024, 1000}, {100, 1}, {100, 1000}}

// rawOptions are the raw workload's flags.
type rawOptions struct {
	conns, inflight, requestKB int
}

// rawProduceVersion is v11: topics by name (v13 names them by id), the
// flexible encoding, and within every broker kbench starts, floors
// included.
const rawProduceVersion = 11

// runRawProduce produces volume bytes of record values to a new topic
// with prebuilt requests and reports what runProduce reports.
func runRawProduce(ctx context.Context, bp *brokerProc, c rawCase, topic string, volume int64, o rawOptions) (metrics, error) {
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
	for i := range conns {
		var parts []int32
		for p := i; p < c.partitions; p += conns {
			parts = append(parts, int32(p))
		}
		req, recs := buildRawRequest(topic, parts, value, max(1, o.requestKB*1024/c.size))
		conn, err := net.Dial("tcp", bp.addr)
		if err != nil {
			return nil, err
		}
		g := &rawConn{conn: conn, req: req, records: recs, inflight: o.inflight}
		gens = append(gens, g)
	}
	rtt := &latencies{}
	perReq := gens[0].records * int64(c.size) * int64(len(gens))
	// Warm-up: buffers and files of the broker at their steady size.
	warm := max(int64(len(gens)*o.inflight*2), min(volume/8, 64e6)/perReq)
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
			sent += g.sent.Load() * g.records
		}
		if err := checkEndOffsets(ctx, bp.addr, topic, sent); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// rawConn is one connection of the raw workload and its prebuilt request.
type rawConn struct {
	conn     net.Conn
	req      []byte // the whole request, size prefix included
	records  int64  // records per request
	inflight int
	sent     atomic.Int64 // requests acknowledged, over the whole case
}

// runRawConns sends requests requests spread over the connections (each
// its share, all at once) and returns the records acknowledged; rtt, if
// set, gets every request's round trip.
func runRawConns(ctx context.Context, gens []*rawConn, requests int64, rtt *latencies) (int64, error) {
	var (
		wg      sync.WaitGroup
		records atomic.Int64
		errs    = make([]error, len(gens))
	)
	for i, g := range gens {
		share := requests / int64(len(gens))
		if int64(i) < requests%int64(len(gens)) {
			share++
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = g.run(ctx, share, rtt)
			records.Add(share * g.records)
		}()
	}
	wg.Wait()
	return records.Load(), errors.Join(errs...)
}

// run sends n requests on the connection with up to inflight outstanding
// and checks every response.
func (g *rawConn) run(ctx context.Context, n int64, rtt *latencies) error {
	if n == 0 {
		return nil
	}
	stop := context.AfterFunc(ctx, func() { g.conn.SetDeadline(time.Now()) })
	defer stop()
	sentAt := make(chan time.Time, g.inflight)
	writeErr := make(chan error, 1)
	done := make(chan struct{})
	defer close(done) // a reader that gives up releases the writer
	first := binary.BigEndian.Uint32(g.req[8:]) + 1
	go func() {
		defer close(sentAt)
		corr := first - 1
		for range n {
			select {
			case sentAt <- time.Now():
			case <-done:
				return
			}
			corr++
			binary.BigEndian.PutUint32(g.req[8:], corr) // the broker echoes it; the reader checks the order
			if _, err := g.conn.Write(g.req); err != nil {
				writeErr <- err
				return
			}
		}
	}()
	r := bufio.NewReaderSize(g.conn, 64<<10)
	var (
		buf  []byte
		resp kmsg.ProduceResponse
	)
	resp.Version = rawProduceVersion
	for t := range sentAt {
		var size [4]byte
		if _, err := io.ReadFull(r, size[:]); err != nil {
			return g.fail(writeErr, fmt.Errorf("read response: %w", err))
		}
		l := int(binary.BigEndian.Uint32(size[:]))
		if l < 5 || l > 64<<20 {
			return fmt.Errorf("response of %d bytes", l)
		}
		if cap(buf) < l {
			buf = make([]byte, l)
		}
		buf = buf[:l]
		if _, err := io.ReadFull(r, buf); err != nil {
			return g.fail(writeErr, fmt.Errorf("read response: %w", err))
		}
		if rtt != nil {
			rtt.add(time.Since(t))
		}
		if corr := binary.BigEndian.Uint32(buf); corr != first {
			return fmt.Errorf("response to request %d, want %d", corr, first)
		}
		first++
		// Correlation id, then the flexible response header's empty tag
		// section, then the body.
		if err := resp.ReadFrom(buf[5:]); err != nil {
			return fmt.Errorf("decode produce response: %w", err)
		}
		for _, tp := range resp.Topics {
			for _, pp := range tp.Partitions {
				if err := kerr.ErrorForCode(pp.ErrorCode); err != nil {
					return fmt.Errorf("produce %s[%d]: %w", tp.Topic, pp.Partition, err)
				}
			}
		}
		g.sent.Add(1)
	}
	select {
	case err := <-writeErr:
		return fmt.Errorf("write request: %w", err)
	default:
		return nil
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

// buildRawRequest encodes a Produce request (v11, acks=all, 30 s
// timeout) to topic's partitions, each with one batch of perRequest /
// len(partitions) records (at least one) of value, and returns it with
// its size prefix and its number of records.
func buildRawRequest(topic string, partitions []int32, value []byte, perRequest int) ([]byte, int64) {
	// At most kgo's largest batch (ProducerBatchMaxBytes, 1,000,012
	// bytes), within every broker's default max.message.bytes.
	perBatch := max(1, min(perRequest/len(partitions), (1_000_000-61)/(len(value)+16)))
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
			m, err := b.measure(bp, "raw", rc.name(), round, func() (metrics, error) {
				return runRawProduce(ctx, bp, rc, rc.topic(tag), b.o.produceMB*1e6, b.o.raw)
			})
			if err != nil {
				return err
			}
			b.record("raw", rc.name(), bp, round, m, "records_s", "mb_s", "ack_p99", "broker_cpu", "client_cpu")
		}
	}
	return nil
}
