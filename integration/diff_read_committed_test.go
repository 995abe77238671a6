package integration

import (
	"encoding/binary"

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
	produce := func(seq int32, values ...string) func(*diffSide, int16) kmsg.Request {
		return txnProduceReq(topic, id, 0, seq, values...)
	}
	end := func(commit bool) func(*diffSide, int16) kmsg.Request { return endTxnReq(id, commit, 0) }
	fetchFrom := func(offset int64, isolation int8) func(*diffSide, int16) kmsg.Request {
		return func(s *diffSide, v int16) kmsg.Request {
			r := fetchReq(topic, 0, offset)(s, v).(*kmsg.FetchRequest)
			r.IsolationLevel = isolation
			return r
		}
	}
	fetch := func(isolation int8) func(*diffSide, int16) kmsg.Request { return fetchFrom(0, isolation) }
	// Kafka 4.4 answers a fetch from offset 0 here with the first batch
	// only, once later batches exist, where kbroker sends every batch up
	// to the stable offset; a fetch from offset 2 gets the rest from
	// both, so a consumer reads the same. The steps from offset 0 compare
	// the first batch.
	firstBatch := func(resp kmsg.Response) {
		for i := range resp.(*kmsg.FetchResponse).Topics {
			for j := range resp.(*kmsg.FetchResponse).Topics[i].Partitions {
				p := &resp.(*kmsg.FetchResponse).Topics[i].Partitions[j]
				if len(p.RecordBatches) >= 12 {
					n := 12 + int(binary.BigEndian.Uint32(p.RecordBatches[8:]))
					p.RecordBatches = p.RecordBatches[:min(n, len(p.RecordBatches))]
				}
			}
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
	return append(transactionalSetup(topic, id), []diffStep{
		// Kafka may take the new partition's leadership a moment after
		// its metadata shows it.
		{name: "produce into an open transaction", req: produce(0, "a", "b"), versions: atVersion(12),
			until: func(resp kmsg.Response) bool {
				return resp.(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode != kerr.NotLeaderForPartition.Code
			}},
		{name: "fetch read_uncommitted, transaction open", req: fetch(0)},
		{name: "fetch read_committed, transaction open", req: fetch(1)},
		{name: "list the stable offset, transaction open", req: listStable, versions: func(lo, hi int16) []int16 { return []int16{2, hi} }},
		{name: "abort", req: end(false), after: rememberEndTxnEpoch, versions: atVersion(5), until: notConcurrentTxn},
		{name: "fetch read_committed after the abort", req: fetch(1), until: stableAt(3), normalize: firstBatch},
		{name: "fetch read_committed from the abort marker", req: fetchFrom(2, 1)},
		{name: "produce into the next transaction", req: produce(0, "c"), versions: atVersion(12)},
		{name: "commit", req: end(true), after: rememberEndTxnEpoch, versions: atVersion(5), until: notConcurrentTxn},
		{name: "fetch read_committed after the commit", req: fetch(1), until: stableAt(5), normalize: firstBatch},
		{name: "fetch read_committed from the abort marker after the commit", req: fetchFrom(2, 1)},
		{name: "fetch read_uncommitted from the abort marker after the commit", req: fetchFrom(2, 0)},
		{name: "list the stable offset after the commit", req: listStable, versions: func(lo, hi int16) []int16 { return []int16{2, hi} }},
	}...)
}
