package broker

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
)

// produceN produces n records with values "v<i>" to topic and waits for
// every acknowledgement.
func produceN(t *testing.T, cl *kgo.Client, topic string, n int) {
	t.Helper()
	ctx := testCtx(t)
	for i := 0; i < n; i++ {
		cl.Produce(ctx, &kgo.Record{Topic: topic, Value: fmt.Appendf(nil, "v%d", i)}, nil)
	}
	if err := cl.Flush(ctx); err != nil {
		t.Fatal(err)
	}
}

// consumeN reads n records from the start of topic with a fresh consumer.
func consumeN(t *testing.T, srv *InProcess, topic string, n int, opts ...kgo.Opt) []*kgo.Record {
	t.Helper()
	cl := newClient(t, srv, append([]kgo.Opt{kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart())}, opts...)...)
	ctx := testCtx(t)
	var got []*kgo.Record
	for len(got) < n {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("consumed %d of %d records: %v", len(got), n, err)
		}
		fs.EachError(func(topic string, p int32, err error) { t.Fatalf("fetch %s-%d: %v", topic, p, err) })
		got = append(got, fs.Records()...)
	}
	return got
}

func TestFetchProduceThenConsume(t *testing.T) {
	for _, mode := range []string{"async", "sync"} {
		t.Run(mode, func(t *testing.T) {
			srv := newTestServer(t, func(c *Config) { c.FlushMode = mode })
			produceN(t, newClient(t, srv, kgo.DefaultProduceTopic("t"), kgo.AllowAutoTopicCreation()), "t", 2000)
			got := consumeN(t, srv, "t", 2000)
			for i, r := range got {
				if r.Offset != int64(i) || string(r.Value) != fmt.Sprintf("v%d", i) {
					t.Fatalf("record %d: offset %d value %q", i, r.Offset, r.Value)
				}
			}
		})
	}
}

// TestFetchLongPoll: a consumer waiting on an empty topic gets records soon
// after they are produced, through a parked fetch (no polling loop).
func TestFetchLongPoll(t *testing.T) {
	srv := newTestServer(t, nil)
	prod := newClient(t, srv, kgo.AllowAutoTopicCreation())
	produceN(t, prod, "lp", 1) // create the topic
	done := make(chan []*kgo.Record, 1)
	go func() {
		// Offset 1 rather than the end: a client slow to start (a loaded
		// machine) would otherwise resolve the end after the produce
		// below and wait for a record that never comes.
		cl := newClient(t, srv, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"lp": {0: kgo.NewOffset().At(1)}}),
			kgo.FetchMaxWait(10*time.Second))
		ctx := testCtx(t)
		var got []*kgo.Record
		for len(got) == 0 && ctx.Err() == nil {
			got = append(got, cl.PollFetches(ctx).Records()...)
		}
		done <- got
	}()
	time.Sleep(300 * time.Millisecond) // most often the consumer parks meanwhile; it need not
	start := time.Now()
	produceN(t, prod, "lp", 1)
	select {
	case got := <-done:
		if len(got) != 1 || got[0].Offset != 1 {
			t.Fatalf("got %d records", len(got))
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Fatalf("parked fetch took %v to see new data", d)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("consumer never got the record")
	}
}

