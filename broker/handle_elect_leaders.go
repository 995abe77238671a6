package broker

// ElectLeaders v0–v2 (KIP-183 preferred election, KIP-460 unclean election
// in v1, v2 flexible).
//
// On one node every partition's leader is its only replica, which is also
// its preferred replica, so no election ever changes anything. The answers
// are those of Kafka's controller (ReplicationControlManager.electLeaders)
// for a partition that already has its preferred leader: each named
// partition gets ELECTION_NOT_NEEDED with Kafka's message, an unknown topic
// or partition UNKNOWN_TOPIC_OR_PARTITION; a null partition list (every
// partition) lists each topic with no partition results, because Kafka
// leaves out the partitions that need no election. An election type other
// than preferred (0) or unclean (1) is INVALID_REQUEST, on the whole
// request and on every named partition (ElectLeadersRequest.getErrorResponse).

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Kafka's default messages of the codes ElectLeaders returns (ApiError
// without a message takes the code's message).
const electionNotNeededMessage = "Leader election not needed for topic partition."

func (b *Broker) handleElectLeaders(c *conn, req *kmsg.ElectLeadersRequest) (result, error) {
	resp := req.ResponseKind().(*kmsg.ElectLeadersResponse)
	if req.ElectionType != 0 && req.ElectionType != 1 {
		msg := fmt.Sprintf("Unknown election type %d", req.ElectionType)
		resp.ErrorCode = kerr.InvalidRequest.Code
		for _, rt := range req.Topics {
			st := kmsg.NewElectLeadersResponseTopic()
			st.Topic = rt.Topic
			for _, p := range rt.Partitions {
				st.Partitions = append(st.Partitions, electResult(p, kerr.InvalidRequest, msg))
			}
			resp.Topics = append(resp.Topics, st)
		}
		return respond(resp)
	}
	if req.Topics == nil {
		for _, t := range b.topics.List() {
			st := kmsg.NewElectLeadersResponseTopic()
			st.Topic = t.Name
			st.Partitions = []kmsg.ElectLeadersResponseTopicPartition{}
			resp.Topics = append(resp.Topics, st)
		}
		return respond(resp)
	}
	for _, rt := range req.Topics {
		st := kmsg.NewElectLeadersResponseTopic()
		st.Topic = rt.Topic
		t, known := b.topics.Get(rt.Topic)
		for _, p := range rt.Partitions {
			switch {
			case !known:
				st.Partitions = append(st.Partitions, electResult(p, kerr.UnknownTopicOrPartition, "No such topic as "+rt.Topic))
			case p < 0 || p >= t.Partitions:
				st.Partitions = append(st.Partitions, electResult(p, kerr.UnknownTopicOrPartition, fmt.Sprintf("No such partition as %s-%d", rt.Topic, p)))
			default:
				st.Partitions = append(st.Partitions, electResult(p, kerr.ElectionNotNeeded, electionNotNeededMessage))
			}
		}
		resp.Topics = append(resp.Topics, st)
	}
	return respond(resp)
}

// electResult is one partition's answer.
func electResult(p int32, code *kerr.Error, msg string) kmsg.ElectLeadersResponseTopicPartition {
	rp := kmsg.NewElectLeadersResponseTopicPartition()
	rp.Partition, rp.ErrorCode, rp.ErrorMessage = p, code.Code, kmsg.StringPtr(msg)
	return rp
}
