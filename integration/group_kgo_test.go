package integration

// Consumer groups with franz-go (kgo): the eager range balancer, the
// cooperative-sticky balancer and static members, each consuming while a
// producer writes, with commits at every poll and in OnPartitionsRevoked,
// so that every record is consumed exactly once across the group.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// kgoMember is one kgo group member consuming in a goroutine: it polls
// with BlockRebalanceOnPoll, tallies the records, commits them
// (CommitUncommittedOffsets) and allows rebalancing again; its
// OnPartitionsRevoked commits too, as kgo documents for manual commits.
type kgoMember struct {
	name   string
	cl     *kgo.Client
	assign *assignment
	log    *memberLog

	mu         sync.Mutex
	commitErrs []error

	cancel context.CancelFunc
	done   chan struct{}
	closed bool
}

// kgoGroupLogLevel is the level of kgo members' logs: info, debug with
// KBROKER_GROUP_DEBUG.
func kgoGroupLogLevel(t testing.TB) kgo.LogLevel {
	if groupDebug(t) {
		return kgo.LogLevelDebug
	}
	return kgo.LogLevelInfo
}

// groupKgoOpts are the group options of every kgo member of these tests.
func groupKgoOpts(group, topic string) []kgo.Opt {
	return []kgo.Opt{
		kgo.ConsumerGroup(group),
		kgo.ConsumeTopics(topic),
		kgo.DisableAutoCommit(),
		kgo.BlockRebalanceOnPoll(),
		kgo.SessionTimeout(groupSessionTimeout),
		kgo.HeartbeatInterval(groupHeartbeat),
		kgo.RebalanceTimeout(groupRebalanceTimeout),
		kgo.FetchMaxWait(groupFetchWait),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.RetryBackoffFn(func(int) time.Duration { return 100 * time.Millisecond }),
	}
}

// startKgoMember starts member name of group on topic; extra options come
// last (a balancer, an instance id). The test's cleanup closes it.
func startKgoMember(t *testing.T, addr, group, topic, name string, tally *groupTally, extra ...kgo.Opt) *kgoMember {
	t.Helper()
	m := &kgoMember{name: name, assign: newAssignment(), log: newMemberLog(t, "kgo member "+name), done: make(chan struct{})}
	opts := append(groupKgoOpts(group, topic),
		kgo.ClientID(name),
		kgo.WithLogger(kgo.BasicLogger(&m.log.buf, kgoGroupLogLevel(t), nil)),
		kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, a map[string][]int32) {
			m.log.Printf("test: assigned %v", a)
			m.assign.add(a[topic])
		}),
		kgo.OnPartitionsRevoked(func(ctx context.Context, cl *kgo.Client, r map[string][]int32) {
			m.log.Printf("test: revoked %v", r)
			if err := cl.CommitUncommittedOffsets(ctx); err != nil {
				m.commitErr(fmt.Errorf("commit in OnPartitionsRevoked: %w", err))
			}
			m.assign.remove(r[topic], false)
		}),
		kgo.OnPartitionsLost(func(_ context.Context, _ *kgo.Client, l map[string][]int32) {
			m.log.Printf("test: lost %v", l)
			m.assign.remove(l[topic], true)
		}),
	)
	cl := newKgo(t, addr, append(opts, extra...)...)
	m.cl = cl
	ctx, cancel := context.WithCancel(context.Background())
	m.cancel = cancel
	go m.run(ctx, tally)
	t.Cleanup(func() { m.close(t) })
	return m
}

func (m *kgoMember) commitErr(err error) {
	m.log.Printf("test: %v", err)
	m.mu.Lock()
	defer m.mu.Unlock()
	m.commitErrs = append(m.commitErrs, err)
}

func (m *kgoMember) run(ctx context.Context, tally *groupTally) {
	defer close(m.done)
	for {
		// Records a poll returns count even if the member is being
		// stopped: kgo considers them consumed, and the commit on revoke
		// (at Close) would commit them.
		fs := m.cl.PollRecords(ctx, 100)
		fs.EachError(func(topic string, p int32, err error) {
			if !errors.Is(err, context.Canceled) {
				m.log.Printf("test: fetch %s[%d]: %v", topic, p, err)
			}
		})
		recs := fs.Records()
		for _, r := range recs {
			tally.add(m.name, r.Partition, r.Offset)
		}
		if len(recs) > 0 {
			cctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			if err := m.cl.CommitUncommittedOffsets(cctx); err != nil {
				m.commitErr(fmt.Errorf("commit after a poll of %d records: %w", len(recs), err))
			}
			cancel()
		}
		m.cl.AllowRebalance()
		if ctx.Err() != nil {
			return
		}
	}
}

