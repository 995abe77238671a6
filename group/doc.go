// Package group is kbroker's classic consumer-group coordinator: the
// JoinGroup / SyncGroup / Heartbeat / LeaveGroup protocol that Kafka
// clients use for group membership and partition assignment, with
// ListGroups, DescribeGroups and DeleteGroups. Groups live in memory; the
// broker persists each group's Record (as Kafka's GroupMetadata record in
// __consumer_offsets) when the state hook reports it Stable or Empty, and
// Restore brings it back at start-up. Offsets are not stored here;
// ValidateCommit and WithStateHook are what an offsets layer needs from
// membership.
//
// The rules are Apache Kafka's: GroupCoordinator.scala, GroupMetadata.scala
// and MemberMetadata.scala of Kafka 3.x (core/.../coordinator/group), and
// where Kafka 4's group-coordinator module (GroupMetadataManager.java,
// ClassicGroup.java) differs, the newer one unless a comment says why not.
// Comments name the Kafka method each piece follows. The types are plain
// Go, independent of wire versions; the handlers translate kmsg requests.
//
// # States
//
//	                  JoinGroup
//	+-------+ ------------------------> +--------------------+
//	| Empty |                           | PreparingRebalance | <-----------------+
//	+-------+ <------------------------ +--------------------+ <---+             |
//	    |      join phase ends with       |                         |             |
//	    |      no member left             | join phase ends         | a member    | a member joins,
//	    |                                 | with members            | joins,      | leaves, fails,
//	    | DeleteGroups                    v                         | leaves,     | changes its
//	    v                       +---------------------+             | fails or    | metadata, or
//	+------+                    | CompletingRebalance | ------------+ changes its | the leader
//	| Dead |                    +---------------------+               metadata    | rejoins
//	+------+                              |                                       |
//	                                      | the leader's SyncGroup                |
//	                                      v                                       |
//	                                 +--------+                                   |
//	                                 | Stable | ----------------------------------+
//	                                 +--------+
//
// The last member leaving goes through PreparingRebalance to Empty.
// Empty → PreparingRebalance is the initial rebalance: it always waits
// group.initial.rebalance.delay.ms, extended while members keep coming,
// up to the largest rebalance timeout (InitialDelayedJoin). A later
// rebalance ends as soon as every member has rejoined and no KIP-394
// pending member is outstanding, or after the rebalance timeout, which
// removes the dynamic members that did not rejoin (static ones stay until
// their session expires). The join phase then starts the next generation:
// it selects the protocol, keeps the leader if it rejoined (else takes the
// first rejoined member), answers every parked JoinGroup (the leader's
// answer has every member's metadata) and gives the members one rebalance
// timeout to send SyncGroup. The leader's SyncGroup sets every member's
// assignment (empty for members it omits), answers the parked followers
// and makes the group Stable. Members heartbeat within their session
// timeout; one that does not is removed and the group rebalances. While a
// member waits in a rebalance its session timer does not remove it, unless
// it is new in that rebalance. Dead is final: a deleted group leaves the
// coordinator and a later JoinGroup creates a fresh one.
//
// # Parked requests and handlers
//
// Join and Sync may have to wait for other members, so they take a done
// callback instead of blocking: done is called exactly once, either before
// the call returns or later from whichever call or timer completes the
// phase. That fits a handler that returns a pending response:
//
//	ready := make(chan struct{})
//	resp := req.ResponseKind().(*kmsg.JoinGroupResponse)
//	b.groups.Join(joinRequest(c, req), func(r group.JoinResponse) {
//		fillJoinResponse(resp, req.Version, r) // quick, no blocking
//		close(ready)
//	})
//	return result{resp: resp, ready: ready}, nil
//
// The connection's reader goes on meanwhile; its writer sends the response
// when ready closes, in request order (Kafka mutes the socket instead; the
// per-connection order is the same). Heartbeat, Leave, ValidateCommit,
// List, Describe and Delete answer at once. Every outcome they report is a
// *kerr.Error (returned, or in a response's Err) for the handler to put in
// the response; none means the connection is broken. A parked request is
// always answered; Close answers all with NOT_COORDINATOR.
//
// # Where this differs from Kafka
//
//   - Kafka writes group metadata to __consumer_offsets before it answers
//     the leader's SyncGroup or a static member's rejoin (and fails the
//     generation if the write fails); here those answers come at once and
//     the state hook has the record written after them.
//   - Where Kafka drops a parked callback (a second JoinGroup or SyncGroup
//     from the same member while one is parked; a parked SyncGroup of a
//     member that leaves), the older request is answered
//     (REBALANCE_IN_PROGRESS, UNKNOWN_MEMBER_ID), so that no pending
//     response blocks its connection forever.
//   - A pending (KIP-394) member id sent with an instance id is
//     UNKNOWN_MEMBER_ID, where Kafka throws IllegalStateException.
//   - Ties in protocol votes go to the protocol voted for first; Kafka's
//     choice depends on hash-map order.
//   - Leave reports a missing group as a group-level UNKNOWN_MEMBER_ID;
//     Kafka (3.x and 4) answers each member UNKNOWN_MEMBER_ID with no
//     top-level error, and the wire handler does so.
//
// The group keeps copies of the protocol metadata and assignments it is
// given, so callers may reuse their request buffers; the slices in
// responses are shared and must not be modified.
//
// # Time
//
// Session, rebalance, initial-delay, pending-member and sync timeouts are
// time.AfterFunc timers, so tests drive them with testing/synctest. Timer
// callbacks run on goroutines that the Coordinator owns: Close waits for
// them, and a callback that fires after Close does nothing. A sequence
// number per timer makes a callback that lost the race with its own Stop
// a no-op.
//
// # Locking
//
// Coordinator.mu guards the map of groups; each group's mu guards the
// group and its members. Lock order: Coordinator.mu, then group.mu (only
// Delete holds both). Callbacks (done, the state hook) run after the
// group's lock is released, collected as effects while it was held, so
// they may call back into the Coordinator. No I/O happens under either
// lock.
//
// # Not (yet) here
//
// Offsets and their persistence (package offsets), expiry of Empty groups
// without offsets (Kafka's offsets.retention cleanup), transactional
// offset commits (TxnOffsetCommit's looser rules), and subscribed-topic
// tracking for OffsetDelete (GROUP_SUBSCRIBED_TO_TOPIC).
//
// # Consumer groups (KIP-848)
//
// Groups of the consumer rebalance protocol live in package
// group/consumer; the Coordinator owns that package's coordinator
// (Consumer) and shares the group-id namespace with it: creating a
// classic group deletes an Empty consumer group of that id and is refused
// (INCONSISTENT_GROUP_PROTOCOL for a JoinGroup, UNKNOWN_MEMBER_ID for a
// simple commit) while the consumer group has members; a consumer group
// takes the id of an Empty classic group (TakeOver) but not of one with
// members. ValidateTxnCommit applies a consumer group's rules when one
// holds the id.
package group
