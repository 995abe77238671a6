// Package topic is kbroker's topic registry: which topics exist, their ids,
// partition counts and configs, with Kafka's rules for creating, deleting,
// growing and configuring them. CreateTopics, DeleteTopics,
// CreatePartitions, AlterConfigs, IncrementalAlterConfigs, DescribeConfigs
// and Metadata handlers call it; the partition layer reads a topic's limits
// on every produce and fetch and learns of changes through WithOnChange.
//
// # Rules, after Kafka
//
// Names follow Topic.validate: 1 to 249 bytes of [a-zA-Z0-9._-], not "." or
// "..". A name that differs from an existing one only by '.' versus '_'
// collides with it (their metric names would be equal) and is refused with
// INVALID_TOPIC_EXCEPTION, as ReplicationControlManager does. Ids are random
// version-4 UUIDs printed in Kafka's URL-safe base64, never the zero
// ("no id") or the reserved one UUID. Every rejection is an *Error that
// unwraps to the kerr code a Kafka 4 broker returns; the method comments
// list them.
//
// Configs are the 34 topic configs of Kafka 4.0/4.1's LogConfig (see
// Definitions), with Kafka's types, defaults, broker-level synonyms and
// validators. Unknown names, including message.format.version and
// message.timestamp.difference.max.ms which Kafka 4.0 removed, are
// INVALID_CONFIG. A topic stores only the values set on it
// (DYNAMIC_TOPIC_CONFIG); the rest it inherits from the broker's Defaults
// (DYNAMIC_BROKER_CONFIG or DYNAMIC_DEFAULT_BROKER_CONFIG when set at run
// time, STATIC_BROKER_CONFIG when the operator set the property,
// DEFAULT_CONFIG otherwise), so a changed broker default reaches every
// topic that does not override it: at once through SetDefaults, or after a
// restart for a changed config file.
//
// # Which configs kbroker applies
//
// Applied, with typed accessors on Configs:
//
//	retention.ms, retention.bytes     retention per partition (only while cleanup.policy has delete)
//	cleanup.policy                    "delete", "compact", both, or empty (keep forever); "compact" only with Defaults.AllowCompact
//	delete.retention.ms, min.compaction.lag.ms, max.compaction.lag.ms, min.cleanable.dirty.ratio
//	                                  the log cleaner (partition/cleaner.go)
//	segment.ms, segment.bytes         only for compacted topics: the newest data the cleaner leaves alone
//	max.message.bytes                 produce: larger batches get MESSAGE_TOO_LARGE
//	message.timestamp.type            LogAppendTime: the broker stamps batches
//	message.timestamp.before.max.ms   produce with CreateTime: timestamps too far behind are refused
//	message.timestamp.after.max.ms    produce with CreateTime: timestamps too far ahead are refused
//
// Validated, stored and reported by DescribeConfigs, but not applied (their
// documentation in DescribeConfigs says so): segment.jitter.ms, segment.index.bytes, index.interval.bytes,
// file.delete.delay.ms and preallocate (one shared commit log of fixed-size,
// preallocated files replaces per-partition segments); flush.messages and
// flush.ms (the broker's flush mode decides durability); compression.type
// and the compression.*.level configs (batches are stored as produced);
// min.insync.replicas,
// unclean.leader.election.enable and the replication throttles (one node);
// local.retention.ms, local.retention.bytes, remote.copy.lag.ms,
// remote.copy.lag.bytes, remote.log.copy.disable and
// remote.log.delete.on.disable (no tiered storage; remote.storage.enable
// accepts only false, as a Kafka broker with tiered storage off);
// max.decompressed.message.bytes (kbroker bounds decompression by the
// batch); errors.deadletterqueue.group.enable (share groups have no
// dead-letter queue). message.downconversion.enable, a no-op since Kafka
// 4.0, is refused as Kafka 4.4 refuses it, and dropped from topics an
// older kbroker stored with it.
//
// # Persistence
//
// The registry lives in <data>/metadata/topics, JSON with a format version
// and a CRC-32C of the topic list (persist.go draws it), plus a journal of
// the mutations made since, <data>/metadata/topics.journal (journal.go
// draws it). A mutation appends one CRC'd record to the journal and returns
// once an fdatasync covers it; concurrent mutations share those syncs (a
// group commit), so a topic creation costs about one fdatasync of a small
// append, and one CreateTopics request for many topics a few. Open, and a
// mutation that finds the journal longer than 4 MiB, compact: the whole
// state goes to the topics file (a temporary file, fsynced, renamed over
// the old one, the directory fsynced) and an empty journal based on it
// replaces the old one. A journal names the topics file it follows (the
// CRC and length of its topic list), so one left over from before a
// compaction is ignored. A crash at any point leaves the old state or the
// new one: a torn last record was never acknowledged and is dropped,
// leftover temporary files are removed without being read, and a file
// that cannot be trusted stops Open with a *CorruptionError naming it
// rather than starting with a guess. Ids survive restarts. A mutation
// whose append fails returns the error and changes nothing; a failed
// fdatasync fails every later mutation (the page cache can no longer be
// trusted) until a restart.
//
// # Concurrency
//
// Get, ByID and List read an immutable snapshot through an atomic pointer:
// no lock, and no allocation for Get and ByID, which the produce and fetch
// paths call per partition. Mutations are validated and appended under
// Registry.mu against the head state (every accepted mutation), then wait
// for their sync without it; a mutation becomes visible to lookups, and is
// told to the OnChange function, only once durable, in the order the
// mutations were accepted (under Registry.pubMu). OnChange must not call
// back into a mutating method. Lock order for callers: take no partition
// lock while calling a mutating method, since OnChange calls into the
// partition layer (Registry.mu, then Registry.pubMu, then partition locks).
//
// # Differences from Kafka
//
//   - Clients cannot create or delete internal topics (__consumer_offsets,
//     __transaction_state, __share_group_state) nor add partitions to them:
//     INVALID_REQUEST, the code Kafka gives for __cluster_metadata. The
//     broker's coordinators create them with CreateInternal. Kafka lets
//     clients do all three, which breaks its coordinators.
//   - cleanup.policy=compact (unless the broker sets Defaults.AllowCompact,
//     which it does only when its log cleaner runs; internal topics are
//     exempt, their coordinators compact them with snapshots) and
//     remote.storage.enable=true are refused with INVALID_CONFIG; the
//     configs listed above are accepted but not applied.
//   - A validate-only CreateTopics returns no topic id (Kafka returns a
//     random one that is then never used).
//   - Replication factor is not a registry concept: the handler accepts -1
//     and 1 and answers others with INVALID_REPLICATION_FACTOR.
//   - DescribeConfigs names a config's broker synonym by its first name
//     (log.retention.ms) with the value in that unit, where Kafka lists each
//     synonym the operator set (log.retention.hours=168).
//   - Broker defaults change at run time only through SetDefaults (the
//     broker's dynamic broker configs); every topic is then re-resolved.
package topic
