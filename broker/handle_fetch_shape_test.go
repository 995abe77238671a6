package broker

// The shape of a fetch response for requests Kafka answers in its own
// way, found by the differential tests (integration/diff_fetch_edges_test.go):
// a partition named twice, an unknown partition or topic among known
// ones, a topic named twice or with no partitions; LastFetchedEpoch and
// its diverging epoch (v12+), and a fetch claiming to come from a follower.

import (
	"encoding/binary"
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// shapeTopic makes topic "s" with two partitions: three one-record
// batches in partition 0, one in partition 1; and topic "other", empty.
func shapeTopic(t *testing.T, srv *InProcess) {
	t.Helper()
	dataTopic(t, srv, "s", 2, nil)
	dataTopic(t, srv, "other", 1, nil)
	w := dialWire(t, srv)
	for _, p := range []int32{0, 0, 0, 1} {
		if sp := producePart(t, w.do(produceReq(9, -1, "s", p, plainBatch(1).encode()))); sp.ErrorCode != 0 {
			t.Fatalf("produce: %v", kerr.ErrorForCode(sp.ErrorCode))
		}
	}
}

// shapeOf renders a fetch response as topic/partition:error@first offset
// entries, topic by topic.
func shapeOf(srv *InProcess, resp *kmsg.FetchResponse) string {
	var out []string
	for _, rt := range resp.Topics {
		name := rt.Topic
		if tp, ok := srv.Topics().ByID(rt.TopicID); ok && name == "" {
			name = tp.Name
		} else if name == "" {
			name = "?"
		}
		var parts []string
		for _, p := range rt.Partitions {
			first := int64(-1)
			if len(p.RecordBatches) >= 8 {
				first = int64(binary.BigEndian.Uint64(p.RecordBatches))
			}
			parts = append(parts, fmt.Sprintf("%d:%d@%d", p.Partition, p.ErrorCode, first))
		}
		out = append(out, fmt.Sprintf("%s%v", name, parts))
	}
	return fmt.Sprint(out)
}

// TestFetchResponseShape: as Kafka, a partition named twice is answered
// once, where first named, from its last naming's offset; partitions
// refused before the read (unknown ones, unknown topics) come after those
// read; neighbouring partitions of one topic share a topic entry even
// when the request named the topic twice; a topic with no partitions is
// not answered.
func TestFetchResponseShape(t *testing.T) {
	t.Parallel()
	srv := newTestServer(t, nil)
	shapeTopic(t, srv)
	for _, v := range []int16{4, 12, 13, maxFetchVersion} {
		t.Run(fmt.Sprintf("v%d", v), func(t *testing.T) {
			c := dialRaw(t, srv)
			// topics builds a request of topic entries, each "name" with
			// partitions at offsets (partition, offset pairs).
			type entry struct {
				name  string
				parts [][2]int64
			}
			req := func(entries ...entry) *kmsg.FetchRequest {
				r := fetchReq(srv, v, "s", 0, 1<<20, 1<<20)
				r.Topics = nil
				for _, e := range entries {
					rt := kmsg.NewFetchRequestTopic()
					rt.Topic = e.name
					if tp, ok := srv.Topics().Get(e.name); ok {
						rt.TopicID = tp.ID
					} else {
						rt.TopicID = [16]byte{0xfe, 0xed}
					}
					for _, po := range e.parts {
						rp := kmsg.NewFetchRequestTopicPartition()
						rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes = int32(po[0]), po[1], 1<<20
						rt.Partitions = append(rt.Partitions, rp)
					}
					r.Topics = append(r.Topics, rt)
				}
				return r
			}
			unknownTopic := kerr.UnknownTopicOrPartition.Code
			missing := "missing"
			if v >= 13 {
				unknownTopic, missing = kerr.UnknownTopicID.Code, "?"
			}
			for _, tc := range []struct {
				name string
				req  *kmsg.FetchRequest
				want string
			}{
				{"a partition twice", req(entry{"s", [][2]int64{{0, 0}, {1, 0}, {0, 2}}}), "[s[0:0@2 1:0@0]]"},
				{"an unknown partition first", req(entry{"s", [][2]int64{{9, 0}, {0, 1}}}), "[s[0:0@1 9:3@-1]]"},
				{"a topic twice around an unknown one",
					req(entry{"s", [][2]int64{{0, 0}}}, entry{"missing", [][2]int64{{0, 0}}}, entry{"s", [][2]int64{{1, 0}}}),
					fmt.Sprintf("[s[0:0@0 1:0@0] %s[0:%d@-1]]", missing, unknownTopic)},
				{"a topic without partitions", req(entry{"s", [][2]int64{{1, 0}}}, entry{"other", nil}), "[s[1:0@0]]"},
			} {
				if got := shapeOf(srv, c.fetch(tc.req)); got != tc.want {
					t.Errorf("%s: %s, want %s", tc.name, got, tc.want)
				}
			}
		})
	}
}

// TestFetchLastFetchedEpoch: a consumer's LastFetchedEpoch (v12+) is
// checked as Kafka's Partition.readRecords does: epoch 0, the only one,
// reads as usual up to the log end, and past it answers the diverging
// epoch (epoch 0 ending at the log end) with the watermarks and no
// records; a newer epoch is OFFSET_OUT_OF_RANGE; -1 is no check.
func TestFetchLastFetchedEpoch(t *testing.T) {
	t.Parallel()
	srv := newTestServer(t, nil)
	setupFetchTopic(t, srv, "l", 3)
	for _, v := range []int16{12, maxFetchVersion} {
		t.Run(fmt.Sprintf("v%d", v), func(t *testing.T) {
			c := dialRaw(t, srv)
			fetch := func(offset int64, lastFetched int32) kmsg.FetchResponseTopicPartition {
				req := fetchReq(srv, v, "l", offset, 1<<20, 1<<20)
				req.Topics[0].Partitions[0].LastFetchedEpoch = lastFetched
				return onlyPartition(t, c.fetch(req))
			}
			for _, lf := range []int32{-1, 0} {
				if p := fetch(1, lf); p.ErrorCode != 0 || countRecords(t, p.RecordBatches) != 2 || p.DivergingEpoch.Epoch != -1 {
					t.Errorf("last fetched %d: error %d, %d records, diverging epoch %d", lf, p.ErrorCode, countRecords(t, p.RecordBatches), p.DivergingEpoch.Epoch)
				}
			}
			if p := fetch(3, 0); p.ErrorCode != 0 || len(p.RecordBatches) != 0 || p.DivergingEpoch.Epoch != -1 {
				t.Errorf("last fetched 0 at the end: error %d, %d bytes, diverging epoch %d", p.ErrorCode, len(p.RecordBatches), p.DivergingEpoch.Epoch)
			}
			p := fetch(5, 0)
			if p.ErrorCode != 0 || len(p.RecordBatches) != 0 || p.HighWatermark != 3 || p.LogStartOffset != 0 ||
				p.DivergingEpoch.Epoch != 0 || p.DivergingEpoch.EndOffset != 3 {
				t.Errorf("last fetched 0 past the end: error %d, %d bytes, hw %d, start %d, diverging epoch %d end %d, want epoch 0 ending at 3",
					p.ErrorCode, len(p.RecordBatches), p.HighWatermark, p.LogStartOffset, p.DivergingEpoch.Epoch, p.DivergingEpoch.EndOffset)
			}
			wantFetchError(t, "last fetched 1", fetch(1, 1), kerr.OffsetOutOfRange.Code)
		})
	}
}

// TestFetchFromFollower: a fetch from a replica id or state of a follower
// is NOT_LEADER_OR_FOLLOWER (one node has no followers), naming this node
// as the leader at epoch 0 from v16 (KIP-951), as Kafka answers it.
func TestFetchFromFollower(t *testing.T) {
	t.Parallel()
	srv := newTestServer(t, func(c *Config) { c.NodeID = 3 })
	setupFetchTopic(t, srv, "f", 1)
	c := dialRaw(t, srv)
	for _, v := range []int16{4, 15, 16, maxFetchVersion} {
		req := fetchReq(srv, v, "f", 0, 1<<20, 1<<20)
		req.ReplicaID, req.ReplicaState.ID, req.ReplicaState.Epoch = 5, 5, 1
		p := onlyPartition(t, c.fetch(req))
		wantFetchError(t, fmt.Sprintf("v%d follower", v), p, kerr.NotLeaderForPartition.Code)
		leader, epoch := int32(-1), int32(-1)
		if v >= 16 {
			leader, epoch = 3, 0
		}
		if p.CurrentLeader.LeaderID != leader || p.CurrentLeader.LeaderEpoch != epoch {
			t.Errorf("v%d follower: current leader %d epoch %d, want %d %d", v, p.CurrentLeader.LeaderID, p.CurrentLeader.LeaderEpoch, leader, epoch)
		}
	}
}
