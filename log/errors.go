package log

import (
	"errors"
	"fmt"
)

// Sentinel errors of the store. Callers test them with errors.Is; the broker
// maps them onto Kafka error codes (KAFKA_STORAGE_ERROR, MESSAGE_TOO_LARGE).
var (
	// ErrClosed is returned by every operation on a closed CommitLog.
	ErrClosed = errors.New("log: closed")
	// ErrEntryTooLarge is returned when an entry cannot fit in one file:
	// entries never span two files, so the file size bounds the entry size.
	ErrEntryTooLarge = errors.New("log: entry larger than a file")
	// ErrBadKey is returned when a key's length differs from Config.KeySize.
	ErrBadKey = errors.New("log: key has the wrong length")
	// ErrOutOfRange is returned when a position is outside the stored log.
	ErrOutOfRange = errors.New("log: position out of range")
	// ErrFault is returned when touching the mapping faulted (SIGBUS: a media
	// error, or a filesystem that could not back a page). It is sticky.
	ErrFault = errors.New("log: fault on mapped file")
	// ErrLocked is returned by Open when another process holds the data
	// directory.
	ErrLocked = errors.New("log: data directory is in use by another process")
	// ErrNoCheckpoint is returned by ReadCheckpoint when the checkpoint
	// file holds no valid slot.
	ErrNoCheckpoint = errors.New("log: no valid checkpoint slot")
)

// CorruptionError reports an invalid entry in data that the checkpoint says
// was durable. Recovery refuses to cut such data silently; the operator may
// choose to truncate there (Config.TruncateCorrupt).
type CorruptionError struct {
	File   string // path of the segment file
	Offset int64  // byte offset of the bad entry inside File
	Pos    int64  // global commit-log position of the bad entry
	Reason string
}

func (e *CorruptionError) Error() string {
	return fmt.Sprintf("log: corrupt entry in %s at offset %d (position %d): %s", e.File, e.Offset, e.Pos, e.Reason)
}

// WriteError wraps a failed flush, commit or mapped write. Once one happens
// the CommitLog refuses every later append with it: after a failed fsync the
// page cache can no longer be trusted to match the disk (the "fsyncgate"
// lesson, also followed by pebble's LogWriter and nats' msgBlock.werr).
type WriteError struct {
	Op  string // "flush", "commit", "append"
	Err error
}

func (e *WriteError) Error() string { return "log: " + e.Op + " failed: " + e.Err.Error() }

// Unwrap returns the underlying error.
func (e *WriteError) Unwrap() error { return e.Err }
