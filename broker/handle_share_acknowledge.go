package broker

// ShareAcknowledge v1–v2 (KIP-932; v2 adds renew acknowledgements,
// KIP-1222), as Kafka 4.2's KafkaApis.handleShareAcknowledgeRequest: the
// acknowledgements of records the member acquired, outside a ShareFetch.
// The request must belong to an open share session (epoch > 0, or -1 to
// close it after acknowledging, which also releases the member's other
// records); epoch 0 is INVALID_SHARE_SESSION_EPOCH. Each partition's
// error is the first failure among its batches: INVALID_RECORD_STATE for
// records not acquired by the member (or no longer: the lock expired),
// INVALID_REQUEST for a bad type or type count. The response waits until
// the new states are durable in __share_group_state.

import (
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/group/share"
)

// shareAck is one partition's acknowledgement batches.
type shareAck struct {
	tp      share.TopicIDPartition
	batches []shareAckBatch
}

type shareAckBatch struct {
	first, last int64
	types       []int8
}

func (b *Broker) handleShareAcknowledge(c *conn, req *kmsg.ShareAcknowledgeRequest) (result, error) {
	resp := req.ResponseKind().(*kmsg.ShareAcknowledgeResponse)
	group, member := derefString(req.GroupID), derefString(req.MemberID)
	if code, msg := b.shareRequestError(c, group, member); code != nil {
		resp.ErrorCode = code.Code
		if msg != "" {
			resp.ErrorMessage = kmsg.StringPtr(msg)
		}
		return respond(resp)
	}
	if _, serr := b.shares.Session(share.SessionRequest{Group: group, Member: member, Epoch: req.ShareSessionEpoch}); serr != nil {
		resp.ErrorCode = serr.Code
		return respond(resp)
	}
	sf := &shareFetch{group: group, member: member, version: req.Version, lock: b.shares.LockDuration(group)}
	if req.Version >= 2 {
		resp.AcquisitionLockTimeoutMillis = int32(sf.lock.Milliseconds())
	}
	var acks []shareAck
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			a := shareAck{tp: share.TopicIDPartition{TopicID: t.TopicID, Partition: p.Partition}}
			for _, ab := range p.AcknowledgementBatches {
				a.batches = append(a.batches, shareAckBatch{first: ab.FirstOffset, last: ab.LastOffset, types: ab.AcknowledgeTypes})
			}
			acks = append(acks, a)
		}
	}
	b.applyShareAcks(c, sf, acks, req.Version >= 2 && req.IsRenewAck)
	if req.ShareSessionEpoch == share.FinalSessionEpoch {
		b.shares.CloseSession(group, member)
	}
	ready := make(chan struct{})
	b.shares.Persist(sf.persist, func(err error) {
		for i := range sf.parts {
			fp := &sf.parts[i]
			code := fp.out.AcknowledgeErrorCode
			if code == 0 && err != nil {
				code = coordinatorWriteCode(err)
			}
			if n := len(resp.Topics); n == 0 || resp.Topics[n-1].TopicID != fp.tp.TopicID {
				t := kmsg.NewShareAcknowledgeResponseTopic()
				t.TopicID = fp.tp.TopicID
				resp.Topics = append(resp.Topics, t)
			}
			rp := kmsg.NewShareAcknowledgeResponseTopicPartition()
			rp.Partition, rp.ErrorCode = fp.tp.Partition, code
			rp.CurrentLeader.LeaderID = b.cfg.NodeID
			t := &resp.Topics[len(resp.Topics)-1]
			t.Partitions = append(t.Partitions, rp)
		}
		close(ready)
	})
	return result{resp: resp, ready: ready}, nil
}

// shareFetchAcks collects a ShareFetch's piggybacked acknowledgements.
func shareFetchAcks(req *kmsg.ShareFetchRequest) []shareAck {
	var acks []shareAck
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			if len(p.AcknowledgementBatches) == 0 {
				continue
			}
			a := shareAck{tp: share.TopicIDPartition{TopicID: t.TopicID, Partition: p.Partition}}
			for _, ab := range p.AcknowledgementBatches {
				a.batches = append(a.batches, shareAckBatch{first: ab.FirstOffset, last: ab.LastOffset, types: ab.AcknowledgeTypes})
			}
			acks = append(acks, a)
		}
	}
	return acks
}

// applyShareAcks applies acknowledgements to their share-partitions; each
// partition's first failure becomes its acknowledge error code. Renew is
// allowed only when the request says so (v2 IsRenewAck).
func (b *Broker) applyShareAcks(c *conn, sf *shareFetch, acks []shareAck, renew bool) {
	now := b.shares.Now()
	for _, a := range acks {
		fp := sf.part(b, c, a.tp, false)
		fp.acked = true
		if fp.out.ErrorCode != 0 {
			fp.out.AcknowledgeErrorCode = fp.out.ErrorCode
			continue
		}
		if fp.sp == nil {
			fp.out.AcknowledgeErrorCode = kerr.InvalidRecordState.Code
			continue
		}
		for _, ab := range a.batches {
			if !renew && slices.Contains(ab.types, share.AckRenew) {
				fp.out.AcknowledgeErrorCode = kerr.InvalidRequest.Code
				break
			}
			if err := fp.sp.Acknowledge(sf.member, ab.first, ab.last, ab.types, sf.lock, now); err != nil {
				fp.out.AcknowledgeErrorCode = errorCode(err)
				break
			}
		}
	}
}
