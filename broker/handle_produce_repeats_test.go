package broker

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestProduceRepeats: a partition named twice is written and answered
// once, where first named, with its last naming's records, and a topic
// named twice is answered under one entry, as Kafka reads the request.
func TestProduceRepeats(t *testing.T) {
	srv := newTestServer(t, nil)
	dataTopic(t, srv, "t", 2, nil)
	dataTopic(t, srv, "u", 1, nil)
	w := dialWire(t, srv)
	for _, v := range []int16{3, 9} {
		req := produceReq(v, 1, "t", 0, plainBatch(1).encode())
		rp := req.Topics[0].Partitions[0]
		rp.Records = plainBatch(3).encode()
		req.Topics[0].Partitions = append(req.Topics[0].Partitions, rp)
		other := produceReq(v, 1, "u", 0, plainBatch(1).encode()).Topics[0]
		again := produceReq(v, 1, "t", 1, plainBatch(2).encode()).Topics[0]
		req.Topics = append(req.Topics, other, again)
		start0, start1 := latestOffset(t, w, "t", 0), latestOffset(t, w, "t", 1)

		resp := w.do(req).(*kmsg.ProduceResponse)
		var got []string
		for _, rt := range resp.Topics {
			for _, sp := range rt.Partitions {
				if sp.ErrorCode != 0 {
					t.Fatalf("v%d %s-%d: %v", v, rt.Topic, sp.Partition, kerr.ErrorForCode(sp.ErrorCode))
				}
				got = append(got, rt.Topic+string(rune('0'+sp.Partition)))
			}
		}
		if len(resp.Topics) != 2 || len(got) != 3 || got[0] != "t0" || got[1] != "t1" || got[2] != "u0" {
			t.Fatalf("v%d: answered %v in %d topics, want [t0 t1 u0] in 2", v, got, len(resp.Topics))
		}
		if end := latestOffset(t, w, "t", 0); end != start0+3 {
			t.Errorf("v%d: t-0 grew by %d, want 3 (the last naming's batch only)", v, end-start0)
		}
		if end := latestOffset(t, w, "t", 1); end != start1+2 {
			t.Errorf("v%d: t-1 grew by %d, want 2", v, end-start1)
		}
	}
}

// TestProduceHasRepeats: the check finds repeats in short and long lists
// and none where there are none, without allocating.
func TestProduceHasRepeats(t *testing.T) {
	mk := func(topics []string, parts ...int32) *kmsg.ProduceRequest {
		req := kmsg.NewPtrProduceRequest()
		for _, name := range topics {
			rt := kmsg.ProduceRequestTopic{Topic: name}
			for _, p := range parts {
				rt.Partitions = append(rt.Partitions, kmsg.ProduceRequestTopicPartition{Partition: p})
			}
			req.Topics = append(req.Topics, rt)
		}
		return req
	}
	var many []int32
	for p := int32(40); p > 0; p-- {
		many = append(many, p)
	}
	var sc produceScratch
	for _, tc := range []struct {
		name string
		req  *kmsg.ProduceRequest
		want bool
	}{
		{"one partition", mk([]string{"a"}, 0), false},
		{"distinct", mk([]string{"a", "b"}, 2, 0, 1), false},
		{"a partition twice", mk([]string{"a"}, 0, 1, 0), true},
		{"a topic twice", mk([]string{"a", "b", "a"}, 0), true},
		{"many distinct", mk([]string{"a"}, many...), false},
		{"many with a repeat", mk([]string{"a"}, append(many, 17)...), true},
	} {
		if got := sc.hasRepeats(tc.req); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
	req := mk([]string{"a", "b", "c"}, many...)
	if n := testing.AllocsPerRun(100, func() { sc.hasRepeats(req) }); n != 0 {
		t.Errorf("%v allocations per check", n)
	}
}
