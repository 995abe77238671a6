package broker

// Fetch v4–v18, consumers only (replica id -1). Record data is not copied:
// each partition's batches are held commit-log file ranges, spliced into
// the response by protocol.EncodeFetchResponse and sent with sendfile(2)
// by the connection writer, which releases the files afterwards.
//
// KIP-74: the first batch of the first partition with data is returned even
// when larger than the limits, so a consumer always makes progress; after
// it, batches are added while max_bytes and partition_max_bytes allow.
// Long polling: with fewer than min_bytes available the request parks
// until the end of what it may read moves in one of its partitions (the
// high watermark, or for read_committed the last stable offset) or
// max_wait_ms passes; the connection keeps reading other requests
// meanwhile, and its writer, which sends answers in request order, does
// the waiting (finishParked, or for a held session fetch writeLoop's
// select, fetch_held.go). A connection reuses its fetch's request,
// plan and timer from one fetch to the next (fetch_state.go).
//
// Isolation (KIP-98, v4+): read_uncommitted (0) reads up to the high
// watermark; read_committed (1) up to the last stable offset, and each
// partition answered without error lists the aborted transactions of the
// range it returns (from the fetch offset to the end of the last batch
// sent; Kafka bounds it by the next offset-index entry instead, a superset
// that clients treat the same). Every partition reports its last stable
// offset; aborted transactions are null for read_uncommitted and for
// errors, as in Kafka.
//
// Fetch sessions (KIP-227, v7+) are in fetch_session.go.
//
// The response's shape follows Kafka's: a partition named twice is
// answered once, where it was first named, for its last naming; the
// partitions read come first and those refused before reading (unknown
// topics and partitions, denied topics) after them, and neighbouring
// partitions of one topic share one topic entry. LastFetchedEpoch (v12+)
// is checked for consumers as for followers (diverges).
//
// Differences from Kafka: batches are never cut mid-batch. An isolation
// level other than 0 and 1 reads as read_uncommitted (Kafka fails the
// request).

import (
	"reflect"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/partition"
	"github.com/kbroker/kbroker/protocol"
	"github.com/kbroker/kbroker/topic"
)

// defaultFetchCopyThreshold is the range size below which fetch data is
// copied rather than sent with sendfile; see docs/BENCHMARKS.md.
const defaultFetchCopyThreshold = 16 << 10

// fetchResult is a fetch response ready to send: the encoded frame and the
// file ranges it holds. Results are pooled: their slices are reused from
// one fetch to the next, so a fetch of thousands of small batches does not
// allocate a range list per batch.
type fetchResult struct {
	frame  protocol.FetchFrame
	ranges []partition.Range
	// spans backs every partition's protocol.FetchPartition.Ranges.
	spans []protocol.FetchRange
	// aborted backs every partition's AbortedTransactions
	// (read_committed); abortScratch receives them from the partition.
	aborted      []protocol.AbortedTransaction
	abortScratch []partition.AbortedTxn
	// parked is the state of a fetch that waits for data: the writer
	// finishes it (finishParked) before sending the result.
	parked *fetchState
}

var fetchResults = sync.Pool{New: func() any { return new(fetchResult) }}

// newFetchResult takes a result from the pool.
func newFetchResult() *fetchResult { return fetchResults.Get().(*fetchResult) }

// release lets the held files go.
func (f *fetchResult) release() {
	partition.ReleaseRanges(f.ranges)
	clear(f.ranges)
	f.ranges = f.ranges[:0]
}

// recycle releases the files and returns the result to the pool; the
// caller must not use it afterwards. Very large slices are dropped rather
// than kept.
func (f *fetchResult) recycle() {
	if f.parked != nil {
		f.parked.timer.Stop() // never finished: its connection is gone
		f.parked = nil
	}
	f.release()
	clear(f.spans)
	f.spans = f.spans[:0]
	f.aborted = f.aborted[:0]
	clear(f.frame.Splices)
	f.frame.Splices = f.frame.Splices[:0]
	if cap(f.ranges) > maxPooledRanges || cap(f.spans) > maxPooledRanges || cap(f.frame.Bytes) > 1<<20 ||
		cap(f.aborted) > maxPooledRanges {
		return
	}
	fetchResults.Put(f)
}

