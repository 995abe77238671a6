package broker

// AddPartitionsToTxn v0–v5.
//
// v0–v3 (KIP-98; v1 throttle, v2 PRODUCER_FENCED of KIP-588, v3
// flexible): the producer names the partitions it is about to write in its
// transaction; the coordinator records them durably before answering. As
// in Kafka (KafkaApis.handleAddPartitionsToTxnRequest), the request is all
// or nothing: partitions of unknown topics get UNKNOWN_TOPIC_OR_PARTITION
// and the others OPERATION_NOT_ATTEMPTED, without asking the coordinator;
// a coordinator error goes to every partition.
//
// v4–v5 (KIP-890): the batched form a partition leader sends the
// coordinator, several transactions at once, each of which either adds its
// partitions (with transactions v2 semantics, as Kafka's
// TransactionVersion.transactionVersionForAddPartitionsToTxn decides for
// v4+) or, with VerifyOnly, only checks that they are in the transaction
// (TransactionCoordinator.handleVerifyPartitionsInTransaction: NONE or
// TRANSACTION_ABORTABLE per partition, or the transaction's error for all
// of them). v5 adds TRANSACTION_ABORTABLE to the codes, which Kafka 4.4
// answers at v4 too, as here. Kafka's answers to a client that sends it:
// with ACLs on, the request needs CLUSTER_ACTION on the cluster
// (CLUSTER_AUTHORIZATION_FAILED as the top-level error, no results), and
// neither the transactional id nor the topics are authorized further;
// per transaction, unknown partitions make the others
// OPERATION_NOT_ATTEMPTED as in v3. A parked add is never waited for here:
// a busy transaction is CONCURRENT_TRANSACTIONS, which the sender retries.
//
// Deviation: a v4+ request without transactions gets an empty answer at
// once; Kafka 4.4 never answers it (it replies when every transaction has
// its result). Results come in request order; Kafka's follow the order
// the coordinator answered them.

import (
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/topic"
	"github.com/kbroker/kbroker/txn"
)

func (b *Broker) handleAddPartitionsToTxn(c *conn, req *kmsg.AddPartitionsToTxnRequest) (result, error) {
	if req.Version >= 4 {
		return b.addPartitionsBatch(c, req)
	}
	resp := req.ResponseKind().(*kmsg.AddPartitionsToTxnResponse)
	var tps []txn.TopicPartition
	var codes []*int16
	unknown := false
	txnAllowed := b.allowed(c, opWrite, resTxnID, req.TransactionalID)
	resp.Topics = make([]kmsg.AddPartitionsToTxnResponseTopic, len(req.Topics))
	for i, rt := range req.Topics {
		st := &resp.Topics[i]
		st.Topic = rt.Topic
		st.Partitions = make([]kmsg.AddPartitionsToTxnResponseTopicPartition, len(rt.Partitions))
		t, known := b.topics.Get(rt.Topic)
		for j, p := range rt.Partitions {
			sp := &st.Partitions[j]
			sp.Partition = p
			codes = append(codes, &sp.ErrorCode)
			if !txnAllowed {
				sp.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
				unknown = true
				continue
			}
			if !b.allowed(c, opWrite, resTopic, rt.Topic) || topic.IsInternal(rt.Topic) && b.security.authz != nil {
				sp.ErrorCode = kerr.TopicAuthorizationFailed.Code
				unknown = true
				continue
			}
			if !known || p < 0 || p >= t.Partitions {
				sp.ErrorCode = kerr.UnknownTopicOrPartition.Code
				unknown = true
				continue
			}
			tps = append(tps, txn.TopicPartition{Topic: rt.Topic, Partition: p})
		}
	}
	setAll := func(code int16) {
		for _, c := range codes {
			if *c == 0 {
				*c = code
			}
		}
	}
	if unknown {
		setAll(kerr.OperationNotAttempted.Code)
		return respond(resp)
	}
	coord, err := b.transactionCoordinator()
	if err != nil {
		setAll(errorCode(err))
		return respond(resp)
	}
	ready := make(chan struct{})
	coord.AddPartitions(req.TransactionalID, req.ProducerID, req.ProducerEpoch, tps, func(err error) {
		if err != nil {
			setAll(versionCode(kmsg.AddPartitionsToTxn, req.Version, err))
		}
		close(ready)
	})
	return result{resp: resp, ready: ready}, nil
}

