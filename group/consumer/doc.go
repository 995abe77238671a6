// Package consumer is kbroker's coordinator of consumer groups that use
// the consumer rebalance protocol of KIP-848 (ConsumerGroupHeartbeat,
// ConsumerGroupDescribe): the broker assigns partitions and every member
// converges on its share through heartbeats alone, without the classic
// protocol's stop-the-world JoinGroup/SyncGroup rounds. Groups live in
// memory; committed offsets are not stored here (ValidateCommit and
// ValidateFetch are what an offsets layer needs from membership).
//
// The rules are Apache Kafka 4's group coordinator
// (group-coordinator/.../GroupMetadataManager.java: consumerGroupHeartbeat
// and its helpers; modern/consumer/ConsumerGroup.java,
// ConsumerGroupMember.java, CurrentAssignmentBuilder.java;
// modern/TargetAssignmentBuilder.java; assignor/UniformAssignor.java,
// RangeAssignor.java). Comments name the Kafka method each piece follows.
// The types are plain Go, independent of wire versions; the broker's
// handlers translate kmsg requests. The package group owns a Coordinator
// and shares the group-id namespace with it (Classic, ReleaseForClassic).
//
// # Persistence
//
// Groups live in memory; every change that Kafka writes records for (a
// member joined, left, was fenced or changed its subscription, epochs or
// assignment; the group epoch or target assignment moved; the group was
// deleted) is reported to the change hook (WithChangeHook), and the broker
// writes the group's Record as Kafka's ConsumerGroup* records of
// __consumer_offsets. Restore brings a group back at start-up with its
// epochs, target assignment and members, whose session timers (and
// rebalance timers, while revoking) start afresh.
//
// # Epochs and the target assignment
//
// A group has a group epoch, bumped whenever its membership, a member's
// subscription, the server assignor most members prefer, or the
// subscribed topics (partition counts, a topic created or deleted, what a
// regular expression matches) change; a new regular expression bumps it
// only if it changes the subscribed topics, as Kafka's background
// resolution does. When the
// group epoch is ahead of the target assignment's epoch, the next
// heartbeat computes a new target assignment with the server assignor
// most members name (uniform, the default, or range) and gives it the
// group epoch. Each member has a member epoch: the epoch of the target
// assignment it has reached, which its heartbeats and offset commits
// carry.
//
// # Group states (ConsumerGroupState)
//
//	            first member joins
//	+-------+ ---------------------> +-----------+
//	| Empty |                        | Assigning |  group epoch > target epoch
//	+-------+ <---------------+      +-----------+
//	    |      last member     \          | next heartbeat computes the
//	    |      leaves or is     \         v target assignment
//	    |      fenced (from      \   +-------------+
//	    |      any state)         +- | Reconciling |  a member is not at the
//	    |                            +-------------+  target epoch or not STABLE
//	    | DeleteGroups, or                |  ^
//	    | Empty without offsets           v  | a change bumps the group epoch
//	    v for a check interval       +--------+
//	+------+                         | Stable |  every member reconciled
//	| Dead |                         +--------+
//	+------+
//
// The state is derived after every change, as Kafka does: Empty without
// members, Assigning while the group epoch is ahead of the target
// assignment's, Reconciling while a member is not STABLE at the target
// epoch, else Stable. Dead is final: a deleted group leaves the
// coordinator and a later heartbeat creates a fresh one.
//
// # Member states (MemberState, CurrentAssignmentBuilder)
//
//	               new target epoch, something to revoke
//	+--------+ ------------------------------------------> +----------------------+
//	| STABLE |                                             | UNREVOKED_PARTITIONS |
//	+--------+ <---------------+                           +----------------------+
//	  |    ^    all target      \      the heartbeat's owned  |  stays at its epoch;
//	  |    |    partitions free  \     partitions no longer   |  the rebalance timeout
//	  |    |                      \    list the revoked ones  |  fences it
//	  |    |                       \                          v
//	  |    |                        +--------------- (epoch + 1, up to the target's)
//	  |    |                                                  |
//	  |    +------------------+                               | some target partitions
//	  | new target epoch,      \                              v still owned by others
//	  | nothing to revoke,     +--------------------- +------------------------+
//	  | some target partitions    the others released | UNRELEASED_PARTITIONS  |
//	  | still owned by others  ---------------------> +------------------------+
//
// A member never owns a partition another member owns: it first revokes
// what its target no longer has (assignment = current ∩ target; it stays
// at its epoch, so its commits of the revoked partitions still pass),
// acknowledges by omitting them from a heartbeat's owned partitions, and
// only then moves to the target epoch and gets the target partitions that
// nobody else owns; the rest follow on later heartbeats once their owners
// released them. UNKNOWN is Kafka's state for a state from a newer version;
// nothing enters it here.
//
// # Heartbeats, timeouts and leaving
//
//   - Member epoch 0 joins (or rejoins: a fenced member rejoins with its
//     member id and epoch 0, KAFKA-19233). It must carry a rebalance
//     timeout, an empty owned-partitions list and a subscription (topic
//     names and/or a regular expression), else INVALID_REQUEST. From
//     ConsumerGroupHeartbeat v1 the client generates its member id
//     (KIP-1082); a v0 client joins with "" and gets one.
//   - Other heartbeats carry the member's epoch: a greater one, or a
//     smaller one other than the previous epoch with owned partitions
//     within the assignment (a lost response), is FENCED_MEMBER_EPOCH; an
//     unknown member UNKNOWN_MEMBER_ID; a missing group GROUP_ID_NOT_FOUND.
//   - The response has the member's epoch, the heartbeat interval
//     (group.consumer.heartbeat.interval.ms) and, on a join, a full
//     request or a change, its whole assignment.
//   - Every heartbeat restarts the member's session timer
//     (group.consumer.session.timeout.ms); when it fires the member is
//     fenced: removed, its partitions free, the group epoch bumped.
//   - Entering UNREVOKED_PARTITIONS starts the member's rebalance timer
//     (its own rebalance timeout); still at that epoch when it fires, the
//     member is fenced.
//   - Epoch -1 leaves (fenced at once). A static member (instance id)
//     leaving with -2 stays, at epoch -2 with its partitions, until its
//     session times out or a member with its instance id joins with epoch
//     0, which takes over its assignment without a rebalance; a member
//     joining with an instance id still in use is UNRELEASED_INSTANCE_ID,
//     and a static member's heartbeat under a replaced member id
//     FENCED_INSTANCE_ID.
//   - A full group is GROUP_MAX_SIZE_REACHED for new members; an unknown
//     server assignor UNSUPPORTED_ASSIGNOR; a regular expression that does
//     not compile INVALID_REGULAR_EXPRESSION.
//
// # The group-id namespace
//
// A group id names a classic group or a consumer group, as in Kafka. A
// heartbeat joining a group id held by an Empty classic group deletes that
// group (its offsets stay) and creates a consumer group; a classic group
// with members answers GROUP_ID_NOT_FOUND. A classic JoinGroup for an
// Empty consumer group deletes it likewise; one for a consumer group with
// members is refused (package group answers INCONSISTENT_GROUP_PROTOCOL).
//
// # Where this differs from Kafka
//
//   - The records of a change are written after the heartbeat's answer
//     (Kafka writes them first), and the resolved regular expressions are
//     not persisted (ConsumerGroupRegularExpression): the first heartbeat
//     after a restart resolves them again.
//   - No online migration (KIP-848's upgrade and downgrade between the
//     classic and the consumer protocol within one live group): a classic
//     group with members cannot become a consumer group
//     (GROUP_ID_NOT_FOUND), and classic JoinGroup requests cannot join a
//     consumer group with members (Kafka 4 admits them as classic-protocol
//     members).
//   - Regular expressions are resolved synchronously in the heartbeat that
//     brings a new one, and again by a heartbeat at most every 10 s (Kafka:
//     by a background task, when topics were created, at most every 10 s,
//     or every group.consumer.regex.refresh.interval.ms). Go's regexp
//     (RE2 syntax, as Kafka's RE2/J) matches whole topic names.
//   - The subscribed topics' metadata is compared on every heartbeat
//     (Kafka: when its metadata image changes), with the same effect: a
//     partition added, a topic deleted or re-created bumps the group epoch
//     at the next heartbeat.
//   - The uniform assignor places partitions like Kafka's when all members
//     subscribe to the same topics (members taken in member-id order, not
//     hash order); for different subscriptions it has its own balancing
//     algorithm (see uniformAssignor). Ties between preferred server
//     assignors go to the one listed first in group.consumer.assignors
//     (Kafka: hash order). Racks are carried but not used, as by Kafka's
//     built-in assignors.
//   - No per-group configs (Kafka's GROUP config resource).
//   - An Empty group without committed offsets is deleted one
//     offsets.retention.check.interval.ms (Config.EmptyGroupCheckInterval)
//     after it emptied, rather than at Kafka's next periodic cleanup; one
//     with offsets when they expire, as in Kafka.
//
// # Time
//
// Session, rebalance and empty-group timers are time.AfterFunc timers, so
// tests drive them with testing/synctest. Timer callbacks run on goroutines
// that the Coordinator owns: Close waits for them, and one that fires
// after Close does nothing. A sequence number per timer makes a callback
// that lost the race with its own Stop a no-op.
//
// # Locking
//
// Coordinator.mu guards the map of groups; each group's mu guards the
// group and its members. Lock order: Coordinator.mu, then group.mu; the
// classic coordinator's locks come after Coordinator.mu (TakeOver, and
// ReleaseForClassic's create). No callback runs under a group's lock and
// no I/O happens under either.
package consumer
