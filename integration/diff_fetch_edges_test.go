package integration

import (
	"cmp"
	"encoding/binary"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// fetchAt is one partition of a fetch: where to read from and how much.
type fetchAt struct {
	partition int32
	offset    int64
	maxBytes  int32
}

// fetchPartsReq fetches parts of topic (in that order) with the request's
// max bytes; edit, if set, changes the request or its partitions
// afterwards.
func fetchPartsReq(topic string, maxBytes int32, edit func(r *kmsg.FetchRequest, v int16), parts ...fetchAt) func(*diffSide, int16) kmsg.Request {
	return func(s *diffSide, v int16) kmsg.Request {
		r := kmsg.NewPtrFetchRequest()
		r.ReplicaID = -1
		r.MaxWaitMillis, r.MinBytes, r.MaxBytes = 0, 1, maxBytes
		r.SessionEpoch = -1 // no fetch session: full responses on both
		t := kmsg.NewFetchRequestTopic()
		t.Topic, t.TopicID = topic, s.topicIDs[topic]
		for _, pa := range parts {
			p := kmsg.NewFetchRequestTopicPartition()
			p.Partition, p.FetchOffset, p.PartitionMaxBytes = pa.partition, pa.offset, pa.maxBytes
			t.Partitions = append(t.Partitions, p)
		}
		r.Topics = append(r.Topics, t)
		if edit != nil {
			edit(r, v)
		}
		return r
	}
}

// wholeBatches drops a trailing partial batch from every partition of a
// fetch response. Kafka cuts a partition's data at its byte limit, mid-batch
// (LogSegment.read slices the file), and clients drop the partial batch;
// kbroker never cuts a batch (handle_fetch.go). What a consumer reads is
// the same.
func wholeBatches(resp kmsg.Response) {
	for i := range resp.(*kmsg.FetchResponse).Topics {
		for j := range resp.(*kmsg.FetchResponse).Topics[i].Partitions {
			p := &resp.(*kmsg.FetchResponse).Topics[i].Partitions[j]
			b, n := p.RecordBatches, 0
			for len(b)-n >= 12 {
				size := 12 + int(binary.BigEndian.Uint32(b[n+8:]))
				if size > len(b)-n {
					break
				}
				n += size
			}
			p.RecordBatches = b[:n]
		}
	}
}

// fetchEdgeSteps are the corners of Fetch and ListOffsets a consumer can
// run into: KIP-74's first batch over the request's and the partition's
// byte limits, the limits across two partitions in request order, a fetch
// at and past the high watermark, current and last fetched leader epochs
// (v12+ diverging epochs), a rack id, a fetch claiming to come from a
// follower, no topics, a partition named twice; ListOffsets with current
// leader epochs, a partition named twice, a follower's replica id and
// both isolation levels on a topic without transactions.
func fetchEdgeSteps(run string) []diffStep {
	topic, empty := "fe-"+run, "fe-empty-"+run
	big := strings.Repeat("x", 50)
	four := []string{big, big, big, big}
	// Partition 0 holds batches A (offsets 0-3), B (4) and C (5-8);
	// partition 1 D (0-3) and E (4).
	sizeA := int32(len(diffBatch(-1, -1, -1, false, four...)))
	sizeB := int32(len(diffBatch(-1, -1, -1, false, "b")))
	const lots = 1 << 20
	fetch := func(maxBytes int32, parts ...fetchAt) func(*diffSide, int16) kmsg.Request {
		return fetchPartsReq(topic, maxBytes, nil, parts...)
	}
	fetchEdit := func(edit func(r *kmsg.FetchRequest, v int16), parts ...fetchAt) func(*diffSide, int16) kmsg.Request {
		return fetchPartsReq(topic, lots, edit, parts...)
	}
	epochs := func(current, lastFetched int32) func(r *kmsg.FetchRequest, v int16) {
		return func(r *kmsg.FetchRequest, v int16) {
			for i := range r.Topics[0].Partitions {
				r.Topics[0].Partitions[i].CurrentLeaderEpoch = current
				r.Topics[0].Partitions[i].LastFetchedEpoch = lastFetched
			}
		}
	}
	// Versions from v12, which carries LastFetchedEpoch.
	fromV12 := func(lo, hi int16) []int16 { return []int16{max(lo, 12), hi} }
	list := func(edit func(r *kmsg.ListOffsetsRequest), ts ...int64) func(*diffSide, int16) kmsg.Request {
		return func(s *diffSide, v int16) kmsg.Request {
			r := listOffsetsReq(topic, 0, ts[0])(s, v).(*kmsg.ListOffsetsRequest)
			for _, t := range ts[1:] {
				p := kmsg.NewListOffsetsRequestTopicPartition()
				p.Partition, p.Timestamp, p.CurrentLeaderEpoch = 0, t, -1
				r.Topics[0].Partitions = append(r.Topics[0].Partitions, p)
			}
			if edit != nil {
				edit(r)
			}
			return r
		}
	}
	listEpoch := func(epoch int32) func(r *kmsg.ListOffsetsRequest) {
		return func(r *kmsg.ListOffsetsRequest) { r.Topics[0].Partitions[0].CurrentLeaderEpoch = epoch }
	}
	isolation := func(level int8) func(r *kmsg.ListOffsetsRequest) {
		return func(r *kmsg.ListOffsetsRequest) { r.IsolationLevel = level }
	}
	// CurrentLeaderEpoch came with v4; IsolationLevel with v2.
	fromV4 := func(lo, hi int16) []int16 { return []int16{max(lo, 4), hi} }
	fromV2 := func(lo, hi int16) []int16 { return []int16{max(lo, 2), hi} }
	produce := func(partition int32, values ...string) func(*diffSide, int16) kmsg.Request {
		return produceReq(topic, partition, -1, plainBatch(values...))
	}
	steps := append(createAndAwait(topic, 2), createAndAwait(empty, 1)...)
	return append(steps, []diffStep{
		// Kafka may take a new partition's leadership a moment after its
		// metadata shows it.
		{name: "produce A", req: produce(0, four...), versions: newest,
			until: func(resp kmsg.Response) bool {
				return resp.(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode != kerr.NotLeaderForPartition.Code
			}},
		{name: "produce B", req: produce(0, "b"), versions: newest},
		{name: "produce C", req: produce(0, four...), versions: newest},
		{name: "produce D", req: produce(1, four...), versions: newest,
			until: func(resp kmsg.Response) bool {
				return resp.(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode != kerr.NotLeaderForPartition.Code
			}},
		{name: "produce E", req: produce(1, "e"), versions: newest},

		// KIP-74.
		{name: "first batch over the request's max bytes", req: fetch(sizeA/2, fetchAt{0, 0, lots})},
		{name: "first batch over the partition's max bytes", req: fetch(lots, fetchAt{0, 0, sizeA / 2})},
		{name: "partition max bytes 0", req: fetch(lots, fetchAt{0, 0, 0})},
		{name: "request max bytes 0", req: fetch(0, fetchAt{0, 0, lots})},
		{name: "partition max bytes past the first batch", req: fetch(lots, fetchAt{0, 0, sizeA + sizeB/2}), normalize: wholeBatches},
		{name: "partition max bytes of two batches", req: fetch(lots, fetchAt{0, 0, sizeA + sizeB})},
		{name: "fetch from inside a batch", req: fetch(lots, fetchAt{0, 2, lots})},
		{name: "two partitions, the first over the request's max bytes", req: fetch(sizeA/2, fetchAt{0, 0, lots}, fetchAt{1, 0, lots})},
		{name: "two partitions in the other order", req: fetch(sizeA/2, fetchAt{1, 0, lots}, fetchAt{0, 0, lots})},
		{name: "two partitions, room for a batch more", req: fetch(sizeA+sizeB, fetchAt{0, 0, sizeA}, fetchAt{1, 4, lots})},
		{name: "two partitions, the request's max bytes past the first batch", req: fetch(sizeA+sizeB/2, fetchAt{0, 0, lots}, fetchAt{1, 0, lots}),
			normalize: wholeBatches},
		{name: "two partitions, the first empty", req: fetch(sizeA/2, fetchAt{0, 9, lots}, fetchAt{1, 0, lots})},
		{name: "two partitions, each under its max bytes", req: fetch(lots, fetchAt{0, 0, sizeA}, fetchAt{1, 0, sizeA})},

		// The high watermark.
		{name: "fetch at the high watermark", req: fetch(lots, fetchAt{0, 9, lots})},
		{name: "fetch one past the high watermark", req: fetch(lots, fetchAt{0, 10, lots})},
		{name: "fetch an empty partition at 0", req: fetchPartsReq(empty, lots, nil, fetchAt{0, 0, lots})},
		{name: "fetch an empty partition at 1", req: fetchPartsReq(empty, lots, nil, fetchAt{0, 1, lots})},

		// Leader epochs: a topic's first leader's is 0 on both.
		{name: "current leader epoch 0", req: fetchEdit(epochs(0, -1), fetchAt{0, 4, lots})},
		{name: "current leader epoch newer than the leader's", req: fetchEdit(epochs(1, -1), fetchAt{0, 4, lots})},
		{name: "current leader epoch -2", req: fetchEdit(epochs(-2, -1), fetchAt{0, 4, lots})},
		{name: "last fetched epoch 0", req: fetchEdit(epochs(0, 0), fetchAt{0, 4, lots}), versions: fromV12},
		{name: "last fetched epoch 0 at the high watermark", req: fetchEdit(epochs(0, 0), fetchAt{0, 9, lots}), versions: fromV12},
		{name: "last fetched epoch 0 past the log end", req: fetchEdit(epochs(0, 0), fetchAt{0, 12, lots}), versions: fromV12},
		{name: "last fetched epoch 1", req: fetchEdit(epochs(0, 1), fetchAt{0, 4, lots}), versions: fromV12},
		{name: "last fetched epoch 1 without a current epoch", req: fetchEdit(epochs(-1, 1), fetchAt{0, 4, lots}), versions: fromV12},
		{name: "last fetched epoch -2", req: fetchEdit(epochs(-1, -2), fetchAt{0, 4, lots}), versions: fromV12},
		{name: "last fetched epoch 0, an empty partition", req: fetchPartsReq(empty, lots, epochs(-1, 0), fetchAt{0, 0, lots}), versions: fromV12},

		// Who is asking.
		{name: "a rack id", req: fetchEdit(func(r *kmsg.FetchRequest, v int16) { r.Rack = "rack-a" }, fetchAt{0, 4, lots}),
			versions: func(lo, hi int16) []int16 { return []int16{max(lo, 11), hi} }},
		{name: "a follower's replica id", req: fetchEdit(func(r *kmsg.FetchRequest, v int16) {
			r.ReplicaID, r.ReplicaState.ID, r.ReplicaState.Epoch = 5, 5, 1
		}, fetchAt{0, 4, lots})},
		{name: "replica id -2", req: fetchEdit(func(r *kmsg.FetchRequest, v int16) {
			r.ReplicaID, r.ReplicaState.ID = -2, -2
		}, fetchAt{0, 4, lots})},
		{name: "a cluster id not the broker's", req: fetchEdit(func(r *kmsg.FetchRequest, v int16) {
			r.ClusterID = kmsg.StringPtr("not-this-cluster")
		}, fetchAt{0, 4, lots}), versions: fromV12},

		// The request's shape.
		{name: "no topics", req: fetchEdit(func(r *kmsg.FetchRequest, v int16) { r.Topics = nil })},
		{name: "a partition twice", req: fetch(lots, fetchAt{0, 0, lots}, fetchAt{0, 5, lots})},
		{name: "a partition twice with another between", req: fetch(lots, fetchAt{0, 0, sizeA}, fetchAt{1, 4, lots}, fetchAt{0, 4, lots})},
		{name: "a topic twice", req: fetchEdit(func(r *kmsg.FetchRequest, v int16) {
			first, second := r.Topics[0], r.Topics[0]
			first.Partitions, second.Partitions = first.Partitions[:1], second.Partitions[1:]
			r.Topics = []kmsg.FetchRequestTopic{first, second}
		}, fetchAt{0, 0, lots}, fetchAt{1, 0, lots})},

		{name: "an unknown partition before a known one", req: fetch(lots, fetchAt{9, 0, lots}, fetchAt{0, 4, lots})},
		{name: "a topic without partitions", req: func(s *diffSide, v int16) kmsg.Request {
			r := fetch(lots, fetchAt{0, 4, lots})(s, v).(*kmsg.FetchRequest)
			r.Topics = append(r.Topics, kmsg.FetchRequestTopic{Topic: empty, TopicID: s.topicIDs[empty]})
			return r
		}},
		{name: "an unknown topic between two of the topic's partitions", req: func(s *diffSide, v int16) kmsg.Request {
			r := fetch(lots, fetchAt{0, 4, lots}, fetchAt{1, 4, lots})(s, v).(*kmsg.FetchRequest)
			first, second := r.Topics[0], r.Topics[0]
			first.Partitions, second.Partitions = first.Partitions[:1], second.Partitions[1:]
			unknown := kmsg.FetchRequestTopic{Topic: "missing-fe-" + run, TopicID: [16]byte{0xfe, 0xed},
				Partitions: []kmsg.FetchRequestTopicPartition{first.Partitions[0]}}
			r.Topics = []kmsg.FetchRequestTopic{first, unknown, second}
			return r
		}},

		// ListOffsets.
		{name: "list offsets, current leader epoch 0", req: list(listEpoch(0), -1), versions: fromV4},
		{name: "list offsets, current leader epoch newer", req: list(listEpoch(1), -1), versions: fromV4},
		{name: "list offsets, current leader epoch older", req: list(listEpoch(-2), -1), versions: fromV4},
		{name: "list offsets, a partition twice", req: list(nil, -1, -2)},
		{name: "list offsets, a topic twice", req: list(func(r *kmsg.ListOffsetsRequest) {
			second := r.Topics[0]
			second.Partitions = []kmsg.ListOffsetsRequestTopicPartition{second.Partitions[0]}
			second.Partitions[0].Partition = 1
			r.Topics = append(r.Topics, second)
		}, -1), normalize: sortListOffsets},
		{name: "list offsets, a topic twice with the same partition", req: list(func(r *kmsg.ListOffsetsRequest) {
			r.Topics = append(r.Topics, r.Topics[0])
		}, -1)},
		{name: "list offsets, a follower's replica id", req: list(func(r *kmsg.ListOffsetsRequest) { r.ReplicaID = 5 }, -1)},
		{name: "list offsets latest, read_uncommitted", req: list(isolation(0), -1), versions: fromV2},
		{name: "list offsets latest, read_committed", req: list(isolation(1), -1), versions: fromV2},
		{name: "list offsets earliest, read_committed", req: list(isolation(1), -2), versions: fromV2},
		{name: "list offsets by timestamp, read_committed", req: list(isolation(1), 1700000000000), versions: fromV2},
	}...)
}

// sortListOffsets puts each topic's partitions of a ListOffsets response in
// partition order: Kafka groups them by topic from a hash map
// (ReplicaManager.fetchOffset), so their order carries no meaning.
func sortListOffsets(resp kmsg.Response) {
	for _, t := range resp.(*kmsg.ListOffsetsResponse).Topics {
		slices.SortFunc(t.Partitions, func(a, b kmsg.ListOffsetsResponseTopicPartition) int { return cmp.Compare(a.Partition, b.Partition) })
	}
}
