package broker

import (
	"errors"
	"net"
	"strconv"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap/zaptest"
)

// nodeRequest sends req to node id of the cluster cl knows and returns
// the answer.
func nodeRequest[R kmsg.Response](t *testing.T, cl *kgo.Client, id int32, req kmsg.Request) R {
	t.Helper()
	resp, err := cl.Broker(int(id)).Request(testCtx(t), req)
	if err != nil {
		t.Fatalf("%s to node %d: %v", kmsg.NameForKey(req.Key()), id, err)
	}
	return resp.(R)
}

// otherNode is a node of three that is not id.
func otherNode(id int32) int32 { return (id + 1) % 3 }

// A three-node cluster: every node has its own port, Metadata spreads
// the leaders round-robin with every node a replica, and partition and
// coordinator requests to the wrong node fail as on Kafka.
func TestNodesRouting(t *testing.T) {
	t.Parallel()
	srv := newTestServer(t, func(c *Config) { c.Nodes = 3; c.SeedTopics = "spread:6" })
	nodes := srv.Nodes()
	if len(nodes) != 3 {
		t.Fatalf("%d nodes, want 3", len(nodes))
	}
	ports := map[string]bool{}
	for i, n := range nodes {
		if n.ID != int32(i) || !n.Live || len(n.Listeners) != 1 {
			t.Fatalf("node %d: %+v", i, n)
		}
		_, port, _ := net.SplitHostPort(n.Listeners[0].Addr)
		ports[port] = true
	}
	if len(ports) != 3 {
		t.Fatalf("nodes share ports: %+v", nodes)
	}

	cl := newClient(t, srv)
	meta := nodeRequest[*kmsg.MetadataResponse](t, cl, 0, kmsg.NewPtrMetadataRequest())
	if len(meta.Brokers) != 3 {
		t.Fatalf("metadata lists %d brokers, want 3", len(meta.Brokers))
	}
	for _, b := range meta.Brokers {
		if addr := net.JoinHostPort(b.Host, strconv.Itoa(int(b.Port))); addr != nodes[b.NodeID].Listeners[0].Advertised {
			t.Fatalf("broker %d at %s, want %s", b.NodeID, addr, nodes[b.NodeID].Listeners[0].Advertised)
		}
	}
	led := map[int32]int{}
	leaders := map[int32]int32{}
	for _, mt := range meta.Topics {
		if *mt.Topic != "spread" {
			continue
		}
		for _, p := range mt.Partitions {
			led[p.Leader]++
			leaders[p.Partition] = p.Leader
			if len(p.Replicas) != 3 || p.Replicas[0] != p.Leader || len(p.ISR) != 3 || p.ISR[0] != p.Leader || p.LeaderEpoch != 0 {
				t.Fatalf("partition %d: leader %d replicas %v isr %v epoch %d", p.Partition, p.Leader, p.Replicas, p.ISR, p.LeaderEpoch)
			}
		}
	}
	if len(led) != 3 || led[0] != 2 || led[1] != 2 || led[2] != 2 {
		t.Fatalf("leaders per node %v, want 2 each", led)
	}

	leader := leaders[0]
	wrong := otherNode(leader)
	// Produce to a follower: NOT_LEADER_OR_FOLLOWER with the leader's
	// endpoint (KIP-951).
	prod := kmsg.NewPtrProduceRequest()
	prod.Acks, prod.TimeoutMillis = -1, 5000
	pt := kmsg.NewProduceRequestTopic()
	pt.Topic = "spread"
	pt.TopicID = meta.Topics[topicIndex(meta, "spread")].TopicID
	pp := kmsg.NewProduceRequestTopicPartition()
	pp.Partition = 0
	pp.Records = logDirsBatch("v1")
	pt.Partitions = append(pt.Partitions, pp)
	prod.Topics = append(prod.Topics, pt)
	presp := nodeRequest[*kmsg.ProduceResponse](t, cl, wrong, prod)
	sp := presp.Topics[0].Partitions[0]
	if sp.ErrorCode != kerr.NotLeaderForPartition.Code {
		t.Fatalf("produce to follower: %v", kerr.ErrorForCode(sp.ErrorCode))
	}
	if presp.Version >= 10 {
		if sp.CurrentLeader.LeaderID != leader || len(presp.Brokers) != 1 || presp.Brokers[0].NodeID != leader {
			t.Fatalf("produce hints: leader %+v brokers %+v, want %d", sp.CurrentLeader, presp.Brokers, leader)
		}
	}
	presp = nodeRequest[*kmsg.ProduceResponse](t, cl, leader, prod)
	if code := presp.Topics[0].Partitions[0].ErrorCode; code != 0 {
		t.Fatalf("produce to leader: %v", kerr.ErrorForCode(code))
	}

	var lastFetch kmsg.FetchResponseTopicPartition
	var lastFetchResp *kmsg.FetchResponse
	fetch := func(node, currentEpoch int32) int16 {
		t.Helper()
		req := kmsg.NewPtrFetchRequest()
		req.MaxWaitMillis, req.MaxBytes = 0, 1<<20
		ft := kmsg.NewFetchRequestTopic()
		ft.Topic = "spread"
		ft.TopicID = meta.Topics[topicIndex(meta, "spread")].TopicID
		fp := kmsg.NewFetchRequestTopicPartition()
		fp.Partition, fp.CurrentLeaderEpoch, fp.PartitionMaxBytes = 0, currentEpoch, 1<<20
		ft.Partitions = append(ft.Partitions, fp)
		req.Topics = append(req.Topics, ft)
		resp := nodeRequest[*kmsg.FetchResponse](t, cl, node, req)
		lastFetch, lastFetchResp = resp.Topics[0].Partitions[0], resp
		return lastFetch.ErrorCode
	}
	if code := fetch(wrong, 0); code != kerr.NotLeaderForPartition.Code {
		t.Fatalf("fetch from follower: %v", kerr.ErrorForCode(code))
	}
	if lastFetchResp.Version < 16 {
		t.Fatalf("fetch v%d: the test wants v16 for the KIP-951 hints", lastFetchResp.Version)
	}
	if cur := lastFetch.CurrentLeader; cur.LeaderID != leader || cur.LeaderEpoch != 0 {
		t.Fatalf("fetch hint: current leader %+v, want %d at 0", cur, leader)
	}
	if eps := lastFetchResp.Brokers; len(eps) != 1 || eps[0].NodeID != leader ||
		net.JoinHostPort(eps[0].Host, strconv.Itoa(int(eps[0].Port))) != nodes[leader].Listeners[0].Advertised {
		t.Fatalf("fetch node endpoints %+v, want node %d at %s", eps, leader, nodes[leader].Listeners[0].Advertised)
	}
	if code := fetch(leader, 0); code != 0 {
		t.Fatalf("fetch from leader: %v", kerr.ErrorForCode(code))
	}
	lo := kmsg.NewPtrListOffsetsRequest()
	lt := kmsg.NewListOffsetsRequestTopic()
	lt.Topic = "spread"
	lp := kmsg.NewListOffsetsRequestTopicPartition()
	lp.Partition, lp.Timestamp = 0, -1
	lt.Partitions = append(lt.Partitions, lp)
	lo.Topics = append(lo.Topics, lt)
	if code := nodeRequest[*kmsg.ListOffsetsResponse](t, cl, wrong, lo).Topics[0].Partitions[0].ErrorCode; code != kerr.NotLeaderForPartition.Code {
		t.Fatalf("list offsets at follower: %v", kerr.ErrorForCode(code))
	}

	// The move: a new leader, epoch 1; the old epoch is fenced.
	to, epoch, err := srv.MovePartitionLeader("spread", 0, wrong)
	if err != nil || to != wrong || epoch != 1 {
		t.Fatalf("move: %d %d %v", to, epoch, err)
	}
	if code := fetch(leader, 1); code != kerr.NotLeaderForPartition.Code {
		t.Fatalf("fetch from the old leader: %v", kerr.ErrorForCode(code))
	}
	if code := fetch(wrong, 0); code != kerr.FencedLeaderEpoch.Code {
		t.Fatalf("fetch with the old epoch: %v", kerr.ErrorForCode(code))
	}
	if cur := lastFetch.CurrentLeader; cur.LeaderID != wrong || cur.LeaderEpoch != 1 {
		t.Fatalf("fenced fetch hint: current leader %+v, want %d at 1", cur, wrong)
	}
	if code := fetch(wrong, 2); code != kerr.UnknownLeaderEpoch.Code {
		t.Fatalf("fetch with a future epoch: %v", kerr.ErrorForCode(code))
	}
	if code := fetch(wrong, 1); code != 0 {
		t.Fatalf("fetch from the new leader: %v", kerr.ErrorForCode(code))
	}
	// A batch written now carries epoch 1; OffsetForLeaderEpoch knows
	// epoch 0 ended at offset 1 (one record before the move).
	presp = nodeRequest[*kmsg.ProduceResponse](t, cl, wrong, prod)
	if code := presp.Topics[0].Partitions[0].ErrorCode; code != 0 {
		t.Fatalf("produce to the new leader: %v", kerr.ErrorForCode(code))
	}
	if code := fetch(wrong, 1); code != 0 {
		t.Fatalf("fetch from the new leader: %v", kerr.ErrorForCode(code))
	}
	var epochs []int32
	for raw := lastFetch.RecordBatches; len(raw) > 0; {
		var rb kmsg.RecordBatch
		if err := rb.ReadFrom(raw); err != nil {
			t.Fatal(err)
		}
		epochs = append(epochs, rb.PartitionLeaderEpoch)
		raw = raw[12+rb.Length:]
	}
	if len(epochs) != 2 || epochs[0] != 0 || epochs[1] != 1 {
		t.Fatalf("batch leader epochs %v, want [0 1]", epochs)
	}
	oe := kmsg.NewPtrOffsetForLeaderEpochRequest()
	oe.ReplicaID = -1
	ot := kmsg.NewOffsetForLeaderEpochRequestTopic()
	ot.Topic = "spread"
	for _, e := range []int32{0, 1} {
		op := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
		op.Partition, op.CurrentLeaderEpoch, op.LeaderEpoch = 0, 1, e
		ot.Partitions = append(ot.Partitions, op)
	}
	oe.Topics = append(oe.Topics, ot)
	oresp := nodeRequest[*kmsg.OffsetForLeaderEpochResponse](t, cl, wrong, oe)
	got := oresp.Topics[0].Partitions
	if got[0].ErrorCode != 0 || got[0].LeaderEpoch != 0 || got[0].EndOffset != 1 ||
		got[1].ErrorCode != 0 || got[1].LeaderEpoch != 1 || got[1].EndOffset != 2 {
		t.Fatalf("offsets for leader epochs 0 and 1: %+v", got)
	}
	lp.CurrentLeaderEpoch = 1
	lo.Topics[0].Partitions[0] = lp
	lresp := nodeRequest[*kmsg.ListOffsetsResponse](t, cl, wrong, lo)
	if p := lresp.Topics[0].Partitions[0]; p.ErrorCode != 0 || p.Offset != 2 || p.LeaderEpoch != 1 {
		t.Fatalf("list offsets at the new leader: %+v", p)
	}

	// Coordinators: FindCoordinator names one node; the others refuse.
	fc := kmsg.NewPtrFindCoordinatorRequest()
	fc.CoordinatorKeys = []string{"routing-group"}
	coord := nodeRequest[*kmsg.FindCoordinatorResponse](t, cl, 0, fc).Coordinators[0].NodeID
	if coord != srv.Coordinator(GroupCoordinator, "routing-group") {
		t.Fatalf("FindCoordinator says %d, Coordinator %d", coord, srv.Coordinator(GroupCoordinator, "routing-group"))
	}
	hb := kmsg.NewPtrHeartbeatRequest()
	hb.Group, hb.MemberID, hb.Generation = "routing-group", "m", 1
	if code := nodeRequest[*kmsg.HeartbeatResponse](t, cl, otherNode(coord), hb).ErrorCode; code != kerr.NotCoordinator.Code {
		t.Fatalf("heartbeat to another node: %v", kerr.ErrorForCode(code))
	}
	if code := nodeRequest[*kmsg.HeartbeatResponse](t, cl, coord, hb).ErrorCode; code == kerr.NotCoordinator.Code {
		t.Fatal("heartbeat to the coordinator: NOT_COORDINATOR")
	}
	moved, err := srv.MoveCoordinator(GroupCoordinator, "routing-group", otherNode(coord))
	if err != nil || moved != otherNode(coord) {
		t.Fatalf("move coordinator: %d %v", moved, err)
	}
	if code := nodeRequest[*kmsg.HeartbeatResponse](t, cl, coord, hb).ErrorCode; code != kerr.NotCoordinator.Code {
		t.Fatalf("heartbeat to the old coordinator: %v", kerr.ErrorForCode(code))
	}
}

