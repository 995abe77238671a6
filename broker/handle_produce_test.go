package broker

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/partition"
	"github.com/kbroker/kbroker/partition/batch"
	"github.com/kbroker/kbroker/protocol"
	"github.com/kbroker/kbroker/topic"
)

// wireConn is a raw Kafka connection for tests that need exact request
// versions, pipelining or acks=0, without a client's metadata and retries.
type wireConn struct {
	t    testing.TB
	nc   net.Conn
	corr int32
	fmt  *kmsg.RequestFormatter
}

func dialWire(t testing.TB, srv *InProcess) *wireConn {
	t.Helper()
	nc, err := net.DialTimeout("tcp", srv.Addr(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	nc.SetDeadline(time.Now().Add(20 * time.Second))
	return &wireConn{t: t, nc: nc, fmt: kmsg.NewRequestFormatter(kmsg.FormatterClientID("wire-test"))}
}

// send writes one request and returns its correlation id.
func (w *wireConn) send(req kmsg.Request) int32 {
	w.t.Helper()
	w.corr++
	if _, err := w.nc.Write(w.fmt.AppendRequest(nil, req, w.corr)); err != nil {
		w.t.Fatalf("send %s: %v", kmsg.NameForKey(req.Key()), err)
	}
	return w.corr
}

// recv reads the next response frame, checks that it answers corr and
// decodes it into resp.
func (w *wireConn) recv(corr int32, resp kmsg.Response) {
	w.t.Helper()
	n, err := protocol.ReadSize(w.nc, 64<<20)
	if err != nil {
		w.t.Fatalf("read response to %d: %v", corr, err)
	}
	b, err := protocol.ReadBody(w.nc, n, nil)
	if err != nil {
		w.t.Fatal(err)
	}
	if got := int32(binary.BigEndian.Uint32(b)); got != corr {
		w.t.Fatalf("got correlation id %d, want %d", got, corr)
	}
	b = b[4:]
	if resp.IsFlexible() && resp.Key() != 18 {
		r := kbin.Reader{Src: b}
		for range r.Uvarint() {
			r.Uvarint()
			r.Span(int(r.Uvarint()))
		}
		b = r.Src
	}
	if err := resp.ReadFrom(b); err != nil {
		w.t.Fatalf("decode %s v%d: %v", kmsg.NameForKey(resp.Key()), resp.GetVersion(), err)
	}
}

// do sends req and returns its response.
func (w *wireConn) do(req kmsg.Request) kmsg.Response {
	w.t.Helper()
	resp := req.ResponseKind()
	w.recv(w.send(req), resp)
	return resp
}

// closed reports whether the broker closed the connection (EOF on read).
func (w *wireConn) closed() bool {
	w.t.Helper()
	_, err := w.nc.Read(make([]byte, 1))
	return errors.Is(err, io.EOF)
}

// dataTopic creates a topic with the given partitions and configs.
func dataTopic(t testing.TB, srv *InProcess, name string, partitions int32, configs map[string]string) topic.Topic {
	t.Helper()
	cfg := map[string]*string{}
	for k, v := range configs {
		cfg[k] = &v
	}
	tp, err := srv.Topics().Create(name, partitions, cfg, false)
	if err != nil {
		t.Fatalf("create topic %s: %v", name, err)
	}
	return tp
}

// testBatch describes a record batch for raw produce requests.
type testBatch struct {
	records       int
	baseTimestamp int64
	producerID    int64
	producerEpoch int16
	baseSequence  int32
	attributes    int16
	valueSize     int
	// badOffsetDeltaAt gives that record a wrong offset delta (≥ 0).
	badOffsetDeltaAt int
	// futureTimestampAt gives that record a timestamp a day ahead (≥ 0).
	futureTimestampAt int
}

func plainBatch(records int) testBatch {
	return testBatch{records: records, baseTimestamp: time.Now().UnixMilli(), producerID: -1, producerEpoch: -1, baseSequence: -1, badOffsetDeltaAt: -1, futureTimestampAt: -1}
}

// encode builds the batch as a producer sends it: base offset 0, leader
// epoch -1, Length and CRC-32C (Castagnoli, over the bytes from Attributes
// on) computed.
func (tb testBatch) encode() []byte {
	var recs []byte
	maxTs := tb.baseTimestamp
	for i := 0; i < tb.records; i++ {
		delta := int64(i)
		if i == tb.futureTimestampAt {
			delta = 24 * 3600 * 1000
		}
		maxTs = max(maxTs, tb.baseTimestamp+delta)
		off := int32(i)
		if i == tb.badOffsetDeltaAt {
			off += 5
		}
		var body []byte
		body = append(body, 0) // attributes
		body = kbin.AppendVarlong(body, delta)
		body = kbin.AppendVarint(body, off)
		key := fmt.Appendf(nil, "k%d", i)
		body = kbin.AppendVarint(body, int32(len(key)))
		body = append(body, key...)
		value := append(fmt.Appendf(nil, "v%d", i), strings.Repeat("x", tb.valueSize)...)
		body = kbin.AppendVarint(body, int32(len(value)))
		body = append(body, value...)
		body = kbin.AppendVarint(body, 1) // one header
		body = kbin.AppendVarint(body, 1)
		body = append(body, 'h')
		body = kbin.AppendVarint(body, 1)
		body = append(body, 'x')
		recs = kbin.AppendVarint(recs, int32(len(body)))
		recs = append(recs, body...)
	}
	rb := kmsg.RecordBatch{
		PartitionLeaderEpoch: -1,
		Magic:                2,
		Attributes:           tb.attributes,
		LastOffsetDelta:      int32(tb.records - 1),
		FirstTimestamp:       tb.baseTimestamp,
		MaxTimestamp:         maxTs,
		ProducerID:           tb.producerID,
		ProducerEpoch:        tb.producerEpoch,
		FirstSequence:        tb.baseSequence,
		NumRecords:           int32(tb.records),
		Records:              recs,
	}
	b := rb.AppendTo(nil)
	binary.BigEndian.PutUint32(b[8:], uint32(len(b)-12))
	binary.BigEndian.PutUint32(b[17:], crc32.Checksum(b[21:], crc32.MakeTable(crc32.Castagnoli)))
	return b
}

// produceReq builds a produce request of one batch to one partition.
func produceReq(version, acks int16, name string, p int32, records []byte) *kmsg.ProduceRequest {
	req := kmsg.NewPtrProduceRequest()
	req.Version, req.Acks, req.TimeoutMillis = version, acks, 10000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = name
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition, rp.Records = p, records
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return req
}

// producePart is the only partition of a produce response.
func producePart(t testing.TB, resp kmsg.Response) kmsg.ProduceResponseTopicPartition {
	t.Helper()
	r := resp.(*kmsg.ProduceResponse)
	if len(r.Topics) != 1 || len(r.Topics[0].Partitions) != 1 {
		t.Fatalf("got %d topics in produce response", len(r.Topics))
	}
	return r.Topics[0].Partitions[0]
}

// latestOffset asks for a partition's high watermark on w.
func latestOffset(t testing.TB, w *wireConn, name string, p int32) int64 {
	t.Helper()
	sp := listOffsetsPart(t, w.do(listOffsetsReq(7, name, p, -1)))
	if sp.ErrorCode != 0 {
		t.Fatalf("list offsets: %v", kerr.ErrorForCode(sp.ErrorCode))
	}
	return sp.Offset
}

func TestProduceAcks(t *testing.T) {
	for _, mode := range []string{"async", "sync"} {
		for _, acks := range []int16{1, -1, 0} {
			t.Run(fmt.Sprintf("%s/acks=%d", mode, acks), func(t *testing.T) {
				srv := newTestServer(t, func(c *Config) { c.FlushMode = mode })
				dataTopic(t, srv, "t", 1, nil)
				w := dialWire(t, srv)
				for i := range 3 {
					req := produceReq(9, acks, "t", 0, plainBatch(3).encode())
					if acks == 0 {
						w.send(req)
						continue
					}
					sp := producePart(t, w.do(req))
					if sp.ErrorCode != 0 || sp.BaseOffset != int64(3*i) || sp.LogAppendTime != -1 || sp.LogStartOffset != 0 {
						t.Fatalf("batch %d: error %v, base %d, append time %d, log start %d", i, kerr.ErrorForCode(sp.ErrorCode), sp.BaseOffset, sp.LogAppendTime, sp.LogStartOffset)
					}
					if mode == "sync" && acks == -1 {
						clog := srv.Store().CommitLog()
						if f, wr := clog.FlushedPosition(), clog.WrotePosition(); f < wr {
							t.Fatalf("acks=-1 answered with flushed position %d below written %d", f, wr)
						}
					}
				}
				// The next response on the connection answers the barrier:
				// acks=0 got none. Sync mode exposes only flushed data.
				w.do(kmsg.NewPtrApiVersionsRequest())
				if mode == "sync" {
					if err := srv.Store().AwaitDurable(testCtx(t), srv.Store().CommitLog().WrotePosition()); err != nil {
						t.Fatal(err)
					}
				}
				if got := latestOffset(t, w, "t", 0); got != 9 {
					t.Fatalf("high watermark %d, want 9", got)
				}
			})
		}
	}
}

// TestProducePipelinedSync: requests behind a produce that waits for its
// group commit are read and answered in order on the same connection.
func TestProducePipelinedSync(t *testing.T) {
	srv := newTestServer(t, func(c *Config) { c.FlushMode = "sync" })
	dataTopic(t, srv, "t", 2, nil)
	w := dialWire(t, srv)
	type sent struct {
		corr int32
		req  kmsg.Request
	}
	var all []sent
	for i := range 10 {
		var req kmsg.Request = produceReq(9, -1, "t", int32(i%2), plainBatch(2).encode())
		if i%3 == 2 {
			req = kmsg.NewPtrApiVersionsRequest()
		}
		all = append(all, sent{w.send(req), req})
	}
	next := [2]int64{}
	for i, s := range all {
		resp := s.req.ResponseKind()
		w.recv(s.corr, resp)
		if pr, ok := resp.(*kmsg.ProduceResponse); ok {
			sp := pr.Topics[0].Partitions[0]
			p := i % 2
			if sp.ErrorCode != 0 || sp.BaseOffset != next[p] {
				t.Fatalf("request %d: error %v, base %d, want %d", i, kerr.ErrorForCode(sp.ErrorCode), sp.BaseOffset, next[p])
			}
			next[p] += 2
		}
	}
}

func TestProduceErrors(t *testing.T) {
	srv := newTestServer(t, nil)
	tp := dataTopic(t, srv, "t", 1, nil)
	dataTopic(t, srv, "small", 1, map[string]string{"max.message.bytes": "1024"})
	if _, err := srv.Topics().CreateInternal(topic.GroupMetadataTopic, 1, nil); err != nil {
		t.Fatal(err)
	}
	corrupt := plainBatch(2).encode()
	corrupt[len(corrupt)-1] ^= 0xff
	badOffset := plainBatch(3)
	badOffset.badOffsetDeltaAt = 1
	future := plainBatch(4)
	future.futureTimestampAt = 2
	txn := plainBatch(1)
	txn.producerID, txn.producerEpoch, txn.baseSequence, txn.attributes = 1, 0, 0, 0x10
	big := plainBatch(1)
	big.valueSize = 2000
	byID := produceReq(13, 1, "", 0, plainBatch(1).encode())
	byID.Topics[0].TopicID = [16]byte{1, 2, 3}
	// A magic-1 message whose timestamp puts the transactional bit where
	// a magic-2 batch has its attributes: not a transactional batch.
	oldFormat := make([]byte, 40)
	binary.BigEndian.PutUint32(oldFormat[batch.LengthOffset:], uint32(len(oldFormat)-batch.LogOverhead))
	oldFormat[batch.MagicOffset], oldFormat[batch.AttributesOffset+1] = 1, 0x10

	for _, tc := range []struct {
		name      string
		req       *kmsg.ProduceRequest
		want      *kerr.Error
		recordErr int32 // -1: none expected
	}{
		{"too large", produceReq(9, 1, "small", 0, big.encode()), kerr.MessageTooLarge, -1},
		{"bad crc", produceReq(9, 1, "t", 0, corrupt), kerr.CorruptMessage, -1},
		{"record offset delta", produceReq(9, 1, "t", 0, badOffset.encode()), kerr.InvalidRecord, 1},
		{"record timestamp", produceReq(8, 1, "t", 0, future.encode()), kerr.InvalidTimestamp, 2},
		{"record error v7", produceReq(7, 1, "t", 0, badOffset.encode()), kerr.InvalidRecord, -1},
		{"missing topic", produceReq(9, 1, "nope", 0, plainBatch(1).encode()), kerr.UnknownTopicOrPartition, -1},
		{"missing partition", produceReq(9, 1, "t", 1, plainBatch(1).encode()), kerr.UnknownTopicOrPartition, -1},
		{"invalid acks", produceReq(9, 2, "t", 0, plainBatch(1).encode()), kerr.InvalidRequiredAcks, -1},
		{"transactional", produceReq(9, 1, "t", 0, txn.encode()), kerr.TransactionalIDAuthorizationFailed, -1},
		{"unknown topic id", byID, kerr.UnknownTopicID, -1},
		{"internal topic", produceReq(9, 1, topic.GroupMetadataTopic, 0, plainBatch(1).encode()), kerr.InvalidTopicException, -1},
		{"internal topic not created yet", produceReq(9, 1, topic.TransactionTopic, 0, plainBatch(1).encode()), kerr.InvalidTopicException, -1},
		{"old message format", produceReq(9, 1, "t", 0, oldFormat), kerr.InvalidRecord, -1},
		{"null records", produceReq(9, 1, "t", 0, nil), kerr.InvalidRecord, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := dialWire(t, srv)
			sp := producePart(t, w.do(tc.req))
			if sp.ErrorCode != tc.want.Code {
				t.Fatalf("got %v, want %v", kerr.ErrorForCode(sp.ErrorCode), tc.want)
			}
			if sp.BaseOffset != -1 {
				t.Errorf("base offset %d, want -1", sp.BaseOffset)
			}
			if tc.recordErr < 0 {
				if len(sp.ErrorRecords) != 0 {
					t.Errorf("got record errors %+v", sp.ErrorRecords)
				}
				return
			}
			if len(sp.ErrorRecords) != 1 || sp.ErrorRecords[0].RelativeOffset != tc.recordErr || sp.ErrorRecords[0].ErrorMessage == nil {
				t.Fatalf("got record errors %+v, want index %d", sp.ErrorRecords, tc.recordErr)
			}
			if sp.ErrorMessage == nil || sp.LogStartOffset != 0 {
				t.Errorf("error message %v, log start offset %d", sp.ErrorMessage, sp.LogStartOffset)
			}
		})
	}
	// Nothing was appended by any of them.
	if p := srv.Store().Partition(partition.TopicID(tp.ID), 0); p.LogEndOffset() != 0 {
		t.Fatalf("log end offset %d after refused batches", p.LogEndOffset())
	}
}

// TestProduceTopicID: v13 addresses topics by id and echoes it.
func TestProduceTopicID(t *testing.T) {
	srv := newTestServer(t, nil)
	tp := dataTopic(t, srv, "t", 1, nil)
	req := produceReq(13, -1, "", 0, plainBatch(2).encode())
	req.Topics[0].TopicID = tp.ID
	resp := dialWire(t, srv).do(req).(*kmsg.ProduceResponse)
	if resp.Topics[0].TopicID != tp.ID {
		t.Fatalf("response topic id %v, want %v", topic.ID(resp.Topics[0].TopicID), tp.ID)
	}
	if sp := resp.Topics[0].Partitions[0]; sp.ErrorCode != 0 || sp.BaseOffset != 0 {
		t.Fatalf("error %v, base %d", kerr.ErrorForCode(sp.ErrorCode), sp.BaseOffset)
	}
}

// TestProduceAcksZeroErrorClosesConnection: with no response to carry the
// error, Kafka closes the connection.
func TestProduceAcksZeroErrorClosesConnection(t *testing.T) {
	srv := newTestServer(t, nil)
	w := dialWire(t, srv)
	w.send(produceReq(9, 0, "missing", 0, plainBatch(1).encode()))
	if !w.closed() {
		t.Fatal("connection still open")
	}
}

// TestProduceIdempotent: a retried batch gets its original offset and no
// error; a gap in sequence numbers is OUT_OF_ORDER_SEQUENCE_NUMBER.
func TestProduceIdempotent(t *testing.T) {
	for _, mode := range []string{"async", "sync"} {
		t.Run(mode, func(t *testing.T) {
			srv := newTestServer(t, func(c *Config) { c.FlushMode = mode })
			dataTopic(t, srv, "t", 1, nil)
			w := dialWire(t, srv)
			ip := w.do(kmsg.NewPtrInitProducerIDRequest()).(*kmsg.InitProducerIDResponse)
			if ip.ErrorCode != 0 {
				t.Fatal(kerr.ErrorForCode(ip.ErrorCode))
			}
			b := plainBatch(3)
			b.producerID, b.producerEpoch, b.baseSequence = ip.ProducerID, ip.ProducerEpoch, 0
			first := b.encode()
			b.baseSequence = 3
			second := b.encode()
			for i, tc := range []struct {
				batch []byte
				base  int64
				want  int16
			}{
				{first, 0, 0},
				{second, 3, 0},
				{first, 0, 0},  // retry of the first: original offset
				{second, 3, 0}, // and of the second
				{func() []byte { b.baseSequence = 10; return b.encode() }(), -1, kerr.OutOfOrderSequenceNumber.Code},
			} {
				sp := producePart(t, w.do(produceReq(9, -1, "t", 0, tc.batch)))
				if sp.ErrorCode != tc.want || sp.BaseOffset != tc.base {
					t.Fatalf("batch %d: got %v at %d, want %v at %d", i, kerr.ErrorForCode(sp.ErrorCode), sp.BaseOffset, kerr.ErrorForCode(tc.want), tc.base)
				}
			}
			if got := latestOffset(t, w, "t", 0); got != 6 {
				t.Fatalf("high watermark %d, want 6", got)
			}
		})
	}
}

// TestProduceLogAppendTime: a LogAppendTime topic reports the time it
// stamped.
func TestProduceLogAppendTime(t *testing.T) {
	srv := newTestServer(t, nil)
	dataTopic(t, srv, "t", 1, map[string]string{"message.timestamp.type": "LogAppendTime"})
	before := time.Now().UnixMilli()
	sp := producePart(t, dialWire(t, srv).do(produceReq(9, 1, "t", 0, plainBatch(2).encode())))
	if sp.ErrorCode != 0 || sp.LogAppendTime < before || sp.LogAppendTime > time.Now().UnixMilli() {
		t.Fatalf("error %v, log append time %d (before %d)", kerr.ErrorForCode(sp.ErrorCode), sp.LogAppendTime, before)
	}
}

// TestProduceKgoEndToEnd: kgo's idempotent producer (the default) writes a
// few thousand records with headers over several partitions; kadm's offset
// listings match.
func TestProduceKgoEndToEnd(t *testing.T) {
	for _, mode := range []string{"async", "sync"} {
		t.Run(mode, func(t *testing.T) {
			srv := newTestServer(t, func(c *Config) { c.FlushMode = mode })
			dataTopic(t, srv, "e2e", 4, nil)
			cl := newClient(t, srv, kgo.DefaultProduceTopic("e2e"), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
			ctx := testCtx(t)
			const n = 3000
			var failed atomic.Pointer[error]
			for i := range n {
				r := &kgo.Record{
					Key:     fmt.Appendf(nil, "k%d", i),
					Value:   fmt.Appendf(nil, "v%d", i),
					Headers: []kgo.RecordHeader{{Key: "i", Value: fmt.Appendf(nil, "%d", i)}},
				}
				cl.Produce(ctx, r, func(r *kgo.Record, err error) {
					if err != nil {
						failed.CompareAndSwap(nil, &err)
					}
				})
			}
			if err := cl.Flush(ctx); err != nil {
				t.Fatal(err)
			}
			if err := failed.Load(); err != nil {
				t.Fatalf("produce: %v", *err)
			}
			adm := kadm.NewClient(cl)
			ends, err := adm.ListEndOffsets(ctx, "e2e")
			if err != nil {
				t.Fatal(err)
			}
			starts, err := adm.ListStartOffsets(ctx, "e2e")
			if err != nil {
				t.Fatal(err)
			}
			var total, parts int64
			ends.Each(func(o kadm.ListedOffset) {
				parts++
				if o.Err != nil {
					t.Fatalf("end offset %d: %v", o.Partition, o.Err)
				}
				if o.Offset != n/4 {
					t.Errorf("partition %d: end offset %d, want %d", o.Partition, o.Offset, n/4)
				}
				total += o.Offset
			})
			starts.Each(func(o kadm.ListedOffset) {
				if o.Err != nil || o.Offset != 0 {
					t.Errorf("partition %d: start offset %d, %v", o.Partition, o.Offset, o.Err)
				}
			})
			if total != n || parts != 4 {
				t.Fatalf("%d records in %d partitions, want %d in 4", total, parts, n)
			}
		})
	}
}

// TestProduceVersions: every served version appends and answers.
func TestProduceVersions(t *testing.T) {
	srv := newTestServer(t, nil)
	tp := dataTopic(t, srv, "t", 1, nil)
	w := dialWire(t, srv)
	for v := int16(3); v <= kmsgMax(0); v++ {
		req := produceReq(v, -1, "t", 0, plainBatch(2).encode())
		if v >= 13 {
			req.Topics[0].Topic, req.Topics[0].TopicID = "", tp.ID
		}
		sp := producePart(t, w.do(req))
		if sp.ErrorCode != 0 || sp.BaseOffset != int64(2*(v-3)) {
			t.Fatalf("v%d: %v base %d", v, kerr.ErrorForCode(sp.ErrorCode), sp.BaseOffset)
		}
		if v >= 5 && sp.LogStartOffset != 0 {
			t.Fatalf("v%d: log start offset %d", v, sp.LogStartOffset)
		}
	}
}

// TestProduceDurabilityFailure: a failed or timed-out group commit turns
// every appended partition into that error and leaves refused ones alone.
func TestProduceDurabilityFailure(t *testing.T) {
	resp := kmsg.NewPtrProduceResponse()
	resp.Version = 9
	ok, refused := kmsg.NewProduceResponseTopicPartition(), kmsg.NewProduceResponseTopicPartition()
	refused.ErrorCode = kerr.CorruptMessage.Code
	rt := kmsg.NewProduceResponseTopic()
	rt.Partitions = []kmsg.ProduceResponseTopicPartition{ok, refused}
	resp.Topics = append(resp.Topics, rt)
	failProduceDurability(resp, 9, fmt.Errorf("partition: %w: flush: timeout", kerr.RequestTimedOut))
	got := resp.Topics[0].Partitions
	if got[0].ErrorCode != kerr.RequestTimedOut.Code || got[0].ErrorMessage == nil || got[1].ErrorCode != kerr.CorruptMessage.Code {
		t.Fatalf("got %v, %v", kerr.ErrorForCode(got[0].ErrorCode), kerr.ErrorForCode(got[1].ErrorCode))
	}
}

// BenchmarkProduceHandler measures the handler and append of a one-batch
// request (acks=1, async mode), without the network.
func BenchmarkProduceHandler(b *testing.B) {
	srv := newTestServer(b, func(c *Config) { c.SegmentBytes = 64 << 20 })
	dataTopic(b, srv, "t", 1, nil)
	tmpl := plainBatch(10).encode()
	req := produceReq(9, 1, "t", 0, append([]byte(nil), tmpl...))
	b.ReportAllocs()
	b.SetBytes(int64(len(tmpl)))
	for b.Loop() {
		copy(req.Topics[0].Partitions[0].Records, tmpl)
		res, err := srv.Broker.handleProduce(nil, req)
		if err != nil || res.resp.(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode != 0 {
			b.Fatal(err)
		}
	}
}

// TestProduceShapesOnOneConnection: requests of different shapes (topics,
// partitions, one failing partition) pipelined on one connection each get
// a response of their own shape and offsets, although the connection
// decodes them into one kept request and their responses come from a
// pool (produce_response.go). Sync mode keeps several responses pending at
// once.
func TestProduceShapesOnOneConnection(t *testing.T) {
	for _, mode := range []string{"async", "sync"} {
		t.Run(mode, func(t *testing.T) {
			srv := newTestServer(t, func(c *Config) { c.FlushMode = mode })
			dataTopic(t, srv, "a", 3, nil)
			dataTopic(t, srv, "b", 2, nil)
			w := dialWire(t, srv)
			// shapes[i] lists topic:partition pairs; "b:7" does not exist.
			shapes := [][]string{{"a:0", "a:1", "a:2", "b:0", "b:1"}, {"b:1"}, {"a:2", "b:7", "b:0"}, {"a:0"}, {"a:1", "a:0", "b:1", "b:0"}}
			next := map[string]int64{}
			type sent struct {
				corr  int32
				shape []string
			}
			var all []sent
			for round := range 4 {
				for _, shape := range shapes {
					req := kmsg.NewPtrProduceRequest()
					req.Version, req.Acks, req.TimeoutMillis = 9, -1, 10000
					for _, tp := range shape {
						name, p := tp[:1], int32(tp[2]-'0')
						if n := len(req.Topics); n == 0 || req.Topics[n-1].Topic != name {
							rt := kmsg.NewProduceRequestTopic()
							rt.Topic = name
							req.Topics = append(req.Topics, rt)
						}
						rp := kmsg.NewProduceRequestTopicPartition()
						rp.Partition, rp.Records = p, plainBatch(1+round).encode()
						rt := &req.Topics[len(req.Topics)-1]
						rt.Partitions = append(rt.Partitions, rp)
					}
					all = append(all, sent{w.send(req), shape})
				}
			}
			for i, s := range all {
				resp := kmsg.NewPtrProduceResponse()
				resp.Version = 9
				w.recv(s.corr, resp)
				round := i / len(shapes)
				var got []string
				for _, rt := range resp.Topics {
					for _, sp := range rt.Partitions {
						tp := fmt.Sprintf("%s:%d", rt.Topic, sp.Partition)
						got = append(got, tp)
						if tp == "b:7" {
							if sp.ErrorCode != kerr.UnknownTopicOrPartition.Code || sp.BaseOffset != -1 {
								t.Fatalf("request %d, %s: error %v, base %d", i, tp, kerr.ErrorForCode(sp.ErrorCode), sp.BaseOffset)
							}
							continue
						}
						if sp.ErrorCode != 0 || sp.BaseOffset != next[tp] || sp.ErrorMessage != nil {
							t.Fatalf("request %d, %s: error %v, base %d, want %d", i, tp, kerr.ErrorForCode(sp.ErrorCode), sp.BaseOffset, next[tp])
						}
						next[tp] += int64(1 + round)
					}
				}
				if fmt.Sprint(got) != fmt.Sprint(s.shape) {
					t.Fatalf("request %d: got partitions %v, want %v", i, got, s.shape)
				}
			}
		})
	}
}
