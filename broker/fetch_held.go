package broker

import (
	"sync/atomic"
	"time"
)

// A session fetch that parks with nothing queued before it on its
// connection is held by the connection (hold) instead of being handed to
// the writer: the writer, idle, already waits in writeLoop's select, and
// that select also waits for what ends the held fetch (a change of the
// session's partitions, its max wait; the connection's end and the broker's
// stop once it holds one). The hand-off cost the writer a wake-up per park,
// before the one that answers it: for a consumer that keeps up, a wake-up
// for every fetch that finds nothing, which the consume floor's reader,
// waiting itself, does not have (docs/BENCHMARKS.md). Responses stay in
// request order: a held fetch counts in conn.queued, so the responses after
// it go to the writer, which answers the held fetch before them.
// Sessionless fetches, and any fetch behind a queued response, still park
// on the writer (finishParked).

// heldFetch is a connection's held fetch; the reader sets it, the writer
// ends it.
type heldFetch struct {
	// p is &o while a fetch is held, nil otherwise. The reader writes o
	// and deadline only while nothing is held and nothing queued.
	p        atomic.Pointer[outgoing]
	o        outgoing
	deadline time.Time
	// wake is poked when a partition of the held fetch's session changes
	// (fetchSession.holder) and when its max wait has passed (timer).
	wake  chan struct{}
	timer *time.Timer
}

// initHeld makes the held fetch's channel and its stopped timer.
func (c *conn) initHeld() {
	c.held.wake = make(chan struct{}, 1)
	c.held.timer = time.AfterFunc(time.Hour, c.pokeHeld)
	c.held.timer.Stop()
}

// holdable reports whether the reader may hold res (hold): a parked
// session fetch with nothing else to wait for.
func holdable(res *result) bool {
	fr := res.fetch
	return fr != nil && fr.parked != nil && fr.parked.plan.sr.session != nil && res.ready == nil && res.throttle == 0
}

// hold holds o's parked fetch on the connection; it reports false, leaving
// o to the writer, when what it read has grown already or a fetch of the
// same session is held (by another connection). Reader goroutine, with
// nothing queued.
func (c *conn) hold(o outgoing) bool {
	st := o.res.fetch.parked
	s := st.plan.sr.session
	if st.plan.grown() || !s.holder.CompareAndSwap(nil, c) {
		return false
	}
	// The held fetch waits on the connection's timer, not on its own.
	st.timer.Stop()
	wait := time.Duration(st.fetch.MaxWaitMillis) * time.Millisecond
	deadline := time.Now().Add(wait)
	c.held.o, c.held.deadline = o, deadline
	c.queued.Add(1) // the responses after it go to the writer, in order
	c.held.timer.Reset(wait)
	c.held.p.Store(&c.held.o)
	// The writer owns the fetch now. A change of the session since the
	// read is on its dirty list (the read's partitions were watched before
	// the read's answer was decided, handleFetch), but the poke of a change
	// or of the timer before the Store may have found nothing held.
	if s.hasDirty() || !time.Now().Before(deadline) {
		c.pokeHeld()
	}
	return true
}

// pokeHeld wakes the writer for the held fetch; it never blocks (a
// partition's change calls it under the partition's locks).
func (c *conn) pokeHeld() {
	select {
	case c.held.wake <- struct{}{}:
	default: // already poked
	}
}

// heldDone reports whether the held fetch o may be answered: its session
// changed, its max wait passed, the connection ended or the broker is
// stopping; as parkSessionFetch decides.
func (c *conn) heldDone(o *outgoing) bool {
	if c.ctx.Err() != nil || !time.Now().Before(c.held.deadline) {
		return true
	}
	select {
	case <-c.b.stop:
		return true
	default:
	}
	plan := &o.res.fetch.parked.plan
	return plan.grown() || plan.sr.session.hasDirty()
}

// awaitHeld waits until the held fetch o may be answered: the writer has a
// later response to send, or no more to come. Writer goroutine.
func (c *conn) awaitHeld(o *outgoing) {
	for !c.heldDone(o) {
		select {
		case <-c.held.wake:
		case <-c.ctx.Done():
		case <-c.b.stop:
		}
	}
}

// releaseHeld ends the hold of o and returns its response, answered
// (answerParked), for the writer to send. Writer goroutine.
func (c *conn) releaseHeld(o *outgoing) outgoing {
	out := *o
	out.res.fetch.parked.plan.sr.session.holder.CompareAndSwap(c, nil)
	c.held.timer.Stop() // a tick already on its way only pokes
	c.held.p.Store(nil)
	c.b.answerParked(c, out.res.fetch)
	return out
}