// noAborted is the empty, non-null aborted-transaction list of a
// read_committed partition without aborts.
var noAborted = []protocol.AbortedTransaction{}

// maxPooledRanges bounds the range lists kept in the pool.
const maxPooledRanges = 1 << 16

// fetchPart is one requested partition.
type fetchPart struct {
	// topic and topicID name the partition's topic in the response.
	topic    string
	topicID  [16]byte
	key      sessionKey
	index    int32
	p        *partition.Partition
	errCode  int16
	offset   int64
	maxBytes int64
	// lastFetched is the request's LastFetchedEpoch (v12+; -1: none).
	lastFetched int32
	// late marks a partition refused before any read (an unknown topic
	// or partition, a denied topic), which Kafka answers after those it
	// read (KafkaApis.handleFetchRequest's erroneous list).
	late bool
	// lastEnd is the end of what the last read could see: the high
	// watermark, or the last stable offset for read_committed. A parked
	// fetch waits for it to move.
	lastEnd int64
	// version is p.Changes() from before the leader check and the read
	// (fetch sessions).
	version uint64
	// leader is the CurrentLeader hint of a partition that a simulated
	// node refused (nodes_check.go); leader.HasCurrentLeader marks it.
	leader protocol.FetchPartition
	out    protocol.FetchPartition
}

// fetchPlan is a decoded fetch request.
type fetchPlan struct {
	version  int16
	maxBytes int64
	minBytes int64
	// committed is isolation level read_committed (v4+).
	committed bool
	// topics are the response's, built from parts by assembleFetch.
	topics []protocol.FetchTopic
	parts  []fetchPart
	// seen is mayRepeat's scratch for fetches of many topics.
	seen map[sessionKey]struct{}
	sr   sessionRequest
	// listener is the index of the listener the fetch came on, for the
	// endpoints of a simulated cluster's leader hints.
	listener int
}

func (b *Broker) handleFetch(c *conn, req *kmsg.FetchRequest) (result, error) {
	// st is req's state (fetch_state.go): recycled once the answer is
	// encoded, here or at the end of the park.
	st := c.claimFetch(req)
	sr := b.openSession(req)
	fr := newFetchResult()
	if sr.errCode != 0 {
		b.metrics.apis[kmsg.Fetch.Int16()].countError(sr.errCode)
		resp := protocol.FetchResponse{Version: req.Version, ErrorCode: sr.errCode}
		protocol.EncodeFetchResponse(&fr.frame, 0, &resp)
		c.recycleFetch(st)
		return result{fetch: fr}, nil
	}
	skips := sr.incremental && b.sessionSkips(c) && !sr.session.readAll
	plan := &st.plan
	b.planFetch(c, req, b.fetchTopics(req, sr, skips, st), plan)
	plan.sr = sr
	total, anyErr := b.readFetch(plan, fr)
	wait := time.Duration(req.MaxWaitMillis) * time.Millisecond
	if total >= plan.minBytes || anyErr || wait <= 0 || !plan.waitable() {
		b.assembleFetch(plan, fr)
		b.encodeFetch(req, st, fr)
		c.recycleFetch(st)
		return result{fetch: fr}, nil
	}
	// Park: let the files go, wait for data, then read again. The session
	// learns about the read only when its answer goes out (assembleFetch),
	// so that it never counts as sent what a later read replaces.
	fr.release()
	if s := sr.session; s != nil {
		s.watchPlan(plan)
	}
	// The wait is the connection writer's (finishParked), which has
	// nothing to send before this answer anyway, responses going in
	// request order: no goroutine per park, and the wake goes straight to
	// the goroutine that sends. A session fetch with nothing queued before
	// it the connection holds instead, without handing it to the writer
	// (fetch_held.go). The max wait counts from now.
	st.skips = skips
	st.parkTimer(wait)
	fr.parked = st
	return result{fetch: fr}, nil
}

