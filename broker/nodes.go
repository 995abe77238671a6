package broker

// A simulated cluster on one store (kbroker.nodes, --nodes N): N node ids
// from node.id up, each with its own port on every configured listener,
// partition leaders and group and transaction coordinators spread over
// them. A request reaching a node that does not lead the partition or
// coordinate the group answers NOT_LEADER_OR_FOLLOWER or NOT_COORDINATOR
// as Kafka does, and test controls move leaders (bumping the leader
// epoch), move coordinators, and stop and start nodes as in a failover.
//
// It is a facility for testing clients, not replication: every node
// serves the one store, so a "failover" loses nothing and a stopped
// node's data stays readable through the others.
//
// Replicas: every partition lists all N nodes as replicas, the leader
// first, and the live ones as its ISR (stopped ones as offline replicas),
// as a topic with replication factor N on a real cluster. Clients then
// see what they see there when a leader moves: a new leader that was
// already a replica and in the ISR, not a reassignment. (A one-replica
// layout would make every move look like a reassignment onto a node
// that did not hold the partition.)
//
// With one node (the default) nothing here runs: Broker.nodes is nil and
// each check is one nil test.

import (
	"errors"
	"fmt"
	"hash/fnv"
	"net"
	"slices"
	"strconv"
	"sync"

	"github.com/kbroker/kbroker/partition"
	"github.com/kbroker/kbroker/topic"
)

// maxNodes bounds kbroker.nodes: each node binds a port per listener.
const maxNodes = 64

// Coordinator types of FindCoordinator, for MoveCoordinator.
const (
	// GroupCoordinator is the coordinator type of consumer groups.
	GroupCoordinator int8 = coordinatorGroup
	// TransactionCoordinator is the coordinator type of transactional ids.
	TransactionCoordinator int8 = coordinatorTransaction
)

// ErrNotSimulated is returned by the node controls of a broker that runs
// one node (kbroker.nodes 1).
var ErrNotSimulated = errors.New("broker: not a simulated cluster (kbroker.nodes is 1)")

// partKey names a partition by topic id, so that a topic deleted and
// made again under the same name starts afresh.
type partKey struct {
	id        topic.ID
	partition int32
}

// coordKey names what a coordinator coordinates.
type coordKey struct {
	kind int8 // coordinatorGroup or coordinatorTransaction
	key  string
}

// epochStart is an entry of a partition's leader-epoch history: the
// epoch and the first offset written under it (Kafka's EpochEntry).
type epochStart struct {
	epoch int32
	start int64
}

// leadership is a partition's leader once pinned or moved.
type leadership struct {
	node  int // index, 0..n-1
	epoch int32
	// epochs is the history after epoch 0, which starts at the log start
	// offset; ascending in epoch and start.
	epochs []epochStart
}

// simCluster is the state of a simulated cluster. It outlives the broker
// (InProcess restarts pass it on with WithNodes), so that leaders, epochs
// and stopped nodes survive a restart in place as on a real cluster.
type simCluster struct {
	n    int
	base int32 // node id of index 0

	mu sync.RWMutex
	// live says which nodes serve; at least one always does.
	live []bool
	// addrs are the bound addresses, [node][listener], once first bound,
	// so that a started node and a restarted broker bind the same ports.
	addrs [][]string
	// leaders are the pinned or moved partitions; others are led by
	// their spread node (defaultLeader) at epoch 0.
	leaders map[partKey]*leadership
	// coords are moved coordinators; others are at their spread node.
	coords map[coordKey]int
}

func newSimCluster(n int, base int32) *simCluster {
	s := &simCluster{n: n, base: base, live: make([]bool, n),
		leaders: map[partKey]*leadership{}, coords: map[coordKey]int{}}
	for i := range s.live {
		s.live[i] = true
	}
	return s
}

// WithNodes makes the broker continue the simulated cluster state of an
// earlier broker (InProcess.Restart passes it on), when both have the
// same kbroker.nodes.
func WithNodes(from *Broker) Option {
	return func(b *Broker) {
		if from != nil && from.nodes != nil && from.nodes.n == max(b.cfg.Nodes, 1) {
			b.nodes = from.nodes
		}
	}
}

