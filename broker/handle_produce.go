package broker

// Produce v3–v13: record batches of magic 2 only, as Kafka 4 (KIP-896
// removed v0–v2 and message formats 0 and 1). ApiVersions lists Produce
// from v0 all the same, as Kafka 4 does (api.listedFromV0).
//
// Per version: v3 RecordBatch and TransactionalID (KIP-98); v5
// LogStartOffset (KIP-107); v7 zstd (KIP-110); v8 RecordErrors and
// ErrorMessage (KIP-467); v9 flexible (KIP-482); v10 CurrentLeader and
// NodeEndpoints (KIP-951, never needed on one node: NOT_LEADER_OR_FOLLOWER is
// never answered); v11 TRANSACTION_ABORTABLE (KIP-890, never answered
// without transactions); v12 implicit AddPartitionsToTxn (KIP-890 part 2,
// below); v13 topics by id (KIP-516: an unknown id is
// UNKNOWN_TOPIC_ID).
//
// Each partition's batch is validated, appended and stamped by
// partition.Partition.Append; its errors wrap the Kafka code and become the
// partition's ErrorCode. A per-record failure (*batch.Error with a record
// index) is reported in RecordErrors with that index, and the partition's
// log start offset, as Kafka's RecordValidationException. An idempotent
// retry of one of the producer's last 5 batches is answered with the
// original offsets and no error, as Kafka's UnifiedLog does with the cached
// batch metadata (DUPLICATE_SEQUENCE_NUMBER is not sent by modern brokers).
//
// acks: 1 answers once the batches are appended. -1 in sync flush mode
// waits until the commit log is durable past every appended batch (one
// group-commit request for the largest position; the response is pending and
// later requests on the connection keep being read); the sync flush timeout
// or a flush failure turns every partition that was appended into
// REQUEST_TIMED_OUT or KAFKA_STORAGE_ERROR. With one replica, -1 needs
// nothing more. 0 sends no response, and when any partition failed the
// connection is closed, as Kafka does (KafkaApis.handleProduceRequest) so
// that the client notices and refreshes its metadata. Any other acks value
// is INVALID_REQUIRED_ACKS for every partition of a known topic.
//
// Transactional batches: each is checked against the producer's ongoing
// transaction (the partition must have been added by AddPartitionsToTxn,
// at the current epoch; txn.Coordinator.Verify, with the codes Kafka gives
// Produce: INVALID_PRODUCER_EPOCH, INVALID_TXN_STATE up to v10, retriable
// NOT_ENOUGH_REPLICAS while the coordinator is busy), then the partition
// opens or extends the producer's transaction. v12+ while
// transaction.version is 2 (transactions v2, KIP-890 part 2): the
// partitions not yet in the transaction are added to it first, all in one
// durable coordinator write that the request waits for (Kafka's
// AddPartitionsToTxnManager with the addPartition operation; Kafka too
// holds the connection's next request until the produce is answered),
// waiting up to TimeoutMillis for the previous transaction to complete
// (txn_join.go); each partition is checked with the coordinator once; a
// producer with an old epoch is refused there (INVALID_PRODUCER_EPOCH). A request with
// transactional batches but no transactional id gets
// TRANSACTIONAL_ID_AUTHORIZATION_FAILED for every partition, as Kafka.
//
// Deviations from Kafka: TimeoutMillis is not used (acks=-1 waits for the
// flush, bounded by the sync flush timeout); ErrorMessage (v8+) is filled
// for every failed append, where Kafka sends it only with RecordErrors; on a
// flush failure every appended partition of the request gets the error,
// since one flush covers them all. Topics are never created by Produce
// (neither are they by Kafka; clients create them through Metadata).
// Internal topics take writes only from the client id "__admin_client",
// otherwise INVALID_TOPIC_EXCEPTION, as Kafka.

import (
	"cmp"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"github.com/kbroker/kbroker/partition"
	"github.com/kbroker/kbroker/partition/batch"
	"github.com/kbroker/kbroker/topic"
	"github.com/kbroker/kbroker/txn"
)

// internalWriterClientID may write to internal topics (Kafka's
// AdminUtils.ADMIN_CLIENT_ID).
const internalWriterClientID = "__admin_client"

