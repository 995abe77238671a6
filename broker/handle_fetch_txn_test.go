package broker

// read_committed fetches and ListOffsets against transactions written
// straight into the partition (Partition.Append of transactional batches,
// Partition.AppendMarker), so that they do not depend on the transactional
// produce path: the last stable offset in every answer, reads that stop
// there, the aborted transactions of the range returned (null for
// read_uncommitted, as in Kafka), long polls that wake when the last stable
// offset moves and not before, and a real read_committed consumer (kgo)
// that skips aborted records.

import (
	"encoding/binary"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/kbroker/kbroker/partition"
)

// txnTestBatch encodes a batch of n records with values "<tag>-<i>";
// pid < 0 makes a plain batch.
func txnTestBatch(pid int64, seq int32, txn bool, tag string, n int) []byte {
	rb := kmsg.RecordBatch{Magic: 2, ProducerID: pid, ProducerEpoch: 0, FirstSequence: seq,
		LastOffsetDelta: int32(n - 1), NumRecords: int32(n), FirstTimestamp: 1000, MaxTimestamp: 1000}
	if pid < 0 {
		rb.ProducerEpoch, rb.FirstSequence = -1, -1
	}
	if txn {
		rb.Attributes = 0x10
	}
	for i := range n {
		r := kmsg.Record{OffsetDelta: int32(i), Value: fmt.Appendf(nil, "%s-%d", tag, i)}
		body := r.AppendTo(nil)
		r.Length = int32(len(body) - 1)
		rb.Records = r.AppendTo(rb.Records)
	}
	b := rb.AppendTo(nil)
	binary.BigEndian.PutUint32(b[8:], uint32(len(b)-12))
	binary.BigEndian.PutUint32(b[17:], crcCastagnoli(b[21:]))
	return b
}

