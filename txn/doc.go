// Package txn is kbroker's transaction coordinator: the state of every
// transactional id (its producer id and epoch, its open transaction and
// that transaction's partitions) and the requests that change it —
// InitProducerId with a transactional id, AddPartitionsToTxn,
// AddOffsetsToTxn, EndTxn — plus the checks Produce and TxnOffsetCommit
// make (Verify), DescribeTransactions and ListTransactions. The types are
// plain Go; the wire handlers translate kmsg requests (and broker/errors.go
// adapts error codes to old request versions).
//
// The rules are Apache Kafka 4's (TransactionCoordinator,
// TransactionStateManager and TransactionMetadata in
// core/.../coordinator/transaction and the transaction-coordinator
// module), with the semantics of transactions v1 and of transactions v2
// (KIP-890 part 2); comments name the Kafka method each piece follows.
//
// # Transactions v2
//
// A request says which it runs (the broker decides from the request
// version and the finalized transaction.version). End with V2 bumps the
// epoch with every commit or abort: the Prepare record carries epoch + 1
// (and the epoch before as last epoch), the markers are written with it,
// so that the old epoch is fenced at every partition of the transaction,
// and the answer is the producer id and epoch to go on with. When the
// epoch before the bump is exhausted (32766), a fresh producer id is
// allocated with the Prepare record (NextProducerId): the answer is it
// with epoch 0, the markers still carry the old id and epoch 32767, and
// the Complete record moves to the new id. A retry (the epoch before the
// bump, or 32766 of the previous id after a rotation) is answered with
// the current id and epoch; an abort with no transaction open (Empty or
// Complete*) is allowed and bumps too. AddPartitionsV2 is the implicit
// add of Produce v12+ and TxnOffsetCommit v5+. The coordinator's own
// aborts (timeouts, the fence of InitProducerId) bump the epoch once, as
// in v1 (and as Kafka 4.4 does), and under the broker's level 2 (Deps.V2)
// rotate the producer id when that exhausts the epochs. Records carry
// ClientTransactionVersion (0 or 2) and NextProducerId, so a restart
// completes a rotation.
//
// # States
//
//	                 InitProducerId
//	(new id) -----> +-------+ <-----------------------------------------+
//	                | Empty | ---+ InitProducerId (epoch + 1)            |
//	                +-------+ <--+                                       |
//	                    |                                                |
//	                    | AddPartitionsToTxn, AddOffsetsToTxn            |
//	                    v                                                |
//	                +---------+ ---+ AddPartitionsToTxn                  |
//	    +---------> | Ongoing |    | (more partitions)                   |
//	    |           +---------+ <--+                                     |
//	    |              |     |                                           |
//	    |   EndTxn     |     | EndTxn(abort), the timeout, or            |
//	    |   (commit)   |     | InitProducerId (epoch + 1: fence)         |
//	    |              v     v                                           |
//	    | +---------------+ +--------------+                             |
//	    | | PrepareCommit | | PrepareAbort |                             |
//	    | +---------------+ +--------------+                             |
//	    |        |                 |                                     |
//	    |        | markers written | markers written                     |
//	    |        v                 v                                     |
//	    | +----------------+ +---------------+                           |
//	    +-| CompleteCommit | | CompleteAbort |---------------------------+
//	      +----------------+ +---------------+
//
// From either Complete state, AddPartitionsToTxn starts the next
// transaction (Ongoing) and InitProducerId goes to Empty with the next
// epoch, or with a fresh producer id and epoch 0 once the epoch reached
// 32766. Empty, CompleteCommit and CompleteAbort idle for
// transactional.id.expiration.ms go to Dead: a tombstone is written and
// the id is removed once it is durable.
//
// Every transition is one record written to __transaction_state; the
// request that caused it waits until the record is durable, and while it
// is in flight (Kafka's pendingState) every other request that would
// change the id gets CONCURRENT_TRANSACTIONS, which clients retry.
// PrepareCommit and PrepareAbort are durable decisions: EndTxn is answered
// once they are, and the coordinator then has Deps.WriteMarkers write the
// commit or abort markers to every partition of the transaction, and
// records CompleteCommit or CompleteAbort, retrying with backoff until
// both succeed — a transaction never stays half-completed while the
// coordinator runs, and Open completes any that a stop interrupted.
//
// Fencing: InitProducerId bumps the epoch, which fences the producer that
// held the previous one (its requests get PRODUCER_FENCED, and the
// partitions refuse its batches once they see the new epoch). If that
// producer left a transaction Ongoing, the coordinator aborts it first
// with a bumped epoch and answers CONCURRENT_TRANSACTIONS until the abort
// is complete; the client's retry then gets the next epoch. A transaction
// open longer than its timeout is aborted the same way (Kafka's
// PrepareEpochFence, which here is prepared together with PrepareAbort, so
// no transaction is ever seen in it). When the epoch reaches 32766 the
// next InitProducerId hands out a fresh producer id with epoch 0, so that
// one epoch (32767) is always left for a fence. KIP-360: a producer that
// sends its producer id and epoch with InitProducerId (to recover from an
// abortable error or UNKNOWN_PRODUCER_ID) gets its epoch bumped, or the
// same answer again when it retries; see InitProducerID.
//
// # Parked requests and handlers
//
// InitProducerID, AddPartitions, AddOffsets and EndTxn wait for a write,
// so they take a done callback: done is called exactly once, before the
// call returns (an answer that needs no write) or later from the goroutine
// that completes the write. That fits a handler that returns a pending
// response:
//
//	ready := make(chan struct{})
//	resp := req.ResponseKind().(*kmsg.EndTxnResponse)
//	b.txn.EndTxn(req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit, func(err error) {
//		resp.ErrorCode = versionCode(kmsg.EndTxn, req.Version, err) // quick, no blocking
//		close(ready)
//	})
//
// AddPartitionsV2 with a wait parks an implicit add (Produce v12+,
// TxnOffsetCommit v5+) that meets its transactional id busy (a transition
// in flight, the previous transaction completing) in Coordinator.mu.waiting:
// each record of the id applied, and each failed write of it, decides the
// parked adds again (from a timer goroutine, since Apply holds the log's
// lock), and a timer answers CONCURRENT_TRANSACTIONS at the deadline.
//
// Verify, Describe and List answer at once. Every outcome is nil or an
// error wrapping one *kerr.Error for the handler to put in the response.
// Close answers every parked request with NOT_COORDINATOR (the client
// looks for the coordinator again); calls after Close get
// COORDINATOR_NOT_AVAILABLE.
//
// # Persistence
//
// The state is kept as Kafka keeps it: records of the internal topic
// __transaction_state, key TransactionLogKey v0 (the transactional id),
// value TransactionLogValue (written at v1, v0 and v1 read) or null for a
// tombstone, on the partition Kafka would use (Java's String.hashCode of
// the id, sign bit masked, modulo the partition count). Records are
// applied to memory once durable, in log order per partition
// (coordlog.Log, shared with offsets/), so what requests see never
// depends on a write a crash could take back. From time to time and at
// Close the whole state goes to metadata/transactions.snapshot with the
// offset per partition that it covers, and the partitions' log start
// moves up to it, so that old commit-log files can be freed; the cut never
// passes what the commit log has made durable. Open reads the snapshot,
// replays the records after it, and completes the transactions it finds in
// PrepareCommit or PrepareAbort (their markers are written again: a
// duplicate marker is harmless). Ongoing transactions stay open and are
// aborted when their timeout, counted from their stored start time,
// passes. Open finishes loading before it returns, so the coordinator
// never answers COORDINATOR_LOAD_IN_PROGRESS as Kafka does while it loads
// a partition; the broker opens it before it listens.
//
// A write that fails (KAFKA_STORAGE_ERROR, a sync-mode flush timeout) is
// not applied, and its request hears the error; its bytes may still
// become durable and be applied by the next start, as a Kafka append that
// timed out may still be replicated. Either outcome is a valid state:
// the client retried, or gets CONCURRENT_TRANSACTIONS, PRODUCER_FENCED or
// INVALID_TXN_STATE answers consistent with the log.
//
// # Time
//
// The timeout check (AbortCheckInterval), id expiry
// (ExpirationCheckInterval) and snapshots (SnapshotInterval) are tickers
// of one background goroutine; marker and completion retries are
// time.AfterFunc timers (100 ms doubling to 10 s). All use the time
// package, so tests drive them with testing/synctest; Close stops them and
// waits for callbacks in progress. Timestamps in records come from
// Config.Now.
//
// # Locking
//
// Coordinator.mu guards every transactional id's state, the parked
// requests and the timers. The log's lock comes before it (the log applies
// durable records with its lock held), so the coordinator never writes,
// snapshots, calls Deps or answers a request while holding Coordinator.mu:
// it decides under the lock, marks the transition pending, and acts after
// releasing it. No I/O happens under Coordinator.mu.
//
// # Where this differs from Kafka
//
//   - One coordinator for every partition of __transaction_state: no
//     coordinator epoch, no loading state, no TransactionMarkerChannel
//     (Deps.WriteMarkers writes the markers locally); markers are retried
//     as one call per transaction (or per MarkerError.Remaining).
//   - Two-phase commit (KIP-939: InitProducerId v6, NextProducerEpoch)
//     is not implemented; Kafka 4.4 keeps InitProducerId v6 unstable (not
//     served without unstable.api.versions.enable).
//   - An implicit add of transactions v2 waits for a busy id (see
//     AddPartitionsV2) where Kafka's partition leader retries it every
//     20 ms for up to 100 ms.
//   - Values are always written at v1 (Kafka writes v0 until
//     transaction.version ≥ 1) for their PreviousProducerId, which
//     recognises a retried InitProducerId after a producer id rotation
//     across a restart.
//   - A v2 fence whose bumped epoch is exhausted allocates the next
//     producer id like a v2 EndTxn, as recent Kafka does (its
//     TransactionCoordinatorTest
//     shouldRotateProducerIdWhenInitPidFencesOngoingTxnAtEpochOverflowBoundaryTV2);
//     Kafka 4.0 left the epoch at 32767 for the next InitProducerId to
//     rotate.
//   - The fence and its PrepareAbort are prepared in one step under one
//     lock; in Kafka a client EndTxn can slip between the two.
//   - InitProducerId with an exhausted epoch (32766+) and an expected
//     epoch that is neither current nor the last: Kafka fails with an
//     IllegalStateException (UNKNOWN_SERVER_ERROR); here it is a retry
//     (the last epoch) or PRODUCER_FENCED.
//   - A mismatched producer id in InitProducerId is PRODUCER_FENCED, as in
//     Kafka (not INVALID_PRODUCER_ID_MAPPING, which AddPartitionsToTxn,
//     EndTxn and Verify answer).
//   - AddPartitions with no partitions answers nil and changes nothing
//     (Kafka would make an Empty transaction Ongoing with no partitions).
//   - A stored Dead value (Kafka never writes one) is read as a tombstone;
//     an id whose first write failed is kept in memory as in Kafka but is
//     left out of snapshots and expires without a tombstone.
//   - Expired ids go in tombstone batches of at most 1000 records (Kafka
//     fills batches up to max.message.bytes). ListTransactions is sorted
//     by transactional id (Kafka's order is a hash map's).
//   - The last epoch of KIP-360 is not stored, as in Kafka: after a
//     restart, a retried InitProducerId whose answer was lost is
//     PRODUCER_FENCED.
package txn
