package broker

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestResponseErrors(t *testing.T) {
	produce := kmsg.NewPtrProduceResponse()
	pt := kmsg.NewProduceResponseTopic()
	for _, code := range []int16{0, kerr.NotLeaderForPartition.Code, kerr.NotLeaderForPartition.Code, kerr.MessageTooLarge.Code} {
		p := kmsg.NewProduceResponseTopicPartition()
		p.ErrorCode = code
		pt.Partitions = append(pt.Partitions, p)
	}
	produce.Topics = append(produce.Topics, pt)

	offsetFetch := kmsg.NewPtrOffsetFetchResponse()
	g := kmsg.NewOffsetFetchResponseGroup()
	g.ErrorCode = kerr.CoordinatorLoadInProgress.Code
	offsetFetch.Groups = append(offsetFetch.Groups, g)

	join := kmsg.NewPtrJoinGroupResponse()
	join.ErrorCode = kerr.UnknownServerError.Code // -1

	for _, c := range []struct {
		name string
		resp kmsg.Response
		want map[int16]uint64
	}{
		{"produce", produce, map[int16]uint64{kerr.NotLeaderForPartition.Code: 2, kerr.MessageTooLarge.Code: 1}},
		{"offset fetch", offsetFetch, map[int16]uint64{kerr.CoordinatorLoadInProgress.Code: 1}},
		{"join group", join, map[int16]uint64{-1: 1}},
		{"no errors", kmsg.NewPtrHeartbeatResponse(), map[int16]uint64{}},
	} {
		t.Run(c.name, func(t *testing.T) {
			a := &APIMetrics{}
			responseErrors(c.resp, a.countError)
			got := map[int16]uint64{}
			a.EachError(func(code int16, n uint64) { got[code] = n })
			if len(got) != len(c.want) {
				t.Fatalf("got %v, want %v", got, c.want)
			}
			for code, n := range c.want {
				if got[code] != n {
					t.Fatalf("got %v, want %v", got, c.want)
				}
			}
		})
	}
}

// TestRequestMetricsAllocateNothing guards the hot path: counting a
// request, its latencies and its response's errors allocates nothing.
func TestRequestMetricsAllocateNothing(t *testing.T) {
	m := newRequestMetrics(apiTable())
	resp := kmsg.NewPtrProduceResponse()
	pt := kmsg.NewProduceResponseTopic()
	pt.Partitions = append(pt.Partitions, kmsg.NewProduceResponseTopicPartition())
	resp.Topics = append(resp.Topics, pt)
	now := time.Now()
	tm := timing{key: 0, version: 9, started: now, handled: now.Add(time.Millisecond)}
	allocs := testing.AllocsPerRun(100, func() {
		m.request(0, 9)
		m.apis[0].Handle.ObserveDuration(time.Millisecond)
		m.observeWriting(tm, resp, now.Add(2*time.Millisecond))
		m.observeSent(tm, now.Add(2*time.Millisecond), now.Add(3*time.Millisecond))
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per request, want 0", allocs)
	}
	a := m.apis[0]
	if n := a.Requests[9].Load(); n < 100 {
		t.Fatalf("produce v9 requests %d, want at least 100", n)
	}
	if n, _, _ := a.Queue.Snapshot(); n < 100 {
		t.Fatalf("queue observations %d, want at least 100", n)
	}
	// An unknown key or version is ignored, not a panic.
	m.request(maxAPIKey, 99)
	m.request(0, 99)
}

// BenchmarkRequestMetrics is what the connection loop adds per request:
// three clock reads, the counters and three histogram observations, and
// the walk of a one-partition produce response for error codes.
func BenchmarkRequestMetrics(b *testing.B) {
	m := newRequestMetrics(apiTable())
	resp := kmsg.NewPtrProduceResponse()
	pt := kmsg.NewProduceResponseTopic()
	pt.Partitions = append(pt.Partitions, kmsg.NewProduceResponseTopicPartition())
	resp.Topics = append(resp.Topics, pt)
	b.ReportAllocs()
	for b.Loop() {
		m.request(0, 9)
		t := timing{key: 0, version: 9, started: time.Now()}
		t.handled = time.Now()
		m.apis[0].Handle.ObserveDuration(t.handled.Sub(t.started))
		writing := time.Now()
		m.observeWriting(t, resp, writing)
		m.observeSent(t, writing, time.Now())
	}
}
