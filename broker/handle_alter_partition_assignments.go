package broker

// AlterPartitionReassignments v0–v1 (KIP-455; v1 KIP-860
// allow_replication_factor_change).
//
// The answers are those of Kafka's controller
// (ReplicationControlManager.alterPartitionReassignment) on a cluster of
// one broker. A target replica list is validated as Kafka's
// validateManualPartitionAssignment does: empty is INVALID_REPLICA_ASSIGNMENT,
// so is a broker id that is not this broker ("no such broker is
// registered") or one named twice, with Kafka's messages. The only valid
// target is this broker alone, which is the current assignment, so it
// succeeds and starts no reassignment, as in Kafka. A null target cancels a
// reassignment; none is ever in progress, so that is
// NO_REASSIGNMENT_IN_PROGRESS. An unknown topic or partition is
// UNKNOWN_TOPIC_OR_PARTITION. The KIP-860 check (a replication factor
// change refused unless allowed) can never be reached: a target of another
// size names a broker that does not exist and fails validation first. v1
// echoes allow_replication_factor_change, telling the client the flag was
// understood.

import (
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func (b *Broker) handleAlterPartitionAssignments(c *conn, req *kmsg.AlterPartitionAssignmentsRequest) (result, error) {
	resp := req.ResponseKind().(*kmsg.AlterPartitionAssignmentsResponse)
	resp.AllowReplicationFactorChange = req.AllowReplicationFactorChange
	for _, rt := range req.Topics {
		st := kmsg.NewAlterPartitionAssignmentsResponseTopic()
		st.Topic = rt.Topic
		t, known := b.topics.Get(rt.Topic)
		for _, rp := range rt.Partitions {
			sp := kmsg.NewAlterPartitionAssignmentsResponseTopicPartition()
			sp.Partition = rp.Partition
			var code *kerr.Error
			var msg string
			switch {
			case !known:
				code, msg = kerr.UnknownTopicOrPartition, fmt.Sprintf("Unable to find a topic named %s.", rt.Topic)
			case rp.Partition < 0 || rp.Partition >= t.Partitions:
				code, msg = kerr.UnknownTopicOrPartition, fmt.Sprintf("Unable to find partition %s:%d.", rt.Topic, rp.Partition)
			case rp.Replicas == nil:
				code, msg = kerr.NoReassignmentInProgress, kerr.NoReassignmentInProgress.Description
			default:
				msg = b.validateAssignment(rp.Replicas)
				if msg != "" {
					code = kerr.InvalidReplicaAssignment
				}
			}
			if code != nil {
				sp.ErrorCode, sp.ErrorMessage = code.Code, kmsg.StringPtr(msg)
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return respond(resp)
}

// validateAssignment checks a manual replica assignment against the one
// registered broker, in the order and with the messages of Kafka's
// ReplicationControlManager.validateManualPartitionAssignment, and returns
// the problem or "".
func (b *Broker) validateAssignment(replicas []int32) string {
	if len(replicas) == 0 {
		return "The manual partition assignment includes an empty replica list."
	}
	sorted := slices.Sorted(slices.Values(replicas))
	for i, id := range sorted {
		if id != b.cfg.NodeID {
			return fmt.Sprintf("The manual partition assignment includes broker %d, but no such broker is registered.", id)
		}
		if i > 0 && sorted[i-1] == id {
			return fmt.Sprintf("The manual partition assignment includes the broker %d more than once.", id)
		}
	}
	return ""
}
