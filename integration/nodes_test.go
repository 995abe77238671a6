package integration

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kbroker/kbroker/broker"
)

// clusterBroker is an in-process simulated cluster of three nodes with
// the given seed topics.
func clusterBroker(t *testing.T, seed string) *broker.InProcess {
	t.Helper()
	return controlledBroker(t, func(c *broker.Config) { c.Nodes = 3; c.SeedTopics = seed })
}

// consumeN polls cl until it has n records or ctx ends.
func consumeN(ctx context.Context, t *testing.T, cl *kgo.Client, n int) []*kgo.Record {
	t.Helper()
	var out []*kgo.Record
	for len(out) < n {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consumed %d of %d records: %v", len(out), n, ctx.Err())
		}
		fs.EachError(func(topic string, p int32, err error) {
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Logf("fetch %s-%d: %v (retried)", topic, p, err)
			}
		})
		out = append(out, fs.Records()...)
	}
	return out
}

// checkSequence checks that recs are values v0..v(n-1) at offsets 0..n-1.
func checkSequence(t *testing.T, recs []*kgo.Record, n int) {
	t.Helper()
	if len(recs) != n {
		t.Fatalf("%d records, want %d", len(recs), n)
	}
	for i, r := range recs {
		if r.Offset != int64(i) || string(r.Value) != fmt.Sprintf("v%d", i) {
			t.Fatalf("record %d: offset %d value %q", i, r.Offset, r.Value)
		}
	}
}

