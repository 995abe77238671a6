// Package coordlog is the durable state log that kbroker's coordinators
// share: the committed offsets of consumer groups (offsets/, topic
// __consumer_offsets) and the transaction coordinator (txn/, topic
// __transaction_state) keep their state the way Kafka does, as keyed
// records of an internal topic written through the commit log like any
// other partition's records, and read back at start-up.
//
// A Log knows the mechanics and nothing of the records' meaning; its owner
// supplies a State: how a record is encoded and decoded, how a durable
// record changes the owner's state, and what the live state is when
// written whole.
//
// # Writes
//
// Write appends records as one batch to a partition and submits the batch
// for durability (Store.SubmitDurable). Once durable by the store's flush
// mode the records are applied (State.Apply), then the write's done
// callback runs. Applies happen in log order per partition, whatever order
// the durability callbacks arrive in: a write waits in its partition's
// queue until every write before it has finished. A write that fails
// (append refused, flush failed) is not applied; its done hears the error.
// Its bytes may still be in the log (a flush that timed out may complete
// later), so replay can apply a record the running coordinator refused:
// owners must treat a failed write as "outcome unknown", as Kafka treats a
// failed replication.
//
// # Snapshots and recovery
//
// Without compaction an internal topic would keep its oldest commit-log
// files forever. Snapshot writes the whole live state to one file with,
// per partition, the offset it covers (the cut), and moves the partitions'
// log start up to the cut, which lets retention free the files. Open reads
// the snapshot and replays only the records from the cut on. A cut never
// passes what the commit log has made durable (FlushedPosition), so after
// a power loss the records past it are either there to replay or lost
// together with everything after them; nothing below the cut is needed
// again. The state in a snapshot may be ahead of its cut (it holds every
// write applied so far): replaying the records from the cut reproduces the
// same state, because a later record of a key always replaces an earlier
// one. That needs those records to survive whatever the snapshot
// survives, and the async flush modes apply a write before the disk has
// it; so the snapshot file is written only once the commit log is durable
// through every write applied (Store.Sync).
//
// The snapshot file:
//
//	magic (8 bytes, the owner's)
//	uint32 partitions, then int64 cut per partition
//	records: uint32 key length, key, uint32 value length, value
//	uint32 CRC-32C of everything before it
//
// # Lifecycle (loops.go)
//
// An owner runs its background loops (snapshots, expiry) with Loops, whose
// Stop closes the log first, then stops and waits for the loops, once: a
// clean Close snapshots after it, an Abandon (a crash, in tests) does not.
//
// # Locking
//
// Log.mu guards the queues, the cuts and the encode buffers. State.Apply
// and State.Live run with Log.mu held, so the owner's lock comes after it:
// an owner must never call Write, EachPending or Snapshot while holding its
// own lock. No I/O happens under Log.mu except the append itself (which is
// what keeps the queue in log order); done callbacks run after it is
// released.
package coordlog
