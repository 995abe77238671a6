// Package partition gives Kafka's partition semantics to kbroker's shared
// commit log: topics' partitions, their consume queues, offsets, high
// watermarks, idempotent and transactional producers, last stable offsets
// and aborted-transaction indexes, retention, and the flush-mode wiring
// that decides when appended data becomes durable and visible. Each
// partition's consume queue (its index into the commit log) is package
// consumequeue; this package gives the entries their Kafka meaning. The
// broker's producer ids are allocated here too (ProducerIDs), persisted in
// blocks beside the partitions' checkpoint.
//
// # Write path
//
// Partition.Append validates a produced batch (partition/batch) without any
// lock, then under the partition's lock checks the producer's sequence,
// assigns the base offset, stamps the batch, appends it to the commit log
// and adds its consume-queue entry. Offsets therefore strictly increase and
// consume-queue entries are written in offset order. The high watermark
// moves at once in async mode, after the group commit covers the entry in
// sync mode, and after the commit service wrote it in pool mode; each move
// wakes the fetches parked on the partition (Partition.Wait).
//
// # Transactions
//
// A transactional batch (produced, through Partition.Append, or written by
// a coordinator without a sequence, through Partition.AppendCoordinator)
// opens a transaction of its producer on the partition;
// Partition.AppendMarker writes the coordinator's COMMIT or ABORT marker,
// which closes it. The last stable offset (Kafka's LSO) is the first
// offset of the oldest transaction that is open or whose marker is not yet
// visible, else the high watermark. Aborted transactions are indexed by
// marker offset for read_committed fetches; the index and the open
// transactions (in the producer snapshot) are checkpointed together and
// rebuilt past the checkpoint by recovery (txn.go).
//
// # Read path
//
// Partition.Read binary-searches the consume queue and returns the batches
// as held ranges of the commit-log files, ready for sendfile(2);
// Partition.ReadCommitted stops at the last stable offset, and
// Partition.AbortedTransactions lists the aborts of the range it returned.
// For a compacted partition, offsets below its clean end are read from its
// clean store instead (one sealed file, also served by sendfile); a fetch
// into a gap left by compaction returns the next batch.
//
// # Compaction
//
// Topics whose cleanup.policy has compact are cleaned by the log cleaner
// (cleaner.go: when a partition is due, how a pass maps keys, filters and
// publishes) into a per-partition clean store (clean_store.go: files,
// manifest, recovery). Retention then counts the partition from its clean
// end, so the commit-log files that held only cleaned batches go; a
// compacted partition that would pin the oldest file has its uncleanable
// tail evacuated into the store. A pass takes no partition lock.
//
// # Recovery
//
// The store checkpoints (metadata/partitions) each partition's log start
// offset, next offset, producer snapshot and aborted-transaction index, and
// the commit-log position
// below which every consume queue is complete and flushed, and each
// partition's last batch's end in the log. Open re-indexes the commit log
// from that position, and from its start the queues that lost entries the
// checkpoint counted (their directory was deleted), so the consume queues
// can always be rebuilt from the commit log. Open opens only the queues
// that need work: those the replay finds written after the checkpoint,
// those the checkpoint does not know, and those with batches past the
// recovered end of the log; every other partition starts from its
// checkpoint and opens its queue on first use (lazy.go), which cuts it to
// the checkpoint and re-indexes it if it lacks batches. Retention and the
// size metric work from the checkpoint's per-partition summary while a
// queue is closed (summary.go), so they open only queues with data to
// drop. A compacted
// partition's clean store is the only copy of its cleaned range: it is
// loaded from its manifest, never rebuilt, and a damaged one stops Open.
//
// # Lock order
//
//	Store.topicsMu → Partition.mu → (log.CommitLog put lock) → Partition.vis → Store.vis
//	Partition.mu → consumequeue.Queue's locks (leaves: the queue calls only into log)
//	Partition.mu of several partitions (Batch.AppendMany, one produce
//	request): in the order of their commit-log keys, never one twice
//	Store.checkpointMu → Partition.mu
//	Partition.mu → Partition.stable, Partition.mu → Partition.aborted (leaves)
//	Partition.mu → Partition.openMu → consumequeue.Queue's locks (lazy.go)
//	Partition.watchers: a leaf, taken after Partition.vis is released (watch.go)
//	Partition.cleanMu → Partition.aborted (a pass; it never takes Partition.mu)
//	Store.topicsMu is released before DeleteTopic takes Partition.cleanMu
//
// The flush services call Store.reveal without holding any of these; it
// takes Store.vis, then each Partition.vis, never Partition.mu; once it has
// released Partition.vis, moving the high watermark takes Partition.stable
// and then Partition.vis again, one after the other, never nested.
package partition
