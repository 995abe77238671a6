package broker

import (
	"encoding/binary"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/internal/testenv"
)

// idemBatch is a non-transactional idempotent batch of one record.
func idemBatch(pid int64, epoch int16, seq int32) []byte {
	b := txnBatch(pid, epoch, seq)
	binary.BigEndian.PutUint16(b[21:], 0)
	binary.BigEndian.PutUint32(b[17:], crcCastagnoli(b[21:]))
	return b
}

// endV returns the whole EndTxn response at a version.
func (x *txnWire) endV(version int16, commit bool) *kmsg.EndTxnResponse {
	req := kmsg.NewPtrEndTxnRequest()
	req.Version, req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit = version, x.id, x.pid, x.epoch, commit
	return x.w.do(req).(*kmsg.EndTxnResponse)
}

// produceTxn produces one transactional batch at a version.
func (x *txnWire) produceTxn(version int16, topic string, p int32, epoch int16, seq int32) int16 {
	pr := produceReq(version, -1, topic, p, txnBatch(x.pid, epoch, seq))
	pr.TransactionID = &x.id
	return producePart(x.t, x.w.do(pr)).ErrorCode
}

// describeTxn is the coordinator's view of x's transactional id.
func (x *txnWire) describeTxn() kmsg.DescribeTransactionsResponseTransactionState {
	req := kmsg.NewPtrDescribeTransactionsRequest()
	req.TransactionalIDs = []string{x.id}
	return x.w.do(req).(*kmsg.DescribeTransactionsResponse).TransactionStates[0]
}