func (m *kgoMember) partitions(*testing.T) []int32 { return m.assign.partitions() }

// close stops polling and closes the client, which (for a member without
// an instance id) revokes its partitions, committing, and leaves the
// group. It fails the test if any commit failed.
func (m *kgoMember) close(t *testing.T) {
	t.Helper()
	if m.closed {
		return
	}
	m.closed = true
	m.cancel()
	select {
	case <-m.done:
	case <-time.After(groupWait):
		t.Errorf("kgo member %s still polling %v after it was stopped", m.name, groupWait)
		return
	}
	closed := make(chan struct{})
	go func() {
		m.cl.Close()
		close(closed)
	}()
	select {
	case <-closed:
	case <-time.After(groupWait):
		t.Errorf("kgo member %s: Close still blocked after %v", m.name, groupWait)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, err := range m.commitErrs {
		t.Errorf("kgo member %s: %v", m.name, err)
	}
	if n := m.assign.lostCount(); n > 0 {
		t.Errorf("kgo member %s lost %d partitions (OnPartitionsLost: a fatal group error)", m.name, n)
	}
}

// TestGroupKgo: kgo members with the eager range balancer and with the
// cooperative-sticky one, while a producer writes to 4 partitions: the
// first member gets them all; a second joins and each gets 2 (as the
// assignment callbacks report); the first leaves (Close) and the second
// gets all 4. Every record is consumed exactly once across the group and
// the group's committed offsets end at the end offsets.
func TestGroupKgo(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name     string
		balancer kgo.GroupBalancer
	}{
		{"range", kgo.RangeBalancer()},
		{"cooperative-sticky", kgo.CooperativeStickyBalancer()},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			eachBroker(t, groupOpts(nil), func(t *testing.T, b testBroker) {
				testGroupKgo(t, b.Addr(), kgo.Balancers(tt.balancer))
			})
		})
	}
}

func testGroupKgo(t *testing.T, addr string, balancer kgo.Opt) {
	topic, group := topicName(t), groupName(t)
	runGroupScenario(t, addr, topic, group, scenarioOpts{}, func(t *testing.T, name string, tally *groupTally) groupMember {
		return startKgoMember(t, addr, group, topic, name, tally, balancer)
	})
}