// finishParked ends a parked fetch on its connection's writer: it waits
// for data (parkFetch), then answers it (answerParked).
func (b *Broker) finishParked(c *conn, fr *fetchResult) {
	b.parkFetch(c, fr.parked)
	b.answerParked(c, fr)
}

// answerParked ends a parked fetch whose wait is over: it reads again and
// encodes the answer into fr; when the connection closed meanwhile, fr is
// left with nothing to send. It recycles the fetch's state.
func (b *Broker) answerParked(c *conn, fr *fetchResult) {
	st := fr.parked
	fr.parked = nil
	defer c.recycleFetch(st)
	plan := &st.plan
	if c.ctx.Err() != nil {
		fr.frame.Bytes = fr.frame.Bytes[:0] // nothing to send; never a stale frame
		return
	}
	if st.skips {
		// A skipped partition may be what changed: plan again from the
		// session. Planning after the park needs nothing of the
		// connection (its reader is busy with later requests by then,
		// and their fault rules; skips means none fired here and there
		// is no authorizer) but, in a simulated cluster, its node for
		// the leader check: a stand-in carries that.
		var node *conn
		if b.nodes != nil {
			node = &conn{b: b, l: c.l}
		}
		sr := plan.sr
		b.planFetch(node, st.fetch, b.fetchTopics(st.fetch, sr, true, st), plan)
		plan.sr = sr
	}
	b.readFetch(plan, fr)
	b.assembleFetch(plan, fr)
	b.encodeFetch(st.fetch, st, fr)
}

// fetchTopics is what a fetch reads: the request's topics, or for an
// incremental session fetch the session's partitions, without those it
// may skip (skips; fetch_session.go).
// The session's list is built in st's arrays.
func (b *Broker) fetchTopics(req *kmsg.FetchRequest, sr sessionRequest, skips bool, st *fetchState) []kmsg.FetchRequestTopic {
	if !sr.incremental {
		return req.Topics
	}
	sr.session.mu.Lock()
	defer sr.session.mu.Unlock()
	return sr.session.topicsFor(!skips, st)
}

// waitable reports whether a fetch could park: it reads a partition, or
// its session has partitions it skipped.
func (plan *fetchPlan) waitable() bool {
	if len(plan.parts) > 0 {
		return true
	}
	s := plan.sr.session
	if s == nil {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.parts) > 0
}

// reset empties the plan for the next fetch, keeping its arrays (and the
// partition arrays of its topics) but nothing they pointed to.
func (plan *fetchPlan) reset() {
	plan.clearTopics()
	clear(plan.parts)
	plan.parts = plan.parts[:0]
	*plan = fetchPlan{topics: plan.topics, parts: plan.parts, seen: plan.seen}
}

// clearTopics empties the response's topics, keeping their arrays.
func (plan *fetchPlan) clearTopics() {
	for i := range plan.topics {
		clear(plan.topics[i].Partitions)
		plan.topics[i] = protocol.FetchTopic{Partitions: plan.topics[i].Partitions[:0]}
	}
	plan.topics = plan.topics[:0]
}

// addTopic appends ft to the plan's topics, reusing the partition array of
// the element it overwrites.
func (plan *fetchPlan) addTopic(ft protocol.FetchTopic) {
	n := len(plan.topics)
	if n == cap(plan.topics) {
		plan.topics = append(plan.topics, ft)
		return
	}
	plan.topics = plan.topics[:n+1]
	parts := plan.topics[n].Partitions[:0]
	plan.topics[n] = ft
	plan.topics[n].Partitions = parts
}

