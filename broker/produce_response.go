package broker

import (
	"sync"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// produceResponse is a Produce response whose arrays are reused from one
// request to the next: a producer to many partitions otherwise allocates
// a topic and a partition entry (about 100 bytes) per partition and
// request, which on small batches was most of what the broker allocated
// per byte produced (docs/BENCHMARKS.md, "Produce allocation").
//
// The handler takes one from produceResponses and the connection's writer
// puts it back once the response is encoded and sent; nobody else keeps
// it (the response of a produce waiting for its group commit belongs to
// the commit's callback until ready is closed, and the writer waits for
// that before encoding).
type produceResponse struct {
	resp kmsg.ProduceResponse
	// parts backs every topic's Partitions, in request order.
	parts []kmsg.ProduceResponseTopicPartition
}

var produceResponses = sync.Pool{New: func() any { return new(produceResponse) }}

// keptResponsePartitions bounds the partitions of a pooled response: a
// response to a huge request is left to the garbage collector.
const keptResponsePartitions = 1024

// newProduceResponse returns an empty response of the given version with
// one topic and partition entry per requested one, in request order, each
// partition in its default state with BaseOffset -1: two allocations
// when the pool is cold, none after.
func newProduceResponse(req *kmsg.ProduceRequest) *produceResponse {
	pr := produceResponses.Get().(*produceResponse)
	n := 0
	for i := range req.Topics {
		n += len(req.Topics[i].Partitions)
	}
	topics := pr.resp.Topics[:0]
	if cap(topics) < len(req.Topics) {
		topics = make([]kmsg.ProduceResponseTopic, 0, len(req.Topics))
	}
	if cap(pr.parts) < n {
		pr.parts = make([]kmsg.ProduceResponseTopicPartition, n)
	}
	parts := pr.parts[:n]
	pr.resp = kmsg.ProduceResponse{Version: req.Version}
	k := 0
	for i := range req.Topics {
		rt := &req.Topics[i]
		ps := parts[k : k+len(rt.Partitions) : k+len(rt.Partitions)]
		for j := range ps {
			sp := &ps[j]
			*sp = kmsg.ProduceResponseTopicPartition{Partition: rt.Partitions[j].Partition, BaseOffset: -1}
			sp.Default()
		}
		topics = append(topics, kmsg.ProduceResponseTopic{Topic: rt.Topic, TopicID: rt.TopicID, Partitions: ps})
		k += len(rt.Partitions)
	}
	pr.resp.Topics = topics
	return pr
}

// recycle returns the response to the pool once it has been sent. The
// entries keep pointing at names and messages until they are overwritten,
// which holds nothing large.
func (pr *produceResponse) recycle() {
	if cap(pr.parts) > keptResponsePartitions || cap(pr.resp.Topics) > keptResponsePartitions {
		return
	}
	produceResponses.Put(pr)
}
