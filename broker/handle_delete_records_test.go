package broker

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/topic"
)

func deleteRecordsReq(version int16, name string, p int32, offset int64) *kmsg.DeleteRecordsRequest {
	req := kmsg.NewPtrDeleteRecordsRequest()
	req.Version = version
	rt := kmsg.NewDeleteRecordsRequestTopic()
	rt.Topic = name
	rp := kmsg.NewDeleteRecordsRequestTopicPartition()
	rp.Partition, rp.Offset = p, offset
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return req
}

func TestDeleteRecordsThenListOffsets(t *testing.T) {
	srv := newTestServer(t, nil)
	dataTopic(t, srv, "t", 1, nil)
	if _, err := srv.Topics().CreateInternal(topic.GroupMetadataTopic, 1, nil); err != nil {
		t.Fatal(err)
	}
	w := dialWire(t, srv)
	produceAt(t, w, "t", 1000, 2000, 3000) // offsets 0-8

	for _, tc := range []struct {
		name    string
		version int16
		topic   string
		offset  int64
		want    *kerr.Error
		low     int64
		start   int64 // ListOffsets earliest afterwards
	}{
		{"to 4", 0, "t", 4, nil, 4, 4},
		{"backwards keeps 4", 2, "t", 2, nil, 4, 4},
		{"past high watermark", 1, "t", 10, kerr.OffsetOutOfRange, -1, 4},
		{"below -1", 2, "t", -2, kerr.OffsetOutOfRange, -1, 4},
		{"high watermark", 2, "t", -1, nil, 9, 9},
		{"unknown topic", 2, "nope", 0, kerr.UnknownTopicOrPartition, -1, 9},
		{"internal topic", 2, topic.GroupMetadataTopic, 0, kerr.InvalidTopicException, -1, 9},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := w.do(deleteRecordsReq(tc.version, tc.topic, 0, tc.offset)).(*kmsg.DeleteRecordsResponse)
			sp := resp.Topics[0].Partitions[0]
			var want int16
			if tc.want != nil {
				want = tc.want.Code
			}
			if sp.ErrorCode != want || sp.LowWatermark != tc.low {
				t.Fatalf("got %v low watermark %d, want %v %d", kerr.ErrorForCode(sp.ErrorCode), sp.LowWatermark, tc.want, tc.low)
			}
			lo := listOffsetsPart(t, w.do(listOffsetsReq(7, "t", 0, -2)))
			if lo.ErrorCode != 0 || lo.Offset != tc.start {
				t.Fatalf("earliest: %v %d, want %d", kerr.ErrorForCode(lo.ErrorCode), lo.Offset, tc.start)
			}
		})
	}
}

// TestDeleteRecordsNamedTwice: a partition named twice is answered once,
// at the offset named last; a topic named twice is one entry, and one
// naming no partitions none, as in Kafka.
func TestDeleteRecordsNamedTwice(t *testing.T) {
	srv := newTestServer(t, nil)
	dataTopic(t, srv, "t", 2, nil)
	dataTopic(t, srv, "u", 1, nil)
	w := dialWire(t, srv)
	produceAt(t, w, "t", 1000, 2000, 3000) // partition 0, offsets 0-8
	req := kmsg.NewPtrDeleteRecordsRequest()
	req.Version = 2
	req.Topics = []kmsg.DeleteRecordsRequestTopic{
		{Topic: "t", Partitions: []kmsg.DeleteRecordsRequestTopicPartition{{Partition: 0, Offset: 99}, {Partition: 0, Offset: 4}}},
		{Topic: "u"},
		{Topic: "t", Partitions: []kmsg.DeleteRecordsRequestTopicPartition{{Partition: 1, Offset: 0}}},
	}
	resp := w.do(req).(*kmsg.DeleteRecordsResponse)
	if len(resp.Topics) != 1 || resp.Topics[0].Topic != "t" || len(resp.Topics[0].Partitions) != 2 {
		t.Fatalf("answer %+v, want topic t once with partitions 0 and 1", resp.Topics)
	}
	for i, want := range []kmsg.DeleteRecordsResponseTopicPartition{{Partition: 0, LowWatermark: 4}, {Partition: 1, LowWatermark: 0}} {
		got := resp.Topics[0].Partitions[i]
		if got.Partition != want.Partition || got.ErrorCode != 0 || got.LowWatermark != want.LowWatermark {
			t.Errorf("partition %d: %+v, want %+v", i, got, want)
		}
	}
}

// TestDeleteRecordsKadm: the admin client's DeleteRecords and
// ListStartOffsets agree.
func TestDeleteRecordsKadm(t *testing.T) {
	srv := newTestServer(t, nil)
	dataTopic(t, srv, "t", 1, nil)
	produceAt(t, dialWire(t, srv), "t", 1000, 2000)
	adm := newAdmin(t, srv)
	ctx := testCtx(t)
	offsets := kadm.Offsets{}
	offsets.Add(kadm.Offset{Topic: "t", Partition: 0, At: 5})
	res, err := adm.DeleteRecords(ctx, offsets)
	if err != nil {
		t.Fatal(err)
	}
	if r, ok := res.Lookup("t", 0); !ok || r.Err != nil || r.LowWatermark != 5 {
		t.Fatalf("delete records: %+v", r)
	}
	starts, err := adm.ListStartOffsets(ctx, "t")
	if err != nil {
		t.Fatal(err)
	}
	if o, ok := starts.Lookup("t", 0); !ok || o.Err != nil || o.Offset != 5 {
		t.Fatalf("start offset: %+v", o)
	}
}