// planFetch resolves the requested topics and partitions into plan,
// which it resets first.
func (b *Broker) planFetch(c *conn, req *kmsg.FetchRequest, topics []kmsg.FetchRequestTopic, plan *fetchPlan) {
	plan.reset()
	plan.version, plan.maxBytes, plan.minBytes = req.Version, int64(req.MaxBytes), int64(req.MinBytes)
	plan.committed = req.Version >= 4 && req.IsolationLevel == 1
	if b.nodes != nil {
		plan.listener = c.l.index
	}
	if plan.maxBytes < 0 {
		// Kafka answers max_bytes ≤ 0 with the KIP-74 minimum: the first
		// batch only.
		plan.maxBytes = 0
	}
	consumer := req.ReplicaID < 0 && (req.Version < 15 || req.ReplicaState.ID < 0)
	for i := range topics {
		rt := &topics[i]
		ft := protocol.FetchTopic{Topic: rt.Topic, TopicID: rt.TopicID}
		var id partition.TopicID
		errCode := int16(0)
		if req.Version >= 13 {
			if t, ok := b.topics.ByID(rt.TopicID); ok {
				id, ft.Topic = partition.TopicID(t.ID), t.Name
			} else {
				errCode = kerr.UnknownTopicID.Code
			}
		} else if t, ok := b.topics.Get(rt.Topic); ok {
			id = partition.TopicID(t.ID)
		} else {
			errCode = kerr.UnknownTopicOrPartition.Code
		}
		if errCode != kerr.UnknownTopicID.Code && !b.allowed(c, opRead, resTopic, ft.Topic) {
			errCode = kerr.TopicAuthorizationFailed.Code
		}
		for _, rp := range rt.Partitions {
			fp := fetchPart{topic: ft.Topic, topicID: ft.TopicID, key: keyFor(req.Version, rt, rp.Partition), index: rp.Partition,
				offset: rp.FetchOffset, maxBytes: int64(rp.PartitionMaxBytes), errCode: errCode, lastFetched: -1}
			if req.Version >= 12 {
				fp.lastFetched = rp.LastFetchedEpoch
			}
			if code, ok := c.injected(ft.Topic, rp.Partition); ok {
				fp.errCode = code
				plan.parts = append(plan.parts, fp)
				continue
			}
			var p *partition.Partition
			if errCode == 0 {
				p = b.store.Partition(id, rp.Partition)
			}
			switch {
			case errCode != 0:
				fp.late = true
			case p == nil:
				fp.errCode, fp.late = kerr.UnknownTopicOrPartition.Code, true
			case !consumer:
				// A replica this broker does not have (one node: any
				// follower), answered as Kafka's Partition.fetchRecords
				// does, with the leader from v16 (KIP-951).
				fp.errCode = kerr.NotLeaderForPartition.Code
				if req.Version >= 16 {
					fp.leader.HasCurrentLeader, fp.leader.CurrentLeaderID = true, b.cfg.NodeID
					if b.nodes != nil {
						fp.leader.CurrentLeaderID, fp.leader.CurrentLeaderEpoch = b.nodes.leader(topic.ID(id), rp.Partition)
					}
				}
			default:
				// Before the leader check as before the read: a leader
				// move counts as a change (fetch_session.go).
				fp.p, fp.version = p, p.Changes()
				if b.nodes != nil {
					fp.errCode = c.fetchLeaderCode(&fp, id, rp.Partition, rp.CurrentLeaderEpoch, req.Version)
				} else if rp.CurrentLeaderEpoch > 0 {
					// The only leader epoch here is 0: a newer one is from
					// a future this broker does not know.
					fp.errCode = kerr.UnknownLeaderEpoch.Code
				}
			}
			plan.parts = append(plan.parts, fp)
		}
	}
	if plan.mayRepeat(req.Version, topics) {
		plan.dedupe()
	}
}

// maxScannedPartition bounds the partition numbers mayRepeat checks with
// its bit set; a larger one sends the fetch to dedupe.
const maxScannedPartition = 1 << 12

