package integration

// Groups across broker restarts: the members of a Stable group go on
// through a clean restart, a crash restart and (for the binary) a kill -9,
// without a rebalance, as they do with Kafka, which persists classic
// groups (GroupMetadata records) and consumer groups (KIP-848 records) in
// __consumer_offsets.

import (
	"context"
	"fmt"
	"maps"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/kbroker/kbroker/broker"
)

// restartable is a broker that comes back on the same address, as a
// restarted Kafka broker does, so that clients reconnect on their own.
type restartable interface {
	Addr() string
	// restart stops the broker cleanly, or as a crash (an in-process
	// crash restart; SIGKILL for the binary), and starts it again.
	restart(t *testing.T, crash bool)
}

// inProcessRestartable restarts a broker.InProcess in place.
type inProcessRestartable struct{ ip *broker.InProcess }

func (b inProcessRestartable) Addr() string { return b.ip.Addr() }

func (b inProcessRestartable) restart(t *testing.T, crash bool) {
	t.Helper()
	var err error
	if crash {
		err = b.ip.RestartCrashed()
	} else {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		err = b.ip.Restart(ctx)
	}
	if err != nil {
		t.Fatalf("restart (crash %v): %v", crash, err)
	}
}

// binaryRestartable restarts the kbroker binary on the port it had.
type binaryRestartable struct{ b *binaryBroker }

func (b binaryRestartable) Addr() string { return b.b.Addr() }

func (b binaryRestartable) restart(t *testing.T, crash bool) {
	t.Helper()
	addr := b.b.Addr()
	if crash {
		b.b.kill9(t, "restart", crashWait)
	} else {
		b.b.stop(t)
	}
	args := b.b.args
	b.b.args = append(args[:len(args):len(args)], "--listen", addr)
	defer func() { b.b.args = args }()
	b.b.start(t)
	if b.b.Addr() != addr {
		t.Fatalf("restarted on %s, want %s", b.b.Addr(), addr)
	}
}

// eachRestartable runs f against an in-process broker and the binary,
// started with o, in parallel.
func eachRestartable(t *testing.T, o brokerOpts, f func(t *testing.T, b restartable)) {
	t.Helper()
	o.check(t)
	skipIfExternal(t, "restarts the broker")
	t.Run("in-process", func(t *testing.T) {
		t.Parallel()
		f(t, inProcessRestartable{controlledBroker(t, o.edit)})
	})
	t.Run("binary", func(t *testing.T) {
		t.Parallel()
		f(t, binaryRestartable{startBinary(t, o.args(t)...)})
	})
}

// persistMember is a group member whose session the test can watch.
type persistMember interface {
	groupMember
	// session is the member id and generation (member epoch for the
	// consumer protocol) of its group session now, and how many
	// rebalance callbacks its client ran so far.
	session() (id string, generation int32, callbacks int)
}

func (m *kgoMember) session() (string, int32, int) {
	id, gen := m.cl.GroupMetadata()
	_, n := m.assign.get()
	return id, gen, n
}

func (m *saramaMember) session() (string, int32, int) {
	m.mu.Lock()
	id, gen := m.sessionID, m.generation
	m.mu.Unlock()
	_, n := m.assign.get()
	return id, gen, n
}