// rawFetch sends one fetch request on a connection of cl.
func rawFetch(t *testing.T, cl *kgo.Client, req *kmsg.FetchRequest) *kmsg.FetchResponse {
	t.Helper()
	resp, err := req.RequestWith(testCtx(t), cl)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

func fetchReq(srv *InProcess, version int16, topic string, offset int64, maxBytes, partMax int32) *kmsg.FetchRequest {
	req := kmsg.NewPtrFetchRequest()
	req.Version = version
	req.ReplicaID = -1
	req.MaxBytes = maxBytes
	req.SessionEpoch = -1
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = topic
	if tp, ok := srv.Topics().Get(topic); ok {
		rt.TopicID = tp.ID // kgo may send v13+, where topics go by id
	}
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.FetchOffset, rp.PartitionMaxBytes = offset, partMax
	rp.CurrentLeaderEpoch = -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return req
}

func TestFetchErrorsAndLimits(t *testing.T) {
	srv := newTestServer(t, nil)
	cl := newClient(t, srv, kgo.DefaultProduceTopic("e"), kgo.ProducerLinger(0), kgo.AllowAutoTopicCreation())
	for i := 0; i < 5; i++ {
		produceN(t, cl, "e", 1) // one batch each
	}
	// Past the end: OFFSET_OUT_OF_RANGE with -1 watermarks, as Kafka sends.
	resp := rawFetch(t, cl, fetchReq(srv, 12, "e", 99, 1<<20, 1<<20))
	p := resp.Topics[0].Partitions[0]
	if p.ErrorCode != kerr.OffsetOutOfRange.Code || p.HighWatermark != -1 || p.LogStartOffset != -1 {
		t.Fatalf("past the end: error %d hw %d start %d", p.ErrorCode, p.HighWatermark, p.LogStartOffset)
	}
	// At the high watermark: empty, no error.
	resp = rawFetch(t, cl, fetchReq(srv, 12, "e", 5, 1<<20, 1<<20))
	if p := resp.Topics[0].Partitions[0]; p.ErrorCode != 0 || len(p.RecordBatches) != 0 || p.HighWatermark != 5 {
		t.Fatalf("at hw: error %d, %d bytes, hw %d", p.ErrorCode, len(p.RecordBatches), p.HighWatermark)
	}
	// KIP-74: a 1-byte limit still returns the first batch, and only it.
	resp = rawFetch(t, cl, fetchReq(srv, 12, "e", 0, 1, 1))
	p = resp.Topics[0].Partitions[0]
	if p.ErrorCode != 0 || len(p.RecordBatches) == 0 {
		t.Fatalf("KIP-74: error %d, %d bytes", p.ErrorCode, len(p.RecordBatches))
	}
	var rb kmsg.RecordBatch
	if err := rb.ReadFrom(p.RecordBatches); err != nil || int(rb.Length)+12 != len(p.RecordBatches) {
		t.Fatalf("KIP-74: not exactly one batch: %v, %d vs %d", err, rb.Length+12, len(p.RecordBatches))
	}
	// Unknown topic.
	resp = rawFetch(t, cl, fetchReq(srv, 12, "nope", 0, 1<<20, 1<<20))
	if p := resp.Topics[0].Partitions[0]; p.ErrorCode != kerr.UnknownTopicOrPartition.Code && p.ErrorCode != kerr.UnknownTopicID.Code {
		t.Fatalf("unknown topic: error %d", p.ErrorCode)
	}
	// The record bytes served are exactly the stored batch bytes.
	resp = rawFetch(t, cl, fetchReq(srv, 4, "e", 0, 1<<20, 1<<20))
	if n := bytes.Count(resp.Topics[0].Partitions[0].RecordBatches, []byte("v0")); n != 5 {
		t.Fatalf("v4 fetch: %d records found", n)
	}
}

// TestFetchOldVersions runs the produce-consume round trip with kgo pinned
// to older Kafka versions, so that Fetch, Produce, Metadata and ListOffsets
// answer the versions older clients send (Fetch v4 from Kafka 0.11, v7 with
// sessions from 1.1, v11 from 2.3, v12 flexible from 2.7).
func TestFetchOldVersions(t *testing.T) {
	for _, v := range []struct {
		name string
		vs   *kversion.Versions
	}{
		{"0.11", kversion.V0_11_0()},
		{"1.1", kversion.V1_1_0()},
		{"2.3", kversion.V2_3_0()},
		{"2.8", kversion.V2_8_0()},
		{"3.5", kversion.V3_5_0()},
	} {
		t.Run(v.name, func(t *testing.T) {
			srv := newTestServer(t, nil)
			pin := kgo.MaxVersions(v.vs)
			topic := "old-" + v.name
			produceN(t, newClient(t, srv, pin, kgo.DefaultProduceTopic(topic), kgo.AllowAutoTopicCreation()), topic, 300)
			got := consumeN(t, srv, topic, 300, pin)
			for i, r := range got {
				if r.Offset != int64(i) || string(r.Value) != fmt.Sprintf("v%d", i) {
					t.Fatalf("record %d: offset %d value %q", i, r.Offset, r.Value)
				}
			}
		})
	}
}