func (b *Broker) handleProduce(c *conn, req *kmsg.ProduceRequest) (result, error) {
	if c.produceScratch().hasRepeats(req) {
		mergeRepeats(req) // as Kafka reads it (handle_produce_repeats.go)
	}
	pr := newProduceResponse(req)
	resp := &pr.resp
	if hasTransactionalBatch(req) && req.TransactionID == nil {
		// Kafka refuses transactional records without a transactional
		// id as it refuses an unauthorized one.
		for i := range pr.parts[:countPartitions(req)] {
			pr.parts[i].ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
		}
		return b.produceResult(req, pr, true, 0)
	}
	if req.TransactionID != nil && !b.allowed(c, opWrite, resTxnID, *req.TransactionID) {
		for i := range pr.parts[:countPartitions(req)] {
			pr.parts[i].ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
		}
		return b.produceResult(req, pr, true, 0)
	}
	validAcks := req.Acks == -1 || req.Acks == 0 || req.Acks == 1
	sc := c.produceScratch()
	defer sc.reset()
	b.joinTransaction(c, req, sc)
	nowMs := time.Now().UnixMilli()
	failed := false
	k := -1 // the partition's position in the request
	for i := range req.Topics {
		rt, st := &req.Topics[i], &resp.Topics[i]
		t, code := b.produceTopic(c, req.Version, rt)
		for j := range rt.Partitions {
			k++
			rp, sp := &rt.Partitions[j], &st.Partitions[j]
			if code, ok := c.injected(cmp.Or(t.Name, rt.Topic), rp.Partition); ok {
				sp.ErrorCode = code
				failed = true
				continue
			}
			if code != 0 {
				sp.ErrorCode = code
				failed = true
				continue
			}
			p := b.store.Partition(partition.TopicID(t.ID), rp.Partition)
			switch {
			case p == nil:
				sp.ErrorCode = kerr.UnknownTopicOrPartition.Code
				failed = true
				continue
			case b.nodes != nil && b.notLeaderForProduce(c, req.Version, resp, sp, t.ID):
				failed = true
				continue
			case !validAcks:
				sp.ErrorCode = kerr.InvalidRequiredAcks.Code
				failed = true
				continue
			}
			if code := b.verifyTransactional(req, t.Name, rp, sc.verifiedAt(k)); code != 0 {
				sp.ErrorCode = code
				failed = true
				continue
			}
			sc.batch.Add(p, rp.Records)
			sc.slots = append(sc.slots, sp)
		}
	}
	// Every accepted batch at once: one commit-log write for the request
	// (partition.Batch).
	sc.batch.AppendMany(b.store, req.Version, nowMs)
	var maxEnd int64
	for k := range sc.batch.Items {
		it, sp := &sc.batch.Items[k], sc.slots[k]
		if it.Err != nil {
			b.setProduceError(sp, req.Version, it.P, it.Err)
			failed = true
			continue
		}
		sp.BaseOffset = it.Result.BaseOffset
		sp.LogAppendTime = it.Result.LogAppendTime
		sp.LogStartOffset = it.Result.LogStartOffset
		maxEnd = max(maxEnd, it.Result.End)
	}
	return b.produceResult(req, pr, failed, maxEnd)
}

// produceScratch is what handleProduce reuses from one request to the
// next on a connection: the request's batches for partition.Batch and,
// for each, its entry in the response.
type produceScratch struct {
	batch partition.Batch
	slots []*kmsg.ProduceResponseTopicPartition
	// verified is, by position in the request, the transaction check
	// joinTransaction already made of each partition (Produce v12+
	// under transactions v2), so that verifyTransactional does not ask
	// the coordinator a second time; empty when it made none.
	verified []verification
	// topicKeys and partitionKeys are hasRepeats' scratch.
	topicKeys     []produceTopicKey
	partitionKeys []int32
}

// verification is the outcome of a partition's transaction check: done
// when the check was made, err its answer (nil: the partition is in the
// transaction).
type verification struct {
	done bool
	err  error
}

// verifiedAt is the check joinTransaction made of the k-th partition of
// the request, if any.
func (sc *produceScratch) verifiedAt(k int) verification {
	if k < len(sc.verified) {
		return sc.verified[k]
	}
	return verification{}
}

// produceScratch is the connection's scratch (a new one without a
// connection, in tests that call the handler directly).
func (c *conn) produceScratch() *produceScratch {
	if c == nil {
		return new(produceScratch)
	}
	return &c.produce.scratch
}

// reset empties the scratch, keeping its buffers and nothing they held.
func (sc *produceScratch) reset() {
	sc.batch.Reset()
	clear(sc.slots)
	sc.slots = sc.slots[:0]
	clear(sc.verified)
	sc.verified = sc.verified[:0]
}

// countPartitions is the number of partitions a produce request names.
func countPartitions(req *kmsg.ProduceRequest) int {
	n := 0
	for i := range req.Topics {
		n += len(req.Topics[i].Partitions)
	}
	return n
}

