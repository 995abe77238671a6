package broker

// The simulated cluster's per-request checks (nodes.go): which node a
// partition request or a coordinator request must reach, and the answers
// of the wrong one. Handlers call these only when Broker.nodes is set.

import (
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/fault"
	"github.com/kbroker/kbroker/partition"
	"github.com/kbroker/kbroker/protocol"
	"github.com/kbroker/kbroker/topic"
)

// fetchLeaderCode is a fetched partition's error on c's node: the
// current leader epoch (v9+, KIP-320), then leadership. A refused
// partition gets the leader as its CurrentLeader hint (v12+, KIP-951).
func (c *conn) fetchLeaderCode(fp *fetchPart, id partition.TopicID, p, current int32, version int16) int16 {
	code, leader, epoch := c.leaderState(topic.ID(id), p, current, version >= 9)
	if version >= 12 && (code == kerr.NotLeaderForPartition.Code || code == kerr.FencedLeaderEpoch.Code) {
		fp.leader.HasCurrentLeader, fp.leader.CurrentLeaderID, fp.leader.CurrentLeaderEpoch = true, leader, epoch
	}
	return code
}

// fetchNodeEndpoints are the endpoints of the leaders a fetch response's
// CurrentLeader hints name (v16+, KIP-951), so that the consumer can go
// there without a metadata round trip.
func (b *Broker) fetchNodeEndpoints(plan *fetchPlan) []protocol.NodeEndpoint {
	if plan.version < 16 {
		return nil
	}
	var out []protocol.NodeEndpoint
	for i := range plan.parts {
		l := &plan.parts[i].leader
		if !l.HasCurrentLeader || slices.ContainsFunc(out, func(e protocol.NodeEndpoint) bool { return e.NodeID == l.CurrentLeaderID }) {
			continue
		}
		e := protocol.NodeEndpoint{NodeID: l.CurrentLeaderID}
		e.Host, e.Port = b.endpoint(l.CurrentLeaderID, plan.listener)
		out = append(out, e)
	}
	return out
}

// notLeaderForProduce answers a produced partition that c's node does
// not lead: NOT_LEADER_OR_FOLLOWER, with the leader (v10+, KIP-951) in
// the partition's CurrentLeader and its endpoint in the response's
// NodeEndpoints, so that the producer can retry there without a
// metadata round trip. It reports whether it answered.
func (b *Broker) notLeaderForProduce(c *conn, version int16, resp *kmsg.ProduceResponse, sp *kmsg.ProduceResponseTopicPartition, id topic.ID) bool {
	code, leader, epoch := c.leaderState(id, sp.Partition, -1, false)
	if code == 0 {
		return false
	}
	sp.ErrorCode = code
	if version >= 10 {
		sp.CurrentLeader.LeaderID, sp.CurrentLeader.LeaderEpoch = leader, epoch
		for _, nb := range resp.Brokers {
			if nb.NodeID == leader {
				return true
			}
		}
		nb := kmsg.NewProduceResponseBroker()
		nb.NodeID = leader
		nb.Host, nb.Port = b.endpoint(leader, c.l.index)
		resp.Brokers = append(resp.Brokers, nb)
	}
	return true
}

// listOffsetNode answers one ListOffsets partition in a simulated
// cluster: the current leader epoch (v4+) and leadership checked first,
// and the epoch of the offset found.
func (b *Broker) listOffsetNode(c *conn, sp *kmsg.ListOffsetsResponseTopicPartition, id topic.ID, rp *kmsg.ListOffsetsRequestTopicPartition, version int16, committed bool) {
	p := b.store.Partition(partition.TopicID(id), rp.Partition)
	if p == nil {
		sp.ErrorCode = kerr.UnknownTopicOrPartition.Code
		return
	}
	if code, _, _ := c.leaderState(id, rp.Partition, rp.CurrentLeaderEpoch, version >= 4); code != 0 {
		sp.ErrorCode = code
		return
	}
	cp := *rp
	cp.CurrentLeaderEpoch = -1 // checked
	b.listOffset(sp, p, &cp, version, committed)
	if sp.ErrorCode == 0 && sp.Offset >= 0 {
		sp.LeaderEpoch = b.nodes.epochAt(partKey{id, rp.Partition}, sp.Offset)
	}
}

