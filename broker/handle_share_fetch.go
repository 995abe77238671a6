package broker

// ShareFetch v1–v2 (KIP-932; v2 adds KIP-1206's acquire mode and
// KIP-1222's renew acknowledgements), as Kafka 4.2's
// KafkaApis.handleShareFetchRequest and SharePartitionManager:
//
//   - The share session (ShareSessionEpoch) is opened at 0 with the
//     partitions named, moved on by each request, closed at -1 (which may
//     carry only acknowledgements; the member's records are then
//     released) or when the connection that opened it closes. A wrong epoch is INVALID_SHARE_SESSION_EPOCH, no session
//     SHARE_SESSION_NOT_FOUND, both top-level.
//   - Piggybacked acknowledgements are applied first, per partition, and
//     their outcome is the partition's acknowledge error code. Renew (4)
//     needs v2 with IsRenewAck; acknowledgements in a request that opens a
//     session are INVALID_REQUEST.
//   - Each partition of the session reads from its first Available record
//     (or SPEO) and the records read are acquired for the member, under a
//     lock of share.record.lock.duration.ms, at most max_records of them
//     (both acquire modes: batch-optimised may return whole batches, but
//     only the acquired offsets count). Record bytes go out with
//     sendfile like Fetch's: the response frame is encoded with splice
//     points (protocol.EncodeShareFetchResponse).
//   - With nothing acquired the request parks until a partition's high
//     watermark moves, records become available again (released, or a
//     lock expired), or max_wait_ms passes, then reads once more.
//   - The response waits until changed share-partition states (new
//     partitions, acknowledgements, expired locks) are durable in
//     __share_group_state.
//
//   - With share.isolation.level=read_committed a partition is read only
//     below its last stable offset (and a parked fetch waits for that to
//     move), and the records of aborted transactions in what was read are
//     archived before acquiring, so they are never delivered (Kafka's
//     SharePartition.filterAbortedTransactionalAcquiredRecords): their
//     bytes still go out, as in a read_committed Fetch, but no acquired
//     range names them.
//
// Deviations from Apache Kafka: min_bytes only decides whether to park
// (anything acquired is answered at once).

import (
	"encoding/binary"
	"reflect"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"github.com/kbroker/kbroker/group/share"
	"github.com/kbroker/kbroker/partition"
	"github.com/kbroker/kbroker/protocol"
)

// shareFetch is one ShareFetch on its way: the partitions answered, in
// session order, and what is to be stored.
type shareFetch struct {
	group, member string
	version       int16
	maxBytes      int64
	maxRecords    int
	lock          time.Duration
	// committed is share.isolation.level=read_committed.
	committed bool
	parts     []shareFetchPart
	persist   []share.Key
}

type shareFetchPart struct {
	tp       share.TopicIDPartition
	p        *partition.Partition
	sp       *share.Partition
	maxBytes int64
	// fetch is false for a partition present only for its
	// acknowledgements; acked is whether it has some.
	fetch, acked bool
	out          protocol.ShareFetchPartition
}