// produceTopic finds a produce request's topic, by name or (v13+) by id,
// or returns the error code for all its partitions.
func (b *Broker) produceTopic(c *conn, version int16, rt *kmsg.ProduceRequestTopic) (topic.Topic, int16) {
	var (
		t  topic.Topic
		ok bool
	)
	name := rt.Topic
	if version >= 13 {
		if t, ok = b.topics.ByID(topic.ID(rt.TopicID)); !ok {
			return t, kerr.UnknownTopicID.Code
		}
		name = t.Name
	}
	if !b.allowed(c, opWrite, resTopic, name) {
		return t, kerr.TopicAuthorizationFailed.Code
	}
	// An internal topic's name is refused whether the topic exists yet
	// or not, as Kafka's ReplicaManager refuses it before it looks for
	// the partition.
	if topic.IsInternal(name) && c.clientID != internalWriterClientID {
		return t, kerr.InvalidTopicException.Code
	}
	if version < 13 {
		if t, ok = b.topics.Get(name); !ok {
			return t, kerr.UnknownTopicOrPartition.Code
		}
	}
	return t, 0
}

// verifyTransactional checks a transactional batch against the producer's
// ongoing transaction (Kafka's transaction verification of KIP-890 part
// 1): the partition must have been added with AddPartitionsToTxn (or by
// joinTransaction), by the current epoch. v is joinTransaction's check of
// the partition, if it made one: its answer is used rather than asking
// the coordinator again. Anything else is 0 (the partition validates the
// batch).
func (b *Broker) verifyTransactional(req *kmsg.ProduceRequest, topicName string, rp *kmsg.ProduceRequestTopicPartition, v verification) int16 {
	h, ok := transactionalHeader(req, rp)
	if !ok {
		return 0
	}
	err := v.err
	if !v.done {
		var coord *txn.Coordinator
		if coord, err = b.transactionCoordinator(); err == nil {
			err = coord.Verify(*req.TransactionID, h.ProducerID, h.ProducerEpoch, txn.TopicPartition{Topic: topicName, Partition: rp.Partition})
		}
	}
	if err == nil {
		return 0
	}
	return versionCode(kmsg.Produce, req.Version, err)
}

// transactionalHeader returns the header of a partition's transactional
// batch in a request with a transactional id; false for anything else
// (which the partition validates).
func transactionalHeader(req *kmsg.ProduceRequest, rp *kmsg.ProduceRequestTopicPartition) (batch.Header, bool) {
	r := rp.Records
	if req.TransactionID == nil || len(r) < batch.HeaderSize || r[batch.AttributesOffset+1]&batch.AttrTransactional == 0 {
		return batch.Header{}, false
	}
	h, err := batch.ParseHeader(r)
	return h, err == nil
}

// joinTransaction adds to the producer's transaction the partitions of a
// transactional Produce v12+ that are not in it yet, when transactions v2
// is in effect (transaction.version 2), and waits until that is durable
// (a previous transaction still completing is waited for, up to the
// request's timeout). It records in sc.verified each partition's check:
// the coordinator's Verify answer for one already in the transaction (or
// failing for another reason), and for one it added, the add's answer.
// The partitions are those of the first batch's producer id and epoch
// (Kafka's produce carries one producer); verifyTransactional checks any
// other batch itself. Partitions the request cannot write (unknown,
// unauthorized, internal) are left out: their own error answers them.
func (b *Broker) joinTransaction(c *conn, req *kmsg.ProduceRequest, sc *produceScratch) {
	if req.Version < 12 || req.TransactionID == nil || !b.txnV2() {
		return
	}
	coord, err := b.transactionCoordinator()
	if err != nil {
		return // verifyTransactional answers with the same error
	}
	n := countPartitions(req)
	if cap(sc.verified) < n {
		sc.verified = make([]verification, n)
	}
	sc.verified = sc.verified[:n]
	var (
		missing []txn.TopicPartition
		pid     int64 = -1
		epoch   int16
		k       = -1
	)
	for i := range req.Topics {
		rt := &req.Topics[i]
		t, code := b.produceTopic(c, req.Version, rt)
		for j := range rt.Partitions {
			k++
			if code != 0 {
				continue
			}
			rp := &rt.Partitions[j]
			h, ok := transactionalHeader(req, rp)
			if !ok || rp.Partition < 0 || rp.Partition >= t.Partitions || pid >= 0 && (h.ProducerID != pid || h.ProducerEpoch != epoch) {
				continue
			}
			pid, epoch = h.ProducerID, h.ProducerEpoch
			tp := txn.TopicPartition{Topic: t.Name, Partition: rp.Partition}
			err := coord.Verify(*req.TransactionID, pid, epoch, tp)
			if joinNeeded(err) {
				missing = append(missing, tp)
				err = errJoinPending
			}
			sc.verified[k] = verification{done: true, err: err}
		}
	}
	if len(missing) == 0 {
		return
	}
	joinErr := addPartitionsV2(coord, *req.TransactionID, pid, epoch, missing, time.Duration(req.TimeoutMillis)*time.Millisecond)
	for k := range sc.verified {
		if sc.verified[k].err == errJoinPending {
			sc.verified[k].err = joinErr
		}
	}
}

