package broker

import (
	"encoding/binary"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/internal/testenv"
	"github.com/kbroker/kbroker/partition"
)

// txnBatch is a transactional batch of one record of producer pid/epoch.
func txnBatch(pid int64, epoch int16, seq int32) []byte {
	rb := kmsg.RecordBatch{Magic: 2, Attributes: 0x10, ProducerID: pid, ProducerEpoch: epoch, FirstSequence: seq,
		NumRecords: 1, FirstTimestamp: 1000, MaxTimestamp: 1000}
	r := kmsg.Record{Value: []byte("v")}
	r.Length = int32(len(r.AppendTo(nil)) - 1)
	rb.Records = r.AppendTo(nil)
	b := rb.AppendTo(nil)
	binary.BigEndian.PutUint32(b[8:], uint32(len(b)-12))
	binary.BigEndian.PutUint32(b[17:], crcCastagnoli(b[21:]))
	return b
}

// txnWire drives the transaction APIs of one transactional id over a raw
// connection, at explicit versions.
type txnWire struct {
	t     *testing.T
	w     *wireConn
	id    string
	pid   int64
	epoch int16
}

func (x *txnWire) init() int16 {
	req := kmsg.NewPtrInitProducerIDRequest()
	req.Version, req.TransactionalID, req.TransactionTimeoutMillis = 4, &x.id, 10000
	resp := x.w.do(req).(*kmsg.InitProducerIDResponse)
	if resp.ErrorCode == 0 {
		x.pid, x.epoch = resp.ProducerID, resp.ProducerEpoch
	}
	return resp.ErrorCode
}

func (x *txnWire) addPartition(version int16, topic string, p int32) []int16 {
	req := kmsg.NewPtrAddPartitionsToTxnRequest()
	req.Version, req.TransactionalID, req.ProducerID, req.ProducerEpoch = version, x.id, x.pid, x.epoch
	req.Topics = []kmsg.AddPartitionsToTxnRequestTopic{{Topic: topic, Partitions: []int32{p}}, {Topic: "tx", Partitions: []int32{1}}}
	resp := x.w.do(req).(*kmsg.AddPartitionsToTxnResponse)
	var codes []int16
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			codes = append(codes, p.ErrorCode)
		}
	}
	return codes
}

func (x *txnWire) end(version int16, commit bool) int16 {
	req := kmsg.NewPtrEndTxnRequest()
	req.Version, req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit = version, x.id, x.pid, x.epoch, commit
	return x.w.do(req).(*kmsg.EndTxnResponse).ErrorCode
}

// TestTxnAPIErrors checks Kafka's answers to out-of-order and fenced
// transaction requests.
func TestTxnAPIErrors(t *testing.T) {
	srv := newTestServer(t, nil)
	createTopic(t, srv, "tx", 2)
	w := dialWire(t, srv)
	a := &txnWire{t: t, w: w, id: "a"}
	testenv.WantCode(t, "init", a.init(), nil)
	testenv.WantCode(t, "EndTxn with no transaction", a.end(3, true), kerr.InvalidTxnState)

	// Unknown topic: the whole request is refused.
	codes := a.addPartition(3, "nope", 0)
	if len(codes) != 2 || codes[0] != kerr.UnknownTopicOrPartition.Code || codes[1] != kerr.OperationNotAttempted.Code {
		t.Fatalf("add unknown partition: %v", codes)
	}
	// A transactional produce to a partition not in the transaction.
	pr := produceReq(9, -1, "tx", 0, txnBatch(a.pid, a.epoch, 0))
	pr.TransactionID = &a.id
	if p := producePart(t, w.do(pr)); p.ErrorCode != kerr.InvalidTxnState.Code {
		t.Fatalf("produce outside the transaction: %v", kerr.ErrorForCode(p.ErrorCode))
	}
	// Without a transactional id at all.
	pr = produceReq(9, -1, "tx", 0, txnBatch(a.pid, a.epoch, 0))
	if p := producePart(t, w.do(pr)); p.ErrorCode != kerr.TransactionalIDAuthorizationFailed.Code {
		t.Fatalf("transactional batch without an id: %v", kerr.ErrorForCode(p.ErrorCode))
	}
	for _, c := range a.addPartition(3, "tx", 0) {
		testenv.WantCode(t, "add partitions", c, nil)
	}
	pr = produceReq(9, -1, "tx", 0, txnBatch(a.pid, a.epoch, 0))
	pr.TransactionID = &a.id
	if p := producePart(t, w.do(pr)); p.ErrorCode != 0 {
		t.Fatalf("produce in the transaction: %v", kerr.ErrorForCode(p.ErrorCode))
	}

	// A second producer with the same id fences the first (and aborts
	// its transaction first: retriable CONCURRENT_TRANSACTIONS meanwhile).
	b := &txnWire{t: t, w: dialWire(t, srv), id: "a"}
	for range 100 {
		code := b.init()
		if code == 0 {
			break
		}
		if code != kerr.ConcurrentTransactions.Code {
			t.Fatalf("fencing init: %v", kerr.ErrorForCode(code))
		}
	}
	if b.pid != a.pid || b.epoch <= a.epoch {
		t.Fatalf("fencing init gave %d/%d after %d/%d", b.pid, b.epoch, a.pid, a.epoch)
	}
	testenv.WantCode(t, "EndTxn v1 of the fenced producer", a.end(1, true), kerr.InvalidProducerEpoch)
	testenv.WantCode(t, "EndTxn v3 of the fenced producer", a.end(3, true), kerr.ProducerFenced)
	for _, c := range a.addPartition(1, "tx", 0) {
		testenv.WantCode(t, "AddPartitionsToTxn v1 of the fenced producer", c, kerr.InvalidProducerEpoch)
	}
	pr = produceReq(9, -1, "tx", 0, txnBatch(a.pid, a.epoch, 1))
	pr.TransactionID = &a.id
	if p := producePart(t, w.do(pr)); p.ErrorCode != kerr.InvalidProducerEpoch.Code {
		t.Fatalf("produce of the fenced producer: %v", kerr.ErrorForCode(p.ErrorCode))
	}
	// The fenced transaction was aborted: nothing is left unstable.
	p := srv.Store().Partitions(partitionTopicID(t, srv, "tx"))[0]
	if p.LastStableOffset() != p.HighWatermark() {
		t.Fatalf("LSO %d, HW %d after the fence", p.LastStableOffset(), p.HighWatermark())
	}
	// Unknown transactional id.
	u := &txnWire{t: t, w: w, id: "unknown", pid: 5, epoch: 0}
	testenv.WantCode(t, "EndTxn of an unknown id", u.end(3, true), kerr.InvalidProducerIDMapping)
}