// mayRepeat reports whether topics may name a partition twice: false is
// certain. It allocates nothing for partition numbers below
// maxScannedPartition and up to 16 topics (more use plan.seen, kept from
// one fetch to the next).
func (plan *fetchPlan) mayRepeat(version int16, topics []kmsg.FetchRequestTopic) bool {
	var bits [maxScannedPartition / 64]uint64
	for i := range topics {
		parts := topics[i].Partitions
		repeat := false
		n := 0
		for ; n < len(parts) && !repeat; n++ {
			p := parts[n].Partition
			w, m := p>>6, uint64(1)<<(p&63)
			repeat = p < 0 || p >= maxScannedPartition || bits[w]&m != 0
			if !repeat {
				bits[w] |= m
			}
		}
		for _, rp := range parts[:n] {
			if p := rp.Partition; p >= 0 && p < maxScannedPartition {
				bits[p>>6] = 0
			}
		}
		if repeat {
			return true
		}
	}
	if len(topics) <= 16 {
		for i := range topics {
			for j := range i {
				if keyFor(version, &topics[i], 0) == keyFor(version, &topics[j], 0) {
					return true
				}
			}
		}
		return false
	}
	if plan.seen == nil {
		plan.seen = make(map[sessionKey]struct{}, len(topics))
	}
	defer clear(plan.seen)
	for i := range topics {
		k := keyFor(version, &topics[i], 0)
		if _, ok := plan.seen[k]; ok {
			return true
		}
		plan.seen[k] = struct{}{}
	}
	return false
}

// dedupe answers a partition the request names more than once once, at
// the place of its first naming, with what its last naming asks: Kafka
// reads a fetch's partitions into a LinkedHashMap
// (FetchRequest.fetchData). Malformed requests only: it may allocate.
func (plan *fetchPlan) dedupe() {
	at := make(map[sessionKey]int, len(plan.parts))
	kept := plan.parts[:0]
	for i := range plan.parts {
		fp := plan.parts[i]
		if j, ok := at[fp.key]; ok {
			kept[j] = fp
			continue
		}
		at[fp.key] = len(kept)
		kept = append(kept, fp)
	}
	clear(plan.parts[len(kept):])
	plan.parts = kept
}

// readFetch reads every partition of the plan into fr under the byte
// limits; it reports the bytes read and whether any partition failed.
func (b *Broker) readFetch(plan *fetchPlan, fr *fetchResult) (int64, bool) {
	fr.release()
	fr.spans = fr.spans[:0]
	fr.aborted = fr.aborted[:0]
	remaining := plan.maxBytes
	var total int64
	anyErr := false
	for i := range plan.parts {
		fp := &plan.parts[i]
		out := protocol.FetchPartition{Partition: fp.index, ErrorCode: fp.errCode,
			HighWatermark: -1, LastStableOffset: -1, LogStartOffset: -1, PreferredReadReplica: -1,
			HasCurrentLeader: fp.leader.HasCurrentLeader, CurrentLeaderID: fp.leader.CurrentLeaderID,
			CurrentLeaderEpoch: fp.leader.CurrentLeaderEpoch}
		if fp.errCode == 0 && fp.lastFetched >= 0 && b.diverges(fp, &out) {
			// Answered without a read, at once as an error is (Kafka's
			// hasDivergingEpoch completes the fetch).
			anyErr = true
		} else if fp.errCode == 0 {
			limit := min(fp.maxBytes, remaining)
			start := len(fr.ranges)
			var res partition.ReadResult
			var rs []partition.Range
			var err error
			if plan.committed {
				res, rs, err = fp.p.ReadCommitted(fp.offset, limit, total == 0, fr.ranges)
			} else {
				res, rs, err = fp.p.Read(fp.offset, limit, total == 0, fr.ranges)
			}
			fr.ranges = rs
			if err != nil {
				out.ErrorCode = errorCode(err)
				if out.ErrorCode != kerr.OffsetOutOfRange.Code {
					out.HighWatermark, out.LastStableOffset, out.LogStartOffset = res.HighWatermark, res.LastStableOffset, res.LogStartOffset
				}
				anyErr = true
			} else {
				out.HighWatermark, out.LastStableOffset, out.LogStartOffset = res.HighWatermark, res.LastStableOffset, res.LogStartOffset
				first := len(fr.spans)
				for _, r := range fr.ranges[start:] {
					fr.spans = append(fr.spans, protocol.FetchRange{Handle: r.File, Offset: r.Offset, Len: r.Len})
				}
				// A sub-slice of the shared backing array; a later append
				// that reallocates leaves it pointing at the old array,
				// which stays valid.
				out.Ranges = fr.spans[first:len(fr.spans):len(fr.spans)]
				if plan.committed {
					out.AbortedTransactions = fr.abortedFor(fp.p, fp.offset, res)
				}
				total += res.Bytes
				remaining -= res.Bytes
			}
			fp.lastEnd = res.HighWatermark
			if plan.committed {
				fp.lastEnd = res.LastStableOffset
			}
		} else {
			anyErr = true
		}
		fp.out = out
	}
	return total, anyErr
}