// txnFixture writes, on partition 0 of a new topic:
//
//	0    plain
//	1-2  producer 1, transactional (aborted below)
//	3    producer 2, transactional (committed below)
//	4    ABORT marker of producer 1
//	5    plain
//	6    COMMIT marker of producer 2
//	7    producer 3, transactional, left open
//	8    plain
//
// so the high watermark is 9, the last stable offset 7, and producer 1's
// transaction from 1 is the one abort.
func txnFixture(t testing.TB, srv *InProcess, name string) *partition.Partition {
	t.Helper()
	tp, err := srv.Topics().Create(name, 1, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	p := srv.Store().Partition(partition.TopicID(tp.ID), 0)
	app := func(b []byte) {
		t.Helper()
		res, err := p.Append(b, 9, time.Now().UnixMilli())
		if err == nil {
			err = srv.Store().AwaitDurable(testCtx(t), res.End)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	marker := func(pid int64, commit bool) {
		t.Helper()
		res, err := p.AppendMarker(pid, 0, commit, 0, time.Now().UnixMilli())
		if err == nil {
			err = srv.Store().AwaitDurable(testCtx(t), res.End)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	app(txnTestBatch(-1, 0, false, "plain0", 1))
	app(txnTestBatch(1, 0, true, "aborted", 2))
	app(txnTestBatch(2, 0, true, "committed", 1))
	marker(1, false)
	app(txnTestBatch(-1, 0, false, "plain5", 1))
	marker(2, true)
	app(txnTestBatch(3, 0, true, "open", 1))
	app(txnTestBatch(-1, 0, false, "plain8", 1))
	if p.HighWatermark() != 9 || p.LastStableOffset() != 7 {
		t.Fatalf("fixture: hw %d lso %d, want 9 and 7", p.HighWatermark(), p.LastStableOffset())
	}
	return p
}

// batchBases lists the base offsets of the batches in raw.
func batchBases(t testing.TB, raw []byte) []int64 {
	t.Helper()
	var out []int64
	for len(raw) >= 12 {
		size := 12 + int(int32(binary.BigEndian.Uint32(raw[8:12])))
		var rb kmsg.RecordBatch
		if err := rb.ReadFrom(raw[:size]); err != nil {
			t.Fatalf("record batch: %v", err)
		}
		out = append(out, rb.FirstOffset)
		raw = raw[size:]
	}
	return out
}

type abortedPair struct{ pid, first int64 }

func abortedPairs(p kmsg.FetchResponseTopicPartition) []abortedPair {
	var out []abortedPair
	for _, a := range p.AbortedTransactions {
		out = append(out, abortedPair{a.ProducerID, a.FirstOffset})
	}
	return out
}

// TestFetchReadCommittedByVersion: at each Fetch version from 4, for both
// isolation levels and several fetch offsets, the batches returned, the
// watermarks and the aborted transactions are Kafka's.
func TestFetchReadCommittedByVersion(t *testing.T) {
	srv := newTestServer(t, nil)
	txnFixture(t, srv, "rc")
	c := dialRaw(t, srv)
	for _, v := range fetchVersions {
		for _, tc := range []struct {
			isolation int8
			offset    int64
			bases     []int64
			aborted   []abortedPair // nil: null expected
		}{
			{0, 0, []int64{0, 1, 3, 4, 5, 6, 7, 8}, nil},
			{1, 0, []int64{0, 1, 3, 4, 5, 6}, []abortedPair{{1, 1}}},
			{1, 2, []int64{1, 3, 4, 5, 6}, []abortedPair{{1, 1}}}, // mid-batch: the batch holding 2 comes whole
			{1, 4, []int64{4, 5, 6}, []abortedPair{{1, 1}}},       // the ABORT marker itself
			{1, 5, []int64{5, 6}, []abortedPair{}},                // past the abort: empty, not null
			{1, 7, nil, []abortedPair{}},                          // at the last stable offset
			{1, 8, nil, []abortedPair{}},                          // between it and the high watermark
			{0, 8, []int64{8}, nil},
		} {
			name := fmt.Sprintf("v%d/isolation=%d/offset=%d", v, tc.isolation, tc.offset)
			req := fetchReq(srv, v, "rc", tc.offset, 1<<20, 1<<20)
			req.IsolationLevel = tc.isolation
			p := onlyPartition(t, c.fetch(req))
			if p.ErrorCode != 0 || p.HighWatermark != 9 || p.LastStableOffset != 7 {
				t.Fatalf("%s: error %d hw %d lso %d, want 0, 9, 7", name, p.ErrorCode, p.HighWatermark, p.LastStableOffset)
			}
			if v >= 5 && p.LogStartOffset != 0 {
				t.Fatalf("%s: log start %d", name, p.LogStartOffset)
			}
			if got := batchBases(t, p.RecordBatches); !slices.Equal(got, tc.bases) {
				t.Fatalf("%s: batches at %v, want %v", name, got, tc.bases)
			}
			if (p.AbortedTransactions == nil) != (tc.aborted == nil) || !slices.Equal(abortedPairs(p), tc.aborted) {
				t.Fatalf("%s: aborted %v (null %v), want %v (null %v)", name, abortedPairs(p), p.AbortedTransactions == nil,
					tc.aborted, tc.aborted == nil)
			}
		}
		// An error carries null aborted transactions, read_committed or not.
		req := fetchReq(srv, v, "rc", 99, 1<<20, 1<<20)
		req.IsolationLevel = 1
		p := onlyPartition(t, c.fetch(req))
		wantFetchError(t, fmt.Sprintf("v%d past the end", v), p, kerr.OffsetOutOfRange.Code)
		if p.AbortedTransactions != nil {
			t.Fatalf("v%d: aborted transactions with an error: %v", v, p.AbortedTransactions)
		}
	}
}

// TestListOffsetsReadCommitted: latest is the last stable offset for
// READ_COMMITTED and the high watermark otherwise; a timestamp found only
// above the last stable offset is not found for READ_COMMITTED.
func TestListOffsetsReadCommitted(t *testing.T) {
	srv := newTestServer(t, nil)
	p := txnFixture(t, srv, "lo")
	// A record newer than everything (markers carry the broker's time)
	// inside the open transaction.
	late := time.Now().Add(30 * time.Minute).UnixMilli()
	b := txnTestBatch(3, 1, true, "late", 1)
	binary.BigEndian.PutUint64(b[27:], uint64(late))
	binary.BigEndian.PutUint64(b[35:], uint64(late))
	binary.BigEndian.PutUint32(b[17:], crcCastagnoli(b[21:]))
	if _, err := p.Append(b, 9, time.Now().UnixMilli()); err != nil {
		t.Fatal(err)
	}
	c := dialRaw(t, srv)
	for _, v := range []int16{2, 5, 7, kmsg.NewPtrListOffsetsRequest().MaxVersion()} {
		for _, tc := range []struct {
			isolation int8
			ts        int64
			want      int64
		}{
			{0, -1, 10}, {1, -1, 7},
			{0, late, 9}, {1, late, -1},
			{1, -2, 0},
		} {
			req := listOffsetsReq(v, "lo", 0, tc.ts)
			req.IsolationLevel = tc.isolation
			sp := listOffsetsPart(t, c.recv(req, c.send(req), 10*time.Second))
			if sp.ErrorCode != 0 || sp.Offset != tc.want {
				t.Errorf("v%d isolation %d timestamp %d: error %d offset %d, want %d", v, tc.isolation, tc.ts, sp.ErrorCode, sp.Offset, tc.want)
			}
		}
	}
}

// TestFetchReadCommittedLongPoll: a read_committed fetch parked at the last
// stable offset is not answered when only the high watermark moves (data
// behind the open transaction), and is answered when the transaction's
// marker moves the last stable offset.
func TestFetchReadCommittedLongPoll(t *testing.T) {
	for _, mode := range []string{"async", "sync"} {
		t.Run(mode, func(t *testing.T) {
			srv := newTestServer(t, func(c *Config) { c.FlushMode = mode })
			p := txnFixture(t, srv, "lp")
			for _, v := range []int16{4, 12, maxFetchVersion} {
				c := dialRaw(t, srv)
				req := fetchReq(srv, v, "lp", p.LastStableOffset(), 1<<20, 1<<20)
				req.IsolationLevel, req.MaxWaitMillis, req.MinBytes = 1, 10000, 1
				corr := c.send(req)
				time.Sleep(300 * time.Millisecond) // let it park
				// More data behind the open transaction: the high
				// watermark moves, the last stable offset does not.
				res, err := p.Append(txnTestBatch(-1, 0, false, "more", 1), 9, time.Now().UnixMilli())
				if err != nil {
					t.Fatal(err)
				}
				if err := srv.Store().AwaitDurable(testCtx(t), res.End); err != nil {
					t.Fatal(err)
				}
				if resp, err := c.tryRecv(req, corr, 500*time.Millisecond); err == nil {
					t.Fatalf("v%d: answered when only the high watermark moved: %+v", v, onlyPartition(t, resp.(*kmsg.FetchResponse)))
				}
				// The open transaction commits (and, as the coordinator
				// does, waits for its marker to be durable).
				start := time.Now()
				res, err = p.AppendMarker(3, 0, true, 0, time.Now().UnixMilli())
				if err == nil {
					err = srv.Store().AwaitDurable(testCtx(t), res.End)
				}
				if err != nil {
					t.Fatal(err)
				}
				resp := c.recv(req, corr, 15*time.Second).(*kmsg.FetchResponse)
				if d := time.Since(start); d > 5*time.Second {
					t.Errorf("v%d: answered %v after the marker", v, d)
				}
				got := onlyPartition(t, resp)
				if got.ErrorCode != 0 || got.LastStableOffset != p.HighWatermark() || len(got.RecordBatches) == 0 {
					t.Fatalf("v%d: error %d lso %d (hw %d), %d bytes", v, got.ErrorCode, got.LastStableOffset, p.HighWatermark(), len(got.RecordBatches))
				}
				if bases := batchBases(t, got.RecordBatches); bases[0] != req.Topics[0].Partitions[0].FetchOffset {
					t.Fatalf("v%d: batches at %v", v, bases)
				}
				// Open the next transaction for the next version.
				res, err = p.Append(txnTestBatch(3, int32(1+slices.Index([]int16{4, 12, maxFetchVersion}, v)), true, "next", 1), 9, 0)
				if err == nil {
					err = srv.Store().AwaitDurable(testCtx(t), res.End)
				}
				if err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

// TestReadCommittedConsumer: kgo consumers in read_committed mode, at
// several protocol versions, see the committed and plain records but not
// the aborted ones, stop at the open transaction, and see its records once
// it commits.
func TestReadCommittedConsumer(t *testing.T) {
	for _, vs := range []struct {
		name string
		v    *kversion.Versions
	}{
		{"0.11", kversion.V0_11_0()},
		{"2.3", kversion.V2_3_0()},
		{"latest", nil},
	} {
		t.Run(vs.name, func(t *testing.T) {
			srv := newTestServer(t, nil)
			p := txnFixture(t, srv, "cons")
			opts := []kgo.Opt{kgo.ConsumeTopics("cons"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
				kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.FetchMaxWait(2 * time.Second)}
			if vs.v != nil {
				opts = append(opts, kgo.MaxVersions(vs.v))
			}
			cl := newClient(t, srv, opts...)
			ctx := testCtx(t)
			var got []string
			poll := func(n int) {
				t.Helper()
				for len(got) < n {
					fs := cl.PollFetches(ctx)
					if err := ctx.Err(); err != nil {
						t.Fatalf("consumed %v: %v", got, err)
					}
					fs.EachError(func(topic string, p int32, err error) { t.Fatalf("fetch %s-%d: %v", topic, p, err) })
					for _, r := range fs.Records() {
						got = append(got, fmt.Sprintf("%d:%s", r.Offset, r.Value))
					}
				}
			}
			poll(3)
			want := []string{"0:plain0-0", "3:committed-0", "5:plain5-0"}
			if !slices.Equal(got, want) {
				t.Fatalf("read_committed consumer got %v, want %v", got, want)
			}
			if _, err := p.AppendMarker(3, 0, true, 0, time.Now().UnixMilli()); err != nil {
				t.Fatal(err)
			}
			poll(5)
			want = append(want, "7:open-0", "8:plain8-0")
			if !slices.Equal(got, want) {
				t.Fatalf("after the commit: got %v, want %v", got, want)
			}
		})
	}
}