// TestTxnOffsetCommitVisibility checks that offsets committed in a
// transaction are invisible (and unstable) until it commits, and dropped
// when it aborts.
func TestTxnOffsetCommitVisibility(t *testing.T) {
	srv := newTestServer(t, nil)
	tp := createTopic(t, srv, "tx", 2)
	w := dialWire(t, srv)
	x := &txnWire{t: t, w: w, id: "t"}
	testenv.WantCode(t, "init", x.init(), nil)
	commit := func(offset int64) int16 {
		req := kmsg.NewPtrTxnOffsetCommitRequest()
		req.Version, req.TransactionalID, req.Group = 3, x.id, "g"
		req.ProducerID, req.ProducerEpoch, req.Generation = x.pid, x.epoch, -1
		req.Topics = []kmsg.TxnOffsetCommitRequestTopic{{Topic: "tx", Partitions: []kmsg.TxnOffsetCommitRequestTopicPartition{{Partition: 0, Offset: offset, LeaderEpoch: -1}}}}
		return w.do(req).(*kmsg.TxnOffsetCommitResponse).Topics[0].Partitions[0].ErrorCode
	}
	addOffsets := func() int16 {
		req := kmsg.NewPtrAddOffsetsToTxnRequest()
		req.Version, req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Group = 3, x.id, x.pid, x.epoch, "g"
		return w.do(req).(*kmsg.AddOffsetsToTxnResponse).ErrorCode
	}
	fetch := func(stable bool) kmsg.OffsetFetchResponseTopicPartition {
		req := kmsg.NewPtrOffsetFetchRequest()
		req.Version, req.Group, req.RequireStable = 7, "g", stable
		req.Topics = []kmsg.OffsetFetchRequestTopic{{Topic: "tx", Partitions: []int32{0}}}
		return w.do(req).(*kmsg.OffsetFetchResponse).Topics[0].Partitions[0]
	}
	testenv.WantCode(t, "TxnOffsetCommit before AddOffsetsToTxn", commit(5), kerr.InvalidTxnState)
	testenv.WantCode(t, "AddOffsetsToTxn", addOffsets(), nil)
	testenv.WantCode(t, "TxnOffsetCommit", commit(5), nil)
	if got := fetch(false); got.Offset != -1 || got.ErrorCode != 0 {
		t.Fatalf("offsets visible before the commit: %+v", got)
	}
	if got := fetch(true); got.ErrorCode != kerr.UnstableOffsetCommit.Code {
		t.Fatalf("require_stable before the commit: %+v", got)
	}
	testenv.WantCode(t, "EndTxn commit", x.end(3, true), nil)
	testenv.Eventually(t, 10*time.Second, "the committed offset", func() bool { return fetch(true).Offset == 5 })

	// Aborted: the offset stays at 5.
	for range 100 {
		if addOffsets() == 0 {
			break
		}
	}
	testenv.WantCode(t, "TxnOffsetCommit 2", commit(9), nil)
	testenv.WantCode(t, "EndTxn abort", x.end(3, false), nil)
	testenv.Eventually(t, 10*time.Second, "the abort", func() bool { return fetch(true).ErrorCode == 0 })
	if got := fetch(true); got.Offset != 5 {
		t.Fatalf("after the abort: %+v", got)
	}
	_ = tp
}

// partitionTopicID is the store id of a registered topic.
func partitionTopicID(t *testing.T, srv *InProcess, name string) partition.TopicID {
	t.Helper()
	tp, ok := srv.Topics().Get(name)
	if !ok {
		t.Fatalf("no topic %s", name)
	}
	return partition.TopicID(tp.ID)
}
