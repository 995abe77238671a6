// Package offsets keeps the committed offsets of consumer groups, durable
// the way Kafka keeps them: as records of the internal topic
// __consumer_offsets, written through the commit log like any other
// partition's records, in Kafka's own key and value formats
// (OffsetCommitKey/Value, GroupMetadataKey/Value), so that a tool reading
// the topic sees what it would see on Kafka.
//
// # Writes
//
// A commit is one record batch appended to the group's partition of
// __consumer_offsets (Java's String.hashCode of the group id, modulo the
// partition count, as Kafka places groups). It becomes visible to Fetch,
// and its done callback runs, once it is durable by the store's flush mode
// (in sync mode after the group commit that covers it), so OffsetFetch
// never reports an offset that a crash could take back. Writes are applied
// to memory in log order per partition: a later record always wins, on
// replay as at run time.
//
// # Snapshots and recovery
//
// Without compaction the offsets topic would keep its oldest commit-log
// files forever. So, from time to time and at Close, the whole state is
// written to metadata/group-offsets.snapshot with, per partition, the
// offset it covers (the cut), and the partitions' log start offsets move
// up to the cut, which lets retention free the files. Open reads the
// snapshot and replays only the records from the cut on. A cut never
// passes what the commit log has made durable, so after a power loss the
// records past it are either there to replay or lost together with what
// followed them; nothing below the cut is ever needed again. These
// mechanics (the write queue, the snapshot file, replay) live in coordlog,
// which the transaction coordinator shares.
//
// # Expiry
//
// Offsets follow Kafka's offsets.retention.minutes (KIP-211): the offsets
// of a group that uses group management expire together once the group
// has been empty for the retention period; those of a group that only
// commits (no protocol type) expire one by one, a retention period after
// their commit. An explicit expire timestamp (OffsetCommit v1 values)
// wins. Expired offsets get tombstones, and a group left with no offsets
// and no members is reported to the owner (to be deleted).
package offsets