// TestGroupKgoStatic: two static members (kgo.InstanceID) split 4
// partitions while a producer writes. Each in turn, the follower and then
// the leader, closes without leaving the group (kgo sends no LeaveGroup
// for a static member) and a new client with the same instance id takes
// its place within the session timeout: it gets the same partitions in the
// same generation, and the other member sees no rebalance (no callback, no
// new generation). Then the leader closes for good: once its session
// times out the group rebalances and the other member gets every
// partition. Every record is consumed exactly once.
//
// The balancer is range: with cooperative-sticky, a restarted static
// leader makes kgo itself rebalance. The broker answers the leader's
// rejoin with the members' metadata and SkipAssignment (KIP-814), and
// the members' metadata is what they sent when they last joined, which
// for fresh clients lists no owned partitions; kgo balances anyway,
// cooperative-sticky cannot be sticky without ownership, the plan differs
// from the assignment the leader is handed back, and kgo rejoins ("our
// topic interests changed and we must rejoin to force a rebalance").
// Kafka answers the same way (GroupCoordinator.updateStaticMemberAndRebalance).
func TestGroupKgoStatic(t *testing.T) {
	t.Parallel()
	// Range (see above), and a session timeout of 6 s: a restarted
	// client must rejoin within it even on a loaded CI machine (3 s was
	// seen to expire), and the last step waits for a session to time out.
	staticOpts := []kgo.Opt{kgo.Balancers(kgo.RangeBalancer()), kgo.SessionTimeout(6 * time.Second)}
	eachBroker(t, groupOpts(nil), func(t *testing.T, b testBroker) {
		const partitions = 4
		addr := b.Addr()
		topic, group := topicName(t), groupName(t)
		adm := newAdmin(t, addr)
		createGroupTopic(t, adm, topic, partitions)
		prod := startGroupProducer(t, addr, topic, partitions)
		tally := newGroupTally()

		// a joins first: the leader.
		a := startKgoMember(t, addr, group, topic, "a", tally, append(staticOpts, kgo.InstanceID("instance-a"))...)
		awaitGroup(t, "member a to get every partition", func() bool {
			return len(a.assign.partitions()) == partitions
		}, func() string { return describeAssignments([]string{"a"}, a.assign) })
		bm := startKgoMember(t, addr, group, topic, "b", tally, append(staticOpts, kgo.InstanceID("instance-b"))...)
		awaitSplit(t, partitions, []string{"a", "b"}, a.assign, bm.assign)
		awaitGroup(t, "both members to consume", func() bool {
			return tally.count("a") >= 20 && tally.count("b") >= 20
		}, tally.summary)

		// Restart the follower, then the leader.
		members := map[string]*kgoMember{"a": a, "b": bm}
		for _, step := range []struct{ old, other, instance, name string }{
			{"b", "a", "instance-b", "b2"},
			{"a", "b", "instance-a", "a2"},
		} {
			old, other := members[step.old], members[step.other]
			_, gen := other.cl.GroupMetadata()
			oldParts := old.assign.partitions()
			otherParts, otherEvents := other.assign.get()
			old.close(t) // no LeaveGroup: the member stays in the group

			renewed := startKgoMember(t, addr, group, topic, step.name, tally, append(staticOpts, kgo.InstanceID(step.instance))...)
			awaitGroup(t, fmt.Sprintf("%s (instance id of %s) to get its partitions", step.name, step.old), func() bool {
				return len(renewed.assign.partitions()) > 0
			}, func() string { return describeAssignments([]string{step.name}, renewed.assign) })
			if got := renewed.assign.partitions(); !slices.Equal(got, oldParts) {
				t.Errorf("%s rejoined with the instance id of %s and got partitions %v, %s had %v", step.name, step.old, got, step.old, oldParts)
			}
			if _, g := renewed.cl.GroupMetadata(); g != gen {
				t.Errorf("%s rejoined in generation %d, the group was in %d: a rebalance", step.name, g, gen)
			}
			// Give the other member a few heartbeats to hear of a
			// rebalance, if there was one.
			time.Sleep(4 * groupHeartbeat)
			if ps, ev := other.assign.get(); ev != otherEvents || !slices.Equal(ps, otherParts) {
				t.Errorf("%s restarted with its instance id, and %s went from %v (%d callbacks) to %v (%d callbacks): a rebalance",
					step.old, step.other, otherParts, otherEvents, ps, ev)
			}
			if _, g := other.cl.GroupMetadata(); g != gen {
				t.Errorf("%s restarted with its instance id, and %s went from generation %d to %d: a rebalance", step.old, step.other, gen, g)
			}
			if state, _ := describeGroup(t, adm, group, topic); state != "Stable" {
				t.Errorf("group %s is %s after a static member rejoined, want Stable", group, state)
			}
			members[step.old] = renewed
			from := tally.count(step.name)
			awaitGroup(t, step.name+" to consume", func() bool { return tally.count(step.name) >= from+10 }, tally.summary)
			if t.Failed() {
				return
			}
		}

		// The leader closes for good: the group keeps it until its session
		// times out, then rebalances, and b2 gets every partition.
		a2, b2 := members["a"], members["b"]
		a2.close(t)
		closedAt := time.Now()
		awaitGroup(t, "b2 to get every partition once a2's session timed out", func() bool {
			return len(b2.assign.partitions()) == partitions
		}, func() string { return describeAssignments([]string{"a2", "b2"}, a2.assign, b2.assign) })
		t.Logf("b2 got every partition %v after a2 closed (session timeout 6 s)", time.Since(closedAt).Round(time.Millisecond))
		from := tally.count("b2")
		awaitGroup(t, "b2 to consume alone", func() bool { return tally.count("b2") >= from+10 }, tally.summary)

		prod.stop(t)
		ends := endOffsets(t, adm, topic)
		tally.awaitAll(t, ends)
		b2.close(t)
		tally.check(t, ends, true)
		checkCommitted(t, adm, group, topic, ends)
		t.Logf("%s; produced %d records", tally.summary(), prod.n)
	})
}