// spreadLocked is the live node a hash lands on: h modulo n, or the next
// live node after it.
func (s *simCluster) spreadLocked(h uint32) int {
	i := int(h % uint32(s.n))
	for k := range s.n {
		if j := (i + k) % s.n; s.live[j] {
			return j
		}
	}
	return i
}

func hashBytes(b []byte) uint32 {
	h := fnv.New32a()
	h.Write(b)
	return h.Sum32()
}

func hashString(s string) uint32 {
	h := fnv.New32a()
	h.Write([]byte(s))
	return h.Sum32()
}

// leaderLocked is a partition's leader (node index) and leader epoch:
// pinned, or round-robin over the nodes from a node chosen by the topic
// id, as Kafka spreads a new topic's leaders.
func (s *simCluster) leaderLocked(k partKey) (int, int32) {
	if l, ok := s.leaders[k]; ok {
		return l.node, l.epoch
	}
	return s.spreadLocked(hashBytes(k.id[:]) + uint32(k.partition)), 0
}

// coordinatorLocked is the node index coordinating k.
func (s *simCluster) coordinatorLocked(k coordKey) int {
	if i, ok := s.coords[k]; ok && s.live[i] {
		return i
	}
	return s.spreadLocked(hashString(k.key))
}

// leader is the node id leading a partition and its leader epoch.
func (s *simCluster) leader(id topic.ID, p int32) (int32, int32) {
	s.mu.RLock()
	i, e := s.leaderLocked(partKey{id, p})
	s.mu.RUnlock()
	return s.base + int32(i), e
}

// coordinator is the node id coordinating a group or transactional id.
func (s *simCluster) coordinator(kind int8, key string) int32 {
	s.mu.RLock()
	i := s.coordinatorLocked(coordKey{kind, key})
	s.mu.RUnlock()
	return s.base + int32(i)
}

// liveIDs are the node ids serving, ascending.
func (s *simCluster) liveIDs() []int32 {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]int32, 0, s.n)
	for i, up := range s.live {
		if up {
			out = append(out, s.base+int32(i))
		}
	}
	return out
}

// replicas is a partition's replica list (every node, leader first), its
// ISR (the live ones, leader first) and its offline replicas.
func (s *simCluster) replicas(leader int32) (replicas, isr, offline []int32) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	replicas = make([]int32, 0, s.n)
	isr = make([]int32, 0, s.n)
	offline = []int32{}
	replicas, isr = append(replicas, leader), append(isr, leader)
	for i, up := range s.live {
		id := s.base + int32(i)
		switch {
		case id == leader:
		case up:
			replicas, isr = append(replicas, id), append(isr, id)
		default:
			replicas, offline = append(replicas, id), append(offline, id)
		}
	}
	return replicas, isr, offline
}

// endOffsetFor answers OffsetForLeaderEpoch for a partition as Kafka's
// LeaderEpochFileCache.endOffsetFor does, the history being epoch 0 from
// the log start offset and then each epoch a move started.
func (s *simCluster) endOffsetFor(k partKey, requested int32, logStart, logEnd int64) (int32, int64) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	hist := []epochStart{{0, logStart}}
	if l, ok := s.leaders[k]; ok {
		hist = append(hist, l.epochs...)
	}
	// Entries below the log start describe nothing stored any more, but
	// an epoch's start is its own, as in Kafka's cache after truncation
	// from the start: only the first start is raised.
	if hist[0].start < logStart {
		hist[0].start = logStart
	}
	switch {
	case requested == -1:
		return -1, -1
	case requested == hist[len(hist)-1].epoch:
		return requested, logEnd
	}
	higher := -1
	for i, e := range hist {
		if e.epoch > requested {
			higher = i
			break
		}
	}
	switch {
	case higher == -1:
		return -1, -1 // newer than any epoch known
	case higher == 0:
		return requested, hist[0].start // older than any epoch known
	}
	return hist[higher-1].epoch, hist[higher].start
}

// bindAddr is where node i binds listener spec: its pinned address, the
// configured one for node 0, else the configured host with port 0 kept
// (any free port) or the configured port plus i.
func (s *simCluster) bindAddr(i, j int, spec listenerSpec) string {
	if s.addrs != nil && s.addrs[i][j] != "" {
		return s.addrs[i][j]
	}
	return offsetPort(spec.addr, i)
}