// runGroupPersistScenario: two members (started by start) split the 4
// partitions of a topic and consume and commit its records; the broker
// restarts cleanly, then as after a crash; after each restart more
// records are produced and the members consume them as the same members
// of the same generation (or member epoch), with no rebalance callback,
// every record exactly once: they had committed everything before each
// restart, so there is no uncommitted tail to read again.
func runGroupPersistScenario(t *testing.T, b restartable, kip848 bool, start func(t *testing.T, addr, group, topic, name string, tally *groupTally) persistMember) {
	const partitions = 4
	topic, group := topicName(t), groupName(t)
	adm := newAdmin(t, b.Addr())
	createGroupTopic(t, adm, topic, partitions)
	tally := newGroupTally()
	ma := start(t, b.Addr(), group, topic, "a", tally)
	mb := start(t, b.Addr(), group, topic, "b", tally)
	members := []persistMember{ma, mb}
	names := []string{"a", "b"}
	splitDone := func() bool {
		return balancedSplit(partitions, ma.partitions(t), mb.partitions(t))
	}
	awaitGroup(t, "the members to split the partitions", splitDone, func() string {
		return fmt.Sprintf("a has %v, b has %v", ma.partitions(t), mb.partitions(t))
	})

	type sess struct {
		id        string
		gen       int32
		callbacks int
	}
	sessions := func() []sess {
		out := make([]sess, len(members))
		for i, m := range members {
			out[i].id, out[i].gen, out[i].callbacks = m.session()
		}
		return out
	}
	round := func(tag string) map[int32]int64 {
		produceGroupRecords(t, b.Addr(), topic, partitions, 200, tag)
		ends := endOffsets(t, adm, topic)
		tally.awaitAll(t, ends)
		awaitCommitted(t, adm, group, topic, ends)
		return ends
	}
	round("before")
	before := sessions()
	_, describedBefore, epochBefore := groupView(t, adm, group, kip848)
	for _, crash := range []bool{false, true} {
		b.restart(t, crash)
		ends := round(fmt.Sprintf("crash-%v", crash))
		after := sessions()
		for i := range members {
			if after[i] != before[i] {
				t.Errorf("after a restart (crash %v), member %s: id %q generation %d with %d rebalance callbacks, before id %q generation %d with %d: it rebalanced",
					crash, names[i], after[i].id, after[i].gen, after[i].callbacks, before[i].id, before[i].gen, before[i].callbacks)
			}
		}
		// The broker knows them as they are: Stable, the same members.
		state, described, epoch := groupView(t, adm, group, kip848)
		if state != "Stable" || len(described) != len(members) || epoch != epochBefore {
			t.Errorf("after a restart (crash %v): the group is %s with %d members at epoch %d, want Stable with %d at epoch %d",
				crash, state, len(described), epoch, len(members), epochBefore)
		}
		if !maps.Equal(described, describedBefore) {
			t.Errorf("after a restart (crash %v): members %v, before %v", crash, described, describedBefore)
		}
		for _, s := range after {
			if s.id != "" && !described[s.id] {
				t.Errorf("after a restart (crash %v): member %s not described (%v)", crash, s.id, described)
			}
		}
		tally.check(t, ends, true)
		if t.Failed() {
			return
		}
		t.Logf("restart (crash %v): members kept their sessions %+v; %s", crash, after, tally.summary())
	}
	for _, m := range members {
		m.close(t)
	}
}

// TestGroupPersistKgo: classic kgo members (cooperative-sticky) keep
// their generation and partitions across restarts.
func TestGroupPersistKgo(t *testing.T) {
	t.Parallel()
	eachRestartable(t, groupOpts(nil), func(t *testing.T, b restartable) {
		runGroupPersistScenario(t, b, false, func(t *testing.T, addr, group, topic, name string, tally *groupTally) persistMember {
			return startKgoMember(t, addr, group, topic, name, tally)
		})
	})
}

// TestGroupPersistSarama: sarama members (range) keep their session and
// generation across restarts.
func TestGroupPersistSarama(t *testing.T) {
	t.Parallel()
	eachRestartable(t, groupOpts(nil), func(t *testing.T, b restartable) {
		runGroupPersistScenario(t, b, false, func(t *testing.T, addr, group, topic, name string, tally *groupTally) persistMember {
			m := startSaramaMember(t, addr, group, topic, name, tally, 0)
			m.expectRestarts()
			return m
		})
	})
}

// groupView is the group as DescribeGroups (classic) or
// ConsumerGroupDescribe (kip848) shows it: its state, its member ids and,
// for a consumer group, its group epoch (0 for a classic group, whose
// generation DescribeGroups does not show).
func groupView(t *testing.T, adm *kadm.Client, group string, kip848 bool) (state string, members map[string]bool, epoch int32) {
	t.Helper()
	members = map[string]bool{}
	if kip848 {
		ds, err := adm.DescribeConsumerGroups(testCtx(t), group)
		if err != nil {
			t.Fatalf("DescribeConsumerGroups %s: %v", group, err)
		}
		d, ok := ds[group]
		if !ok || d.Err != nil {
			t.Fatalf("DescribeConsumerGroups %s: %+v", group, d)
		}
		for _, m := range d.Members {
			members[m.MemberID] = true
		}
		return d.State, members, d.Epoch
	}
	ds, err := adm.DescribeGroups(testCtx(t), group)
	if err != nil {
		t.Fatalf("DescribeGroups %s: %v", group, err)
	}
	d, ok := ds[group]
	if !ok || d.Err != nil {
		t.Fatalf("DescribeGroups %s: %+v", group, d)
	}
	for _, m := range d.Members {
		members[m.MemberID] = true
	}
	return d.State, members, 0
}

// TestGroupPersistKIP848Kgo: kgo members of a consumer group (KIP-848,
// the broker's uniform assignor) keep their member ids, member epochs and
// partitions across restarts, heartbeating on with their epochs.
func TestGroupPersistKIP848Kgo(t *testing.T) {
	t.Parallel()
	eachRestartable(t, groupOpts(kip848Props), func(t *testing.T, b restartable) {
		runGroupPersistScenario(t, b, true, func(t *testing.T, addr, group, topic, name string, tally *groupTally) persistMember {
			return startKgoMember(t, addr, group, topic, name, tally, kip848Kgo()...)
		})
	})
}
