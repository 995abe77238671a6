package consumequeue

import "errors"

// Errors of the consume queue. They are wrapped with the queue's directory
// and the offending offset.
var (
	// ErrOrder is returned by Append when a batch does not start after
	// the last entry's last offset: entries are strictly ordered by
	// offset, which binary search relies on.
	ErrOrder = errors.New("consumequeue: entry out of order")
	// ErrClosed is returned by changes to a closed queue.
	ErrClosed = errors.New("consumequeue: closed")
)

// stickyError boxes the first failure of a queue for its atomic pointer.
type stickyError struct{ err error }

// failure returns the sticky error, if any.
func (q *Queue) failure() error {
	if p := q.failed.Load(); p != nil {
		return p.err
	}
	return nil
}

// fail records err as the sticky error (the first one wins) and returns it.
func (q *Queue) fail(err error) error {
	q.failed.CompareAndSwap(nil, &stickyError{err: err})
	return err
}
