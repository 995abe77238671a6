package broker

// InitProducerId v0–v5 (KIP-98 idempotent and transactional producers;
// v2 flexible; v3 KIP-360 ProducerID/ProducerEpoch of an existing producer;
// v4 KIP-588 PRODUCER_FENCED; v5 KIP-890 TRANSACTION_ABORTABLE). v6
// (KIP-939 two-phase commit: Enable2Pc, KeepPreparedTxn) is an unstable
// version in Kafka 4.4, neither advertised nor served unless
// unstable.api.versions.enable (a v6 request closes the connection); kbroker
// does the same and has no such switch.
//
// Idempotent producers (TransactionalID null) get a fresh producer id with
// epoch 0, as Kafka's TransactionCoordinator.handleInitProducerId does:
// "if the transactional id is null, then always blindly accept the request
// and return a new producerId". A KIP-360 request that carries the
// producer's current id and epoch gets a new id too: for idempotent
// producers the epoch bump of KIP-360 happens in the client, which asks the
// broker only for a new id (when the epoch would overflow or the client
// resets). As in KafkaApis, a request that sets only one of ProducerID and
// ProducerEpoch is INVALID_REQUEST. Ids come from partition.ProducerIDs: blocks of
// 1000, persisted before use, so they never repeat across restarts.
//
// A transactional id goes to the transaction coordinator (txn/): a new id
// gets a producer id with epoch 0, a known one an epoch bump that fences
// its previous producer (after aborting its open transaction, meanwhile
// CONCURRENT_TRANSACTIONS), with the error codes of the request's version
// (forVersion in errors.go). An empty TransactionalID is INVALID_REQUEST, as in
// Kafka.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"github.com/kbroker/kbroker/txn"
)

func (b *Broker) handleInitProducerID(c *conn, req *kmsg.InitProducerIDRequest) (result, error) {
	resp := req.ResponseKind().(*kmsg.InitProducerIDResponse)
	resp.ProducerID, resp.ProducerEpoch = -1, -1
	switch {
	case req.TransactionalID != nil && *req.TransactionalID == "":
		resp.ErrorCode = kerr.InvalidRequest.Code
		return respond(resp)
	case req.Version >= 3 && (req.ProducerID == -1) != (req.ProducerEpoch == -1):
		resp.ErrorCode = kerr.InvalidRequest.Code
		return respond(resp)
	case req.TransactionalID != nil && !b.allowed(c, opWrite, resTxnID, *req.TransactionalID):
		resp.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
		return respond(resp)
	case req.TransactionalID != nil:
		return b.initTransactionalProducer(req, resp)
	case !b.idempotentAllowed(c):
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		return respond(resp)
	}
	id, err := b.pids.Next()
	if err != nil {
		b.lg.Error("allocate producer id", zap.Error(err))
		resp.ErrorCode = errorCode(err)
		return respond(resp)
	}
	resp.ProducerID, resp.ProducerEpoch = id, 0
	return respond(resp)
}

// initTransactionalProducer hands a transactional InitProducerId to the
// coordinator; the response waits for its durable state change.
func (b *Broker) initTransactionalProducer(req *kmsg.InitProducerIDRequest, resp *kmsg.InitProducerIDResponse) (result, error) {
	coord, err := b.transactionCoordinator()
	if err != nil {
		resp.ErrorCode = errorCode(err)
		return respond(resp)
	}
	ready := make(chan struct{})
	coord.InitProducerID(txn.InitRequest{
		TransactionalID: *req.TransactionalID,
		TimeoutMs:       req.TransactionTimeoutMillis,
		ProducerID:      req.ProducerID,
		Epoch:           req.ProducerEpoch,
	}, func(r txn.InitResult) {
		if r.Err != nil {
			resp.ErrorCode = versionCode(kmsg.InitProducerID, req.Version, r.Err)
		} else {
			resp.ProducerID, resp.ProducerEpoch = r.ProducerID, r.Epoch
		}
		close(ready)
	})
	return result{resp: resp, ready: ready}, nil
}
