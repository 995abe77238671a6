package broker

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/partition"
)

// TestNodesFetchSessionSkips: in a simulated cluster an incremental
// fetch skips idle session partitions too, and a leader move counts as a
// change: a skipping session answers, fetch after fetch, exactly as one
// that reads every partition, the partitions that moved away with
// NOT_LEADER_OR_FOLLOWER and the new leader, those that moved back with
// their data, while records arrive and log starts move.
func TestNodesFetchSessionSkips(t *testing.T) {
	t.Parallel()
	const parts = 12
	srv := newTestServer(t, func(c *Config) { c.Nodes = 3 })
	if !srv.sessionSkips(&conn{b: srv.Broker}) {
		t.Fatal("a simulated cluster's incremental fetches read every partition")
	}
	tp, err := srv.Topics().Create("m", parts, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	cl := newClient(t, srv)
	const node = 0 // the sessions' node
	rng := rand.New(rand.NewPCG(3, 4))
	send := func(req *kmsg.FetchRequest) *kmsg.FetchResponse {
		return nodeRequest[*kmsg.FetchResponse](t, cl, node, req)
	}
	skipping, reading := openSessionTwin(t, srv, tp, false, send), openSessionTwin(t, srv, tp, true, send)
	movedAway := 0
	for step := range 300 {
		p := int32(rng.IntN(parts))
		switch r := rng.IntN(10); {
		case r < 4:
			if _, err := srv.Store().Partition(partition.TopicID(tp.ID), p).Append(benchBatch(1+rng.IntN(3), 10), 9, 0); err != nil {
				t.Fatal(err)
			}
		case r < 5:
			if _, err := srv.Store().Partition(partition.TopicID(tp.ID), p).DeleteRecords(-1); err != nil {
				t.Fatal(err)
			}
		case r < 7:
			from, _ := srv.nodes.leader(tp.ID, p)
			to, _, err := srv.MovePartitionLeader("m", p, int32(rng.IntN(3)))
			if err != nil {
				t.Fatal(err)
			}
			if from == node && to != node {
				movedAway++
			}
		}
		got, want := skipping.fetch(t), reading.fetch(t)
		if !slices.Equal(got, want) {
			t.Fatalf("step %d: skipping session answered\n%v\nreading session answered\n%v", step, got, want)
		}
	}
	if movedAway == 0 {
		t.Fatal("no partition moved away from the sessions' node")
	}
}

// TestNodesParkedSessionFetchSeesLeaderMove: a parked incremental fetch
// on the leader wakes when its partition's leader moves away, and
// answers it NOT_LEADER_OR_FOLLOWER with the new leader.
func TestNodesParkedSessionFetchSeesLeaderMove(t *testing.T) {
	t.Parallel()
	srv := newTestServer(t, func(c *Config) { c.Nodes = 3 })
	tp, err := srv.Topics().Create("w", 1, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	leader, _ := srv.nodes.leader(tp.ID, 0)
	cl := newClient(t, srv)
	resp := nodeRequest[*kmsg.FetchResponse](t, cl, leader, sessionFetch(srv, "w", 1, 0, 0, 0))
	if resp.ErrorCode != 0 || resp.SessionID == 0 || partitionsIn(resp) != 1 {
		t.Fatalf("open session: error %d, %d partitions", resp.ErrorCode, partitionsIn(resp))
	}
	req := sessionFetch(srv, "w", 0, resp.SessionID, 1)
	req.MaxWaitMillis, req.MinBytes = 30_000, 1
	done := make(chan *kmsg.FetchResponse, 1)
	go func() {
		r, err := cl.Broker(int(leader)).Request(testCtx(t), req)
		if err != nil {
			t.Error(err)
			close(done)
			return
		}
		done <- r.(*kmsg.FetchResponse)
	}()
	to, epoch, err := srv.MovePartitionLeader("w", 0, otherNode(leader))
	if err != nil {
		t.Fatal(err)
	}
	resp = <-done
	if resp == nil {
		t.FailNow()
	}
	if partitionsIn(resp) != 1 {
		t.Fatalf("parked fetch answered %d partitions, want the moved one", partitionsIn(resp))
	}
	rp := resp.Topics[0].Partitions[0]
	if rp.ErrorCode != kerr.NotLeaderForPartition.Code || rp.CurrentLeader.LeaderID != to || rp.CurrentLeader.LeaderEpoch != epoch {
		t.Fatalf("moved partition: error %d, leader %d epoch %d; want %d, %d, %d", rp.ErrorCode,
			rp.CurrentLeader.LeaderID, rp.CurrentLeader.LeaderEpoch, kerr.NotLeaderForPartition.Code, to, epoch)
	}
}
