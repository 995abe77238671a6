package broker

// ListPartitionReassignments v0 (KIP-455).
//
// A single broker never has a reassignment in progress
// (handle_alter_partition_assignments.go), so the answer is Kafka's for a
// cluster without one: no topics, whether every reassignment or named
// topics were asked for (ReplicationControlManager.listPartitionReassignments
// lists only reassigning partitions and skips unknown topics), and no
// error.

import "github.com/twmb/franz-go/pkg/kmsg"

func (b *Broker) handleListPartitionReassignments(c *conn, req *kmsg.ListPartitionReassignmentsRequest) (result, error) {
	resp := req.ResponseKind().(*kmsg.ListPartitionReassignmentsResponse)
	resp.Topics = []kmsg.ListPartitionReassignmentsResponseTopic{}
	return respond(resp)
}
