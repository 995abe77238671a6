package broker

// TxnOffsetCommit v0–newest (KIP-98, KIP-447 group metadata from v3, topic
// ids from v6): offsets committed inside a transaction. As in Kafka:
//
//   - the group check is the transactional one
//     (group.Coordinator.ValidateTxnCommit): producers before KIP-447 send
//     no generation or member, which is accepted; with member data the
//     member and generation must match (consumer and streams groups also
//     take an older member epoch for what the member has held since, as
//     KIP-1251 has it; ILLEGAL_GENERATION otherwise).
//   - the group's __consumer_offsets partition must be in the producer's
//     ongoing transaction (AddOffsetsToTxn): otherwise the coordinator's
//     error (INVALID_TXN_STATE or TRANSACTION_ABORTABLE by version,
//     INVALID_PRODUCER_EPOCH for a fenced producer...). v5+ while
//     transaction.version is 2 (transactions v2, KIP-890 part 2): the
//     request adds the partition to the transaction itself, durably
//     before the offsets are written, as Kafka's does.
//   - each partition must exist; metadata is bounded as for OffsetCommit.
//
// The offsets are written as a transactional batch of the producer and
// the response waits until it is durable; OffsetFetch shows them only
// once the transaction commits (package offsets).

import (
	"cmp"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/offsets"
	"github.com/kbroker/kbroker/txn"
)

func (b *Broker) handleTxnOffsetCommit(c *conn, req *kmsg.TxnOffsetCommitRequest) (result, error) {
	resp := req.ResponseKind().(*kmsg.TxnOffsetCommitResponse)
	resp.Topics = make([]kmsg.TxnOffsetCommitResponseTopic, len(req.Topics))
	// Authorized first: under transactions v2 the validation may add the
	// group's partition to the transaction.
	var groupErr error
	switch {
	case !b.allowed(c, opWrite, resTxnID, req.TransactionalID):
		groupErr = kerr.TransactionalIDAuthorizationFailed
	case !b.allowed(c, opRead, resGroup, req.Group):
		groupErr = kerr.GroupAuthorizationFailed
	default:
		groupErr = b.validateTxnOffsetCommit(c, req)
	}
	var pc pendingCommits
	for i := range req.Topics {
		rt := &req.Topics[i]
		st := &resp.Topics[i]
		st.Topic, st.TopicID = rt.Topic, rt.TopicID
		st.Partitions = make([]kmsg.TxnOffsetCommitResponseTopicPartition, len(rt.Partitions))
		t, topicCode := b.offsetTopic(req.Version >= 6, rt.Topic, rt.TopicID)
		if topicCode != kerr.UnknownTopicID.Code && !b.allowed(c, opRead, resTopic, cmp.Or(t.Name, rt.Topic)) {
			topicCode = kerr.TopicAuthorizationFailed.Code
		}
		for j := range rt.Partitions {
			rp := &rt.Partitions[j]
			sp := &st.Partitions[j]
			sp.Partition = rp.Partition
			if cm := pc.add(groupErr, t, topicCode, rp.Partition, rp.Offset, rp.LeaderEpoch, rp.Metadata, &sp.ErrorCode); cm != nil && req.Version < 2 {
				cm.LeaderEpoch = -1
			}
		}
	}
	return b.writeCommits(resp, &pc, func(s *offsets.Store, done func(error)) {
		s.CommitTxn(req.Group, req.ProducerID, req.ProducerEpoch, pc.commits, done)
	})
}

// validateTxnOffsetCommit checks the group membership and that the
// group's offsets partition is in the producer's transaction.
func (b *Broker) validateTxnOffsetCommit(c *conn, req *kmsg.TxnOffsetCommitRequest) error {
	instance := ""
	if req.InstanceID != nil {
		instance = *req.InstanceID
	}
	partitions := b.commitPartitions(c, req.Version >= 6, len(req.Topics), func(i int) (string, [16]byte, []int32) {
		rt := &req.Topics[i]
		ps := make([]int32, len(rt.Partitions))
		for j := range rt.Partitions {
			ps[j] = rt.Partitions[j].Partition
		}
		return rt.Topic, rt.TopicID, ps
	})
	if found, err := b.streamsCo.ValidateCommit(req.Group, req.MemberID, req.Generation, true, req.Version, byTopicName(partitions)); found {
		if err != nil {
			return err
		}
	} else if err := b.groups.ValidateTxnCommit(req.Group, req.MemberID, instance, req.Generation, partitions); err != nil {
		return err
	}
	coord, err := b.transactionCoordinator()
	if err != nil {
		return err
	}
	tp := b.groupPartition(req.Group)
	err = coord.Verify(req.TransactionalID, req.ProducerID, req.ProducerEpoch, tp)
	if joinNeeded(err) && req.Version >= 5 && b.txnV2() {
		// Transactions v2: the commit adds the group's partition
		// itself, in place of AddOffsetsToTxn.
		err = addPartitionsV2(coord, req.TransactionalID, req.ProducerID, req.ProducerEpoch, []txn.TopicPartition{tp}, txnOffsetCommitJoinWait)
	}
	return forVersion(kmsg.TxnOffsetCommit, req.Version, err)
}
