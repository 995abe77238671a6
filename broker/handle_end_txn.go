package broker

// EndTxn v0–v5: commit or abort. The coordinator answers once
// PrepareCommit/PrepareAbort is durable and writes the markers afterwards
// (a new transaction of the same producer meanwhile gets
// CONCURRENT_TRANSACTIONS), as Kafka does. v2 PRODUCER_FENCED (KIP-588);
// v3 flexible; v4 TRANSACTION_ABORTABLE (KIP-890); v5 transactions v2
// (KIP-890 part 2): while transaction.version is finalized at 2 the epoch
// is bumped by every EndTxn and the response carries the producer id and
// epoch for the next transaction (a fresh producer id with epoch 0 when
// the epochs ran out). Below level 2 a v5 request is served with the
// semantics of v4 and answers producer id and epoch -1, so that the
// client keeps its epoch (franz-go pins EndTxn to v4 unless the level is
// 2; the Java client sends v5 only at level 2).

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/txn"
)

func (b *Broker) handleEndTxn(c *conn, req *kmsg.EndTxnRequest) (result, error) {
	resp := req.ResponseKind().(*kmsg.EndTxnResponse)
	if !b.allowed(c, opWrite, resTxnID, req.TransactionalID) {
		resp.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
		return respond(resp)
	}
	coord, err := b.transactionCoordinator()
	if err != nil {
		resp.ErrorCode = errorCode(err)
		return respond(resp)
	}
	ready := make(chan struct{})
	coord.End(txn.EndRequest{
		TransactionalID: req.TransactionalID,
		ProducerID:      req.ProducerID,
		Epoch:           req.ProducerEpoch,
		Commit:          req.Commit,
		V2:              req.Version >= 5 && b.txnV2(),
	}, func(r txn.EndResult) {
		resp.ErrorCode = versionCode(kmsg.EndTxn, req.Version, r.Err)
		resp.ProducerID, resp.ProducerEpoch = r.ProducerID, r.Epoch
		close(ready)
	})
	return result{resp: resp, ready: ready}, nil
}
