package flush

import "errors"

// ErrFlushTimeout is returned by GroupCommitService when the requested position
// did not become durable within GroupCommitConfig.Timeout (RocketMQ's
// FLUSH_DISK_TIMEOUT). The data may still become durable later; the broker
// answers REQUEST_TIMED_OUT, never a silent success.
var ErrFlushTimeout = errors.New("flush: sync flush timed out")

// ErrClosed is returned by the services after Close: by Await and Submit for
// requests that the final flush did not cover, and by a second Close.
var ErrClosed = errors.New("flush: service closed")
