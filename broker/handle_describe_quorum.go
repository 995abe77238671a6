package broker

// DescribeQuorum v0–v2 (KIP-595; v1 KIP-836 fetch and caught-up
// timestamps; v2 KIP-853 directory ids and voter endpoints).
//
// kbroker is a single node that is its own controller, like a Kafka node in
// combined mode (process.roles=broker,controller) with one voter. The
// answer is what that node's KafkaRaftClient.handleDescribeQuorumRequest
// gives as the quorum leader: the partition __cluster_metadata-0, led by
// this node, which is the only voter and has no observers; the leader's
// own fetch and caught-up timestamps are the current time (RaftUtil
// toReplicaState). A request that does not name exactly that one
// partition gets UNKNOWN_TOPIC_OR_PARTITION on each partition it names
// (getPartitionLevelErrorResponse). v2 lists the voter's endpoint: the
// broker's advertised listener, named PLAINTEXT, since this node takes
// quorum requests on its one listener; the directory id is zero, as for a
// statically configured voter.
//
// Deviation: kbroker keeps no metadata log (topics, configs and quotas are
// files under metadata/, written atomically), so the leader epoch is 1, the
// epoch of a fresh quorum's first election, and the high watermark and log
// end offset are 0: the voter is always caught up.

import (
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/topic"
)

// quorumLeaderEpoch is the leader epoch DescribeQuorum reports.
const quorumLeaderEpoch = 1

func (b *Broker) handleDescribeQuorum(c *conn, req *kmsg.DescribeQuorumRequest) (result, error) {
	resp := req.ResponseKind().(*kmsg.DescribeQuorumResponse)
	if len(req.Topics) != 1 || req.Topics[0].Topic != topic.ClusterMetadataTopic ||
		len(req.Topics[0].Partitions) != 1 || req.Topics[0].Partitions[0].Partition != 0 {
		for _, rt := range req.Topics {
			st := kmsg.NewDescribeQuorumResponseTopic()
			st.Topic = rt.Topic
			for _, rp := range rt.Partitions {
				sp := kmsg.NewDescribeQuorumResponseTopicPartition()
				sp.Partition, sp.ErrorCode = rp.Partition, kerr.UnknownTopicOrPartition.Code
				sp.ErrorMessage = kmsg.StringPtr(kerr.UnknownTopicOrPartition.Description)
				st.Partitions = append(st.Partitions, sp)
			}
			resp.Topics = append(resp.Topics, st)
		}
		return respond(resp)
	}
	nowMs := time.Now().UnixMilli()
	voter := kmsg.NewDescribeQuorumResponseTopicPartitionReplicaState()
	voter.ReplicaID, voter.LogEndOffset = b.cfg.NodeID, 0
	voter.LastFetchTimestamp, voter.LastCaughtUpTimestamp = nowMs, nowMs
	sp := kmsg.NewDescribeQuorumResponseTopicPartition()
	sp.Partition, sp.LeaderID, sp.LeaderEpoch, sp.HighWatermark = 0, b.cfg.NodeID, quorumLeaderEpoch, 0
	sp.CurrentVoters = []kmsg.DescribeQuorumResponseTopicPartitionReplicaState{voter}
	sp.Observers = []kmsg.DescribeQuorumResponseTopicPartitionReplicaState{}
	st := kmsg.NewDescribeQuorumResponseTopic()
	st.Topic, st.Partitions = topic.ClusterMetadataTopic, []kmsg.DescribeQuorumResponseTopicPartition{sp}
	resp.Topics = []kmsg.DescribeQuorumResponseTopic{st}
	if req.Version >= 2 {
		node := kmsg.NewDescribeQuorumResponseNode()
		node.NodeID = b.cfg.NodeID
		// Every listener, each as its clients are told to reach it.
		for _, l := range b.listeners {
			node.Listeners = append(node.Listeners, kmsg.DescribeQuorumResponseNodeListener{Name: l.name, Host: l.advHost, Port: uint16(l.advPort)})
		}
		resp.Nodes = []kmsg.DescribeQuorumResponseNode{node}
	}
	return respond(resp)
}
