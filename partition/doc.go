// Package partition gives Kafka's partition semantics to kbroker's shared
// commit log: topics' partitions, their consume queues, offsets, high
// watermarks, idempotent producers, retention, and the flush-mode wiring
// that decides when appended data becomes durable and visible.
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
// # Read path
//
// Partition.Read binary-searches the consume queue and returns the batches
// as held ranges of the commit-log files, ready for sendfile(2).
//
// # Recovery
//
// The store checkpoints (metadata/partitions) each partition's log start
// offset, next offset and producer snapshot, and the commit-log position
// below which every consume queue is complete and flushed. Open re-indexes
// the commit log from that position (or from its start when a queue lost
// entries the checkpoint counted, e.g. its directory was deleted), so the
// consume queues can always be rebuilt from the commit log.
//
// # Lock order
//
//	Store.topicsMu → Partition.mu → (log.CommitLog put lock) → Partition.vis → Store.vis
//	Store.checkpointMu → Partition.mu
//
// The flush services call Store.reveal without holding any of these; it
// takes Store.vis, then each Partition.vis, never Partition.mu.
package partition