// diverges checks a partition's LastFetchedEpoch (v12+) as Kafka's
// Partition.readRecords does, for consumers too: an epoch the leader
// cannot place is OFFSET_OUT_OF_RANGE, as is a fetch offset below the log
// start; when the epoch ended before the fetch offset, or the leader knows
// only older epochs, the answer is that epoch's end (DivergingEpoch) and
// no records. It reports whether it answered the partition into out. One
// node's only epoch is 0 (LeaderEpochFileCache.endOffsetFor: epoch 0 ends
// at the log end, a newer one is unknown); a simulated cluster's are its
// moves'.
func (b *Broker) diverges(fp *fetchPart, out *protocol.FetchPartition) bool {
	p := fp.p
	hw, lso, logStart, logEnd := p.HighWatermark(), p.LastStableOffset(), p.LogStartOffset(), p.LogEndOffset()
	epoch, end := int32(-1), int64(-1)
	switch {
	case b.nodes != nil:
		epoch, end = b.nodes.endOffsetFor(partKey{topic.ID(p.TopicID()), fp.index}, fp.lastFetched, logStart, logEnd)
	case fp.lastFetched == 0:
		epoch, end = 0, logEnd
	}
	switch {
	case epoch < 0 || end < 0 || fp.offset < logStart:
		out.ErrorCode = kerr.OffsetOutOfRange.Code
	case epoch < fp.lastFetched || end < fp.offset:
		out.HighWatermark, out.LastStableOffset, out.LogStartOffset = hw, lso, logStart
		out.HasDivergingEpoch, out.DivergingEpoch, out.DivergingEndOffset = true, epoch, end
	default:
		return false
	}
	fp.lastEnd = hw
	return true
}

// abortedFor lists the aborted transactions of the range a read_committed
// read returned, from the fetch offset to the end of its last batch, in a
// sub-slice of f.aborted; never nil, so that the response carries an empty
// list rather than null.
func (f *fetchResult) abortedFor(p *partition.Partition, offset int64, res partition.ReadResult) []protocol.AbortedTransaction {
	if res.Bytes == 0 {
		return noAborted
	}
	f.abortScratch = p.AbortedTransactions(offset, res.NextOffset, f.abortScratch[:0])
	if len(f.abortScratch) == 0 {
		return noAborted
	}
	first := len(f.aborted)
	for _, a := range f.abortScratch {
		f.aborted = append(f.aborted, protocol.AbortedTransaction(a))
	}
	// As with spans: a later append that reallocates leaves this
	// sub-slice on the old array, which stays valid.
	return f.aborted[first:len(f.aborted):len(f.aborted)]
}

