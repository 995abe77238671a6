package broker

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/partition"
	"github.com/kbroker/kbroker/topic"
)

// sessionFetch builds a fetch of topic's partitions 0..n-1 with session
// fields (MaxWait 0: answer at once).
func sessionFetch(srv *InProcess, topic string, n int32, id, epoch int32, offsets ...int64) *kmsg.FetchRequest {
	req := kmsg.NewPtrFetchRequest()
	req.ReplicaID, req.MaxBytes, req.SessionID, req.SessionEpoch = -1, 1<<20, id, epoch
	if len(offsets) > 0 {
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic = topic
		tp, _ := srv.Topics().Get(topic)
		rt.TopicID = tp.ID
		for p := int32(0); p < n; p++ {
			rp := kmsg.NewFetchRequestTopicPartition()
			rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes, rp.CurrentLeaderEpoch = p, offsets[p], 1<<20, -1
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
	}
	return req
}

func partitionsIn(resp *kmsg.FetchResponse) int {
	n := 0
	for _, t := range resp.Topics {
		n += len(t.Partitions)
	}
	return n
}

func TestFetchSessions(t *testing.T) {
	srv := newTestServer(t, func(c *Config) { c.FetchSessionCacheSlots = 2 })
	adm := newAdmin(t, srv)
	if _, err := adm.CreateTopic(testCtx(t), 3, 1, nil, "s"); err != nil {
		t.Fatal(err)
	}
	cl := newClient(t, srv, kgo.DefaultProduceTopic("s"), kgo.RecordPartitioner(kgo.ManualPartitioner()))

	// A full fetch (epoch 0) opens a session and answers every partition.
	resp := rawFetch(t, cl, sessionFetch(srv, "s", 3, 0, 0, 0, 0, 0))
	if resp.ErrorCode != 0 || resp.SessionID == 0 || partitionsIn(resp) != 3 {
		t.Fatalf("full fetch: error %d session %d partitions %d", resp.ErrorCode, resp.SessionID, partitionsIn(resp))
	}
	id := resp.SessionID

	// Nothing changed: the incremental answer is empty.
	resp = rawFetch(t, cl, sessionFetch(srv, "s", 3, id, 1))
	if resp.ErrorCode != 0 || partitionsIn(resp) != 0 {
		t.Fatalf("idle incremental: error %d, %d partitions", resp.ErrorCode, partitionsIn(resp))
	}

	// New data in partition 1 only: only it is answered.
	if err := cl.ProduceSync(testCtx(t), &kgo.Record{Partition: 1, Value: []byte("x")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	resp = rawFetch(t, cl, sessionFetch(srv, "s", 3, id, 2))
	if partitionsIn(resp) != 1 || resp.Topics[0].Partitions[0].Partition != 1 || len(resp.Topics[0].Partitions[0].RecordBatches) == 0 {
		t.Fatalf("incremental with data: %d partitions", partitionsIn(resp))
	}

	// Wrong epoch, unknown session.
	if resp = rawFetch(t, cl, sessionFetch(srv, "s", 3, id, 7)); resp.ErrorCode != kerr.InvalidFetchSessionEpoch.Code {
		t.Fatalf("wrong epoch: error %d", resp.ErrorCode)
	}
	if resp = rawFetch(t, cl, sessionFetch(srv, "s", 3, id+1, 1)); resp.ErrorCode != kerr.FetchSessionIDNotFound.Code {
		t.Fatalf("unknown session: error %d", resp.ErrorCode)
	}

	// Epoch -1 closes the session (and is a sessionless full fetch).
	resp = rawFetch(t, cl, sessionFetch(srv, "s", 3, id, -1, 0, 1, 0))
	if resp.ErrorCode != 0 || resp.SessionID != 0 || partitionsIn(resp) != 3 {
		t.Fatalf("close: error %d session %d partitions %d", resp.ErrorCode, resp.SessionID, partitionsIn(resp))
	}
	if resp = rawFetch(t, cl, sessionFetch(srv, "s", 3, id, 3)); resp.ErrorCode != kerr.FetchSessionIDNotFound.Code {
		t.Fatalf("closed session: error %d", resp.ErrorCode)
	}

	// The cache holds 2 sessions: a third evicts the least recently used.
	var ids []int32
	for i := 0; i < 3; i++ {
		ids = append(ids, rawFetch(t, cl, sessionFetch(srv, "s", 3, 0, 0, 0, 0, 0)).SessionID)
	}
	if resp = rawFetch(t, cl, sessionFetch(srv, "s", 3, ids[0], 1)); resp.ErrorCode != kerr.FetchSessionIDNotFound.Code {
		t.Fatalf("evicted session: error %d", resp.ErrorCode)
	}
	if resp = rawFetch(t, cl, sessionFetch(srv, "s", 3, ids[2], 1)); resp.ErrorCode != 0 {
		t.Fatalf("newest session: error %d", resp.ErrorCode)
	}
}

// TestFetchSessionSkipsMatchFullReads: an incremental session that skips
// the partitions with no change answers exactly as one that reads every
// partition, fetch after fetch, while records arrive, log start offsets
// move (DeleteRecords), clients move their offsets and run out of range.
func TestFetchSessionSkipsMatchFullReads(t *testing.T) {
	const parts = 20
	srv := newTestServer(t, nil)
	tp, err := srv.Topics().Create("d", parts, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	cl := newClient(t, srv)
	rng := rand.New(rand.NewPCG(1, 2))
	send := func(req *kmsg.FetchRequest) *kmsg.FetchResponse { return rawFetch(t, cl, req) }
	skipping, reading := openSessionTwin(t, srv, tp, false, send), openSessionTwin(t, srv, tp, true, send)
	for step := range 300 {
		switch r := rng.IntN(10); {
		case r < 5:
			for range 1 + rng.IntN(3) {
				p := srv.Store().Partition(partition.TopicID(tp.ID), int32(rng.IntN(parts)))
				if _, err := p.Append(benchBatch(1+rng.IntN(3), 10), 9, 0); err != nil {
					t.Fatal(err)
				}
			}
		case r < 6:
			p := srv.Store().Partition(partition.TopicID(tp.ID), int32(rng.IntN(parts)))
			if _, err := p.DeleteRecords(-1); err != nil {
				t.Fatal(err)
			}
		}
		got, want := skipping.fetch(t), reading.fetch(t)
		if !slices.Equal(got, want) {
			t.Fatalf("step %d: skipping session answered\n%v\nreading session answered\n%v", step, got, want)
		}
	}
}

// sessionTwin is an incremental fetch session over every partition of one
// topic, driven as a client drives it. The skip tests open two, one that
// skips unchanged partitions and one that reads them all (readAll), and
// require the same answers from both.
type sessionTwin struct {
	srv     *InProcess
	tp      topic.Topic
	send    func(*kmsg.FetchRequest) *kmsg.FetchResponse
	id      int32
	epoch   int32
	offsets []int64
	named   map[int32]bool // partitions to name in the next request
}

// openSessionTwin opens a session on tp from offset 0 through send.
func openSessionTwin(t *testing.T, srv *InProcess, tp topic.Topic, readAll bool, send func(*kmsg.FetchRequest) *kmsg.FetchResponse) *sessionTwin {
	t.Helper()
	c := &sessionTwin{srv: srv, tp: tp, send: send, offsets: make([]int64, tp.Partitions), named: map[int32]bool{}}
	resp := send(sessionFetch(srv, tp.Name, tp.Partitions, 0, 0, c.offsets...))
	if resp.ErrorCode != 0 || resp.SessionID == 0 {
		t.Fatalf("open session: error %d", resp.ErrorCode)
	}
	c.id, c.epoch = resp.SessionID, 1
	if readAll {
		s := srv.sessions.get(c.id)
		s.mu.Lock()
		s.readAll = true
		s.mu.Unlock()
	}
	return c
}

// fetch sends the next incremental request and moves the offsets as a
// client would; it returns a comparable summary of the answer.
func (c *sessionTwin) fetch(t *testing.T) []string {
	t.Helper()
	req := sessionFetch(c.srv, c.tp.Name, 0, c.id, c.epoch)
	if len(c.named) > 0 {
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic, rt.TopicID = c.tp.Name, c.tp.ID
		for p := range c.tp.Partitions {
			if c.named[p] {
				rp := kmsg.NewFetchRequestTopicPartition()
				rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes, rp.CurrentLeaderEpoch = p, c.offsets[p], 1<<20, -1
				rt.Partitions = append(rt.Partitions, rp)
			}
		}
		req.Topics = []kmsg.FetchRequestTopic{rt}
	}
	clear(c.named)
	c.epoch++
	resp := c.send(req)
	if resp.ErrorCode != 0 {
		t.Fatalf("session %d: error %d", c.id, resp.ErrorCode)
	}
	var out []string
	for _, rt := range resp.Topics {
		for _, rp := range rt.Partitions {
			out = append(out, fmt.Sprintf("%d err=%d hw=%d lso=%d start=%d bytes=%d leader=%d/%d", rp.Partition, rp.ErrorCode,
				rp.HighWatermark, rp.LastStableOffset, rp.LogStartOffset, len(rp.RecordBatches),
				rp.CurrentLeader.LeaderID, rp.CurrentLeader.LeaderEpoch))
			switch {
			case rp.ErrorCode == kerr.OffsetOutOfRange.Code:
				c.offsets[rp.Partition], c.named[rp.Partition] = c.srv.Store().Partition(partition.TopicID(c.tp.ID), rp.Partition).LogStartOffset(), true
			case len(rp.RecordBatches) > 0:
				c.offsets[rp.Partition], c.named[rp.Partition] = rp.HighWatermark, true
			}
		}
	}
	slices.Sort(out)
	return out
}

// TestFetchSessionParkedWakesOnSkippedPartition: a parked incremental
// fetch that skipped every partition answers as soon as one of them gets
// records, with that partition only.
func TestFetchSessionParkedWakesOnSkippedPartition(t *testing.T) {
	const parts = 30
	srv := newTestServer(t, nil)
	tp, err := srv.Topics().Create("w", parts, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	cl := newClient(t, srv)
	resp := rawFetch(t, cl, sessionFetch(srv, "w", parts, 0, 0, make([]int64, parts)...))
	id := resp.SessionID
	if partitionsIn(rawFetch(t, cl, sessionFetch(srv, "w", parts, id, 1))) != 0 {
		t.Fatal("idle incremental fetch answered partitions")
	}
	req := sessionFetch(srv, "w", parts, id, 2)
	req.MaxWaitMillis, req.MinBytes = 60_000, 1
	done := make(chan *kmsg.FetchResponse, 1)
	go func() {
		resp, err := req.RequestWith(testCtx(t), cl)
		if err != nil {
			t.Error(err)
		}
		done <- resp
	}()
	p := srv.Store().Partition(partition.TopicID(tp.ID), 17)
	if _, err := p.Append(benchBatch(1, 10), 9, 0); err != nil {
		t.Fatal(err)
	}
	resp = <-done
	if resp == nil {
		return
	}
	if partitionsIn(resp) != 1 || resp.Topics[0].Partitions[0].Partition != 17 || len(resp.Topics[0].Partitions[0].RecordBatches) == 0 {
		t.Fatalf("woken fetch: %d partitions, want partition 17 with its record", partitionsIn(resp))
	}
}
