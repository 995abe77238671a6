package broker

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func quorumReq(version int16, name string, parts ...int32) *kmsg.DescribeQuorumRequest {
	req := kmsg.NewPtrDescribeQuorumRequest()
	req.Version = version
	rt := kmsg.NewDescribeQuorumRequestTopic()
	rt.Topic = name
	for _, p := range parts {
		rp := kmsg.NewDescribeQuorumRequestTopicPartition()
		rp.Partition = p
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	return req
}

// TestDescribeQuorum checks the answer of a one-voter quorum led by this
// node, and the partition-level errors for anything but
// __cluster_metadata-0.
func TestDescribeQuorum(t *testing.T) {
	srv := newTestServer(t, func(c *Config) { c.NodeID = 3 })
	w := dialWire(t, srv)
	before := time.Now().UnixMilli()
	for v := int16(0); v <= 2; v++ {
		resp := w.do(quorumReq(v, "__cluster_metadata", 0)).(*kmsg.DescribeQuorumResponse)
		if resp.ErrorCode != 0 || len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
			t.Fatalf("v%d: %+v", v, resp)
		}
		p := resp.Topics[0].Partitions[0]
		if p.ErrorCode != 0 || p.LeaderID != 3 || p.LeaderEpoch != quorumLeaderEpoch || len(p.CurrentVoters) != 1 || len(p.Observers) != 0 {
			t.Fatalf("v%d partition: %+v", v, p)
		}
		voter := p.CurrentVoters[0]
		if voter.ReplicaID != 3 || voter.LogEndOffset != p.HighWatermark {
			t.Errorf("v%d voter %+v, high watermark %d", v, voter, p.HighWatermark)
		}
		if v >= 1 && (voter.LastFetchTimestamp < before || voter.LastCaughtUpTimestamp < before) {
			t.Errorf("v%d: the leader's timestamps %d/%d are not the current time (>= %d)", v, voter.LastFetchTimestamp, voter.LastCaughtUpTimestamp, before)
		}
		if v >= 2 {
			if len(resp.Nodes) != 1 || resp.Nodes[0].NodeID != 3 || len(resp.Nodes[0].Listeners) != 1 ||
				resp.Nodes[0].Listeners[0].Port == 0 || resp.Nodes[0].Listeners[0].Host == "" {
				t.Errorf("v2 nodes: %+v", resp.Nodes)
			}
		}
	}
	for _, req := range []*kmsg.DescribeQuorumRequest{
		quorumReq(2, "__cluster_metadata", 1),
		quorumReq(2, "__cluster_metadata", 0, 0),
		quorumReq(2, "other", 0),
	} {
		resp := w.do(req).(*kmsg.DescribeQuorumResponse)
		for _, rp := range resp.Topics[0].Partitions {
			if rp.ErrorCode != kerr.UnknownTopicOrPartition.Code || rp.ErrorMessage == nil {
				t.Errorf("%s %+v: %+v, want UNKNOWN_TOPIC_OR_PARTITION", req.Topics[0].Topic, req.Topics[0].Partitions, rp)
			}
		}
		if len(resp.Topics[0].Partitions) != len(req.Topics[0].Partitions) {
			t.Errorf("answered %d partitions of %d", len(resp.Topics[0].Partitions), len(req.Topics[0].Partitions))
		}
	}
}
