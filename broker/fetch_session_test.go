package broker

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
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