func (b *Broker) handleShareFetch(c *conn, req *kmsg.ShareFetchRequest) (result, error) {
	fr := newFetchResult()
	resp := protocol.ShareFetchResponse{Version: req.Version}
	fail := func(err *kerr.Error, msg string) (result, error) {
		resp.ErrorCode = err.Code
		if msg != "" {
			resp.ErrorMessage = &msg
		}
		protocol.EncodeShareFetchResponse(&fr.frame, 0, &resp)
		return result{fetch: fr}, nil
	}
	group, member := derefString(req.GroupID), derefString(req.MemberID)
	if code, msg := b.shareRequestError(c, group, member); code != nil {
		return fail(code, msg)
	}
	acks := shareFetchAcks(req)
	if req.ShareSessionEpoch == share.InitialSessionEpoch && len(acks) > 0 {
		return fail(kerr.InvalidRequest, "Acknowledge data present in initial fetch request.")
	}
	// Every partition named joins the session (v1+ has no per-partition
	// byte limit to say "acknowledgements only"); a final request only
	// carries acknowledgements.
	var add, forget []share.TopicIDPartition
	if req.ShareSessionEpoch != share.FinalSessionEpoch {
		for _, t := range req.Topics {
			for _, p := range t.Partitions {
				add = append(add, share.TopicIDPartition{TopicID: t.TopicID, Partition: p.Partition})
			}
		}
	}
	for _, t := range req.ForgottenTopicsData {
		for _, p := range t.Partitions {
			forget = append(forget, share.TopicIDPartition{TopicID: t.TopicID, Partition: p})
		}
	}
	session, serr := b.shares.Session(share.SessionRequest{Group: group, Member: member, Epoch: req.ShareSessionEpoch, Add: add, Forget: forget, Fetch: true, Owner: c})
	if serr != nil {
		return fail(serr, "")
	}
	sf := &shareFetch{group: group, member: member, version: req.Version, maxBytes: int64(req.MaxBytes),
		maxRecords: int(req.MaxRecords), lock: b.shares.LockDuration(group), committed: b.shares.ReadCommitted(group)}
	if sf.maxBytes < 0 {
		sf.maxBytes = 0 // as Fetch: the KIP-74 minimum, the first batch only
	}
	if sf.maxRecords <= 0 {
		sf.maxRecords = 500 // Kafka's share.max.fetch.records default
	}
	resp.AcquisitionLockTimeoutMillis = int32(sf.lock.Milliseconds())
	for _, tp := range session {
		// The response's max_bytes bounds each partition too: v1+ has no
		// partition_max_bytes.
		fp := sf.part(b, c, tp, true)
		fp.maxBytes, fp.fetch = sf.maxBytes, true
	}
	b.applyShareAcks(c, sf, acks, req.Version >= 2 && req.IsRenewAck)
	if req.ShareSessionEpoch == share.FinalSessionEpoch {
		b.shares.CloseSession(group, member)
		return b.finishShareFetch(sf, fr, &resp, nil), nil
	}
	if n := b.readShareFetch(sf, fr); n > 0 || req.MaxWaitMillis <= 0 || req.MinBytes <= 0 && len(acks) > 0 {
		return b.finishShareFetch(sf, fr, &resp, nil), nil
	}
	// Nothing acquired: park, then read again.
	fr.release()
	ready := make(chan struct{})
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		b.parkShareFetch(c, sf, time.Duration(req.MaxWaitMillis)*time.Millisecond)
		if c.ctx.Err() != nil {
			fr.frame.Bytes = fr.frame.Bytes[:0]
			close(ready)
			return
		}
		b.readShareFetch(sf, fr)
		b.finishShareFetch(sf, fr, &resp, ready)
		<-ready // the writer may use the result only once encoded
	}()
	return result{fetch: fr, ready: ready}, nil
}

// shareRequestError checks what ShareFetch and ShareAcknowledge share:
// authorization on the group, the feature, the ids and the state store.
func (b *Broker) shareRequestError(c *conn, group, member string) (*kerr.Error, string) {
	switch {
	case !b.allowed(c, opRead, resGroup, group):
		return kerr.GroupAuthorizationFailed, ""
	case !b.shareGroups():
		return kerr.UnsupportedVersion, ""
	case group == "":
		return kerr.InvalidRequest, "Group ID cannot be empty."
	case member == "":
		return kerr.InvalidRequest, "Member ID cannot be empty."
	}
	if _, err := b.shareState(true); err != nil {
		return kerr.KafkaStorageError, "share group state not available: " + err.Error()
	}
	return nil, ""
}

// part returns the answer slot of tp, adding it (resolved) when new; its
// share-partition is created when create is set (a fetch), else only
// looked up (acknowledgements).
func (sf *shareFetch) part(b *Broker, c *conn, tp share.TopicIDPartition, create bool) *shareFetchPart {
	for i := range sf.parts {
		if sf.parts[i].tp == tp {
			return &sf.parts[i]
		}
	}
	fp := shareFetchPart{tp: tp, out: protocol.ShareFetchPartition{Partition: tp.Partition, LeaderID: b.cfg.NodeID}}
	t, ok := b.topics.ByID(tp.TopicID)
	switch {
	case !ok:
		fp.out.ErrorCode = kerr.UnknownTopicID.Code
	case !b.allowed(c, opRead, resTopic, t.Name):
		fp.out.ErrorCode = kerr.TopicAuthorizationFailed.Code
	default:
		if fp.p = b.store.Partition(partition.TopicID(t.ID), tp.Partition); fp.p == nil {
			fp.out.ErrorCode = kerr.UnknownTopicOrPartition.Code
		}
	}
	if fp.p != nil {
		key := share.Key{Group: sf.group, TopicID: tp.TopicID, Partition: tp.Partition}
		p := fp.p
		if create {
			fp.sp = b.shares.Partition(key, func(earliest bool) int64 {
				if earliest {
					return p.LogStartOffset()
				}
				return p.HighWatermark()
			})
		} else {
			fp.sp = b.shares.Existing(key)
		}
		if fp.sp != nil {
			sf.persist = append(sf.persist, key)
		}
	}
	sf.parts = append(sf.parts, fp)
	return &sf.parts[len(sf.parts)-1]
}

