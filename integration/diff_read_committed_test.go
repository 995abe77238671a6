package integration

import (
	"regexp"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// readCommittedSteps compare what consumers of each isolation level see
// of a transaction (transactions v2): an open transaction holds the last
// stable offset back for read_committed fetches and ListOffsets, and once
// it is aborted a read_committed fetch names it in AbortedTransactions, at
// the oldest and newest Fetch versions; a committed one is not named.
func readCommittedSteps(run string) []diffStep {
	topic, id := "rc-"+run, "rc-"+run
	newest := func(lo, hi int16) []int16 { return []int16{hi} }
	at := func(v int16) func(lo, hi int16) []int16 { return func(lo, hi int16) []int16 { return []int16{v} } }
	produce := func(seq int32, values ...string) func(*diffSide, int16) kmsg.Request {
		build := produceReq(topic, 0, -1, func(s *diffSide) []byte { return diffBatch(s.producerID, s.epoch, seq, true, values...) })
		return func(s *diffSide, v int16) kmsg.Request {
			r := build(s, v).(*kmsg.ProduceRequest)
			r.TransactionID = &id
			return r
		}
	}
	end := func(commit bool) func(*diffSide, int16) kmsg.Request {
		return func(s *diffSide, v int16) kmsg.Request {
			r := kmsg.NewPtrEndTxnRequest()
			r.TransactionalID, r.ProducerID, r.ProducerEpoch, r.Commit = id, s.producerID, s.epoch, commit
			return r
		}
	}
	// EndTxn v5 bumps the epoch; Kafka may still be writing the markers
	// of the one before (CONCURRENT_TRANSACTIONS), which is retried.
	bumped := func(s *diffSide, resp kmsg.Response) {
		if r := resp.(*kmsg.EndTxnResponse); r.ErrorCode == 0 && r.ProducerEpoch >= 0 {
			s.epoch = r.ProducerEpoch
		}
	}
	notConcurrent := func(resp kmsg.Response) bool {
		return resp.(*kmsg.EndTxnResponse).ErrorCode != kerr.ConcurrentTransactions.Code
	}
	fetch := func(isolation int8) func(*diffSide, int16) kmsg.Request {
		return func(s *diffSide, v int16) kmsg.Request {
			r := fetchReq(topic, 0, 0)(s, v).(*kmsg.FetchRequest)
			r.IsolationLevel = isolation
			return r
		}
	}
	listStable := func(s *diffSide, v int16) kmsg.Request {
		r := listOffsetsReq(topic, 0, -1)(s, v).(*kmsg.ListOffsetsRequest)
		r.IsolationLevel = 1
		return r
	}
	// Markers are written after EndTxn answers on Kafka: the stable offset
	// moves a moment later.
	stableAt := func(lso int64) func(kmsg.Response) bool {
		return func(resp kmsg.Response) bool {
			p := resp.(*kmsg.FetchResponse).Topics[0].Partitions[0]
			return p.LastStableOffset == lso
		}
	}
	return []diffStep{
		{name: "create", req: createTopicsReq(topic, 1, nil, false), versions: newest,
			ignore: regexp.MustCompile(`Topics\.0\.Configs\.`)},
		awaitTopic(topic, 1),
		awaitCoordinator(id, 1),
		awaitTxnLoaded(id),
		{name: "init", req: initProducerIDReq(&id), after: rememberProducer, versions: newest,
			until: func(resp kmsg.Response) bool { return resp.(*kmsg.InitProducerIDResponse).ErrorCode == 0 }},
		// Kafka may take the new partition's leadership a moment after
		// its metadata shows it.
		{name: "produce into an open transaction", req: produce(0, "a", "b"), versions: at(12),
			until: func(resp kmsg.Response) bool {
				return resp.(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode != kerr.NotLeaderForPartition.Code
			}},
		{name: "fetch read_uncommitted, transaction open", req: fetch(0)},
		{name: "fetch read_committed, transaction open", req: fetch(1)},
		{name: "list the stable offset, transaction open", req: listStable, versions: func(lo, hi int16) []int16 { return []int16{2, hi} }},
		{name: "abort", req: end(false), after: bumped, versions: at(5), until: notConcurrent},
		{name: "fetch read_committed after the abort", req: fetch(1), until: stableAt(3)},
		{name: "produce into the next transaction", req: produce(0, "c"), versions: at(12)},
		{name: "commit", req: end(true), after: bumped, versions: at(5), until: notConcurrent},
		{name: "fetch read_committed after the commit", req: fetch(1), until: stableAt(5)},
		{name: "list the stable offset after the commit", req: listStable, versions: func(lo, hi int16) []int16 { return []int16{2, hi} }},
	}
}