// TestTxnV2Wire drives transactions v2 (KIP-890 part 2) as a Kafka 4
// client does at transaction.version 2: Produce v12 and TxnOffsetCommit v5
// join the transaction without AddPartitionsToTxn/AddOffsetsToTxn, EndTxn
// v5 bumps the epoch, the markers carry the bumped epoch so that the old
// epoch is fenced at the partition too, a retried EndTxn gets the same
// answer; at transaction.version 1 the same versions keep v1 semantics.
func TestTxnV2Wire(t *testing.T) {
	srv := newTestServer(t, nil)
	createTopic(t, srv, "tx", 2)
	w := dialWire(t, srv)
	x := &txnWire{t: t, w: w, id: "v2"}
	testenv.WantCode(t, "init", x.init(), nil)
	epoch0 := x.epoch

	testenv.WantCode(t, "produce v11 outside the transaction", x.produceTxn(11, "tx", 0, x.epoch, 0), kerr.TransactionAbortable)
	testenv.WantCode(t, "produce v12 joins the transaction", x.produceTxn(12, "tx", 0, x.epoch, 0), nil)
	testenv.WantCode(t, "produce v12 to a second partition", x.produceTxn(12, "tx", 1, x.epoch, 0), nil)
	d := x.describeTxn()
	if d.State != "Ongoing" || len(d.Topics) != 1 || len(d.Topics[0].Partitions) != 2 {
		t.Fatalf("after the implicit adds: %+v", d)
	}
	oc := kmsg.NewPtrTxnOffsetCommitRequest()
	oc.Version, oc.TransactionalID, oc.Group = 5, x.id, "g"
	oc.ProducerID, oc.ProducerEpoch, oc.Generation = x.pid, x.epoch, -1
	oc.Topics = []kmsg.TxnOffsetCommitRequestTopic{{Topic: "tx", Partitions: []kmsg.TxnOffsetCommitRequestTopicPartition{{Partition: 0, Offset: 1, LeaderEpoch: -1}}}}
	testenv.WantCode(t, "TxnOffsetCommit v5 without AddOffsetsToTxn", w.do(oc).(*kmsg.TxnOffsetCommitResponse).Topics[0].Partitions[0].ErrorCode, nil)
	if d := x.describeTxn(); len(d.Topics) != 2 {
		t.Fatalf("TxnOffsetCommit v5 did not add the group's partition: %+v", d)
	}

	resp := x.endV(5, true)
	testenv.WantCode(t, "EndTxn v5 commit", resp.ErrorCode, nil)
	if resp.ProducerID != x.pid || resp.ProducerEpoch != epoch0+1 {
		t.Fatalf("EndTxn v5: pid %d epoch %d, want %d/%d", resp.ProducerID, resp.ProducerEpoch, x.pid, epoch0+1)
	}
	p := srv.Store().Partitions(partitionTopicID(t, srv, "tx"))[0]
	testenv.Eventually(t, 10*time.Second, "the commit marker", func() bool { return p.LastStableOffset() == p.HighWatermark() })
	if ps := p.Producers(); len(ps) != 1 || ps[0].ProducerEpoch != epoch0+1 {
		t.Fatalf("producer state after the marker: %+v, want epoch %d", ps, epoch0+1)
	}
	// A retry of the EndTxn whose answer was lost: the same answer.
	if r := x.endV(5, true); r.ErrorCode != 0 || r.ProducerID != x.pid || r.ProducerEpoch != epoch0+1 {
		t.Fatalf("retried EndTxn v5: %v pid %d epoch %d", kerr.ErrorForCode(r.ErrorCode), r.ProducerID, r.ProducerEpoch)
	}

	// A zombie with the old epoch is fenced by the coordinator (a new
	// transaction) and by the partition itself (the marker's epoch).
	testenv.WantCode(t, "zombie transactional produce", x.produceTxn(12, "tx", 0, epoch0, 1), kerr.InvalidProducerEpoch)
	pr := produceReq(12, -1, "tx", 0, idemBatch(x.pid, epoch0, 1))
	testenv.WantCode(t, "zombie write at the partition", producePart(t, w.do(pr)).ErrorCode, kerr.InvalidProducerEpoch)

	// The next transaction, on the new epoch from sequence 0, aborted.
	x.epoch = resp.ProducerEpoch
	testenv.WantCode(t, "produce, next transaction", x.produceTxn(12, "tx", 0, x.epoch, 0), nil)
	resp = x.endV(5, false)
	if resp.ErrorCode != 0 || resp.ProducerEpoch != epoch0+2 {
		t.Fatalf("EndTxn v5 abort: %v epoch %d", kerr.ErrorForCode(resp.ErrorCode), resp.ProducerEpoch)
	}
	x.epoch = resp.ProducerEpoch
	// Aborting with nothing open is allowed under v2 and bumps too.
	testenv.Eventually(t, 10*time.Second, "the abort", func() bool { return x.describeTxn().State == "CompleteAbort" })
	if resp = x.endV(5, false); resp.ErrorCode != 0 || resp.ProducerEpoch != epoch0+3 {
		t.Fatalf("EndTxn v5 abort with nothing open: %v epoch %d", kerr.ErrorForCode(resp.ErrorCode), resp.ProducerEpoch)
	}
	x.epoch = resp.ProducerEpoch
	testenv.Eventually(t, 10*time.Second, "the empty abort", func() bool { return x.describeTxn().State == "CompleteAbort" })

	// transaction.version 1: the same request versions, v1 semantics.
	up := kmsg.NewPtrUpdateFeaturesRequest()
	up.Version = 1
	up.FeatureUpdates = []kmsg.UpdateFeaturesRequestFeatureUpdate{{Feature: featureTxnVersion, MaxVersionLevel: 1, UpgradeType: upgradeTypeSafeDowngrade}}
	testenv.WantCode(t, "downgrade transaction.version", w.do(up).(*kmsg.UpdateFeaturesResponse).ErrorCode, nil)
	testenv.WantCode(t, "produce v12 at level 1", x.produceTxn(12, "tx", 1, x.epoch, 0), kerr.TransactionAbortable)
	for _, c := range x.addPartition(3, "tx", 0) {
		testenv.WantCode(t, "AddPartitionsToTxn", c, nil)
	}
	resp = x.endV(5, true)
	if resp.ErrorCode != 0 || resp.ProducerID != -1 || resp.ProducerEpoch != -1 {
		t.Fatalf("EndTxn v5 at level 1: %v pid %d epoch %d, want no error and -1/-1", kerr.ErrorForCode(resp.ErrorCode), resp.ProducerID, resp.ProducerEpoch)
	}
	testenv.Eventually(t, 10*time.Second, "the v1 commit", func() bool { return x.describeTxn().State == "CompleteCommit" })
	if d := x.describeTxn(); d.ProducerEpoch != x.epoch {
		t.Fatalf("epoch after a v1 commit: %d, want %d", d.ProducerEpoch, x.epoch)
	}
}
