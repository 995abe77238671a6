package broker

// Fetch with bad input, sent at exact versions over a plain connection
// (kgo's Request raises a request to the newest version both sides know,
// so rawFetch cannot pin one): negative offsets, offsets past the end,
// deleted topics, unknown partitions and fetch sessions; every answer
// carries Kafka's code, nothing crashes, and the broker goes on serving.
// Then long polling with generous bounds, and a parked fetch that must
// not hold up any other connection.

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/internal/testenv"
)

// maxFetchVersion is the newest Fetch version kmsg knows, which the
// broker advertises.
var maxFetchVersion = kmsg.NewPtrFetchRequest().MaxVersion()

// fetchVersions are the versions the error tests run at: the oldest, the
// first with sessions, with leader epochs, the last by topic name, the
// first by topic id, and the newest.
var fetchVersions = []int16{4, 7, 9, 12, 13, maxFetchVersion}

// rawConn is a plain TCP connection to a broker that sends each request
// at exactly the version set on it.
type rawConn struct {
	t    testing.TB
	nc   net.Conn
	br   *bufio.Reader
	corr int32
	fmt  *kmsg.RequestFormatter
}

// dialRaw connects to srv; the connection is closed at cleanup.
func dialRaw(t testing.TB, srv *InProcess) *rawConn {
	t.Helper()
	nc, err := net.DialTimeout("tcp", srv.Addr(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	return &rawConn{t: t, nc: nc, br: bufio.NewReader(nc), fmt: kmsg.NewRequestFormatter(kmsg.FormatterClientID("raw-test"))}
}

// send writes req and returns its correlation id.
func (c *rawConn) send(req kmsg.Request) int32 {
	c.t.Helper()
	c.corr++
	c.nc.SetWriteDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.nc.Write(c.fmt.AppendRequest(nil, req, c.corr)); err != nil {
		c.t.Fatalf("write %s v%d: %v", kmsg.NameForKey(req.Key()), req.GetVersion(), err)
	}
	return c.corr
}

// recv reads the response to req, sent as corr, waiting at most timeout.
func (c *rawConn) recv(req kmsg.Request, corr int32, timeout time.Duration) kmsg.Response {
	c.t.Helper()
	resp, err := c.tryRecv(req, corr, timeout)
	if err != nil {
		c.t.Fatal(err)
	}
	return resp
}

func (c *rawConn) tryRecv(req kmsg.Request, corr int32, timeout time.Duration) (kmsg.Response, error) {
	name := fmt.Sprintf("%s v%d", kmsg.NameForKey(req.Key()), req.GetVersion())
	c.nc.SetReadDeadline(time.Now().Add(timeout))
	var size [4]byte
	if _, err := io.ReadFull(c.br, size[:]); err != nil {
		return nil, fmt.Errorf("read the response to %s: %w", name, err)
	}
	body := make([]byte, binary.BigEndian.Uint32(size[:]))
	if _, err := io.ReadFull(c.br, body); err != nil {
		return nil, fmt.Errorf("read the response to %s: %w", name, err)
	}
	if got := int32(binary.BigEndian.Uint32(body)); got != corr {
		return nil, fmt.Errorf("response to %s has correlation id %d, want %d", name, got, corr)
	}
	body = body[4:]
	resp := req.ResponseKind()
	resp.SetVersion(req.GetVersion())
	if resp.IsFlexible() && req.Key() != int16(kmsg.ApiVersions) {
		var err error
		if body, err = skipTags(body); err != nil {
			return nil, fmt.Errorf("response header of %s: %w", name, err)
		}
	}
	if err := resp.ReadFrom(body); err != nil {
		return nil, fmt.Errorf("decode the response to %s: %w", name, err)
	}
	return resp, nil
}

// skipTags skips the tagged fields of a flexible response header.
func skipTags(b []byte) ([]byte, error) {
	n, k := binary.Uvarint(b)
	if k <= 0 {
		return nil, errors.New("bad tag count")
	}
	b = b[k:]
	for range n {
		if _, k = binary.Uvarint(b); k <= 0 {
			return nil, errors.New("bad tag")
		}
		b = b[k:]
		size, k := binary.Uvarint(b)
		if k <= 0 || uint64(len(b)-k) < size {
			return nil, errors.New("bad tag size")
		}
		b = b[k+int(size):]
	}
	return b, nil
}

// fetch sends req and returns the response, within 10 s.
func (c *rawConn) fetch(req *kmsg.FetchRequest) *kmsg.FetchResponse {
	c.t.Helper()
	return c.recv(req, c.send(req), 10*time.Second).(*kmsg.FetchResponse)
}

// onlyPartition is the one partition of a response to a one-partition
// fetch.
func onlyPartition(t testing.TB, resp *kmsg.FetchResponse) kmsg.FetchResponseTopicPartition {
	t.Helper()
	if resp.ErrorCode != 0 || len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		t.Fatalf("response: error %d, %d topics, want one topic with one partition", resp.ErrorCode, len(resp.Topics))
	}
	return resp.Topics[0].Partitions[0]
}

// countRecords counts the records in a partition's record batches.
func countRecords(t testing.TB, raw []byte) int {
	t.Helper()
	n := 0
	for len(raw) >= 12 {
		size := 12 + int(int32(binary.BigEndian.Uint32(raw[8:12])))
		if size > len(raw) {
			break
		}
		var rb kmsg.RecordBatch
		if err := rb.ReadFrom(raw[:size]); err != nil {
			t.Fatalf("record batch: %v", err)
		}
		n += int(rb.NumRecords)
		raw = raw[size:]
	}
	return n
}

// wantFetchError checks a partition answered with code and Kafka's -1
// watermarks, and no records.
func wantFetchError(t testing.TB, what string, p kmsg.FetchResponseTopicPartition, code int16) {
	t.Helper()
	if p.ErrorCode != code {
		t.Errorf("%s: error %v, want %v", what, kerr.ErrorForCode(p.ErrorCode), kerr.ErrorForCode(code))
	}
	if p.HighWatermark != -1 || p.LastStableOffset != -1 || p.LogStartOffset != -1 {
		t.Errorf("%s: watermarks hw %d lso %d start %d, want -1 each", what, p.HighWatermark, p.LastStableOffset, p.LogStartOffset)
	}
	if len(p.RecordBatches) != 0 {
		t.Errorf("%s: %d bytes of records with an error", what, len(p.RecordBatches))
	}
}

// setupFetchTopic makes topic with one partition and n records, one batch
// each, and returns a producing client.
func setupFetchTopic(t *testing.T, srv *InProcess, topic string, n int) *kgo.Client {
	t.Helper()
	if _, err := newAdmin(t, srv).CreateTopic(testCtx(t), 1, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	cl := newClient(t, srv, kgo.DefaultProduceTopic(topic), kgo.ProducerLinger(0))
	for range n {
		produceN(t, cl, topic, 1)
	}
	return cl
}

// TestFetchErrorsByVersion: at each version, a fetch at a negative offset
// and past the log end is answered OFFSET_OUT_OF_RANGE with -1 watermarks
// (Kafka's answer); an unknown or negative partition index
// UNKNOWN_TOPIC_OR_PARTITION; the zero topic id (v13+) UNKNOWN_TOPIC_ID; a
// leader epoch from the future (v9+) UNKNOWN_LEADER_EPOCH; one bad
// partition does not spoil another in the same request; after each the
// same connection still gets records, and at the end a kgo consumer reads
// the topic.
func TestFetchErrorsByVersion(t *testing.T) {
	t.Parallel()
	srv := newTestServer(t, nil)
	setupFetchTopic(t, srv, "e", 5)
	for _, v := range fetchVersions {
		t.Run(fmt.Sprintf("v%d", v), func(t *testing.T) {
			c := dialRaw(t, srv)
			good := func() {
				t.Helper()
				p := onlyPartition(t, c.fetch(fetchReq(srv, v, "e", 0, 1<<20, 1<<20)))
				if p.ErrorCode != 0 || p.HighWatermark != 5 || countRecords(t, p.RecordBatches) != 5 {
					t.Fatalf("fetch from 0 after a bad one: error %d, hw %d, %d records", p.ErrorCode, p.HighWatermark, countRecords(t, p.RecordBatches))
				}
			}
			good()
			for _, off := range []int64{-1, -2, -100, math.MinInt64, 6, 1000, math.MaxInt64} {
				p := onlyPartition(t, c.fetch(fetchReq(srv, v, "e", off, 1<<20, 1<<20)))
				wantFetchError(t, fmt.Sprintf("offset %d", off), p, kerr.OffsetOutOfRange.Code)
				good()
			}
			// At the end: nothing, no error.
			if p := onlyPartition(t, c.fetch(fetchReq(srv, v, "e", 5, 1<<20, 1<<20))); p.ErrorCode != 0 || p.HighWatermark != 5 || len(p.RecordBatches) != 0 {
				t.Errorf("at the end: error %d, hw %d, %d bytes", p.ErrorCode, p.HighWatermark, len(p.RecordBatches))
			}
			for _, idx := range []int32{1, 99, -1, math.MaxInt32} {
				req := fetchReq(srv, v, "e", 0, 1<<20, 1<<20)
				req.Topics[0].Partitions[0].Partition = idx
				p := onlyPartition(t, c.fetch(req))
				if p.Partition != idx {
					t.Errorf("partition %d answered as %d", idx, p.Partition)
				}
				wantFetchError(t, fmt.Sprintf("partition %d", idx), p, kerr.UnknownTopicOrPartition.Code)
				good()
			}
			if v >= 13 {
				req := fetchReq(srv, v, "e", 0, 1<<20, 1<<20)
				req.Topics[0].TopicID = [16]byte{} // the zero id: no topic has it
				wantFetchError(t, "topic id zero", onlyPartition(t, c.fetch(req)), kerr.UnknownTopicID.Code)
				good()
			}
			if v >= 9 {
				req := fetchReq(srv, v, "e", 0, 1<<20, 1<<20)
				req.Topics[0].Partitions[0].CurrentLeaderEpoch = 7
				wantFetchError(t, "leader epoch 7", onlyPartition(t, c.fetch(req)), kerr.UnknownLeaderEpoch.Code)
				good()
			}
			// A bad partition and a good one in one request: each gets
			// its own answer.
			req := fetchReq(srv, v, "e", -1, 1<<20, 1<<20)
			rp := req.Topics[0].Partitions[0]
			rp.Partition, rp.FetchOffset = 0, 2
			req.Topics[0].Partitions = append([]kmsg.FetchRequestTopicPartition{rp}, req.Topics[0].Partitions[0])
			req.Topics[0].Partitions[1].Partition = 3
			resp := c.fetch(req)
			if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 2 {
				t.Fatalf("two partitions asked, %d topics answered", len(resp.Topics))
			}
			ps := resp.Topics[0].Partitions
			if ps[0].Partition != 0 || ps[0].ErrorCode != 0 || countRecords(t, ps[0].RecordBatches) != 3 {
				t.Errorf("good partition beside a bad one: partition %d error %d, %d records", ps[0].Partition, ps[0].ErrorCode, countRecords(t, ps[0].RecordBatches))
			}
			if ps[1].Partition != 3 {
				t.Errorf("bad partition answered as %d", ps[1].Partition)
			}
			wantFetchError(t, "partition 3 beside a good one", ps[1], kerr.UnknownTopicOrPartition.Code)
		})
	}
	// An ordinary consumer reads everything afterwards.
	if got := consumeN(t, srv, "e", 5); len(got) != 5 {
		t.Fatalf("consumer after bad fetches: %d records", len(got))
	}
}

// TestFetchDeletedTopic: after a topic is deleted, fetching it by name
// (v4–v12) is answered UNKNOWN_TOPIC_OR_PARTITION, by its old id (v13+)
// UNKNOWN_TOPIC_ID with the id echoed, and a session that held it answers
// its partition with one of those errors. A topic of the same name made
// again is served by name and is a different id. The broker serves a
// normal client afterwards.
func TestFetchDeletedTopic(t *testing.T) {
	t.Parallel()
	srv := newTestServer(t, nil)
	setupFetchTopic(t, srv, "gone", 3)
	old, _ := srv.Topics().Get("gone")
	c := dialRaw(t, srv)

	// Sessions over the topic, by name and by id, opened before it goes.
	sessions := map[int16]int32{}
	for _, v := range []int16{12, maxFetchVersion} {
		req := fetchReq(srv, v, "gone", 0, 1<<20, 1<<20)
		req.SessionEpoch = 0
		resp := c.fetch(req)
		if resp.ErrorCode != 0 || resp.SessionID == 0 || countRecords(t, onlyPartition(t, resp).RecordBatches) != 3 {
			t.Fatalf("v%d session: error %d id %d", v, resp.ErrorCode, resp.SessionID)
		}
		sessions[v] = resp.SessionID
	}

	resp, err := newAdmin(t, srv).DeleteTopics(testCtx(t), "gone")
	if err != nil || resp.Error() != nil {
		t.Fatalf("DeleteTopics: %v %v", err, resp.Error())
	}

	for _, v := range fetchVersions {
		req := fetchReq(srv, v, "gone", 0, 1<<20, 1<<20)
		req.Topics[0].TopicID = old.ID // the registry no longer has it
		resp := c.fetch(req)
		p := onlyPartition(t, resp)
		if v >= 13 {
			if resp.Topics[0].TopicID != old.ID {
				t.Errorf("v%d: answered for topic id %x, asked %x", v, resp.Topics[0].TopicID, old.ID)
			}
			wantFetchError(t, fmt.Sprintf("v%d deleted topic", v), p, kerr.UnknownTopicID.Code)
		} else {
			if resp.Topics[0].Topic != "gone" {
				t.Errorf("v%d: answered for topic %q", v, resp.Topics[0].Topic)
			}
			wantFetchError(t, fmt.Sprintf("v%d deleted topic", v), p, kerr.UnknownTopicOrPartition.Code)
		}
	}
	for v, id := range sessions {
		req := fetchReq(srv, v, "gone", 0, 1<<20, 1<<20)
		req.SessionID, req.SessionEpoch, req.Topics = id, 1, nil
		resp := c.fetch(req)
		if resp.ErrorCode != 0 {
			t.Fatalf("v%d session after the delete: error %v", v, kerr.ErrorForCode(resp.ErrorCode))
		}
		p := onlyPartition(t, resp)
		if p.ErrorCode != kerr.UnknownTopicOrPartition.Code && p.ErrorCode != kerr.UnknownTopicID.Code {
			t.Errorf("v%d session after the delete: partition error %v, want UNKNOWN_TOPIC_OR_PARTITION or UNKNOWN_TOPIC_ID", v, kerr.ErrorForCode(p.ErrorCode))
		}
	}

	// The name again: a new topic, served by name; the old id stays gone.
	cl := setupFetchTopic(t, srv, "gone", 1)
	cur, _ := srv.Topics().Get("gone")
	if cur.ID == old.ID {
		t.Fatal("the new topic has the old id")
	}
	p := onlyPartition(t, c.fetch(fetchReq(srv, 12, "gone", 0, 1<<20, 1<<20)))
	if p.ErrorCode != 0 || p.HighWatermark != 1 || countRecords(t, p.RecordBatches) != 1 {
		t.Errorf("v12 on the new topic: error %d hw %d, %d records", p.ErrorCode, p.HighWatermark, countRecords(t, p.RecordBatches))
	}
	req := fetchReq(srv, maxFetchVersion, "gone", 0, 1<<20, 1<<20)
	req.Topics[0].TopicID = old.ID
	wantFetchError(t, "the old id after the name came back", onlyPartition(t, c.fetch(req)), kerr.UnknownTopicID.Code)

	produceN(t, cl, "gone", 4)
	if got := consumeN(t, srv, "gone", 5); len(got) != 5 {
		t.Fatalf("consumer after deleted-topic fetches: %d records", len(got))
	}
}

// TestFetchParkedOnDeletedTopic: a fetch parked on a partition (10 s
// max_wait) whose topic is then deleted is answered within 5 s, not held
// for the full wait (Kafka completes a delayed fetch at once when a
// partition is gone), with an unknown-topic error.
func TestFetchParkedOnDeletedTopic(t *testing.T) {
	t.Parallel()
	srv := newTestServer(t, nil)
	setupFetchTopic(t, srv, "doomed", 1)
	c := dialRaw(t, srv)
	req := fetchReq(srv, maxFetchVersion, "doomed", 1, 1<<20, 1<<20)
	req.MaxWaitMillis, req.MinBytes = 10000, 1
	corr := c.send(req)
	time.Sleep(300 * time.Millisecond) // parked
	if resp, err := newAdmin(t, srv).DeleteTopics(testCtx(t), "doomed"); err != nil || resp.Error() != nil {
		t.Fatalf("DeleteTopics: %v %v", err, resp.Error())
	}
	start := time.Now()
	resp := c.recv(req, corr, 15*time.Second).(*kmsg.FetchResponse)
	took := time.Since(start)
	p := onlyPartition(t, resp)
	t.Logf("answered %v after the delete: %v", took.Round(time.Millisecond), kerr.ErrorForCode(p.ErrorCode))
	if took > 5*time.Second {
		t.Errorf("a fetch parked on a deleted topic was answered %v after the delete, want < 5 s", took.Round(time.Millisecond))
	}
	if p.ErrorCode != kerr.UnknownTopicOrPartition.Code && p.ErrorCode != kerr.UnknownTopicID.Code {
		t.Errorf("parked fetch on a deleted topic: error %v, want UNKNOWN_TOPIC_OR_PARTITION or UNKNOWN_TOPIC_ID", kerr.ErrorForCode(p.ErrorCode))
	}
}

// TestFetchWrongSession: an incremental fetch (epoch > 0) naming a session
// the broker never issued, or session 0, is answered
// FETCH_SESSION_ID_NOT_FOUND at the top level with session id 0 and no
// topics, at every session version; a wrong epoch of a real session
// INVALID_FETCH_SESSION_EPOCH. A full fetch on the same connection then
// opens a session that works, and kgo (which uses sessions) consumes.
func TestFetchWrongSession(t *testing.T) {
	t.Parallel()
	srv := newTestServer(t, nil)
	setupFetchTopic(t, srv, "s", 4)
	for _, v := range []int16{7, 12, 13, maxFetchVersion} {
		t.Run(fmt.Sprintf("v%d", v), func(t *testing.T) {
			c := dialRaw(t, srv)
			for _, bad := range []struct{ id, epoch int32 }{{123456789, 1}, {-5, 3}, {0, 1}, {math.MaxInt32, math.MaxInt32}} {
				req := fetchReq(srv, v, "s", 0, 1<<20, 1<<20)
				req.SessionID, req.SessionEpoch = bad.id, bad.epoch
				resp := c.fetch(req)
				if resp.ErrorCode != kerr.FetchSessionIDNotFound.Code || resp.SessionID != 0 || len(resp.Topics) != 0 {
					t.Errorf("session %d epoch %d: error %v, session %d, %d topics; want FETCH_SESSION_ID_NOT_FOUND, 0, none",
						bad.id, bad.epoch, kerr.ErrorForCode(resp.ErrorCode), resp.SessionID, len(resp.Topics))
				}
			}
			// A real session.
			req := fetchReq(srv, v, "s", 0, 1<<20, 1<<20)
			req.SessionEpoch = 0
			resp := c.fetch(req)
			if resp.ErrorCode != 0 || resp.SessionID == 0 || countRecords(t, onlyPartition(t, resp).RecordBatches) != 4 {
				t.Fatalf("full fetch after bad ones: error %d session %d", resp.ErrorCode, resp.SessionID)
			}
			id := resp.SessionID
			req = fetchReq(srv, v, "s", 0, 1<<20, 1<<20)
			req.SessionID, req.SessionEpoch = id, 5
			if resp := c.fetch(req); resp.ErrorCode != kerr.InvalidFetchSessionEpoch.Code || len(resp.Topics) != 0 {
				t.Errorf("wrong epoch: error %v, %d topics; want INVALID_FETCH_SESSION_EPOCH", kerr.ErrorForCode(resp.ErrorCode), len(resp.Topics))
			}
			req = fetchReq(srv, v, "s", 4, 1<<20, 1<<20) // move to the end
			req.SessionID, req.SessionEpoch = id, 1
			if resp := c.fetch(req); resp.ErrorCode != 0 || resp.SessionID != id {
				t.Errorf("incremental fetch after a wrong epoch: error %v, session %d", kerr.ErrorForCode(resp.ErrorCode), resp.SessionID)
			}
			req = fetchReq(srv, v, "s", 4, 1<<20, 1<<20)
			req.SessionID, req.SessionEpoch = id, -1 // close it
			if resp := c.fetch(req); resp.ErrorCode != 0 || resp.SessionID != 0 {
				t.Errorf("closing the session: error %v, session %d", kerr.ErrorForCode(resp.ErrorCode), resp.SessionID)
			}
		})
	}
	if got := consumeN(t, srv, "s", 4); len(got) != 4 {
		t.Fatalf("consumer after bad sessions: %d records", len(got))
	}
}

// TestFetchLongPollRaw: a fetch at the log end with max_wait 10 s and
// min_bytes 1 parks, and is answered with the new record within 5 s of its
// produce; on an idle partition a fetch with max_wait 1500 ms is answered
// no earlier than ~1400 ms (and not much later), empty and without error;
// min_bytes above what is there waits out max_wait and then returns what
// there is; min_bytes 0 answers at once.
func TestFetchLongPollRaw(t *testing.T) {
	t.Parallel()
	srv := newTestServer(t, nil)
	cl := setupFetchTopic(t, srv, "lp", 0)
	for i, v := range []int16{4, 12, maxFetchVersion} {
		t.Run(fmt.Sprintf("data-arrives-v%d", v), func(t *testing.T) {
			c := dialRaw(t, srv)
			req := fetchReq(srv, v, "lp", int64(i), 1<<20, 1<<20)
			req.MaxWaitMillis, req.MinBytes = 10000, 1
			sent := time.Now()
			corr := c.send(req)
			time.Sleep(300 * time.Millisecond) // let it park
			produced := time.Now()
			produceN(t, cl, "lp", 1)
			resp := c.recv(req, corr, 15*time.Second).(*kmsg.FetchResponse)
			answered := time.Now()
			p := onlyPartition(t, resp)
			if p.ErrorCode != 0 || countRecords(t, p.RecordBatches) != 1 {
				t.Fatalf("parked fetch: error %d, %d records; want the new record", p.ErrorCode, countRecords(t, p.RecordBatches))
			}
			if d := answered.Sub(produced); d > 5*time.Second {
				t.Errorf("parked fetch answered %v after the produce, want < 5 s", d.Round(time.Millisecond))
			}
			if d := answered.Sub(sent); d < 250*time.Millisecond {
				t.Errorf("fetch at the end answered after %v, before any data: it did not park", d)
			}
		})
	}
	end := int64(3)
	t.Run("idle", func(t *testing.T) {
		for _, v := range []int16{4, maxFetchVersion} {
			c := dialRaw(t, srv)
			req := fetchReq(srv, v, "lp", end, 1<<20, 1<<20)
			req.MaxWaitMillis, req.MinBytes = 1500, 1
			start := time.Now()
			p := onlyPartition(t, c.fetch(req))
			took := time.Since(start)
			t.Logf("v%d idle fetch answered after %v", v, took.Round(time.Millisecond))
			if took < 1400*time.Millisecond || took > 5*time.Second {
				t.Errorf("v%d: idle fetch with max_wait 1500 ms answered after %v, want 1.4–5 s", v, took.Round(time.Millisecond))
			}
			if p.ErrorCode != 0 || len(p.RecordBatches) != 0 || p.HighWatermark != end {
				t.Errorf("v%d idle fetch: error %d, %d bytes, hw %d", v, p.ErrorCode, len(p.RecordBatches), p.HighWatermark)
			}
		}
	})
	t.Run("min-bytes-unmet", func(t *testing.T) {
		c := dialRaw(t, srv)
		req := fetchReq(srv, maxFetchVersion, "lp", 0, 1<<20, 1<<20)
		req.MaxWaitMillis, req.MinBytes = 1500, 1<<20
		start := time.Now()
		p := onlyPartition(t, c.fetch(req))
		took := time.Since(start)
		if took < 1400*time.Millisecond || took > 5*time.Second {
			t.Errorf("min_bytes 1 MiB with a few bytes there: answered after %v, want 1.4–5 s", took.Round(time.Millisecond))
		}
		if p.ErrorCode != 0 || countRecords(t, p.RecordBatches) != int(end) {
			t.Errorf("min_bytes unmet: error %d, %d records; want all %d there", p.ErrorCode, countRecords(t, p.RecordBatches), end)
		}
	})
	t.Run("min-bytes-0", func(t *testing.T) {
		c := dialRaw(t, srv)
		req := fetchReq(srv, maxFetchVersion, "lp", end, 1<<20, 1<<20)
		req.MaxWaitMillis, req.MinBytes = 10000, 0
		start := time.Now()
		p := onlyPartition(t, c.fetch(req))
		if took := time.Since(start); took > time.Second {
			t.Errorf("min_bytes 0 at the end: answered after %v, want at once", took.Round(time.Millisecond))
		}
		if p.ErrorCode != 0 || len(p.RecordBatches) != 0 {
			t.Errorf("min_bytes 0 at the end: error %d, %d bytes", p.ErrorCode, len(p.RecordBatches))
		}
	})
}

// TestFetchParkedDoesNotBlockOthers: while fetches on several connections
// are parked for 10 s on an idle partition, another connection's
// ApiVersions, Metadata, Produce, ListOffsets and Fetch (max_wait 0) are
// each answered within 5 s (at once, in practice), as are a new kgo
// client's produce and consume; the parked fetches then end at their
// max_wait, empty.
func TestFetchParkedDoesNotBlockOthers(t *testing.T) {
	t.Parallel()
	srv := newTestServer(t, nil)
	setupFetchTopic(t, srv, "idle", 1)
	busy := setupFetchTopic(t, srv, "busy", 2)

	const parked = 4
	type park struct {
		c    *rawConn
		req  *kmsg.FetchRequest
		corr int32
	}
	var parks []park
	start := time.Now()
	for range parked {
		c := dialRaw(t, srv)
		req := fetchReq(srv, maxFetchVersion, "idle", 1, 1<<20, 1<<20)
		req.MaxWaitMillis, req.MinBytes = 10000, 1
		parks = append(parks, park{c, req, c.send(req)})
	}
	time.Sleep(200 * time.Millisecond) // parked

	other := dialRaw(t, srv)
	prompt := func(what string, req kmsg.Request) kmsg.Response {
		t.Helper()
		begin := time.Now()
		resp, err := other.tryRecv(req, other.send(req), 5*time.Second)
		if err != nil {
			t.Fatalf("%s while fetches are parked: %v", what, err)
		}
		t.Logf("%s answered in %v", what, time.Since(begin).Round(time.Microsecond))
		return resp
	}
	av := kmsg.NewPtrApiVersionsRequest()
	av.Version = 3
	av.ClientSoftwareName, av.ClientSoftwareVersion = "raw-test", "1"
	if resp := prompt("ApiVersions", av).(*kmsg.ApiVersionsResponse); resp.ErrorCode != 0 {
		t.Errorf("ApiVersions: error %d", resp.ErrorCode)
	}
	md := kmsg.NewPtrMetadataRequest()
	md.Version = 12
	mt := kmsg.NewMetadataRequestTopic()
	mt.Topic = kmsg.StringPtr("busy")
	md.Topics = append(md.Topics, mt)
	if resp := prompt("Metadata", md).(*kmsg.MetadataResponse); len(resp.Topics) != 1 || resp.Topics[0].ErrorCode != 0 {
		t.Errorf("Metadata: %+v", resp.Topics)
	}
	pr := produceReq(9, -1, "busy", 0, plainBatch(1).encode())
	if resp := prompt("Produce", pr).(*kmsg.ProduceResponse); resp.Topics[0].Partitions[0].ErrorCode != 0 || resp.Topics[0].Partitions[0].BaseOffset != 2 {
		t.Errorf("Produce: error %d base offset %d, want 0 and 2", resp.Topics[0].Partitions[0].ErrorCode, resp.Topics[0].Partitions[0].BaseOffset)
	}
	lo := kmsg.NewPtrListOffsetsRequest()
	lo.Version = 7
	lt := kmsg.NewListOffsetsRequestTopic()
	lt.Topic = "busy"
	lp := kmsg.NewListOffsetsRequestTopicPartition()
	lp.Timestamp = -1
	lt.Partitions = append(lt.Partitions, lp)
	lo.Topics = append(lo.Topics, lt)
	if resp := prompt("ListOffsets", lo).(*kmsg.ListOffsetsResponse); resp.Topics[0].Partitions[0].Offset != 3 {
		t.Errorf("ListOffsets latest: %d, want 3", resp.Topics[0].Partitions[0].Offset)
	}
	fr := fetchReq(srv, maxFetchVersion, "busy", 0, 1<<20, 1<<20)
	if p := onlyPartition(t, prompt("Fetch", fr).(*kmsg.FetchResponse)); p.ErrorCode != 0 || countRecords(t, p.RecordBatches) != 3 {
		t.Errorf("Fetch of busy: error %d, %d records", p.ErrorCode, countRecords(t, p.RecordBatches))
	}
	begin := time.Now()
	produceN(t, busy, "busy", 1)
	if got := consumeN(t, srv, "busy", 4); len(got) != 4 {
		t.Errorf("kgo consumed %d records, want 4", len(got))
	}
	if d := time.Since(begin); d > 5*time.Second {
		t.Errorf("kgo produce and consume took %v while fetches were parked", d.Round(time.Millisecond))
	}

	for i, pk := range parks {
		p := onlyPartition(t, pk.c.recv(pk.req, pk.corr, 20*time.Second).(*kmsg.FetchResponse))
		took := time.Since(start)
		if p.ErrorCode != 0 || len(p.RecordBatches) != 0 {
			t.Errorf("parked fetch %d: error %d, %d bytes", i, p.ErrorCode, len(p.RecordBatches))
		}
		if took < 9400*time.Millisecond {
			t.Errorf("parked fetch %d answered after %v, before its 10 s max_wait", i, took.Round(time.Millisecond))
		}
	}
	t.Logf("parked fetches answered after %v", time.Since(start).Round(time.Millisecond))
}

// TestFetchParkedConnectionClosed: a client that closes its connection
// while its fetch is parked (10 s) is let go at once: the broker drops the
// connection within 5 s rather than holding it, and the fetch's
// goroutines, until max_wait ends (the reader cancels the connection's
// context when the client goes away, which wakes the parked fetch).
func TestFetchParkedConnectionClosed(t *testing.T) {
	t.Parallel()
	srv := newTestServer(t, nil)
	setupFetchTopic(t, srv, "quiet", 1)
	conns := func() int {
		srv.mu.Lock()
		defer srv.mu.Unlock()
		return len(srv.mu.conns)
	}
	before := conns() // the setup's clients
	c := dialRaw(t, srv)
	req := fetchReq(srv, maxFetchVersion, "quiet", 1, 1<<20, 1<<20)
	req.MaxWaitMillis, req.MinBytes = 10000, 1
	c.send(req)
	// The broker registers the connection when it accepts it, which a
	// loaded machine may delay: wait for it rather than assume it.
	testenv.Eventually(t, 10*time.Second, "the broker has the fetch's connection", func() bool { return conns() == before+1 })
	time.Sleep(200 * time.Millisecond) // most often the fetch parks meanwhile; it need not
	c.nc.Close()
	start := time.Now()
	for conns() > before && time.Since(start) < 12*time.Second {
		time.Sleep(10 * time.Millisecond)
	}
	took := time.Since(start)
	t.Logf("connection dropped %v after the client closed it", took.Round(time.Millisecond))
	if took > 5*time.Second {
		t.Errorf("the broker held a closed connection with a parked fetch for %v (max_wait 10 s), want < 5 s", took.Round(time.Millisecond))
	}
}

// TestFetchParkedClientGoneStress parks fetches and drops their
// connections many times: the writer must neither panic on a fetch that
// had nothing to send (it once wrote an unencoded frame when its select
// picked "ready" before "done") nor leak; the broker keeps serving.
func TestFetchParkedClientGoneStress(t *testing.T) {
	t.Parallel()
	srv := newTestServer(t, nil)
	setupFetchTopic(t, srv, "gone", 1)
	req := kmsg.NewPtrFetchRequest()
	req.Version, req.ReplicaID, req.MaxBytes, req.MinBytes, req.MaxWaitMillis, req.SessionEpoch = 12, -1, 1<<20, 1<<20, 5000, -1
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = "gone"
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.PartitionMaxBytes, rp.CurrentLeaderEpoch = 1<<20, -1
	rt.Partitions = []kmsg.FetchRequestTopicPartition{rp}
	req.Topics = []kmsg.FetchRequestTopic{rt}
	frame := requestFrame(req, 12, 1)
	for i := 0; i < 60; i++ {
		nc, err := net.Dial("tcp", srv.Addr())
		if err != nil {
			t.Fatal(err)
		}
		if _, err := nc.Write(frame); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Duration(i%5) * time.Millisecond)
		nc.Close()
	}
	if _, err := newAdmin(t, srv).ApiVersions(testCtx(t)); err != nil {
		t.Fatalf("broker no longer serves: %v", err)
	}
}