// offsetForLeaderEpochNode answers one OffsetForLeaderEpoch partition in
// a simulated cluster from the partition's epoch history.
func (b *Broker) offsetForLeaderEpochNode(c *conn, sp *kmsg.OffsetForLeaderEpochResponseTopicPartition, id topic.ID, p *partition.Partition, rp *kmsg.OffsetForLeaderEpochRequestTopicPartition, version int16) {
	if code, _, _ := c.leaderState(id, rp.Partition, rp.CurrentLeaderEpoch, version >= 2); code != 0 {
		sp.ErrorCode = code
		return
	}
	sp.LeaderEpoch, sp.EndOffset = b.nodes.endOffsetFor(partKey{id, rp.Partition}, rp.LeaderEpoch, p.LogStartOffset(), p.LogEndOffset())
}

// coordinatorKeys is what a request must reach
// a coordinator for: the coordinator type and the groups or transactional
// ids it names (none: any node answers it).
func coordinatorKeys(req kmsg.Request) (int8, []string) {
	switch r := req.(type) {
	case *kmsg.JoinGroupRequest:
		return coordinatorGroup, []string{r.Group}
	case *kmsg.SyncGroupRequest:
		return coordinatorGroup, []string{r.Group}
	case *kmsg.HeartbeatRequest:
		return coordinatorGroup, []string{r.Group}
	case *kmsg.LeaveGroupRequest:
		return coordinatorGroup, []string{r.Group}
	case *kmsg.ConsumerGroupHeartbeatRequest:
		return coordinatorGroup, []string{r.Group}
	case *kmsg.OffsetCommitRequest:
		return coordinatorGroup, []string{r.Group}
	case *kmsg.TxnOffsetCommitRequest:
		return coordinatorGroup, []string{r.Group}
	case *kmsg.DescribeGroupsRequest:
		return coordinatorGroup, r.Groups
	case *kmsg.OffsetFetchRequest:
		if r.Version < 8 {
			return coordinatorGroup, []string{r.Group}
		}
		keys := make([]string, len(r.Groups))
		for i := range r.Groups {
			keys[i] = r.Groups[i].Group
		}
		return coordinatorGroup, keys
	case *kmsg.InitProducerIDRequest:
		if r.TransactionalID == nil {
			return 0, nil // idempotent producers ask any node
		}
		return coordinatorTransaction, []string{*r.TransactionalID}
	case *kmsg.AddPartitionsToTxnRequest:
		if r.Version < 4 {
			return coordinatorTransaction, []string{r.TransactionalID}
		}
		keys := make([]string, len(r.Transactions))
		for i := range r.Transactions {
			keys[i] = r.Transactions[i].TransactionalID
		}
		return coordinatorTransaction, keys
	case *kmsg.AddOffsetsToTxnRequest:
		return coordinatorTransaction, []string{r.TransactionalID}
	case *kmsg.EndTxnRequest:
		return coordinatorTransaction, []string{r.TransactionalID}
	}
	return 0, nil
}

// notCoordinator is the NOT_COORDINATOR answer to a coordinator request
// that reached a node coordinating none of what it names, or nil when
// the node coordinates any of it. A request naming several groups or
// transactions (DescribeGroups, OffsetFetch v8+, AddPartitionsToTxn v4+)
// is refused only when none is this node's: clients send each key to
// its coordinator, so a mix does not happen in practice, and answering
// it whole is the lenient choice.
func (c *conn) notCoordinator(req kmsg.Request) kmsg.Response {
	kind, keys := coordinatorKeys(req)
	if len(keys) == 0 {
		return nil
	}
	self := c.b.nodes.base + int32(c.l.node)
	for _, k := range keys {
		if c.b.nodes.coordinator(kind, k) == self {
			return nil
		}
	}
	if r, ok := req.(*kmsg.TxnOffsetCommitRequest); ok {
		resp := r.ResponseKind().(*kmsg.TxnOffsetCommitResponse)
		for _, t := range r.Topics {
			rt := kmsg.NewTxnOffsetCommitResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewTxnOffsetCommitResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p.Partition, kerr.NotCoordinator.Code
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp
	}
	return injectedResponse(req, &fault.Decision{Error: kerr.NotCoordinator.Code})
}
