package broker

// EndTxn v0–v4: commit or abort. The coordinator answers once
// PrepareCommit/PrepareAbort is durable and writes the markers afterwards
// (a new transaction of the same producer meanwhile gets
// CONCURRENT_TRANSACTIONS), as Kafka does. v5+ belongs to transactions v2
// (KIP-890 part 2: the epoch bumps at every EndTxn and partitions join
// implicitly), which kbroker does not implement: the broker does not
// advertise transaction.version 2 nor EndTxn v5, so clients use this form.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
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
	coord.EndTxn(req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit, func(err error) {
		resp.ErrorCode = versionCode(kmsg.EndTxn, req.Version, err)
		close(ready)
	})
	return result{resp: resp, ready: ready}, nil
}
