package broker

// AddOffsetsToTxn v0–newest: the producer will commit offsets of a group
// in its transaction (TxnOffsetCommit); the coordinator adds the group's
// __consumer_offsets partition to the transaction, so that the end
// marker reaches it. Errors as the coordinator answers them for the
// request's version.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func (b *Broker) handleAddOffsetsToTxn(c *conn, req *kmsg.AddOffsetsToTxnRequest) (result, error) {
	resp := req.ResponseKind().(*kmsg.AddOffsetsToTxnResponse)
	switch {
	case !b.allowed(c, opWrite, resTxnID, req.TransactionalID):
		resp.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
		return respond(resp)
	case !b.allowed(c, opRead, resGroup, req.Group):
		resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
		return respond(resp)
	}
	// The group's partition must exist for the marker to land in.
	if _, err := b.committedOffsets(); err != nil {
		resp.ErrorCode = errorCode(err)
		return respond(resp)
	}
	coord, err := b.transactionCoordinator()
	if err != nil {
		resp.ErrorCode = errorCode(err)
		return respond(resp)
	}
	ready := make(chan struct{})
	coord.AddOffsets(req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Group, func(err error) {
		resp.ErrorCode = versionCode(kmsg.AddOffsetsToTxn, req.Version, err)
		close(ready)
	})
	return result{resp: resp, ready: ready}, nil
}
