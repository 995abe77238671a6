// Package offsets keeps the committed offsets of consumer groups, durable
// the way Kafka keeps them: as records of the internal topic
// __consumer_offsets, in Kafka's own key and value formats
// (OffsetCommitKey/Value, GroupMetadataKey/Value, and the ConsumerGroup*
// records of KIP-848 groups in consumer_records.go, the StreamsGroup*
// records of KIP-1071 groups in streams_records.go), so that a tool
// reading the topic sees what it would see on Kafka. The store keeps the
// last group records of every group and hands them back at start-up
// (Groups), so that the coordinators restore groups with their members.
//
// # Writes, snapshots and recovery
//
// A commit is one record batch appended to the group's partition of
// __consumer_offsets (Java's String.hashCode of the group id, modulo the
// partition count, as Kafka places groups). The mechanics are coordlog's
// (its doc.go says them once): a commit is applied, and its done callback
// runs, only once it is durable by the store's flush mode, in log order
// per partition; so OffsetFetch never reports an offset that a crash could
// take back. The whole state is snapshotted from time to time and at Close
// to metadata/group-offsets.snapshot, which lets retention free the
// topic's old commit-log files; Open replays only the records past the
// snapshot's cut.
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
