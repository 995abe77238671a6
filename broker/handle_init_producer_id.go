package broker

// InitProducerId v0–v5 (KIP-98 idempotent and transactional producers;
// v2 flexible; v3 KIP-360 ProducerID/ProducerEpoch of an existing producer;
// v4 KIP-588 PRODUCER_FENCED; v5 KIP-890 TRANSACTION_ABORTABLE).
//
// Idempotent producers (TransactionalID null) get a fresh producer id with
// epoch 0, as Kafka's TransactionCoordinator.handleInitProducerId does:
// "if the transactional id is null, then always blindly accept the request
// and return a new producerId". A KIP-360 request that carries the
// producer's current id and epoch gets a new id too: for idempotent
// producers the epoch bump of KIP-360 happens in the client, which asks the
// broker only for a new id (when the epoch would overflow or the client
// resets). As in KafkaApis, a request that sets only one of ProducerID and
// ProducerEpoch is INVALID_REQUEST. Ids come from producer_ids.go: blocks of
// 1000, persisted before use, so they never repeat across restarts.
//
// Transactions are not implemented. A non-empty TransactionalID is answered
// with TRANSACTIONAL_ID_AUTHORIZATION_FAILED, what Kafka answers when the
// ACLs deny the principal that transactional id. It is what a real Kafka
// cluster says when transactions are not available to the client, it is not
// retriable, and franz-go, librdkafka and the Java client report it at once
// as a clear fatal error ("not authorized to use transactional id"). The
// alternative, COORDINATOR_NOT_AVAILABLE, is retriable: clients would retry
// it until their transaction timeout and fail with a misleading message.
// Produce refuses transactional batches with the same code
// (handle_produce.go), and FindCoordinator for a transaction key should too.
// An empty TransactionalID is INVALID_REQUEST, as in Kafka.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"
)

func (b *Broker) handleInitProducerID(c *conn, req *kmsg.InitProducerIDRequest) (result, error) {
	resp := req.ResponseKind().(*kmsg.InitProducerIDResponse)
	resp.ProducerID, resp.ProducerEpoch = -1, -1
	switch {
	case req.TransactionalID != nil && *req.TransactionalID == "":
		resp.ErrorCode = kerr.InvalidRequest.Code
		return now(resp)
	case req.TransactionalID != nil:
		resp.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
		return now(resp)
	case req.Version >= 3 && (req.ProducerID == -1) != (req.ProducerEpoch == -1):
		resp.ErrorCode = kerr.InvalidRequest.Code
		return now(resp)
	}
	id, err := b.pids.next()
	if err != nil {
		b.lg.Error("allocate producer id", zap.Error(err))
		resp.ErrorCode = errorCode(err)
		return now(resp)
	}
	resp.ProducerID, resp.ProducerEpoch = id, 0
	return now(resp)
}
