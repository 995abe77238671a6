package broker

import (
	"sync"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/partition"
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
	// durable carries one token once the group commit that makes the
	// response's appends durable has completed (sync mode, acks=-1). The
	// writer waits for it before it encodes the response and takes it
	// before it recycles the response, so the channel serves every
	// request the response is reused for; a closed channel and a
	// callback capturing it cost three allocations per request.
	durable chan struct{}
	// onDurable is durableCommitted as a func value, made once per pooled
	// response (a method value allocates each time it is taken).
	onDurable func(error)
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

// awaitDurable readies the response to wait for a group commit and
// returns the callback to submit with it: the flush's error, if any, goes
// into every appended partition, then durable yields.
func (pr *produceResponse) awaitDurable() func(error) {
	if pr.durable == nil {
		pr.durable = make(chan struct{}, 1)
		pr.onDurable = pr.durableCommitted
	}
	return pr.onDurable
}

// durableCommitted is the group commit's callback (onDurable).
func (pr *produceResponse) durableCommitted(err error) {
	if err != nil {
		failProduceDurability(&pr.resp, pr.resp.Version, partition.DurableError(err))
	}
	pr.durable <- struct{}{}
}

// recycle returns the response to the pool once it has been sent (and,
// if it waited for a group commit, its token taken). The
// entries keep pointing at names and messages until they are overwritten,
// which holds nothing large.
func (pr *produceResponse) recycle() {
	if cap(pr.parts) > keptResponsePartitions || cap(pr.resp.Topics) > keptResponsePartitions {
		return
	}
	produceResponses.Put(pr)
}
