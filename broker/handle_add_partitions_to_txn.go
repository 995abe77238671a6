package broker

// AddPartitionsToTxn v0–v3: the producer names the partitions it is about
// to write in its transaction; the coordinator records them durably before
// answering. As in Kafka (KafkaApis.handleAddPartitionsToTxnRequest), the
// request is all or nothing: partitions of unknown topics get
// UNKNOWN_TOPIC_OR_PARTITION and the others OPERATION_NOT_ATTEMPTED,
// without asking the coordinator; a coordinator error goes to every
// partition. v4+ is the broker-to-broker verification form of KIP-890
// (batched transactions, verify-only), which only brokers send: not
// served, so clients that see v4+ unadvertised use v3.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/topic"
	"github.com/kbroker/kbroker/txn"
)

func (b *Broker) handleAddPartitionsToTxn(c *conn, req *kmsg.AddPartitionsToTxnRequest) (result, error) {
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
