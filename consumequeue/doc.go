// Package consumequeue is the per-partition index into kbroker's shared
// commit log: RocketMQ's ConsumeQueue, with one entry per Kafka record
// batch rather than per message (as RocketMQ's BatchConsumeQueue). It sits
// beside package log, below package partition, which gives the entries
// their Kafka meaning (offsets, high watermark, retention); it imports
// only log, whose MappedFile holds its files.
//
// # On disk
//
// A queue is one directory (<data>/consumequeue/<topic id>/<partition>/)
// of fixed-size files, each named by log.FileName of the base offset of its
// first entry. A file is a dense array of EntrySize-byte entries; the part
// after the last entry is zeros. A file has its full size from creation
// but disk blocks only as it fills: a page at first, then steps that
// double up to a MiB, written as zeros before any entry goes there (so a
// store into the mapping never meets an unbacked page, which on a full
// disk would be SIGBUS, and never takes ext4's slow first fault on an
// unwritten extent). The directory is created with the first file: a
// partition that never received a batch has none, and costs no disk.
// New names are made durable by the next Flush (before any checkpoint
// relies on them), not when created, so a partition's first batch waits
// for no directory fsync. An entry:
//
//	0        8            16                 24     28               32     34       36      40
//	+--------+------------+------------------+------+----------------+------+--------+-------+
//	| pos    | baseOffset | maxTimestampSoFar| size | lastOffsetDelta| attrs| rsvd   | crc32c|
//	| i64 BE | i64 BE     | i64 BE           | i32  | i32            | i16  | i16 (0)| u32   |
//	+--------+------------+------------------+------+----------------+------+--------+-------+
//	                              CRC-32C of bytes [0, 36)
//
// pos and size locate the batch in the commit log; baseOffset and
// lastOffsetDelta are the batch's offsets; maxTimestampSoFar is the
// running maximum of the batches' MaxTimestamp up to this one, so that a
// timestamp is found by binary search (ListOffsets, retention.ms); attrs
// are the batch's attributes (compression, timestamp type, transactional,
// control). STORAGE-REFERENCE.md §3.3 gives the reasoning.
//
// # Invariants
//
//   - Entries are strictly ordered: each baseOffset is above the previous
//     entry's last offset (gaps are allowed), commit-log positions grow
//     with offsets, and maxTimestampSoFar never goes down. Every search
//     (search.go) relies on this.
//   - Every listed file but the last is full, and no listed file is empty.
//     A file's first entry is the one its name promises; it never changes
//     while the file is listed, so file-level searches need no mapping.
//   - An all-zero entry never passes its checksum, so the first invalid
//     entry ends the queue. Open (load.go) verifies every entry and cuts at
//     the first invalid one: the rest of that file is zeroed durably before
//     any later file is removed, so a crash at any step of a cut finds the
//     same cut again. Truncation (truncate.go) keeps the same order.
//   - Every entry handed to a reader is checksum-verified and sane, so a
//     reader racing a truncation sees an entry that was valid or the end of
//     the queue, never garbage.
//   - A failed write, flush or memory fault is sticky (errors.go): after it
//     every change and flush fails with the first error, because the
//     mapping can no longer be trusted to match the disk.
//   - Consume queues can always be rebuilt from the commit log; package
//     partition does so past its checkpoint at open.
//
// # Concurrency
//
// One goroutine at a time changes a queue (Append, Reserve, Truncate*,
// DeleteBefore): the partition lock orders them, and Queue.mu makes them
// safe regardless. Readers (Find, FindTimestamp, Read, Last, Len, ...)
// take no lock: the file list is an immutable slice behind an atomic
// pointer, replaced on roll, truncation and deletion; a file's entry count
// comes from its atomic read position, which moves only after an entry is
// completely in the mapping; and readers go through log.MappedFile.View,
// which holds the file while they copy entries out (so its removal waits
// for them) and turns a memory fault (SIGBUS on a media error) into
// log.ErrFault instead of a crash. A reader whose file was removed under
// it starts over on the new list.
//
// Lock order: partition.Partition.mu → Queue.mu → Queue.flushMu →
// log.MappedFile (its commit and flush locks). Nothing under Queue.mu calls
// out of the queue except into log.
package consumequeue
