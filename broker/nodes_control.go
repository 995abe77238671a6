package broker

// The simulated cluster's listeners and test controls (nodes.go): move a
// partition's leader, move a coordinator, stop and start a node.

import (
	"fmt"
	"net"
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"
	"go.uber.org/zap"

	"github.com/kbroker/kbroker/topic"
)

// startNodes binds the listeners of every node (Start with kbroker.nodes
// above 1) and serves those of the live ones. A stopped node (of an
// earlier broker whose state this one continues) binds nothing until
// StartNode.
func (b *Broker) startNodes(specs []listenerSpec) error {
	s := b.nodes
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.addrs != nil && len(s.addrs[0]) != len(specs) {
		return fmt.Errorf("broker: %d listeners, but the simulated cluster had %d", len(specs), len(s.addrs[0]))
	}
	all := make([][]*listener, s.n)
	fail := func(err error) error {
		for _, ls := range all {
			for _, l := range ls {
				if l.ln != nil {
					l.ln.Close()
				}
			}
		}
		return err
	}
	for i := range s.n {
		for j, spec := range s.nodeSpecs(i, specs) {
			if i == 0 {
				spec.addr = specs[j].addr // the pinned listeners of a restart
			}
			var l *listener
			if s.live[i] {
				var err error
				if l, err = b.bindListener(spec); err != nil {
					return fail(fmt.Errorf("%w (node %d)", err, s.base+int32(i)))
				}
			} else {
				l = &listener{listenerSpec: spec, bound: spec.addr, sec: b.security.listeners[spec.name]}
				l.tlsConfig = l.sec.tlsConfig
				l.advHost, l.advPort = spec.advertised(spec.addr)
			}
			l.node, l.index = i, j
			all[i] = append(all[i], l)
		}
	}
	if s.addrs == nil {
		s.addrs = make([][]string, s.n)
		for i, ls := range all {
			for _, l := range ls {
				s.addrs[i] = append(s.addrs[i], l.bound)
			}
		}
	}
	b.nodeListeners = all
	b.listeners = all[0]
	for _, ls := range all {
		for _, l := range ls {
			if l.ln != nil {
				b.serveListener(l)
			}
		}
	}
	b.started.Store(true)
	return nil
}

// closeNodeListeners closes every node's listeners (beginStop).
func (b *Broker) closeNodeListeners() {
	b.nodes.mu.Lock()
	defer b.nodes.mu.Unlock()
	for _, ls := range b.nodeListeners {
		for _, l := range ls {
			if l.ln != nil {
				l.ln.Close()
				l.ln = nil
			}
		}
	}
}

// endpoint is where clients of listener index j reach node id.
func (b *Broker) endpoint(id int32, j int) (string, int32) {
	l := b.nodeListeners[id-b.nodes.base][j]
	return l.advHost, l.advPort
}

// NodeInfo describes a node of the simulated cluster.
type NodeInfo struct {
	// ID is the node id.
	ID int32 `json:"id"`
	// Live says whether the node serves (StopNode and StartNode).
	Live bool `json:"live"`
	// Listeners are its listeners, in configuration order, each with the
	// node's own port.
	Listeners []ListenerInfo `json:"listeners"`
}

// Nodes describes the nodes: those of the simulated cluster
// (kbroker.nodes), or the one node.
func (b *Broker) Nodes() []NodeInfo {
	if b.nodes == nil {
		return []NodeInfo{{ID: b.cfg.NodeID, Live: true, Listeners: b.Listeners()}}
	}
	s := b.nodes
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]NodeInfo, s.n)
	for i, ls := range b.nodeListeners {
		out[i] = NodeInfo{ID: s.base + int32(i), Live: s.live[i]}
		for _, l := range ls {
			out[i].Listeners = append(out[i].Listeners, ListenerInfo{Name: l.name, Protocol: l.protocol, Addr: l.bound,
				Advertised: net.JoinHostPort(l.advHost, strconv.Itoa(int(l.advPort)))})
		}
	}
	return out
}