// assembleFetch groups the partitions' answers into topics. In an
// incremental session response only partitions with data, an error or
// changed watermarks are included (KIP-227); every answered partition's
// watermarks are remembered in the session. It reports whether anything
// is included.
func (b *Broker) assembleFetch(plan *fetchPlan, fr *fetchResult) bool {
	plan.clearTopics()
	s := plan.sr.session
	if s != nil {
		s.mu.Lock()
		defer s.mu.Unlock()
	}
	news := false
	// As Kafka: the partitions read first, then those refused before
	// reading, each group in request order.
	for _, late := range [2]bool{false, true} {
		for i := range plan.parts {
			fp := &plan.parts[i]
			if fp.late != late {
				continue
			}
			o := fp.out
			if s != nil {
				sp := s.parts[fp.key]
				if sp != nil {
					changed := !sp.sent || o.ErrorCode != 0 || len(o.Ranges) > 0 || o.HasDivergingEpoch ||
						sp.hw != o.HighWatermark || sp.lso != o.LastStableOffset || sp.logStart != o.LogStartOffset
					s.record(sp, fp)
					if plan.sr.incremental && !changed {
						continue
					}
				}
			}
			news = true
			plan.answer(i)
		}
	}
	return news
}

// answer adds the answer of plan.parts[i] to the response, in the last
// topic when that is its: Kafka groups neighbouring partitions of one
// topic into one topic entry, whichever request topics named them
// (FetchResponse.toMessage).
func (plan *fetchPlan) answer(i int) {
	fp := &plan.parts[i]
	n := len(plan.topics)
	if n == 0 || plan.topics[n-1].Topic != fp.topic || plan.topics[n-1].TopicID != fp.topicID {
		plan.addTopic(protocol.FetchTopic{Topic: fp.topic, TopicID: fp.topicID})
		n++
		if t := &plan.topics[n-1]; cap(t.Partitions) == 0 {
			// One allocation for the run of this topic's partitions
			// that follows, rather than growing by appends.
			run := 1
			for run < len(plan.parts)-i && plan.parts[i+run].topic == fp.topic && plan.parts[i+run].topicID == fp.topicID {
				run++
			}
			t.Partitions = make([]protocol.FetchPartition, 0, run)
		}
	}
	t := &plan.topics[n-1]
	t.Partitions = append(t.Partitions, fp.out)
}

// parkFetch waits until the end of what a partition's last read could see
// moves (its high watermark, or for read_committed its last stable
// offset), the wait ends, the connection closes, or the broker stops. It
// blocks on channels only: no polling. A partition shares one channel for
// both ends, so a read_committed fetch may be woken by a move of the high
// watermark alone (data behind an open transaction); it then waits again
// instead of answering early with nothing new.
// A sessionless fetch's select cases are built in st's arrays.
func (b *Broker) parkFetch(c *conn, st *fetchState) {
	plan, timer := &st.plan, st.timer
	defer timer.Stop()
	if s := plan.sr.session; s != nil {
		b.parkSessionFetch(c, plan, s, timer)
		return
	}
	if fp := plan.onlyWaitable(); fp != nil {
		// One partition (most sessionless consumers of a partition, as
		// librdkafka's): a plain select, which allocates nothing.
		ch := plan.waitFor(fp)
		for {
			select {
			case <-timer.C:
				return
			case <-c.ctx.Done():
				return
			case <-b.stop:
				return
			case <-ch:
			}
			ch = plan.waitFor(fp)
			select {
			case <-ch:
				return // it moved
			default:
			}
		}
	}
	cases := append(st.cases[:0],
		reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(timer.C)},
		reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(c.ctx.Done())},
		reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(b.stop)},
	)
	const fixed = 3
	parked := st.parkedParts[:0]
	defer func() {
		clear(cases)
		clear(parked)
		st.cases, st.parkedParts = cases[:0], parked[:0]
	}()
	for i := range plan.parts {
		if fp := &plan.parts[i]; fp.p != nil {
			parked = append(parked, fp)
			cases = append(cases, reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(plan.waitFor(fp))})
		}
	}
	for {
		chosen, _, _ := reflect.Select(cases)
		if chosen < fixed {
			return
		}
		ch := plan.waitFor(parked[chosen-fixed])
		select {
		case <-ch:
			return // it moved
		default:
			cases[chosen].Chan = reflect.ValueOf(ch)
		}
	}
}

