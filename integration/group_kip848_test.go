package integration

// Consumer groups with the consumer rebalance protocol of KIP-848
// (ConsumerGroupHeartbeat): franz-go members with kgo.ServerSideBalancer,
// against the binary and in-process. The broker assigns the partitions;
// members revoke before others get them, and commit in
// OnPartitionsRevoked, so every record is consumed exactly once; the
// group and its committed offsets survive a restart (members that stay
// through one: group_persist_test.go).

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// kip848Props make the broker tell members to heartbeat every 250 ms
// (Kafka's default and minimum is 5 s), so that a reconciliation, which
// takes a few heartbeats, takes a second.
var kip848Props = map[string]string{
	"group.consumer.min.heartbeat.interval.ms": "100",
	"group.consumer.heartbeat.interval.ms":     "250",
}

// kip848Kgo are the options that make a kgo member use the consumer
// protocol with the server's uniform assignor.
func kip848Kgo() []kgo.Opt {
	return []kgo.Opt{kgo.ServerSideBalancer(), kgo.Balancers(kgo.CooperativeStickyBalancer())}
}

// TestGroupKIP848: runKIP848Scenario with franz-go members
// (kgo.ServerSideBalancer, the broker's uniform assignor), committing
// after each poll and in OnPartitionsRevoked.
func TestGroupKIP848(t *testing.T) {
	t.Parallel()
	eachBroker(t, groupOpts(kip848Props), func(t *testing.T, b testBroker) {
		runKIP848Scenario(t, b, func(t *testing.T, addr, group, topic, name string, tally *groupTally) groupMember {
			return startKgoMember(t, addr, group, topic, name, tally, kip848Kgo()...)
		})
	})
}

// runKIP848Scenario is the consumer-protocol group test: while a producer
// writes to 4 partitions, member a (started by start) gets all of them,
// member b joins and they split 2/2 (as the members see it and as
// ConsumerGroupDescribe shows it), a leaves and b takes all 4. Every
// record is consumed exactly once and the committed offsets reach the end
// offsets; ListGroups shows a consumer group. The broker then restarts:
// the committed offsets are still there, ListGroups still shows the (now
// empty) consumer group, and a new member c resumes exactly after them.
func runKIP848Scenario(t *testing.T, b testBroker, start func(t *testing.T, addr, group, topic, name string, tally *groupTally) groupMember) {
	t.Helper()
	const partitions = 4
	addr := b.Addr()
	topic, group := topicName(t), groupName(t)
	adm := newAdmin(t, addr)
	createGroupTopic(t, adm, topic, partitions)
	prod := startGroupProducer(t, addr, topic, partitions)
	tally := newGroupTally()
	describe := func(ms map[string]groupMember) func() string {
		return func() string {
			var sb strings.Builder
			for _, name := range slices.Sorted(maps.Keys(ms)) {
				fmt.Fprintf(&sb, "%s has %v; ", name, ms[name].partitions(t))
			}
			return sb.String() + tally.summary()
		}
	}

	a := start(t, addr, group, topic, "a", tally)
	awaitGroup(t, "member a to get every partition and consume", func() bool {
		return len(a.partitions(t)) == partitions && tally.count("a") >= 20
	}, describe(map[string]groupMember{"a": a}))
	checkConsumerGroupListed(t, adm, group)

	m := start(t, addr, group, topic, "b", tally)
	both := map[string]groupMember{"a": a, "b": m}
	awaitGroup(t, "the partitions to split between a and b", func() bool {
		return balancedSplit(partitions, a.partitions(t), m.partitions(t))
	}, describe(both))
	fromA, fromB := tally.count("a"), tally.count("b")
	awaitGroup(t, "both members to consume", func() bool {
		return tally.count("a") >= fromA+20 && tally.count("b") >= fromB+20
	}, describe(both))
	awaitConsumerGroupSplit(t, adm, group, topic, partitions, 2)

	a.close(t)
	awaitGroup(t, "member b to get every partition after a left", func() bool {
		return len(m.partitions(t)) == partitions
	}, describe(map[string]groupMember{"b": m}))
	fromB = tally.count("b")
	awaitGroup(t, "member b to consume alone", func() bool {
		return tally.count("b") >= fromB+20
	}, describe(map[string]groupMember{"b": m}))

	prod.stop(t)
	ends := endOffsets(t, adm, topic)
	tally.awaitAll(t, ends)
	awaitCommitted(t, adm, group, topic, ends)
	m.close(t)
	tally.check(t, ends, true)
	if offsetsSum(ends) != prod.n {
		t.Errorf("end offsets %v add up to %d, %d records were produced", ends, offsetsSum(ends), prod.n)
	}

	// The empty group and its offsets come back with the restart: a new
	// member resumes after them.
	b.Restart(t)
	addr = b.Addr()
	adm = newAdmin(t, addr)
	checkCommitted(t, adm, group, topic, ends)
	checkConsumerGroupListed(t, adm, group)
	produceGroupRecords(t, addr, topic, partitions, 100, "after-restart")
	ends = endOffsets(t, adm, topic)
	c := start(t, addr, group, topic, "c", tally)
	tally.awaitAll(t, ends)
	awaitCommitted(t, adm, group, topic, ends)
	checkConsumerGroupListed(t, adm, group)
	c.close(t)
	tally.check(t, ends, true)
	t.Logf("%s", tally.summary())
}

// checkConsumerGroupListed fails unless ListGroups shows group as a
// consumer group (KIP-848), not a classic one.
func checkConsumerGroupListed(t *testing.T, adm *kadm.Client, group string) {
	t.Helper()
	ls, err := adm.ListGroups(testCtx(t))
	if err != nil {
		t.Fatalf("ListGroups: %v", err)
	}
	if g, ok := ls[group]; !ok || g.GroupType != "consumer" || g.ProtocolType != "consumer" {
		t.Fatalf("ListGroups: %s is %+v, want a consumer group", group, g)
	}
}

// awaitConsumerGroupSplit waits until ConsumerGroupDescribe shows group
// Stable with members members (of the consumer protocol) whose
// assignments split the n partitions of topic.
func awaitConsumerGroupSplit(t *testing.T, adm *kadm.Client, group, topic string, n int32, members int) {
	t.Helper()
	var got kadm.DescribedConsumerGroup
	awaitGroup(t, fmt.Sprintf("ConsumerGroupDescribe to show %d partitions split between %d members of %s", n, members, group), func() bool {
		ds, err := adm.DescribeConsumerGroups(testCtx(t), group)
		if err != nil {
			t.Fatalf("DescribeConsumerGroups: %v", err)
		}
		got = ds[group]
		if got.Err != nil {
			t.Fatalf("DescribeConsumerGroups %s: %v", group, got.Err)
		}
		if got.State != "Stable" || len(got.Members) != members || got.AssignorName != "uniform" {
			return false
		}
		as := make([][]int32, len(got.Members))
		for i, m := range got.Members {
			if m.MemberType != 1 {
				t.Fatalf("member %s has type %d, want 1 (consumer protocol)", m.MemberID, m.MemberType)
			}
			as[i] = slices.Sorted(maps.Keys(m.Assignment[topic]))
		}
		return balancedSplit(n, as...)
	}, func() string { return fmt.Sprintf("%+v", got) })
}
