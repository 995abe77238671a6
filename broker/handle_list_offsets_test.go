package broker

import (
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func listOffsetsReq(version int16, name string, p int32, ts int64) *kmsg.ListOffsetsRequest {
	req := kmsg.NewPtrListOffsetsRequest()
	req.Version = version
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = name
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Partition, rp.Timestamp = p, ts
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return req
}

func listOffsetsPart(t testing.TB, resp kmsg.Response) kmsg.ListOffsetsResponseTopicPartition {
	t.Helper()
	r := resp.(*kmsg.ListOffsetsResponse)
	if len(r.Topics) != 1 || len(r.Topics[0].Partitions) != 1 {
		t.Fatalf("got %d topics in list offsets response", len(r.Topics))
	}
	return r.Topics[0].Partitions[0]
}

// produceAt writes batches of 3 records whose first records carry the given
// timestamps (the others +1 and +2 ms).
func produceAt(t *testing.T, w *wireConn, name string, timestamps ...int64) {
	t.Helper()
	for _, ts := range timestamps {
		b := plainBatch(3)
		b.baseTimestamp = ts
		if sp := producePart(t, w.do(produceReq(9, -1, name, 0, b.encode()))); sp.ErrorCode != 0 {
			t.Fatalf("produce: %v", kerr.ErrorForCode(sp.ErrorCode))
		}
	}
}

func TestListOffsets(t *testing.T) {
	srv := newTestServer(t, nil)
	dataTopic(t, srv, "t", 1, nil)
	dataTopic(t, srv, "empty", 1, nil)
	w := dialWire(t, srv)
	// Offsets 0-2 at 1000-1002, 3-5 at 3000-3002, 6-8 at 2000-2002.
	produceAt(t, w, "t", 1000, 3000, 2000)

	for _, tc := range []struct {
		name      string
		version   int16
		topic     string
		partition int32
		ts        int64
		epoch     int32 // CurrentLeaderEpoch
		want      *kerr.Error
		offset    int64
		timestamp int64
		leader    int32
	}{
		{"earliest", 9, "t", 0, -2, -1, nil, 0, -1, 0},
		{"latest", 9, "t", 0, -1, -1, nil, 9, -1, 0},
		{"latest v1", 1, "t", 0, -1, -1, nil, 9, -1, -1},
		{"exact time", 9, "t", 0, 2000, -1, nil, 3, 3000, 0},
		{"between records", 9, "t", 0, 1001, -1, nil, 1, 1001, 0},
		{"after batch", 9, "t", 0, 1003, -1, nil, 3, 3000, 0},
		{"after all", 9, "t", 0, 5000, -1, nil, -1, -1, -1},
		{"max timestamp", 9, "t", 0, -3, -1, nil, 5, 3002, 0},
		{"max timestamp v6", 6, "t", 0, -3, -1, kerr.UnsupportedVersion, -1, -1, -1},
		{"earliest local", 9, "t", 0, -4, -1, nil, 0, -1, 0},
		{"latest tiered", 9, "t", 0, -5, -1, nil, -1, -1, -1},
		{"latest tiered v8", 8, "t", 0, -5, -1, kerr.UnsupportedVersion, -1, -1, -1},
		{"earliest pending upload", 11, "t", 0, -6, -1, nil, -1, -1, -1},
		{"unknown special", 11, "t", 0, -7, -1, kerr.UnsupportedVersion, -1, -1, -1},
		{"empty latest", 9, "empty", 0, -1, -1, nil, 0, -1, 0},
		{"empty max timestamp", 9, "empty", 0, -3, -1, nil, -1, -1, -1},
		{"empty by time", 9, "empty", 0, 0, -1, nil, -1, -1, -1},
		{"unknown topic", 9, "nope", 0, -1, -1, kerr.UnknownTopicOrPartition, -1, -1, -1},
		{"unknown partition", 9, "t", 3, -1, -1, kerr.UnknownTopicOrPartition, -1, -1, -1},
		{"current epoch 0", 9, "t", 0, -1, 0, nil, 9, -1, 0},
		{"newer epoch", 9, "t", 0, -1, 1, kerr.UnknownLeaderEpoch, -1, -1, -1},
		{"fenced epoch", 9, "t", 0, -1, -3, kerr.FencedLeaderEpoch, -1, -1, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := listOffsetsReq(tc.version, tc.topic, tc.partition, tc.ts)
			req.Topics[0].Partitions[0].CurrentLeaderEpoch = tc.epoch
			sp := listOffsetsPart(t, w.do(req))
			var want int16
			if tc.want != nil {
				want = tc.want.Code
			}
			if sp.ErrorCode != want || sp.Offset != tc.offset || sp.Timestamp != tc.timestamp || sp.LeaderEpoch != tc.leader {
				t.Fatalf("got %v offset %d timestamp %d epoch %d, want %v %d %d %d",
					kerr.ErrorForCode(sp.ErrorCode), sp.Offset, sp.Timestamp, sp.LeaderEpoch, tc.want, tc.offset, tc.timestamp, tc.leader)
			}
		})
	}
}