// readShareFetch reads and acquires records for every fetched partition
// into fr, under the byte limits; it returns the records acquired.
func (b *Broker) readShareFetch(sf *shareFetch, fr *fetchResult) int {
	fr.release()
	fr.spans = fr.spans[:0]
	remaining, acquired := sf.maxBytes, 0
	var total int64
	now := b.shares.Now()
	// rereads bounds the reads again of a partition whose read held only
	// aborted records, archived now, so that the records after them are
	// read in this fetch rather than after max_wait_ms.
	rereads := 0
	for i := 0; i < len(sf.parts); i++ {
		fp := &sf.parts[i]
		fp.out.Ranges, fp.out.Acquired = nil, fp.out.Acquired[:0]
		if !fp.fetch || fp.sp == nil || fp.out.ErrorCode != 0 || acquired >= sf.maxRecords {
			continue
		}
		fp.sp.AdvanceTo(fp.p.LogStartOffset())
		off, ok := fp.sp.FetchOffset(now)
		if !ok {
			continue
		}
		start := len(fr.ranges)
		read := fp.p.Read
		if sf.committed {
			read = fp.p.ReadCommitted
		}
		res, rs, err := read(off, min(fp.maxBytes, remaining), total == 0, fr.ranges)
		fr.ranges = rs
		if err != nil || res.Bytes == 0 {
			// An offset past the log end (an altered start offset) or
			// no new data: nothing to acquire yet.
			partition.ReleaseRanges(fr.ranges[start:])
			fr.ranges = fr.ranges[:start]
			continue
		}
		archived := false
		if sf.committed {
			fr.abortScratch = fp.p.AbortedTransactions(off, res.NextOffset, fr.abortScratch[:0])
			if len(fr.abortScratch) > 0 {
				archived = b.archiveAborted(fp, off, res.NextOffset, fr.abortScratch)
			}
		}
		var got []share.AcquiredRange
		got = fp.sp.Acquire(got, sf.member, off, res.NextOffset, sf.maxRecords-acquired, sf.lock, now)
		if len(got) == 0 {
			partition.ReleaseRanges(fr.ranges[start:])
			fr.ranges = fr.ranges[:start]
			if archived && rereads < 8 {
				rereads++
				i-- // read on past the archived records
			}
			continue
		}
		for _, a := range got {
			fp.out.Acquired = append(fp.out.Acquired, protocol.ShareAcquired{FirstOffset: a.First, LastOffset: a.Last, DeliveryCount: a.DeliveryCount})
			acquired += int(a.Last - a.First + 1)
		}
		first := len(fr.spans)
		for _, r := range fr.ranges[start:] {
			fr.spans = append(fr.spans, protocol.FetchRange{Handle: r.File, Offset: r.Offset, Len: r.Len})
		}
		fp.out.Ranges = fr.spans[first:len(fr.spans):len(fr.spans)]
		total += res.Bytes
		remaining -= res.Bytes
		fp.p.Traffic().BytesOut.Add(res.Bytes)
	}
	return acquired
}

// parkShareFetch waits until a fetched partition's high watermark (last
// stable offset, read_committed) moves,
// records of one become Available again (released by another member, or
// its lock expired: the wait ends at the earliest lock deadline), the wait
// ends, the connection closes or the broker stops.
func (b *Broker) parkShareFetch(c *conn, sf *shareFetch, wait time.Duration) {
	cases := []reflect.SelectCase{
		{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(c.ctx.Done())},
		{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(b.stop)},
	}
	now := b.shares.Now()
	for i := range sf.parts {
		fp := &sf.parts[i]
		if !fp.fetch || fp.p == nil || fp.sp == nil || fp.out.ErrorCode != 0 {
			continue
		}
		freed, deadline := fp.sp.Freed()
		if !deadline.IsZero() {
			// A moment past the deadline, so that the expiry is due when
			// the fetch reads again.
			wait = min(wait, max(deadline.Sub(now)+time.Millisecond, 0))
		}
		moved := fp.p.Wait(fp.p.HighWatermark())
		if sf.committed {
			moved = fp.p.WaitStable(fp.p.LastStableOffset())
		}
		cases = append(cases,
			reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(moved)},
			reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(freed)})
	}
	timer := time.NewTimer(wait)
	defer timer.Stop()
	cases = append(cases, reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(timer.C)})
	reflect.Select(cases)
}