// addPartitionsBatch serves AddPartitionsToTxn v4+ (see the file comment).
// Every transaction is decided on its own; the response is ready when the
// last one has its answer.
func (b *Broker) addPartitionsBatch(c *conn, req *kmsg.AddPartitionsToTxnRequest) (result, error) {
	resp := req.ResponseKind().(*kmsg.AddPartitionsToTxnResponse)
	if !b.allowedCluster(c, opClusterAction) {
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		return respond(resp)
	}
	resp.Transactions = make([]kmsg.AddPartitionsToTxnResponseTransaction, len(req.Transactions))
	type pending struct {
		rt   *kmsg.AddPartitionsToTxnRequestTransaction
		st   *kmsg.AddPartitionsToTxnResponseTransaction
		tps  []txn.TopicPartition
		code []*int16 // the partitions' codes, in tps order
	}
	var todo []pending
	for i := range req.Transactions {
		rt, st := &req.Transactions[i], &resp.Transactions[i]
		st.TransactionalID = rt.TransactionalID
		p := pending{rt: rt, st: st}
		unknown := false
		st.Topics = make([]kmsg.AddPartitionsToTxnResponseTransactionTopic, len(rt.Topics))
		for j := range rt.Topics {
			rtt, stt := &rt.Topics[j], &st.Topics[j]
			stt.Topic = rtt.Topic
			stt.Partitions = make([]kmsg.AddPartitionsToTxnResponseTransactionTopicPartition, len(rtt.Partitions))
			t, known := b.topics.Get(rtt.Topic)
			for k, idx := range rtt.Partitions {
				sp := &stt.Partitions[k]
				sp.Partition = idx
				if !known || idx < 0 || idx >= t.Partitions {
					sp.ErrorCode = kerr.UnknownTopicOrPartition.Code
					unknown = true
					continue
				}
				p.tps = append(p.tps, txn.TopicPartition{Topic: rtt.Topic, Partition: idx})
				p.code = append(p.code, &sp.ErrorCode)
			}
		}
		if unknown {
			for _, code := range p.code {
				*code = kerr.OperationNotAttempted.Code
			}
			continue
		}
		todo = append(todo, p)
	}
	if len(todo) == 0 {
		return respond(resp)
	}
	coord, err := b.transactionCoordinator()
	if err != nil {
		for _, p := range todo {
			for _, code := range p.code {
				*code = errorCode(err)
			}
		}
		return respond(resp)
	}
	var verifyOnly []pending
	var adds []pending
	for _, p := range todo {
		if p.rt.VerifyOnly {
			verifyOnly = append(verifyOnly, p)
		} else {
			adds = append(adds, p)
		}
	}
	for _, p := range verifyOnly {
		for i, tp := range p.tps {
			*p.code[i] = errorCode(coord.Verify(p.rt.TransactionalID, p.rt.ProducerID, p.rt.ProducerEpoch, tp))
		}
	}
	if len(adds) == 0 {
		return respond(resp)
	}
	ready := make(chan struct{})
	var mu sync.Mutex
	left := len(adds)
	for _, p := range adds {
		coord.AddPartitionsV2(p.rt.TransactionalID, p.rt.ProducerID, p.rt.ProducerEpoch, p.tps, 0, func(err error) {
			code := errorCode(err)
			for _, c := range p.code {
				*c = code
			}
			mu.Lock()
			left--
			last := left == 0
			mu.Unlock()
			if last {
				close(ready)
			}
		})
	}
	return result{resp: resp, ready: ready}, nil
}