// Stopping a node closes its port, moves its leaders to live nodes with
// a new epoch and takes it out of Metadata; starting it binds the same
// port again, leaders staying where they went.
func TestNodesStopStart(t *testing.T) {
	t.Parallel()
	srv := newTestServer(t, func(c *Config) { c.Nodes = 3; c.SeedTopics = "failover:3" })
	addr1 := srv.Nodes()[1].Listeners[0].Addr
	var led int32 = -1
	for p := range int32(3) {
		if l, _, _ := srv.PartitionLeader("failover", p); l == 1 {
			led = p
		}
	}
	if led < 0 {
		t.Fatal("node 1 leads no partition of three")
	}
	if err := srv.StopNode(1); err != nil {
		t.Fatal(err)
	}
	if _, err := net.Dial("tcp", addr1); err == nil {
		t.Fatal("a stopped node accepts connections")
	}
	l, epoch, _ := srv.PartitionLeader("failover", led)
	if l == 1 || epoch != 1 {
		t.Fatalf("after the stop partition %d is led by %d at epoch %d", led, l, epoch)
	}
	cl := newClient(t, srv)
	meta := nodeRequest[*kmsg.MetadataResponse](t, cl, 0, kmsg.NewPtrMetadataRequest())
	if len(meta.Brokers) != 2 {
		t.Fatalf("metadata lists %d brokers with one stopped, want 2", len(meta.Brokers))
	}
	for _, p := range meta.Topics[topicIndex(meta, "failover")].Partitions {
		if len(p.OfflineReplicas) != 1 || p.OfflineReplicas[0] != 1 || len(p.ISR) != 2 {
			t.Fatalf("partition %d: isr %v offline %v", p.Partition, p.ISR, p.OfflineReplicas)
		}
	}
	if err := srv.StopNode(0); err != nil {
		t.Fatal(err)
	}
	if err := srv.StopNode(2); err == nil {
		t.Fatal("the last live node stopped")
	}
	if err := srv.StartNode(1); err != nil {
		t.Fatal(err)
	}
	nc, err := net.Dial("tcp", addr1)
	if err != nil {
		t.Fatalf("node 1 restarted but %s refuses: %v", addr1, err)
	}
	nc.Close()
	if l2, e2, _ := srv.PartitionLeader("failover", led); l2 != l || e2 != epoch {
		t.Fatalf("start moved partition %d to %d epoch %d", led, l2, e2)
	}
	if err := srv.StartNode(0); err != nil {
		t.Fatal(err)
	}
	if _, _, err := srv.MovePartitionLeader("nope", 0, -1); err == nil {
		t.Fatal("moved a partition of a topic that does not exist")
	}
	if err := srv.StopNode(7); err == nil {
		t.Fatal("stopped node 7 of 3")
	}
	single := newTestServer(t, nil)
	if err := single.StopNode(0); !errors.Is(err, ErrNotSimulated) {
		t.Fatalf("StopNode on one node: %v", err)
	}
}

