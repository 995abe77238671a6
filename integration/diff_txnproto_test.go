package integration

import (
	"cmp"
	"regexp"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// txnProtoSteps compares the newer transaction request versions (issue
// 19): AddPartitionsToTxn v4 and v5 (batched transactions, VerifyOnly)
// next to v0–v3, and WriteTxnMarkers v1 and v2 (the marker's transaction
// version), on their happy and error paths. InitProducerId v6 (KIP-939)
// is not here: Kafka 4.4 keeps it unstable (not advertised, a request
// closes the connection, as kbroker does), and kmsg cannot encode it.
func txnProtoSteps(run string) []diffStep {
	topic, id, unknownID := "tp-"+run, "tp-"+run, "tpx-"+run
	at := func(vs ...int16) func(lo, hi int16) []int16 { return func(lo, hi int16) []int16 { return vs } }
	// addReq is AddPartitionsToTxn of one transaction per (id, epoch
	// delta) at any version: v0–v3 take the first only.
	type txnPart struct {
		id         string
		epochDelta int16
		verify     bool
		parts      []int32
	}
	addReq := func(txns ...txnPart) func(*diffSide, int16) kmsg.Request {
		return func(s *diffSide, v int16) kmsg.Request {
			r := kmsg.NewPtrAddPartitionsToTxnRequest()
			for _, tx := range txns {
				pid := s.producerID
				if tx.id != id {
					pid = 424242
				}
				if v < 4 {
					r.TransactionalID, r.ProducerID, r.ProducerEpoch = tx.id, pid, s.epoch+tx.epochDelta
					r.Topics = []kmsg.AddPartitionsToTxnRequestTopic{{Topic: topic, Partitions: tx.parts}}
					break
				}
				t := kmsg.NewAddPartitionsToTxnRequestTransaction()
				t.TransactionalID, t.ProducerID, t.ProducerEpoch, t.VerifyOnly = tx.id, pid, s.epoch+tx.epochDelta, tx.verify
				t.Topics = []kmsg.AddPartitionsToTxnRequestTransactionTopic{{Topic: topic, Partitions: tx.parts}}
				r.Transactions = append(r.Transactions, t)
			}
			return r
		}
	}
	// Kafka answers the transactions in the order they completed and
	// partitions in a hash map's order.
	sortAdd := func(resp kmsg.Response) {
		r := resp.(*kmsg.AddPartitionsToTxnResponse)
		slices.SortFunc(r.Transactions, func(a, b kmsg.AddPartitionsToTxnResponseTransaction) int {
			return cmp.Compare(a.TransactionalID, b.TransactionalID)
		})
		for _, tx := range r.Transactions {
			for _, t := range tx.Topics {
				slices.SortFunc(t.Partitions, func(a, b kmsg.AddPartitionsToTxnResponseTransactionTopicPartition) int {
					return cmp.Compare(a.Partition, b.Partition)
				})
			}
		}
		for _, t := range r.Topics {
			slices.SortFunc(t.Partitions, func(a, b kmsg.AddPartitionsToTxnResponseTopicPartition) int {
				return cmp.Compare(a.Partition, b.Partition)
			})
		}
	}
	markerReq := func(name string, epochDelta int16, tv int8) func(*diffSide, int16) kmsg.Request {
		return func(s *diffSide, v int16) kmsg.Request {
			r := kmsg.NewPtrWriteTxnMarkersRequest()
			m := kmsg.NewWriteTxnMarkersRequestMarker()
			m.ProducerID, m.ProducerEpoch, m.Committed, m.TransactionVersion = s.producerID, s.epoch+epochDelta, false, tv
			m.Topics = []kmsg.WriteTxnMarkersRequestMarkerTopic{{Topic: name, Partitions: []int32{0}}}
			r.Markers = append(r.Markers, m)
			return r
		}
	}
	txnProduce := func(s *diffSide, v int16) kmsg.Request {
		r := produceReq(topic, 0, -1, func(s *diffSide) []byte {
			return diffBatch(s.producerID, s.epoch, 0, true, "open")
		})(s, v).(*kmsg.ProduceRequest)
		r.TransactionID = &id
		return r
	}
	return []diffStep{
		{name: "create", req: createTopicsReq(topic, 2, nil, false), versions: newest,
			ignore: regexp.MustCompile(`Topics\.0\.Configs\.`)},
		awaitTopic(topic, 2),
		awaitCoordinator(id, 1),
		awaitTxnLoaded(id),
		{name: "init", req: initProducerIDReq(&id), after: rememberProducer, versions: newest,
			until: func(resp kmsg.Response) bool { return resp.(*kmsg.InitProducerIDResponse).ErrorCode == 0 }},
		{name: "add partitions with an unknown partition", req: addReq(txnPart{id: id, parts: []int32{0, 7}}),
			versions: at(0, 3, 4, 5), normalize: sortAdd},
		{name: "add partitions v5, two transactions", req: addReq(txnPart{id: id, parts: []int32{0}}, txnPart{id: unknownID, parts: []int32{0}}),
			versions: at(5), normalize: sortAdd},
		{name: "verify only: one partition in the transaction, one not", req: addReq(txnPart{id: id, verify: true, parts: []int32{0, 1}}),
			versions: at(4, 5), normalize: sortAdd},
		{name: "verify only with a fenced epoch", req: addReq(txnPart{id: id, epochDelta: 1, verify: true, parts: []int32{0}}),
			versions: at(4, 5), normalize: sortAdd},
		{name: "add partitions v4 with a fenced epoch", req: addReq(txnPart{id: id, epochDelta: -1, parts: []int32{1}}),
			versions: at(4), normalize: sortAdd},
		{name: "add partitions v3, already in the transaction", req: addReq(txnPart{id: id, parts: []int32{0}}),
			versions: at(3), normalize: sortAdd},
		// Kafka may take the new partition's leadership a moment after
		// its metadata shows it (NOT_LEADER_OR_FOLLOWER meanwhile).
		{name: "produce into the transaction", req: txnProduce, versions: at(11),
			until: func(resp kmsg.Response) bool {
				return resp.(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode != kerr.NotLeaderForPartition.Code
			}},
		{name: "marker for an unknown topic", req: markerReq("nope-"+run, 0, 0), versions: at(1, 2)},
		{name: "marker v2 of transaction version 2 at the transaction's epoch", req: markerReq(topic, 0, 2), versions: at(2)},
		{name: "marker v2 of transaction version 2 at the bumped epoch", req: markerReq(topic, 1, 2), versions: at(2)},
		{name: "marker v2 of transaction version 2 retried", req: markerReq(topic, 1, 2), versions: at(2)},
		{name: "marker below the producer's new epoch", req: markerReq(topic, 0, 0), versions: at(1, 2)},
	}
}
