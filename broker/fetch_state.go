package broker

import (
	"reflect"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/protocol"
)

// fetchState is what a connection reuses from one fetch to the next: the
// decoded request (protocol.ParseFetchBody decodes into its arrays), the
// plan and its parts, a session's topic list, the response's topic list
// and the parked fetch's timer. A consumer sends the same fetch again and
// again, one record per response when it keeps up; built anew each time,
// these were most of what the broker allocated per record end to end.
//
// A state belongs to one fetch from its decoding (conn.parseBody) until its
// answer is encoded: past the handler's return when the fetch parks. The
// connection keeps one free state (conn.fetch.free); a second fetch that
// arrives while the first is parked gets a new one, and of two states
// finished at once only one is kept.
type fetchState struct {
	req kmsg.FetchRequest
	// fetch is the request being handled: &req, or for a state the
	// handler made (claimFetch) the request it was given.
	fetch *kmsg.FetchRequest
	plan  fetchPlan
	// sessionParts and sessionTopics are fetchSession.topicsFor's.
	sessionParts  []*sessionPart
	sessionTopics []kmsg.FetchRequestTopic
	// respTopics is encodeFetch's topic list.
	respTopics []protocol.FetchTopic
	// skips is set on a parked fetch that may skip idle session
	// partitions (handleFetch).
	skips bool
	// cases and parkedParts are a parked sessionless fetch's select
	// (parkFetch).
	cases       []reflect.SelectCase
	parkedParts []*fetchPart
	// timer is the parked fetch's; stopped whenever the state is free
	// (Go 1.23 timers: a stopped timer's channel holds no stale tick).
	timer *time.Timer
}

// keptFetchPartitions bounds the partitions (about 100 bytes each in the
// request, 200 in the plan) of the fetch state a connection keeps for
// reuse: one fetch of the whole cluster does not cost its connection that
// memory for as long as it lives.
const keptFetchPartitions = 1024

// takeFetchState is the state a fetch is decoded into: the connection's
// free one, or a new one.
func (c *conn) takeFetchState() *fetchState {
	if st := c.fetch.free.Swap(nil); st != nil {
		return st
	}
	return new(fetchState)
}

// claimFetch is the state of req: the one it was decoded into, which the
// handler now owns, or a new one for a request from elsewhere (tests, a
// fault rule's rewritten request).
func (c *conn) claimFetch(req *kmsg.FetchRequest) *fetchState {
	if c != nil {
		if st := c.fetch.cur; st != nil && &st.req == req {
			c.fetch.cur = nil
			st.fetch = req
			return st
		}
	}
	return &fetchState{fetch: req}
}

// releaseUnclaimedFetch frees the state of a decoded fetch that no handler
// claimed (a fault rule swallowed it, answered it, or the handler was not
// called). Reader goroutine.
func (c *conn) releaseUnclaimedFetch() {
	if st := c.fetch.cur; st != nil {
		c.fetch.cur = nil
		c.recycleFetch(st)
	}
}

// recycleFetch makes st the connection's free state, unless it is too
// large to keep or the connection already has one. The caller must not
// use st afterwards. Any goroutine.
func (c *conn) recycleFetch(st *fetchState) {
	if c == nil || !st.reset() {
		return
	}
	c.fetch.free.CompareAndSwap(nil, st)
}

// reset drops what st points to that a next fetch does not reuse (files'
// ranges of the last answer, sessions, partitions, tags of the frame) and
// reports whether st is small enough to keep.
func (st *fetchState) reset() bool {
	if st.timer != nil {
		st.timer.Stop()
	}
	protocol.ClearFetch(&st.req)
	parts := 0
	for i := range st.req.Topics {
		parts += cap(st.req.Topics[i].Partitions)
	}
	for i := range st.sessionTopics {
		parts += cap(st.sessionTopics[i].Partitions)
	}
	if parts > keptFetchPartitions || cap(st.plan.parts) > keptFetchPartitions || cap(st.sessionParts) > keptFetchPartitions ||
		cap(st.cases) > keptFetchPartitions {
		return false
	}
	st.plan.reset()
	st.fetch, st.skips = nil, false
	clear(st.sessionParts)
	st.sessionParts = st.sessionParts[:0]
	clear(st.respTopics)
	st.respTopics = st.respTopics[:0]
	return true
}

// parkTimer is st's timer, set to fire after wait.
func (st *fetchState) parkTimer(wait time.Duration) *time.Timer {
	if st.timer == nil {
		st.timer = time.NewTimer(wait)
	} else {
		st.timer.Reset(wait)
	}
	return st.timer
}