// onlyWaitable is the plan's one partition that a park waits on, or nil
// when it has none or several.
func (plan *fetchPlan) onlyWaitable() *fetchPart {
	var only *fetchPart
	for i := range plan.parts {
		if fp := &plan.parts[i]; fp.p != nil {
			if only != nil {
				return nil
			}
			only = fp
		}
	}
	return only
}

// parkSessionFetch is parkFetch for a fetch in a session: it waits on the
// session's channel, which the session's dirty list signals, and then
// checks whether what a partition of the plan may read grew, or a
// partition changed that the fetch skipped. Starting to wait costs nothing
// per partition, and a wake a load per partition read.
func (b *Broker) parkSessionFetch(c *conn, plan *fetchPlan, s *fetchSession, timer *time.Timer) {
	for {
		// First check, then wait: a change between a read and the watch
		// that assembleFetch set up signalled nobody.
		if plan.grown() {
			return
		}
		if s.hasDirty() {
			return
		}
		select {
		case <-timer.C:
			return
		case <-c.ctx.Done():
			return
		case <-b.stop:
			return
		case <-s.signal:
		}
	}
}

// grown reports whether the end of what a partition of the plan may read
// (the high watermark, or the last stable offset for read_committed) moved
// past its last read.
func (plan *fetchPlan) grown() bool {
	for i := range plan.parts {
		fp := &plan.parts[i]
		if fp.p == nil {
			continue
		}
		end := fp.p.HighWatermark()
		if plan.committed {
			end = fp.p.LastStableOffset()
		}
		if end > fp.lastEnd { // a deletion moves the high watermark to the end
			return true
		}
	}
	return false
}

// waitFor is the channel that closes when what fp may read grows.
func (plan *fetchPlan) waitFor(fp *fetchPart) <-chan struct{} {
	if plan.committed {
		return fp.p.WaitStable(fp.lastEnd)
	}
	return fp.p.Wait(fp.lastEnd)
}

// sessionSkips reports whether an incremental fetch on c may skip the
// session partitions that have not changed (fetch_session.go): not when a
// fault rule fired on it (its per-partition errors must reach every
// partition), nor under an authorizer (ACL changes alone change answers).
// A simulated cluster's leader move is a partition change
// (Partition.SetLeaderEpoch), so its sessions skip too.
func (b *Broker) sessionSkips(c *conn) bool {
	return c.inject == nil && b.security.authz == nil
}

// encodeFetch builds the response frame; the writer patches in the
// correlation id. A topic without partitions to answer (a request topic
// naming none, or in an incremental session none changed) is left out, as
// in Kafka.
func (b *Broker) encodeFetch(req *kmsg.FetchRequest, st *fetchState, fr *fetchResult) {
	plan := &st.plan
	b.countFetch(plan)
	resp := protocol.FetchResponse{Version: req.Version}
	if plan.sr.session != nil {
		resp.SessionID = plan.sr.session.id
	}
	resp.Topics = append(st.respTopics[:0], plan.topics...)
	st.respTopics = resp.Topics
	if b.nodes != nil {
		resp.NodeEndpoints = b.fetchNodeEndpoints(plan)
	}
	protocol.EncodeFetchResponse(&fr.frame, 0, &resp)
}

// countFetch adds a fetch response's record bytes to its partitions'
// traffic (BytesOut) and its error codes to the Fetch request metrics.
// The bytes are counted when the response is encoded, not once it is
// sent: a consumer that goes away mid-send is rare, and counting here
// keeps the writer free of per-partition work.
func (b *Broker) countFetch(plan *fetchPlan) {
	m := b.metrics.apis[kmsg.Fetch.Int16()]
	for i := range plan.parts {
		fp := &plan.parts[i]
		m.countError(fp.out.ErrorCode)
		if fp.p == nil {
			continue
		}
		var n int64
		for _, r := range fp.out.Ranges {
			n += r.Len
		}
		if n > 0 {
			fp.p.Traffic().BytesOut.Add(n)
		}
	}
}
