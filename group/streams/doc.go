// Package streams is kbroker's coordinator of streams groups, the
// rebalance protocol of Kafka Streams (KIP-1071, StreamsGroupHeartbeat and
// StreamsGroupDescribe): each member sends the application's topology,
// and the broker sizes the internal topics, has the missing ones created,
// turns the topology into tasks (one per partition of a subtopology's
// source topics) and assigns active and standby tasks to members, which
// converge on their share through heartbeats.
//
// The rules are Apache Kafka 4's group coordinator
// (group-coordinator/.../GroupMetadataManager.java: streamsGroupHeartbeat
// and its helpers; streams/StreamsGroup.java, StreamsGroupMember.java,
// CurrentAssignmentBuilder.java, TargetAssignmentBuilder.java;
// streams/topics/InternalTopicManager.java; streams/assignor/
// StickyTaskAssignor.java). The types are plain Go, independent of wire
// versions; the broker's handlers translate kmsg requests.
//
// # Topology and internal topics (configure)
//
// The group holds the first topology a member joins with, and any later
// one with a higher epoch. Before tasks can be assigned the topology is
// checked against the topics: every source topic must exist
// (MISSING_SOURCE_TOPICS); a repartition topic without a partition count
// gets the most tasks of the subtopologies that write to it;
// copartitioned topics must have the same count
// (INCORRECTLY_PARTITIONED_TOPICS), a flexible repartition topic among
// them following the others; a changelog topic has one partition per
// task; existing internal topics must have the decided count. Missing
// internal topics are created through WithTopicCreator before the
// heartbeat's own work; only if that fails does the member see
// MISSING_INTERNAL_TOPICS. The partition counts of every topic the
// topology reads are compared on each heartbeat: a change bumps the group
// epoch.
//
// # Epochs, target assignment, reconciliation
//
// As in KIP-848 consumer groups: the group epoch moves when a member
// joins or leaves, when what the assignor uses of a member (process,
// rack, client tags, user endpoint) changes, when the topology or its
// topics change. A heartbeat that finds the group epoch ahead of the
// target assignment's computes a new target (assign). Each member then
// converges on its target (group.reconcile, Kafka's
// CurrentAssignmentBuilder): it keeps current ∩ target, first revokes the
// rest (UNREVOKED_TASKS, at its epoch, until a heartbeat's owned tasks no
// longer list them; the rebalance timeout fences it otherwise), then moves
// to the target epoch and gets the target tasks that are free; tasks still
// held elsewhere follow later (UNRELEASED_TASKS). An active task is free
// when no other member holds it active and the member's own process holds
// no standby or warm-up copy; a standby when the member's process holds no
// copy.
//
// A heartbeat moves the group epoch at most once, whatever changed. A new
// group waits group.streams.initial.rebalance.delay.ms before its first
// assignment with tasks: meanwhile target assignments are empty and
// members get the ASSIGNMENT_DELAYED status; when the delay ends the
// group epoch moves, and the next heartbeat assigns.
//
// # Offset commits
//
// OffsetCommit and TxnOffsetCommit of a member are checked as Kafka 4.4
// checks them (StreamsGroup.validateOffsetCommit, ValidateCommit): at the
// member's epoch, or at an older one for the partitions of the active
// tasks it has held since (KIP-1251's assignment epochs). Each member
// keeps the epoch at which it got each active task: nextAssignment keeps
// it for tasks kept or being revoked and gives new ones the target epoch,
// and the records store it, so a restart keeps it too.
//
// # Group states
//
// Empty without members; NotReady while the topology cannot run (missing
// or mispartitioned topics); Assigning while the group epoch is ahead of
// the target's; Reconciling while a member is not STABLE at the target
// epoch; else Stable. Dead is not kept: a deleted group leaves the map.
//
// # Timers
//
// Session and rebalance timers are time.AfterFunc timers, so tests drive
// them with testing/synctest. A sequence number per timer makes a
// callback that lost the race with its own Stop a no-op; Close stops
// them all and waits for callbacks under way.
//
// # Locking
//
// One mutex (Coordinator.mu) guards every group: heartbeats are short and
// in memory. Internal topics are created outside it.
//
// # Where this differs from Kafka
//
//   - Groups are persisted as Kafka's StreamsGroup* records through the
//     change hook (persist.go; the broker writes them), but the topics'
//     metadata hash is not kept: Restore configures the topology against
//     the topics present instead. The endpoint-information epoch starts
//     again after a restart.
//   - Internal topics are created synchronously within the heartbeat.
//   - The assignor is sticky and balanced like Kafka's but its own
//     algorithm; it assigns no warm-up tasks and ignores task offsets and
//     client tags (rack-aware standby placement).
//   - Target assignments are computed by the heartbeat that finds the
//     group epoch ahead, not at most every
//     group.streams.assignment.interval.ms (KIP-1263).
//   - The topology is not compared with the group's beyond its epoch,
//     except that the same epoch with a different topology is
//     STREAMS_INVALID_TOPOLOGY_EPOCH.
package streams