func topicIndex(meta *kmsg.MetadataResponse, name string) int {
	for i, mt := range meta.Topics {
		if mt.Topic != nil && *mt.Topic == name {
			return i
		}
	}
	return -1
}

// Leader epochs outlive the process: a new broker on the same data, with
// the same nodes or with one, goes on from the moved leaders and epochs,
// so that clients that saw epoch 2 are not told 0.
func TestNodesEpochsOutliveTheProcess(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	start := func(nodes int) *InProcess {
		t.Helper()
		srv, err := StartInProcess(dir, func(c *Config) { c.Nodes = nodes; c.SeedTopics = "kept:2" }, WithLogger(zaptest.NewLogger(t)))
		if err != nil {
			t.Fatal(err)
		}
		return srv
	}
	srv := start(3)
	if _, _, err := srv.MovePartitionLeader("kept", 1, -1); err != nil {
		t.Fatal(err)
	}
	to, epoch, err := srv.MovePartitionLeader("kept", 1, -1)
	if err != nil || epoch != 2 {
		t.Fatalf("second move: epoch %d, %v", epoch, err)
	}
	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}

	srv = start(3)
	if l, e, _ := srv.PartitionLeader("kept", 1); l != to || e != 2 {
		t.Fatalf("after a new start kept-1 is led by %d at epoch %d, want %d at 2", l, e, to)
	}
	if l, e, _ := srv.PartitionLeader("kept", 0); e != 0 || l < 0 {
		t.Fatalf("kept-0: leader %d epoch %d", l, e)
	}
	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}

	srv = start(1)
	defer srv.Close()
	if l, e, _ := srv.PartitionLeader("kept", 1); l != 0 || e != 2 {
		t.Fatalf("on one node kept-1 is led by %d at epoch %d, want 0 at 2", l, e)
	}
	cl := newClient(t, srv)
	meta := nodeRequest[*kmsg.MetadataResponse](t, cl, 0, kmsg.NewPtrMetadataRequest())
	if len(meta.Brokers) != 1 {
		t.Fatalf("one node lists %d brokers", len(meta.Brokers))
	}
	for _, p := range meta.Topics[topicIndex(meta, "kept")].Partitions {
		if want := map[int32]int32{0: 0, 1: 2}[p.Partition]; p.LeaderEpoch != want || p.Leader != 0 {
			t.Fatalf("partition %d: leader %d epoch %d, want 0 at %d", p.Partition, p.Leader, p.LeaderEpoch, want)
		}
	}
}