// A kgo consumer follows a partition's leader to another node: the old
// leader answers NOT_LEADER_OR_FOLLOWER, the client finds the new one
// (epoch 1) and goes on from where it was, nothing lost or repeated.
func TestNodesKgoConsumerFollowsLeaderMove(t *testing.T) {
	t.Parallel()
	ip := clusterBroker(t, "follow-move")
	ctx := testCtx(t)
	prod := newKgo(t, ip.Addr(), kgo.DefaultProduceTopic("follow-move"))
	produce := func(from, to int) {
		t.Helper()
		for i := from; i < to; i++ {
			if err := prod.ProduceSync(ctx, kgo.StringRecord(fmt.Sprintf("v%d", i))).FirstErr(); err != nil {
				t.Fatalf("produce v%d: %v", i, err)
			}
		}
	}
	produce(0, 10)
	cons := newKgo(t, ip.Addr(), kgo.ConsumeTopics("follow-move"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxWait(200*time.Millisecond), kgo.MetadataMinAge(50*time.Millisecond))
	got := consumeN(ctx, t, cons, 10)
	old, _, _ := ip.PartitionLeader("follow-move", 0)
	to, epoch, err := ip.MovePartitionLeader("follow-move", 0, -1)
	if err != nil || to == old || epoch != 1 {
		t.Fatalf("move from %d: to %d epoch %d: %v", old, to, epoch, err)
	}
	produce(10, 20)
	got = append(got, consumeN(ctx, t, cons, 10)...)
	checkSequence(t, got, 20)
	for _, r := range got[10:] {
		if r.LeaderEpoch != 1 {
			t.Fatalf("record at %d written after the move has leader epoch %d, want 1", r.Offset, r.LeaderEpoch)
		}
	}
}

// A kgo idempotent producer goes on through the stop of the node leading
// its partition: the failover moves the leader, the producer retries
// there, and every record is stored once, in order.
func TestNodesKgoProducerThroughNodeStop(t *testing.T) {
	t.Parallel()
	ip := clusterBroker(t, "through-stop")
	ctx := testCtx(t)
	leader, _, _ := ip.PartitionLeader("through-stop", 0)
	// Seed the client with every node, as a client of a real cluster is,
	// so that the node stopped may be the one it bootstrapped from.
	var seeds []string
	for _, n := range ip.Nodes() {
		seeds = append(seeds, n.Listeners[0].Addr)
	}
	prod := newKgo(t, seeds[0], kgo.SeedBrokers(seeds...), kgo.DefaultProduceTopic("through-stop"),
		kgo.MetadataMinAge(50*time.Millisecond))
	const n = 40
	for i := range n {
		if i == n/2 {
			if err := ip.StopNode(leader); err != nil {
				t.Fatal(err)
			}
		}
		if err := prod.ProduceSync(ctx, kgo.StringRecord(fmt.Sprintf("v%d", i))).FirstErr(); err != nil {
			t.Fatalf("produce v%d: %v", i, err)
		}
	}
	if now, epoch, _ := ip.PartitionLeader("through-stop", 0); now == leader || epoch != 1 {
		t.Fatalf("after stopping node %d the leader is %d at epoch %d", leader, now, epoch)
	}
	if err := ip.StartNode(leader); err != nil {
		t.Fatal(err)
	}
	cons := newKgo(t, seeds[0], kgo.SeedBrokers(seeds...), kgo.ConsumeTopics("through-stop"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(200*time.Millisecond))
	checkSequence(t, consumeN(ctx, t, cons, n), n)
}

// A kgo transaction survives a move of its transaction coordinator in
// the middle: EndTxn at the old one answers NOT_COORDINATOR, the client
// finds the new one and commits there.
func TestNodesKgoTransactionSurvivesCoordinatorMove(t *testing.T) {
	t.Parallel()
	ip := clusterBroker(t, "txn-move")
	ctx := testCtx(t)
	const txnID = "txn-move-producer"
	prod := newKgo(t, ip.Addr(), kgo.DefaultProduceTopic("txn-move"), kgo.TransactionalID(txnID),
		kgo.MetadataMinAge(50*time.Millisecond))
	for round := range 3 {
		if err := prod.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		for i := range 3 {
			if err := prod.ProduceSync(ctx, kgo.StringRecord(fmt.Sprintf("r%d-%d", round, i))).FirstErr(); err != nil {
				t.Fatalf("round %d: produce: %v", round, err)
			}
		}
		before := ip.Coordinator(broker.TransactionCoordinator, txnID)
		after, err := ip.MoveCoordinator(broker.TransactionCoordinator, txnID, -1)
		if err != nil || after == before {
			t.Fatalf("move from %d: to %d: %v", before, after, err)
		}
		if err := prod.EndTransaction(ctx, kgo.TryCommit); err != nil {
			t.Fatalf("round %d: commit after the coordinator moved from %d to %d: %v", round, before, after, err)
		}
	}
	cons := newKgo(t, ip.Addr(), kgo.ConsumeTopics("txn-move"), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(200*time.Millisecond))
	recs := consumeN(ctx, t, cons, 9)
	for i, r := range recs {
		if want := fmt.Sprintf("r%d-%d", i/3, i%3); string(r.Value) != want {
			t.Fatalf("record %d is %q, want %q", i, r.Value, want)
		}
	}
}

// A kgo group consumer survives moves of its group coordinator: its
// heartbeats and commits at the old one answer NOT_COORDINATOR, it finds
// the new one and stays in the group, committing where it is.
func TestNodesKgoGroupSurvivesCoordinatorMove(t *testing.T) {
	t.Parallel()
	ip := clusterBroker(t, "group-move:3")
	ctx := testCtx(t)
	const group = "group-move-g"
	prod := newKgo(t, ip.Addr(), kgo.DefaultProduceTopic("group-move"), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	produce := func(from, to int) {
		t.Helper()
		for i := from; i < to; i++ {
			if err := prod.ProduceSync(ctx, kgo.StringRecord(fmt.Sprintf("v%d", i))).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
	}
	produce(0, 30)
	cons := newKgo(t, ip.Addr(), kgo.ConsumerGroup(group), kgo.ConsumeTopics("group-move"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit(),
		kgo.HeartbeatInterval(100*time.Millisecond), kgo.FetchMaxWait(200*time.Millisecond))
	seen := map[string]bool{}
	take := func(n int) {
		t.Helper()
		for _, r := range consumeN(ctx, t, cons, n) {
			if seen[string(r.Value)] {
				t.Fatalf("%s consumed twice", r.Value)
			}
			seen[string(r.Value)] = true
		}
		if err := cons.CommitUncommittedOffsets(ctx); err != nil {
			t.Fatalf("commit: %v", err)
		}
	}
	take(30)
	before := ip.Coordinator(broker.GroupCoordinator, group)
	if _, err := ip.MoveCoordinator(broker.GroupCoordinator, group, -1); err != nil {
		t.Fatal(err)
	}
	produce(30, 60)
	take(30)
	if now := ip.Coordinator(broker.GroupCoordinator, group); now == before {
		t.Fatalf("coordinator still %d", now)
	}
	adm := newAdmin(t, ip.Addr())
	lags, err := adm.Lag(ctx, group)
	if err != nil {
		t.Fatal(err)
	}
	l := lags[group]
	if l.Error() != nil || l.Lag.Total() != 0 || l.State != "Stable" {
		t.Fatalf("group after the move: state %s lag %d err %v", l.State, l.Lag.Total(), l.Error())
	}
}

// A sarama idempotent producer goes on through a node stop, finding the
// new leader from Metadata after NOT_LEADER_OR_FOLLOWER or a closed
// connection; every record is stored once.
func TestNodesSaramaProducerThroughNodeStop(t *testing.T) {
	t.Parallel()
	ip := clusterBroker(t, "sarama-stop")
	leader, _, _ := ip.PartitionLeader("sarama-stop", 0)
	var seeds []string
	for _, n := range ip.Nodes() {
		seeds = append(seeds, n.Listeners[0].Addr)
	}
	v36 := sarama.V3_6_0_0
	cfg := saramaConfig(&v36, true)
	cfg.Producer.Retry.Max = 10
	prod, err := sarama.NewSyncProducer(seeds, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	const n = 30
	for i := range n {
		if i == n/2 {
			if err := ip.StopNode(leader); err != nil {
				t.Fatal(err)
			}
		}
		_, off, err := prod.SendMessage(&sarama.ProducerMessage{Topic: "sarama-stop", Value: sarama.StringEncoder(fmt.Sprintf("v%d", i))})
		if err != nil {
			t.Fatalf("send v%d: %v", i, err)
		}
		if off != int64(i) {
			t.Fatalf("v%d stored at %d", i, off)
		}
	}
	cons := newKgo(t, ip.Addr(), kgo.SeedBrokers(seeds...), kgo.ConsumeTopics("sarama-stop"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(200*time.Millisecond))
	checkSequence(t, consumeN(testCtx(t), t, cons, n), n)
}
