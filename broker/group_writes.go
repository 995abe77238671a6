package broker

import (
	"sync"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Group membership requests are answered once the group records they
// caused are durable, as Kafka's coordinator answers JoinGroup, SyncGroup,
// LeaveGroup, ConsumerGroupHeartbeat and StreamsGroupHeartbeat after its
// append: a member never acts on a generation, epoch or assignment that a
// crash could take back. The coordinators report changes through hooks
// (onGroupState, onConsumerGroupChange, onStreamsGroupChange) that append the records without waiting; each
// append is registered here as its group's latest write, and a handler
// whose request may have caused one makes its answer wait for it
// (afterGroupWrite). Appends of one group go to one partition and finish
// in order, so waiting for the latest waits for all before it; no lock is
// held while waiting.

// groupWrite is one pending append of a group's records.
type groupWrite struct {
	mu    sync.Mutex
	done  bool
	err   error
	after []func(error)
}

// finish records the append's outcome and runs the waiters.
func (w *groupWrite) finish(err error) {
	w.mu.Lock()
	w.done, w.err = true, err
	after := w.after
	w.after = nil
	w.mu.Unlock()
	for _, f := range after {
		f(err)
	}
}

// then runs f with the outcome once the append finished (at once if it
// has).
func (w *groupWrite) then(f func(error)) {
	w.mu.Lock()
	if !w.done {
		w.after = append(w.after, f)
		w.mu.Unlock()
		return
	}
	err := w.err
	w.mu.Unlock()
	f(err)
}

// startGroupWrite registers a new append of groupID's records as its
// latest write and returns the callback that finishes it. The caller
// holds groupRecordMu, so registrations follow the append order.
func (b *Broker) startGroupWrite(groupID string) func(error) {
	w := &groupWrite{}
	b.groupWritesMu.Lock()
	if b.groupWrites == nil {
		b.groupWrites = map[string]*groupWrite{}
	}
	b.groupWrites[groupID] = w
	b.groupWritesMu.Unlock()
	return func(err error) {
		b.groupWritesMu.Lock()
		if b.groupWrites[groupID] == w {
			delete(b.groupWrites, groupID)
		}
		b.groupWritesMu.Unlock()
		w.finish(err)
	}
}

// afterGroupWrite runs f with the outcome of groupID's latest pending
// append of records, or with nil at once when none is pending.
func (b *Broker) afterGroupWrite(groupID string, f func(error)) {
	b.groupWritesMu.Lock()
	w := b.groupWrites[groupID]
	b.groupWritesMu.Unlock()
	if w == nil {
		f(nil)
		return
	}
	w.then(f)
}

// answerAfterGroupWrite returns resp as a pending result answered once
// groupID's latest append of records is durable; when it failed, fail
// sets the error code in resp first.
func (b *Broker) answerAfterGroupWrite(groupID string, resp kmsg.Response, fail func(code int16)) (result, error) {
	ready := make(chan struct{})
	b.afterGroupWrite(groupID, func(err error) {
		if code := groupWriteCode(err); code != 0 {
			fail(code)
		}
		close(ready)
	})
	return result{resp: resp, ready: ready}, nil
}
