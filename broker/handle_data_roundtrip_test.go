package broker

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestDataRoundTrip checks, at every version served, that the responses of
// ApiVersions, Produce, ListOffsets, InitProducerId, DeleteRecords and
// OffsetForLeaderEpoch re-encode byte for byte after decoding. (Fetch has
// its own differential test against kmsg in protocol/.)
func TestDataRoundTrip(t *testing.T) {
	srv := newTestServer(t, nil)
	if _, err := srv.Topics().Create("rt", 2, nil, false); err != nil {
		t.Fatal(err)
	}
	tp, _ := srv.Topics().Get("rt")
	batch := benchBatch(3, 10)

	checkRoundTrip(t, srv, func(int16) kmsg.Request { return kmsg.NewPtrApiVersionsRequest() })
	checkRoundTrip(t, srv, func(v int16) kmsg.Request {
		req := kmsg.NewPtrProduceRequest()
		req.Acks, req.TimeoutMillis = 1, 5000
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic, rt.TopicID = "rt", tp.ID
		for p := int32(0); p < 3; p++ { // partition 2 does not exist: an error entry
			rp := kmsg.NewProduceRequestTopicPartition()
			rp.Partition, rp.Records = p, append([]byte(nil), batch...)
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
		return req
	})
	checkRoundTrip(t, srv, func(int16) kmsg.Request {
		req := kmsg.NewPtrListOffsetsRequest()
		req.ReplicaID = -1
		rt := kmsg.NewListOffsetsRequestTopic()
		rt.Topic = "rt"
		for _, ts := range []int64{-1, -2, 0} {
			rp := kmsg.NewListOffsetsRequestTopicPartition()
			rp.Timestamp, rp.CurrentLeaderEpoch = ts, -1
			rt.Partitions = append(rt.Partitions, rp)
		}
		rt.Partitions[1].Partition, rt.Partitions[2].Partition = 1, 5
		req.Topics = append(req.Topics, rt)
		return req
	})
	checkRoundTrip(t, srv, func(int16) kmsg.Request {
		req := kmsg.NewPtrInitProducerIDRequest()
		req.ProducerID, req.ProducerEpoch = -1, -1
		return req
	})
	checkRoundTrip(t, srv, func(int16) kmsg.Request {
		req := kmsg.NewPtrDeleteRecordsRequest()
		rt := kmsg.NewDeleteRecordsRequestTopic()
		rt.Topic = "rt"
		rp := kmsg.NewDeleteRecordsRequestTopicPartition()
		rp.Offset = -1
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		return req
	})
	checkRoundTrip(t, srv, func(int16) kmsg.Request {
		req := kmsg.NewPtrOffsetForLeaderEpochRequest()
		req.ReplicaID = -1
		rt := kmsg.NewOffsetForLeaderEpochRequestTopic()
		rt.Topic = "rt"
		rp := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
		rp.CurrentLeaderEpoch, rp.LeaderEpoch = -1, 0
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		return req
	})
}
