package broker

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func offsetForLeaderEpochReq(version int16, name string, p, current, epoch int32) *kmsg.OffsetForLeaderEpochRequest {
	req := kmsg.NewPtrOffsetForLeaderEpochRequest()
	req.Version, req.ReplicaID = version, -1
	rt := kmsg.NewOffsetForLeaderEpochRequestTopic()
	rt.Topic = name
	rp := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
	rp.Partition, rp.CurrentLeaderEpoch, rp.LeaderEpoch = p, current, epoch
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return req
}

func TestOffsetForLeaderEpoch(t *testing.T) {
	srv := newTestServer(t, nil)
	dataTopic(t, srv, "t", 1, nil)
	w := dialWire(t, srv)
	produceAt(t, w, "t", 1000, 2000) // offsets 0-5
	if resp := w.do(deleteRecordsReq(2, "t", 0, 2)).(*kmsg.DeleteRecordsResponse); resp.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatal(kerr.ErrorForCode(resp.Topics[0].Partitions[0].ErrorCode))
	}

	for _, tc := range []struct {
		name      string
		version   int16
		topic     string
		partition int32
		current   int32
		epoch     int32
		want      *kerr.Error
		leader    int32
		end       int64
	}{
		{"epoch 0", 4, "t", 0, 0, 0, nil, 0, 6},
		{"epoch 0 no current", 4, "t", 0, -1, 0, nil, 0, 6},
		{"epoch 0 v0", 0, "t", 0, 0, 0, nil, -1, 6},
		{"epoch 0 v2", 2, "t", 0, 0, 0, nil, 0, 6},
		{"future epoch", 4, "t", 0, 0, 3, nil, -1, -1},
		{"undefined epoch", 4, "t", 0, 0, -1, nil, -1, -1},
		{"older than any", 4, "t", 0, 0, -2, nil, -2, 2},
		{"newer current", 4, "t", 0, 1, 0, kerr.UnknownLeaderEpoch, -1, -1},
		{"fenced current", 3, "t", 0, -2, 0, kerr.FencedLeaderEpoch, -1, -1},
		{"current ignored v1", 1, "t", 0, 5, 0, nil, 0, 6},
		{"unknown topic", 4, "nope", 0, -1, 0, kerr.UnknownTopicOrPartition, -1, -1},
		{"unknown partition", 4, "t", 1, -1, 0, kerr.UnknownTopicOrPartition, -1, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := w.do(offsetForLeaderEpochReq(tc.version, tc.topic, tc.partition, tc.current, tc.epoch)).(*kmsg.OffsetForLeaderEpochResponse)
			sp := resp.Topics[0].Partitions[0]
			var want int16
			if tc.want != nil {
				want = tc.want.Code
			}
			if sp.ErrorCode != want || sp.LeaderEpoch != tc.leader || sp.EndOffset != tc.end || sp.Partition != tc.partition {
				t.Fatalf("got %v epoch %d end %d, want %v %d %d", kerr.ErrorForCode(sp.ErrorCode), sp.LeaderEpoch, sp.EndOffset, tc.want, tc.leader, tc.end)
			}
		})
	}
}