// errJoinPending marks, in produceScratch.verified, a partition that
// joinTransaction is adding; the add's answer replaces it.
var errJoinPending = errors.New("broker: partition being added to the transaction")

// hasTransactionalBatch reports whether any partition's records start with
// a batch header whose transactional bit is set (Kafka's
// ProduceRequest.hasTransactionalRecords). Anything too short to tell is
// left to validation.
func hasTransactionalBatch(req *kmsg.ProduceRequest) bool {
	for i := range req.Topics {
		for j := range req.Topics[i].Partitions {
			r := req.Topics[i].Partitions[j].Records
			// Only a magic-2 batch has the flag (Kafka's
			// RecordBatch.isTransactional); older formats fail
			// validation later with INVALID_RECORD.
			if len(r) >= batch.AttributesOffset+2 && r[batch.MagicOffset] == batch.MagicV2 &&
				r[batch.AttributesOffset+1]&batch.AttrTransactional != 0 {
				return true
			}
		}
	}
	return false
}

// setProduceError records a failed append: the code, for v8+ the message
// and, for a bad record, its index (KIP-467). Like Kafka, a batch refused
// before the log (framing, CRC, size) reports no log start offset (-1),
// while record and producer-state errors and the log's own batch checks
// (batch.Error.InLog) report the partition's.
func (b *Broker) setProduceError(sp *kmsg.ProduceResponseTopicPartition, version int16, p *partition.Partition, err error) {
	sp.ErrorCode = errorCode(err)
	switch sp.ErrorCode {
	case kerr.UnknownServerError.Code:
		b.lg.Error("produce", zap.String("topic", p.Topic()), zap.Int32("partition", p.Index()), zap.Error(err))
	case kerr.KafkaStorageError.Code:
		// A full disk or a failed write: the operator must hear of it.
		b.lg.Warn("produce refused: storage error", zap.String("topic", p.Topic()), zap.Int32("partition", p.Index()), zap.Error(err))
	}
	if version >= 8 {
		sp.ErrorMessage = errorMessage(err)
	}
	var be *batch.Error
	switch {
	case errors.As(err, &be):
		if be.Record < 0 {
			if be.InLog {
				sp.LogStartOffset = p.LogStartOffset()
			}
			return
		}
		sp.LogStartOffset = p.LogStartOffset()
		if version >= 8 {
			rec := kmsg.NewProduceResponseTopicPartitionErrorRecord()
			rec.RelativeOffset = int32(be.Record)
			rec.ErrorMessage = &be.Reason
			sp.ErrorRecords = append(sp.ErrorRecords, rec)
		}
	case sp.ErrorCode != kerr.KafkaStorageError.Code:
		sp.LogStartOffset = p.LogStartOffset()
	}
}

// produceResult hands the response to the connection according to acks.
// maxEnd is the largest commit-log position appended to (0: none).
// The writer recycles the response once it has sent it.
func (b *Broker) produceResult(req *kmsg.ProduceRequest, pr *produceResponse, failed bool, maxEnd int64) (result, error) {
	resp := &pr.resp
	switch {
	case req.Acks == 0 && failed:
		err := fmt.Errorf("broker: produce with acks=0 failed: %s", firstProduceError(resp))
		pr.recycle()
		return result{}, err
	case req.Acks == 0:
		pr.recycle()
		return result{none: true}, nil
	case req.Acks != -1 || maxEnd == 0 || b.store.FlushMode() != partition.FlushSync:
		return result{resp: resp, produce: pr}, nil
	}
	// From here on resp belongs to the group commit's callback until it
	// signals pr.durable.
	b.store.SubmitFlush(maxEnd, pr.awaitDurable())
	return result{resp: resp, ready: pr.durable, produce: pr}, nil
}

// failProduceDurability gives every appended partition the error of the flush
// that was to make it durable.
func failProduceDurability(resp *kmsg.ProduceResponse, version int16, err error) {
	code := errorCode(err)
	var msg *string
	if version >= 8 {
		msg = errorMessage(err)
	}
	for i := range resp.Topics {
		for j := range resp.Topics[i].Partitions {
			sp := &resp.Topics[i].Partitions[j]
			if sp.ErrorCode == 0 {
				sp.ErrorCode, sp.ErrorMessage = code, msg
			}
		}
	}
}

// firstProduceError describes the first failed partition, for the log line
// of a connection closed after an acks=0 failure.
func firstProduceError(resp *kmsg.ProduceResponse) string {
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if p.ErrorCode != 0 {
				name := t.Topic
				if name == "" {
					name = topic.ID(t.TopicID).String()
				}
				return fmt.Sprintf("%s-%d: %s", name, p.Partition, kerr.ErrorForCode(p.ErrorCode))
			}
		}
	}
	return "unknown error"
}