// PartitionLeader is the node id leading a partition and its leader
// epoch.
func (b *Broker) PartitionLeader(topicName string, partition int32) (leader, epoch int32, err error) {
	t, ok := b.topics.Get(topicName)
	if !ok || partition < 0 || partition >= t.Partitions {
		return -1, -1, fmt.Errorf("broker: no partition %s-%d", topicName, partition)
	}
	if b.nodes == nil {
		return b.cfg.NodeID, 0, nil
	}
	leader, epoch = b.nodes.leader(t.ID, partition)
	return leader, epoch, nil
}

// MovePartitionLeader makes node the leader of a partition, as a leader
// election does: the leader epoch goes up by one, the old leader answers
// NOT_LEADER_OR_FOLLOWER, and a fetch or list-offsets with the old epoch
// FENCED_LEADER_EPOCH. node -1 picks the next live node after the
// current leader. It returns the new leader and epoch.
func (b *Broker) MovePartitionLeader(topicName string, partition, node int32) (leader, epoch int32, err error) {
	s := b.nodes
	if s == nil {
		return -1, -1, ErrNotSimulated
	}
	t, ok := b.topics.Get(topicName)
	if !ok || partition < 0 || partition >= t.Partitions {
		return -1, -1, fmt.Errorf("broker: no partition %s-%d", topicName, partition)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	k := partKey{t.ID, partition}
	cur, _ := s.leaderLocked(k)
	to := s.nextLiveLocked(cur)
	if node != -1 {
		if to, err = s.nodeIndex(node); err != nil {
			return -1, -1, err
		}
		if !s.live[to] {
			return -1, -1, fmt.Errorf("broker: node %d is stopped", node)
		}
	}
	l := s.electLocked(b, k, to)
	if err := s.saveLocked(b.cfg.DataDir); err != nil {
		return -1, -1, err
	}
	b.lg.Info("partition leader moved", zap.String("topic", topicName), zap.Int32("partition", partition),
		zap.Int32("from", s.base+int32(cur)), zap.Int32("to", s.base+int32(to)), zap.Int32("epoch", l.epoch))
	return s.base + int32(to), l.epoch, nil
}

// Coordinator is the node id coordinating a group (GroupCoordinator) or
// transactional id (TransactionCoordinator).
func (b *Broker) Coordinator(kind int8, key string) int32 {
	if b.nodes == nil {
		return b.cfg.NodeID
	}
	return b.nodes.coordinator(kind, key)
}

// MoveCoordinator makes node the coordinator of a group or transactional
// id: the old one answers NOT_COORDINATOR and FindCoordinator the new
// one. The group's or transaction's state moves with it untouched (the
// nodes share one store), as Kafka's new coordinator loads it from the
// log. node -1 picks the next live node. It returns the new coordinator.
func (b *Broker) MoveCoordinator(kind int8, key string, node int32) (int32, error) {
	s := b.nodes
	if s == nil {
		return -1, ErrNotSimulated
	}
	if kind != GroupCoordinator && kind != TransactionCoordinator {
		return -1, fmt.Errorf("broker: unknown coordinator type %d", kind)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	k := coordKey{kind, key}
	to := s.nextLiveLocked(s.coordinatorLocked(k))
	if node != -1 {
		var err error
		if to, err = s.nodeIndex(node); err != nil {
			return -1, err
		}
		if !s.live[to] {
			return -1, fmt.Errorf("broker: node %d is stopped", node)
		}
	}
	s.coords[k] = to
	b.lg.Info("coordinator moved", zap.Int8("type", kind), zap.String("key", key), zap.Int32("to", s.base+int32(to)))
	return s.base + int32(to), nil
}

// StopNode stops a node as a failed broker stops: its listeners close,
// its connections are cut without answers, the partitions it led move
// to the live nodes with a new leader epoch, and its coordinators move
// too. The last live node cannot be stopped. Stopping a stopped node
// does nothing.
func (b *Broker) StopNode(id int32) error {
	s := b.nodes
	if s == nil {
		return ErrNotSimulated
	}
	i, err := s.nodeIndex(id)
	if err != nil {
		return err
	}
	s.mu.Lock()
	if !s.live[i] {
		s.mu.Unlock()
		return nil
	}
	live := 0
	for _, up := range s.live {
		if up {
			live++
		}
	}
	if live == 1 {
		s.mu.Unlock()
		return fmt.Errorf("broker: node %d is the last one serving", id)
	}
	s.pinLocked(b)
	s.live[i] = false
	moved := 0
	for k, l := range s.leaders {
		if l.node == i {
			s.electLocked(b, k, s.spreadLocked(hashBytes(k.id[:])+uint32(k.partition)))
			moved++
		}
	}
	for k, c := range s.coords {
		if c == i {
			delete(s.coords, k) // back to its spread node, a live one
		}
	}
	for _, l := range b.nodeListeners[i] {
		if l.ln != nil {
			l.ln.Close()
			l.ln = nil
		}
	}
	saveErr := s.saveLocked(b.cfg.DataDir)
	s.mu.Unlock()

	b.mu.Lock()
	var conns []*conn
	for c := range b.mu.conns {
		if c.l.node == i {
			conns = append(conns, c)
		}
	}
	b.mu.Unlock()
	for _, c := range conns {
		c.stopReading()
		c.cancel()
		c.nc.Close()
	}
	b.lg.Info("node stopped", zap.Int32("node", id), zap.Int("leaders_moved", moved), zap.Int("connections_cut", len(conns)))
	return saveErr
}

// StartNode starts a stopped node again on the same ports. Leaders stay
// where the stop moved them (a real cluster moves them back only by a
// preferred-leader election: MovePartitionLeader); coordinators whose
// spread node it is come back to it. Starting a live node does nothing.
func (b *Broker) StartNode(id int32) error {
	s := b.nodes
	if s == nil {
		return ErrNotSimulated
	}
	i, err := s.nodeIndex(id)
	if err != nil {
		return err
	}
	b.mu.Lock()
	shutdown := b.mu.shutdown
	b.mu.Unlock()
	if shutdown {
		return ErrNotReady
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.live[i] {
		return nil
	}
	var bound []*listener
	for _, l := range b.nodeListeners[i] {
		ln, err := net.Listen("tcp", l.bound)
		if err != nil {
			for _, l := range bound {
				l.ln.Close()
				l.ln = nil
			}
			return fmt.Errorf("broker: start node %d: listen on %s (%s): %w", id, l.bound, l.name, err)
		}
		l.ln = ln
		bound = append(bound, l)
	}
	s.pinLocked(b)
	s.live[i] = true
	for _, l := range bound {
		b.serveListener(l)
	}
	b.lg.Info("node started", zap.Int32("node", id))
	return s.saveLocked(b.cfg.DataDir)
}

// leaderState checks a request for a partition on c's node as Kafka's
// Partition.getLocalLog does: the request's current leader epoch first
// (when checkEpoch: -1 skips it, older is FENCED_LEADER_EPOCH, newer
// UNKNOWN_LEADER_EPOCH), then leadership (NOT_LEADER_OR_FOLLOWER on any
// node but the leader). It also returns the leader and its epoch, for
// the answer's hints. Only a simulated cluster calls it.
func (c *conn) leaderState(id topic.ID, p, current int32, checkEpoch bool) (code int16, leader, epoch int32) {
	s := c.b.nodes
	leader, epoch = s.leader(id, p)
	if checkEpoch {
		if code = currentLeaderEpochCode(current, epoch); code != 0 {
			return code, leader, epoch
		}
	}
	if leader != s.base+int32(c.l.node) {
		return kerr.NotLeaderForPartition.Code, leader, epoch
	}
	return 0, leader, epoch
}
