// Package share is kbroker's coordinator of share groups (KIP-932, Kafka
// 4.2's queues): members of a share group consume the same partitions
// together, and the broker hands out records one by one under acquisition
// locks instead of assigning partitions exclusively.
//
// The rules follow Apache Kafka 4.2 (group-coordinator's
// GroupMetadataManager.shareGroupHeartbeat and SimpleAssignor; core's
// SharePartition and SharePartitionManager; share-coordinator's
// ShareCoordinatorShard for the stored state). Comments name the Kafka
// piece each part follows.
//
// # Membership (heartbeat.go, assignor.go)
//
// Members join with ShareGroupHeartbeat at epoch 0 and get the group
// epoch and an assignment computed by the server. Partitions need no
// revocation, so a member reaches the assignment epoch at its next
// heartbeat (its previous epoch is still accepted, as Kafka's answer that
// bumped it may have been lost). A member that
// misses heartbeats for the session timeout is removed and the records it
// holds are released.
//
// # Delivery state (partition.go)
//
// Each (group, topic-partition) is a share-partition: the share-partition
// start offset (SPSO), before which every record is acknowledged or
// archived, and the in-flight window up to the end offset (SPEO), at most
// group.share.partition.max.record.locks records, each
//
//	Available --acquire (delivery count +1)--> Acquired
//	Acquired  --accept-->  Acknowledged
//	Acquired  --reject, gap-->  Archived
//	Acquired  --release, lock expiry--> Available, or Archived once the
//	                                    delivery count reached the limit
//	Acquired  --renew--> Acquired with a new lock deadline
//
// SPSO moves past Acknowledged and Archived records at the front. Lock
// expiry is applied lazily, whenever the partition is next used.
//
// # Sessions (session.go)
//
// ShareFetch and ShareAcknowledge carry a share session epoch: 0 opens a
// session with the partitions named, each later request carries the next
// epoch and names only changes, -1 closes it and releases the member's
// records.
//
// # Durability (store.go, records.go)
//
// Every change of a share-partition's state but an acquisition is written
// as one record of __share_group_state holding the whole state (bounded by
// the window), through a coordinator log (package coordlog): after a
// restart or a kill -9 the acknowledged and archived records stay done
// and delivery counts are kept; locks do not survive, so records acquired
// at the crash are available again.
//
// Membership is stored as Kafka stores it, as ShareGroup* records in
// __consumer_offsets (record.go here; offsets/share_records.go encodes
// them): after a change the caller takes the group's Record and writes
// it, and a heartbeat is answered once that is durable. At start-up
// Restore brings groups back with their epochs, subscribed topics and
// members' assignments, so members heartbeat on without rejoining.
//
// # Locking
//
// Coordinator.mu guards groups, sessions and the partition map; each
// Partition has its own lock, taken after Coordinator.mu or alone. Store
// writes happen with neither held.
package share