// finishShareFetch stores the changed share-partition states, then
// encodes the response and closes ready (made here when nil). The result
// is pending until the states are durable; an acknowledgement whose state
// could not be stored gets the write's error code.
func (b *Broker) finishShareFetch(sf *shareFetch, fr *fetchResult, resp *protocol.ShareFetchResponse, ready chan struct{}) result {
	if ready == nil {
		ready = make(chan struct{})
	}
	b.shares.Persist(sf.persist, func(err error) {
		resp.Topics = resp.Topics[:0]
		for i := range sf.parts {
			fp := &sf.parts[i]
			if err != nil && fp.acked && fp.out.AcknowledgeErrorCode == 0 {
				fp.out.AcknowledgeErrorCode = coordinatorWriteCode(err)
			}
			if !fp.acked && fp.out.ErrorCode == 0 && len(fp.out.Acquired) == 0 {
				continue // nothing to say about it
			}
			if n := len(resp.Topics); n == 0 || resp.Topics[n-1].TopicID != fp.tp.TopicID {
				resp.Topics = append(resp.Topics, protocol.ShareFetchTopic{TopicID: fp.tp.TopicID})
			}
			t := &resp.Topics[len(resp.Topics)-1]
			t.Partitions = append(t.Partitions, fp.out)
		}
		protocol.EncodeShareFetchResponse(&fr.frame, 0, resp)
		close(ready)
	})
	return result{fetch: fr, ready: ready}
}

// derefString is *s, or "" for nil.
func derefString(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// Record batch header offsets (the v2 format): base offset, attributes,
// last offset delta and producer id; a header is 61 bytes.
const (
	batchAttributesAt      = 21
	batchLastOffsetDeltaAt = 23
	batchProducerIDAt      = 43
	batchHeaderLen         = 61
	batchTransactionalBit  = 0x10
	batchControlBit        = 0x20
)

// archiveAborted archives, in fp's share-partition, the records of
// [from, to) that belong to the aborted transactions aborted (from
// AbortedTransactions, in first-offset order), as a read_committed
// consumer skips them: walking the batches in order, a producer's
// transactional batches are aborted from its transaction's first offset
// until its next control batch, the abort marker. It reads batch headers
// from the log, which only happens when the range holds an aborted
// transaction.
func (b *Broker) archiveAborted(fp *shareFetchPart, from, to int64, aborted []partition.AbortedTxn) (archived bool) {
	var open []int64 // producers inside an aborted transaction
	next := 0
	err := fp.p.EachBatch(from, func(batch []byte) bool {
		if len(batch) < batchHeaderLen {
			return false
		}
		base := int64(binary.BigEndian.Uint64(batch))
		if base >= to {
			return false
		}
		last := base + int64(int32(binary.BigEndian.Uint32(batch[batchLastOffsetDeltaAt:])))
		attrs := binary.BigEndian.Uint16(batch[batchAttributesAt:])
		pid := int64(binary.BigEndian.Uint64(batch[batchProducerIDAt:]))
		for next < len(aborted) && aborted[next].FirstOffset <= last {
			open = append(open, aborted[next].ProducerID)
			next++
		}
		i := slices.Index(open, pid)
		switch {
		case attrs&batchTransactionalBit == 0 || i < 0:
		case attrs&batchControlBit != 0:
			open = slices.Delete(open, i, i+1)
		default:
			archived = fp.sp.ArchiveAvailable(max(base, from), min(last, to-1)) || archived
		}
		return true
	})
	if err != nil {
		b.lg.Warn("share fetch: aborted transactions not archived", zap.String("topic", fp.p.Topic()),
			zap.Int32("partition", fp.p.Index()), zap.Error(err))
	}
	return archived
}