// offsetPort is addr with its port moved up by i (port 0 stays 0).
func offsetPort(addr string, i int) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil || i == 0 {
		return addr
	}
	p, err := strconv.Atoi(port)
	if err != nil || p == 0 {
		return addr
	}
	return net.JoinHostPort(host, strconv.Itoa(p+i))
}

// nodeSpecs are the listener specs of node i: the configured ones, each
// moved to the node's port, advertised ports moved likewise.
func (s *simCluster) nodeSpecs(i int, specs []listenerSpec) []listenerSpec {
	out := slices.Clone(specs)
	for j := range out {
		out[j].addr = s.bindAddr(i, j, specs[j])
		if out[j].adv != "" {
			out[j].adv = offsetPort(out[j].adv, i)
		}
	}
	return out
}

// nodeIndex checks a node id of the simulated cluster.
func (s *simCluster) nodeIndex(id int32) (int, error) {
	i := int(id - s.base)
	if id < s.base || i >= s.n {
		return 0, fmt.Errorf("broker: no node %d (nodes are %d to %d)", id, s.base, s.base+int32(s.n)-1)
	}
	return i, nil
}

// pinLocked fixes every existing partition's leader where it is, so that
// a change of the live nodes moves only the partitions it must (new ones
// spread over the nodes live when they are first seen).
func (s *simCluster) pinLocked(b *Broker) {
	for _, t := range b.topics.List() {
		for p := range t.Partitions {
			k := partKey{t.ID, p}
			if _, ok := s.leaders[k]; !ok {
				i, _ := s.leaderLocked(k)
				s.leaders[k] = &leadership{node: i}
			}
		}
	}
}

// electLocked makes node i the leader of k with the next epoch, which
// the partition stamps into its batches from now on.
func (s *simCluster) electLocked(b *Broker, k partKey, i int) *leadership {
	l, ok := s.leaders[k]
	if !ok {
		n, _ := s.leaderLocked(k)
		l = &leadership{node: n}
		s.leaders[k] = l
	}
	l.node = i
	l.epoch++
	if p := b.store.Partition(partition.TopicID(k.id), k.partition); p != nil {
		start := p.SetLeaderEpoch(l.epoch)
		// Kafka's assign drops the entries a new one starts at or
		// before: epochs under which nothing was written.
		for len(l.epochs) > 0 && l.epochs[len(l.epochs)-1].start >= start {
			l.epochs = l.epochs[:len(l.epochs)-1]
		}
		l.epochs = append(l.epochs, epochStart{l.epoch, start})
	}
	return l
}

// nextLiveLocked is the first live node after i, or i if no other is.
func (s *simCluster) nextLiveLocked(i int) int {
	for k := 1; k < s.n; k++ {
		if j := (i + k) % s.n; s.live[j] {
			return j
		}
	}
	return i
}

// restoreEpochs gives the partitions of a newly opened store the leader
// epochs the simulated cluster has moved them to, for a broker that
// continues an earlier one's state (WithNodes).
func (s *simCluster) restoreEpochs(b *Broker) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	for k, l := range s.leaders {
		if l.epoch == 0 {
			continue
		}
		if p := b.store.Partition(partition.TopicID(k.id), k.partition); p != nil {
			p.SetLeaderEpoch(l.epoch)
		}
	}
}

// controllerID is the controller id Metadata and DescribeCluster report:
// this broker, or the first live node of a simulated cluster (a KRaft
// cluster reports a random live broker, which clients only use to send
// admin requests that any node here answers).
func (b *Broker) controllerID() int32 {
	if b.nodes == nil {
		return b.cfg.NodeID
	}
	return b.nodes.liveIDs()[0]
}

// epochAt is the leader epoch under which offset was written: that of
// the last history entry starting at or before it (Kafka's
// LeaderEpochFileCache.epochForOffset), 0 before any move.
func (s *simCluster) epochAt(k partKey, offset int64) int32 {
	s.mu.RLock()
	defer s.mu.RUnlock()
	epoch := int32(0)
	if l, ok := s.leaders[k]; ok {
		for _, e := range l.epochs {
			if e.start > offset {
				break
			}
			epoch = e.epoch
		}
	}
	return epoch
}

// isLive reports whether node index i serves.
func (s *simCluster) isLive(i int) bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.live[i]
}