// TestListOffsetsRequestErrors: duplicates and a bad isolation level are
// INVALID_REQUEST, a partition named twice answered once and a topic
// named twice in one entry, as Kafka answers them; without transactions
// READ_COMMITTED answers like READ_UNCOMMITTED.
func TestListOffsetsRequestErrors(t *testing.T) {
	srv := newTestServer(t, nil)
	dataTopic(t, srv, "t", 2, nil)
	w := dialWire(t, srv)
	produceAt(t, w, "t", 1000)

	req := listOffsetsReq(7, "t", 0, -1)
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Partition, rp.Timestamp = 1, -1
	req.Topics[0].Partitions = append(req.Topics[0].Partitions, req.Topics[0].Partitions[0], rp)
	resp := w.do(req).(*kmsg.ListOffsetsResponse)
	var got []string
	for _, p := range resp.Topics[0].Partitions {
		got = append(got, fmt.Sprintf("%d:%v:%d", p.Partition, kerr.ErrorForCode(p.ErrorCode), p.Offset))
	}
	want := fmt.Sprintf("[0:%v:-1 1:<nil>:0]", kerr.InvalidRequest)
	if len(resp.Topics) != 1 || fmt.Sprint(got) != want {
		t.Fatalf("%d topics, got %v, want one with %v", len(resp.Topics), got, want)
	}

	// The topic twice, partition 1 then 0 and 0 again: one topic, each
	// partition once, 0 refused as named twice.
	twice := listOffsetsReq(7, "t", 1, -1)
	again := listOffsetsReq(7, "t", 0, -1).Topics[0]
	twice.Topics = append(twice.Topics, again, again)
	resp = w.do(twice).(*kmsg.ListOffsetsResponse)
	got = got[:0]
	for _, rt := range resp.Topics {
		for _, p := range rt.Partitions {
			got = append(got, fmt.Sprintf("%s/%d:%v:%d", rt.Topic, p.Partition, kerr.ErrorForCode(p.ErrorCode), p.Offset))
		}
	}
	want = fmt.Sprintf("[t/1:<nil>:0 t/0:%v:-1]", kerr.InvalidRequest)
	if len(resp.Topics) != 1 || fmt.Sprint(got) != want {
		t.Fatalf("topic twice: %d topics, got %v, want one with %v", len(resp.Topics), got, want)
	}

	committed := listOffsetsReq(7, "t", 0, -1)
	committed.IsolationLevel = 1
	if sp := listOffsetsPart(t, w.do(committed)); sp.ErrorCode != 0 || sp.Offset != 3 {
		t.Fatalf("read committed: %v offset %d", kerr.ErrorForCode(sp.ErrorCode), sp.Offset)
	}
	bad := listOffsetsReq(7, "t", 0, -1)
	bad.IsolationLevel = 2
	if sp := listOffsetsPart(t, w.do(bad)); sp.ErrorCode != kerr.InvalidRequest.Code {
		t.Fatalf("isolation level 2: %v", kerr.ErrorForCode(sp.ErrorCode))
	}
}

// TestListOffsetsSyncHighWatermark: in sync mode latest is the flushed
// high watermark, which an acks=-1 response has already reached.
func TestListOffsetsSyncHighWatermark(t *testing.T) {
	srv := newTestServer(t, func(c *Config) { c.FlushMode = "sync" })
	dataTopic(t, srv, "t", 1, nil)
	w := dialWire(t, srv)
	produceAt(t, w, "t", 1000, 2000)
	if got := latestOffset(t, w, "t", 0); got != 6 {
		t.Fatalf("latest %d, want 6", got)
	}
}
