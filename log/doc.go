// Package log is kbroker's store: a RocketMQ-style commit log of fixed-size,
// pre-allocated, memory-mapped files that every partition appends to. It
// knows nothing about Kafka: an entry is an opaque fixed-size key (the
// broker puts topic id and partition there) and a payload (a record batch).
//
// # Files
//
//	<Dir>/commitlog/00000000000000000000   fixed-size files named by the
//	<Dir>/commitlog/00000000000134217728   20-digit global offset of their first byte
//	<Dir>/checkpoint                       durable position, clean end (two CRC'd slots)
//	<Dir>/abort                            present while running (holds the PID)
//	<Dir>/lock                             flock'd while a process has the store open
//
// Global positions run across files: the byte at position p lives in file
// p - p%FileSize at offset p%FileSize.
//
// Every file has its full size from creation, but only a prefix of it is
// backed by allocated blocks; the rest is a hole that reads as zeros. The
// allocator keeps a lead of allocated bytes ahead of the write position that
// follows the write rate (AllocateAhead when idle, up to a file under load),
// and nothing is ever written past the allocated prefix: a store into an
// unbacked page of a full disk would be SIGBUS, so the appender allocates
// what is missing itself and reports ENOSPC as an ordinary error (grow.go).
//
// # Entry
//
//	0        4        8        12            12+KeySize
//	+--------+--------+--------+-------------+-----------------------+
//	| total  | magic  | crc32c | key         | payload               |
//	| u32 BE | KBE1   | u32 BE | KeySize     | total-12-KeySize      |
//	+--------+--------+--------+-------------+-----------------------+
//	                    CRC-32C of key and payload
//
// The checksum covers the key and the payload, so recovery can tell entry
// boundaries, the owner of each entry, and a torn payload as well as a torn
// header. The payload is stored exactly as given, so a reader can send it to
// a socket with sendfile(2) untouched.
//
// An entry never spans two files. When it does not fit in the rest of the
// current file, a filler closes the file (RocketMQ's BLANK entry) and the
// entry goes to the next one:
//
//	+--------+--------+--------------------------------------------+
//	| left   | KBBF   | (rest of the file, unused)                 |
//	+--------+--------+--------------------------------------------+
//
// When fewer than 8 bytes are left there is no room for a filler; the file
// simply ends there. Pre-allocated files hold zeros, and zeros are never a
// valid entry, which is how a scan finds the end of the data.
//
// # Positions and durability
//
// Each MappedFile has a wrote, committed and flushed position (flushed ≤
// committed ≤ wrote). Without the TransientStorePool, appends go into the
// mapping and committed == wrote; with it, appends go into a pool buffer
// and the commit service copies them into the file. Readers see committed
// bytes only. The flush services (package flush) drive Flush and Commit.
// After every flush the checkpoint records the durable position; it is not
// fsynced each time, since a stale value is only smaller and hence safe.
// ReadCheckpoint reads it without opening the store (tools, tests).
//
// # Recovery
//
// A clean Close flushes everything, records the exact end in the checkpoint
// (fsynced) and removes the abort marker. Open trusts that end. If the abort
// marker is present the previous run crashed: every entry from the start of
// the file holding the durable position is verified. The first invalid entry
// at or after the durable position starts a torn tail, which is cut off and
// zeroed along with everything after it (stale bytes left there could
// otherwise read back as valid entries after a later crash). An invalid entry
// below the durable position is corruption of acknowledged data: Open stops
// with a *CorruptionError naming the file and offset, unless the operator
// set TruncateCorrupt. A last file shorter than the file size is extended
// (in length only). The zeroed tail is punched out, giving its blocks back.
//
// # Errors
//
// A failed msync, pwrite or store into the mapping makes every later append
// fail with the same *WriteError (sticky: after a failed fsync the page
// cache cannot be trusted). A full disk when allocating a file is an
// ordinary error and the allocation is retried by the next append. Faults on
// the mapping (SIGBUS) are turned into ErrFault, never a crash: the
// conversion (debug.SetPanicOnFault and its recover) lives only in this
// package (fault.go), and code outside it reads a mapping only through
// MappedFile.View, which holds the file, guards the read and releases it.
//
// # Concurrency and lock order
//
// One put lock orders appends (RocketMQ's putMessageLock); it is held only
// to choose the position and copy the bytes, and nothing under it calls out
// of this package. Readers take no lock: file positions are atomics and the
// file list is an immutable slice behind an atomic pointer. Lock order:
//
//	caller's locks (partition.mu) → CommitLog.putMu → MappedFileQueue.mu
//	CommitLog.putMu → MappedFile.growMu (the appender allocating for itself)
//	MappedFileQueue.flushMu / commitMu → MappedFile.commitMu → pool mutex
//
// Files are reference counted: Hold before touching a file's bytes or
// descriptor, Release after. Deletion never pulls a file from under a
// reader: it waits (or gives up) while a reader holds it.
package log
