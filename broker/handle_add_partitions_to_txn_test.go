package broker

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/internal/testenv"
)

// batchTxn is one transaction of an AddPartitionsToTxn v4+ request.
func batchTxn(x *txnWire, epoch int16, verifyOnly bool, topic string, parts ...int32) kmsg.AddPartitionsToTxnRequestTransaction {
	t := kmsg.NewAddPartitionsToTxnRequestTransaction()
	t.TransactionalID, t.ProducerID, t.ProducerEpoch, t.VerifyOnly = x.id, x.pid, epoch, verifyOnly
	tt := kmsg.NewAddPartitionsToTxnRequestTransactionTopic()
	tt.Topic, tt.Partitions = topic, parts
	t.Topics = append(t.Topics, tt)
	return t
}

// batchCodes flattens a v4+ response to "id topic-partition" → code.
func batchCodes(resp *kmsg.AddPartitionsToTxnResponse) map[string]int16 {
	out := map[string]int16{}
	for _, rt := range resp.Transactions {
		for _, t := range rt.Topics {
			for _, p := range t.Partitions {
				out[rt.TransactionalID+" "+t.Topic+"-"+string(rune('0'+p.Partition))] = p.ErrorCode
			}
		}
	}
	return out
}

// TestAddPartitionsToTxnBatch: AddPartitionsToTxn v4 and v5, the
// partition leaders' batched form (KIP-890): each transaction is added
// or verified on its own, an unknown partition makes the rest of its
// transaction OPERATION_NOT_ATTEMPTED, and a verification answers per
// partition (TRANSACTION_ABORTABLE for one not in the transaction) or
// with the transaction's error.
func TestAddPartitionsToTxnBatch(t *testing.T) {
	srv := newTestServer(t, nil)
	createTopic(t, srv, "tx", 3)
	w := dialWire(t, srv)
	for _, version := range []int16{4, 5} {
		a := &txnWire{t: t, w: w, id: "a" + string(rune('0'+version))}
		b := &txnWire{t: t, w: w, id: "b" + string(rune('0'+version))}
		testenv.WantCode(t, "init a", a.init(), nil)
		testenv.WantCode(t, "init b", b.init(), nil)

		req := kmsg.NewPtrAddPartitionsToTxnRequest()
		req.Version = version
		req.Transactions = []kmsg.AddPartitionsToTxnRequestTransaction{
			batchTxn(a, a.epoch, false, "tx", 0, 1),
			batchTxn(b, b.epoch, false, "tx", 2, 7),
		}
		resp := w.do(req).(*kmsg.AddPartitionsToTxnResponse)
		got := batchCodes(resp)
		want := map[string]int16{
			a.id + " tx-0": 0, a.id + " tx-1": 0,
			b.id + " tx-2": kerr.OperationNotAttempted.Code, b.id + " tx-7": kerr.UnknownTopicOrPartition.Code,
		}
		if resp.ErrorCode != 0 || len(got) != len(want) {
			t.Fatalf("v%d add: top-level %d, codes %v", version, resp.ErrorCode, got)
		}
		for k, code := range want {
			if got[k] != code {
				t.Errorf("v%d add %s: got %v, want %v", version, k, kerr.ErrorForCode(got[k]), kerr.ErrorForCode(code))
			}
		}
		if d := a.describeTxn(); d.State != "Ongoing" || len(d.Topics) != 1 || len(d.Topics[0].Partitions) != 2 {
			t.Fatalf("v%d: a after the add: %+v", version, d)
		}
		if d := b.describeTxn(); d.State != "Empty" {
			t.Fatalf("v%d: b after a refused add: %+v", version, d)
		}

		req.Transactions = []kmsg.AddPartitionsToTxnRequestTransaction{
			batchTxn(a, a.epoch, true, "tx", 0, 2),
			batchTxn(b, b.epoch+1, true, "tx", 0),
			batchTxn(&txnWire{id: "nobody", pid: 99}, 0, true, "tx", 1),
		}
		resp = w.do(req).(*kmsg.AddPartitionsToTxnResponse)
		got = batchCodes(resp)
		want = map[string]int16{
			a.id + " tx-0": 0, a.id + " tx-2": kerr.TransactionAbortable.Code,
			b.id + " tx-0": kerr.ProducerFenced.Code,
			"nobody tx-1":  kerr.InvalidProducerIDMapping.Code,
		}
		for k, code := range want {
			if got[k] != code {
				t.Errorf("v%d verify %s: got %v, want %v", version, k, kerr.ErrorForCode(got[k]), kerr.ErrorForCode(code))
			}
		}
		if d := a.describeTxn(); len(d.Topics[0].Partitions) != 2 {
			t.Fatalf("v%d: VerifyOnly changed the transaction: %+v", version, d)
		}

		// An empty batch is answered (Kafka 4.4 never answers it).
		req.Transactions = nil
		if resp := w.do(req).(*kmsg.AddPartitionsToTxnResponse); resp.ErrorCode != 0 || len(resp.Transactions) != 0 {
			t.Fatalf("v%d empty batch: %+v", version, resp)
		}
	}
}

// TestAddPartitionsToTxnBatchNeedsClusterAction: with ACLs on, v4+ is the
// brokers' request: without CLUSTER_ACTION on the cluster the answer is
// the top-level CLUSTER_AUTHORIZATION_FAILED, and a super user passes.
func TestAddPartitionsToTxnBatchNeedsClusterAction(t *testing.T) {
	t.Parallel()
	srv := aclServer(t, "")
	ctx := testCtx(t)
	req := kmsg.NewPtrAddPartitionsToTxnRequest()
	tx := kmsg.NewAddPartitionsToTxnRequestTransaction()
	tx.TransactionalID, tx.ProducerID, tx.ProducerEpoch, tx.VerifyOnly = "x", 1, 0, true
	req.Transactions = append(req.Transactions, tx)
	for _, c := range []struct {
		user string
		want *kerr.Error
	}{{"alice", kerr.ClusterAuthorizationFailed}, {"admin", nil}} {
		cl := userClient(t, srv, c.user)
		if err := cl.Ping(ctx); err != nil {
			t.Fatalf("%s: ping: %v", c.user, err)
		}
		kresp, err := cl.Broker(0).Request(ctx, req)
		if err != nil {
			t.Fatalf("%s: %v", c.user, err)
		}
		resp := kresp.(*kmsg.AddPartitionsToTxnResponse)
		if resp.Version < 4 {
			t.Fatalf("%s: sent at v%d", c.user, resp.Version)
		}
		testenv.WantCode(t, c.user, resp.ErrorCode, c.want)
		if c.want != nil && len(resp.Transactions) != 0 {
			t.Fatalf("%s: refused request has results %+v", c.user, resp.Transactions)
		}
	}
}
