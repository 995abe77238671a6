package integration

// Shared pieces of the consumer-group tests (group_*_test.go): broker
// settings, a tally of what a group consumed, assignment tracking, a
// background producer, and waiting.

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kbroker/kbroker/internal/testenv"
)

// Group timing of every client: short enough that rebalances and failure
// detection take a second or two, long enough for -race on a loaded CI
// machine. The broker allows session timeouts from 1 s
// (groupBrokerProps).
const (
	groupSessionTimeout   = 6 * time.Second
	groupHeartbeat        = 500 * time.Millisecond
	groupRebalanceTimeout = 5 * time.Second
	groupFetchWait        = 200 * time.Millisecond
	// groupWait bounds each wait for a group to reach a state (a
	// rebalance, consuming what was produced).
	groupWait = 30 * time.Second
)

// groupDebug: KBROKER_GROUP_DEBUG is set, so clients log their group
// protocol in detail (kgo at debug level, librdkafka's cgrp debug
// context); the logs are printed for failed tests.
func groupDebug(t testing.TB) bool { return testenv.Flag(t, "KBROKER_GROUP_DEBUG") }

// groupBrokerProps are the broker settings of the group tests.
var groupBrokerProps = map[string]string{
	"group.min.session.timeout.ms":     "1000",
	"group.initial.rebalance.delay.ms": "0",
}

// groupOpts are brokerOpts with groupBrokerProps and extra.
func groupOpts(extra map[string]string) brokerOpts {
	props := maps.Clone(groupBrokerProps)
	maps.Copy(props, extra)
	return brokerOpts{props: props}
}

// groupName is a consumer-group name unique to the test.
func groupName(t *testing.T) string {
	t.Helper()
	return "g." + topicName(t)
}

// createGroupTopic creates topic with n partitions.
func createGroupTopic(t *testing.T, adm *kadm.Client, topic string, n int32) {
	t.Helper()
	created, err := adm.CreateTopic(testCtx(t), n, 1, nil, topic)
	if err == nil {
		err = created.Err
	}
	if err != nil {
		t.Fatalf("CreateTopic %s: %v", topic, err)
	}
}

// produceGroupRecords produces n records to topic, spread evenly over its
// partitions (record i to partition i % partitions), with values
// "<tag>-<i>", and waits for every acknowledgement.
func produceGroupRecords(t *testing.T, addr, topic string, partitions int32, n int, tag string) {
	t.Helper()
	cl := newKgo(t, addr, kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(0))
	defer cl.Close()
	recs := make([]*kgo.Record, n)
	for i := range recs {
		recs[i] = &kgo.Record{Partition: int32(i) % partitions, Value: fmt.Appendf(nil, "%s-%d", tag, i)}
	}
	if err := cl.ProduceSync(testCtx(t), recs...).FirstErr(); err != nil {
		t.Fatalf("produce %d records to %s: %v", n, topic, err)
	}
}

// groupProducer produces to every partition of a topic in the background
// (a few records every 10 ms) until stopped, so that rebalances happen
// while records arrive.
type groupProducer struct {
	cancel context.CancelFunc
	done   chan struct{}
	err    error
	n      int // records acknowledged, once done is closed
}

func startGroupProducer(t *testing.T, addr, topic string, partitions int32) *groupProducer {
	t.Helper()
	cl := newKgo(t, addr, kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(0))
	ctx, cancel := context.WithCancel(context.Background())
	p := &groupProducer{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(p.done)
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for i := 0; ; {
			recs := make([]*kgo.Record, 2*partitions)
			for j := range recs {
				recs[j] = &kgo.Record{Partition: int32(j) % partitions, Value: fmt.Appendf(nil, "bg-%d", i)}
				i++
			}
			// Count each acknowledged record: when the producer is
			// stopped, some of a batch may be written and others not.
			results := cl.ProduceSync(ctx, recs...)
			for _, r := range results {
				if r.Err == nil {
					p.n++
				}
			}
			if err := results.FirstErr(); err != nil {
				if ctx.Err() == nil {
					p.err = err
				}
				return
			}
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	t.Cleanup(func() { p.stop(t) })
	return p
}

// stop stops the producer and fails the test if it failed.
func (p *groupProducer) stop(t *testing.T) {
	t.Helper()
	p.cancel()
	select {
	case <-p.done:
	case <-time.After(groupWait):
		t.Fatalf("background producer still running %v after it was stopped", groupWait)
	}
	if p.err != nil {
		t.Fatalf("background producer: %v", p.err)
	}
}

// groupTally is what a group consumed: how often each offset of each
// partition was delivered, and by which member.
type groupTally struct {
	mu       sync.Mutex
	seen     map[int32]map[int64]int
	by       map[string]int // records by member
	distinct int
	dups     []string // the first duplicate deliveries, described
	ndups    int
}

func newGroupTally() *groupTally {
	return &groupTally{seen: map[int32]map[int64]int{}, by: map[string]int{}}
}

// add counts one delivery of partition p, offset o to member.
func (g *groupTally) add(member string, p int32, o int64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.seen[p] == nil {
		g.seen[p] = map[int64]int{}
	}
	g.seen[p][o]++
	g.by[member]++
	if g.seen[p][o] == 1 {
		g.distinct++
		return
	}
	g.ndups++
	if len(g.dups) < 20 {
		g.dups = append(g.dups, fmt.Sprintf("partition %d offset %d again (delivery %d) to %s", p, o, g.seen[p][o], member))
	}
}

// count is how many records member consumed.
func (g *groupTally) count(member string) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.by[member]
}

// total is how many distinct records were consumed.
func (g *groupTally) total() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.distinct
}

// summary describes the tally for messages.
func (g *groupTally) summary() string {
	g.mu.Lock()
	defer g.mu.Unlock()
	parts := map[int32]int{}
	for p, os := range g.seen {
		parts[p] = len(os)
	}
	return fmt.Sprintf("%d distinct records (by partition %v), by member %v, %d duplicate deliveries", g.distinct, parts, g.by, g.ndups)
}

// awaitAll waits until every record below ends was consumed at least once.
func (g *groupTally) awaitAll(t *testing.T, ends map[int32]int64) {
	t.Helper()
	var want int
	for _, e := range ends {
		want += int(e)
	}
	awaitGroup(t, fmt.Sprintf("the group to consume all %d records up to %v", want, ends), func() bool {
		return g.total() >= want
	}, func() string { return g.summary() + "; " + g.missing(ends) })
}

// missing lists the first offsets below ends never consumed.
func (g *groupTally) missing(ends map[int32]int64) string {
	g.mu.Lock()
	defer g.mu.Unlock()
	var out []string
	for _, p := range slices.Sorted(maps.Keys(ends)) {
		for o := range ends[p] {
			if g.seen[p][o] == 0 && len(out) < 20 {
				out = append(out, fmt.Sprintf("%d/%d", p, o))
			}
		}
	}
	return "never consumed (partition/offset): " + strings.Join(out, " ")
}

// check fails the test unless every offset below ends of every partition
// was consumed exactly once (at least once when exactlyOnce is false, with
// the duplicates logged), and nothing beyond.
func (g *groupTally) check(t *testing.T, ends map[int32]int64, exactlyOnce bool) {
	t.Helper()
	g.mu.Lock()
	defer g.mu.Unlock()
	for p := range g.seen {
		if _, ok := ends[p]; !ok {
			t.Errorf("consumed records of partition %d, which the topic does not have (end offsets %v)", p, ends)
		}
	}
	for p, end := range ends {
		missing := 0
		for o := range end {
			if g.seen[p][o] == 0 {
				if missing++; missing <= 5 {
					t.Errorf("partition %d: offset %d never consumed (end %d)", p, o, end)
				}
			}
		}
		if missing > 5 {
			t.Errorf("partition %d: %d offsets of %d never consumed", p, missing, end)
		}
		for o := range g.seen[p] {
			if o >= end {
				t.Errorf("partition %d: offset %d consumed, beyond the end offset %d", p, o, end)
			}
		}
	}
	if g.ndups > 0 {
		report := t.Errorf
		if !exactlyOnce {
			report = t.Logf
		}
		report("%d duplicate deliveries, the first:\n\t%s", g.ndups, strings.Join(g.dups, "\n\t"))
	}
}

// committedOffsets are group's committed offsets of topic, by partition.
func committedOffsets(t *testing.T, adm *kadm.Client, group, topic string) map[int32]int64 {
	t.Helper()
	os, err := adm.FetchOffsets(testCtx(t), group)
	if err != nil {
		t.Fatalf("FetchOffsets %s: %v", group, err)
	}
	got := map[int32]int64{}
	for p, o := range os[topic] {
		if o.Err != nil {
			t.Fatalf("FetchOffsets %s: %s[%d]: %v", group, topic, p, o.Err)
		}
		got[p] = o.At
	}
	return got
}

// checkCommitted fails the test unless group's committed offsets of topic
// are want.
func checkCommitted(t *testing.T, adm *kadm.Client, group, topic string, want map[int32]int64) {
	t.Helper()
	if got := committedOffsets(t, adm, group, topic); !equalOffsets(got, want) {
		t.Fatalf("committed offsets of group %s on %s: %v, want %v", group, topic, got, want)
	}
}

// awaitCommitted waits until group's committed offsets of topic are want
// (a client may commit a moment after it delivered the last record).
func awaitCommitted(t *testing.T, adm *kadm.Client, group, topic string, want map[int32]int64) {
	t.Helper()
	var got map[int32]int64
	awaitGroup(t, fmt.Sprintf("group %s to commit %v", group, want), func() bool {
		got = committedOffsets(t, adm, group, topic)
		return equalOffsets(got, want)
	}, func() string { return fmt.Sprintf("committed %v", got) })
}

// awaitGroup polls cond every 20 ms until it holds; after groupWait it
// fails the test with what and state().
func awaitGroup(t *testing.T, what string, cond func() bool, state func() string) {
	t.Helper()
	start := time.Now()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Since(start) > groupWait {
			t.Fatalf("waited %v for %s: %s", groupWait, what, state())
		}
		<-tick.C
	}
	t.Logf("%s: after %v", what, time.Since(start).Round(time.Millisecond))
}

// assignment is a member's current partitions of the test topic, as its
// client's rebalance callbacks report them.
type assignment struct {
	mu     sync.Mutex
	parts  map[int32]bool
	events int // callbacks so far (assigned, revoked, lost)
	lost   int // partitions lost (not revoked)
}

func newAssignment() *assignment { return &assignment{parts: map[int32]bool{}} }

// set replaces the assignment (eager clients report it whole).
func (a *assignment) set(ps []int32) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.events++
	a.parts = map[int32]bool{}
	for _, p := range ps {
		a.parts[p] = true
	}
}

// add and remove change it incrementally.
func (a *assignment) add(ps []int32) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.events++
	for _, p := range ps {
		a.parts[p] = true
	}
}

func (a *assignment) remove(ps []int32, lost bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.events++
	for _, p := range ps {
		delete(a.parts, p)
	}
	if lost {
		a.lost += len(ps)
	}
}

// lostCount is how many partitions the member lost (rather than had
// revoked): its client hit a fatal group error.
func (a *assignment) lostCount() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.lost
}

// get returns the partitions, sorted, and the number of callbacks.
func (a *assignment) get() ([]int32, int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Sorted(maps.Keys(a.parts)), a.events
}

// partitions returns the partitions, sorted.
func (a *assignment) partitions() []int32 {
	ps, _ := a.get()
	return ps
}

// balancedSplit reports whether the assignments are disjoint, cover
// partitions 0..n-1 and differ in size by at most one, so that each
// member has some when there are at least as many partitions as members.
func balancedSplit(n int32, as ...[]int32) bool {
	owner := map[int32]int{}
	lo, hi := int(n), 0
	for i, ps := range as {
		lo, hi = min(lo, len(ps)), max(hi, len(ps))
		for _, p := range ps {
			if _, dup := owner[p]; dup || p < 0 || p >= n {
				return false
			}
			owner[p] = i
		}
	}
	return len(owner) == int(n) && hi-lo <= 1
}

// describeAssignments describes members' assignments for messages.
func describeAssignments(names []string, as ...*assignment) string {
	var b strings.Builder
	for i, a := range as {
		ps, ev := a.get()
		fmt.Fprintf(&b, "%s: %v (%d callbacks); ", names[i], ps, ev)
	}
	return strings.TrimSuffix(b.String(), "; ")
}

// awaitSplit waits until the members' assignments split partitions
// 0..n-1 between them (disjoint, covering, balanced).
func awaitSplit(t *testing.T, n int32, names []string, as ...*assignment) {
	t.Helper()
	awaitGroup(t, fmt.Sprintf("%d partitions to split between %s", n, strings.Join(names, ", ")), func() bool {
		ps := make([][]int32, len(as))
		for i, a := range as {
			ps[i] = a.partitions()
		}
		return balancedSplit(n, ps...)
	}, func() string { return describeAssignments(names, as...) })
}

// describedMember is a member as DescribeGroups shows it: ids and the
// partitions of the test topic assigned to it.
type describedMember struct {
	id, client string
	parts      []int32
}

// describeGroup returns group's state and members as DescribeGroups
// reports them, with the partitions of topic assigned to each.
func describeGroup(t *testing.T, adm *kadm.Client, group, topic string) (string, []describedMember) {
	t.Helper()
	ds, err := adm.DescribeGroups(testCtx(t), group)
	if err != nil {
		t.Fatalf("DescribeGroups %s: %v", group, err)
	}
	d, ok := ds[group]
	if ok && errors.Is(d.Err, kerr.GroupIDNotFound) {
		// DescribeGroups v6+ (KIP-1043) for a group that does not exist
		// (yet); older versions say Dead.
		return "Dead", nil
	}
	if !ok || d.Err != nil {
		t.Fatalf("DescribeGroups %s: present %v, error %v", group, ok, d.Err)
	}
	var out []describedMember
	for _, m := range d.Members {
		dm := describedMember{id: m.MemberID, client: m.ClientID}
		if c, ok := m.Assigned.AsConsumer(); ok {
			for _, tp := range c.Topics {
				if tp.Topic == topic {
					dm.parts = append(dm.parts, tp.Partitions...)
				}
			}
		}
		slices.Sort(dm.parts)
		out = append(out, dm)
	}
	return d.State, out
}

// awaitDescribedSplit waits until DescribeGroups shows group Stable with
// members members whose assignments split the n partitions of topic.
func awaitDescribedSplit(t *testing.T, adm *kadm.Client, group, topic string, n int32, members int) {
	t.Helper()
	var (
		state string
		got   []describedMember
	)
	awaitGroup(t, fmt.Sprintf("DescribeGroups to show %d partitions split between %d members of %s", n, members, group), func() bool {
		state, got = describeGroup(t, adm, group, topic)
		if state != "Stable" || len(got) != members {
			return false
		}
		as := make([][]int32, len(got))
		for i, m := range got {
			as[i] = m.parts
		}
		return balancedSplit(n, as...)
	}, func() string { return fmt.Sprintf("state %s, members %+v", state, got) })
}

// offsetsSum adds up end offsets.
func offsetsSum(m map[int32]int64) int {
	n := 0
	for _, o := range m {
		n += int(o)
	}
	return n
}

// memberLog collects a client's log lines; the test prints them if it
// failed. It may be written after the test ends (client goroutines).
type memberLog struct {
	name string
	buf  lockedBuffer
}

func newMemberLog(t *testing.T, name string) *memberLog {
	l := &memberLog{name: name}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("log of %s:\n%s", name, l.buf.String())
		}
	})
	return l
}

func (l *memberLog) Printf(format string, args ...any) {
	fmt.Fprintf(&l.buf, time.Now().Format("15:04:05.000 ")+format+"\n", args...)
}

// groupMember is a running member of a consumer group, of any client.
type groupMember interface {
	// partitions are the partitions of the test topic it holds now.
	partitions(t *testing.T) []int32
	// close stops it consuming and closes it, leaving the group (unless it
	// is static); it commits what it consumed first.
	close(t *testing.T)
}

// scenarioOpts tune runGroupScenario to a client.
type scenarioOpts struct {
	// atLeastOnce: the client may deliver a record twice around a
	// rebalance (it cannot commit at the rebalance boundary); duplicates
	// are logged instead of failing the test.
	atLeastOnce bool
	// quiesceBeforeLeave: the producer pauses and the group consumes
	// everything before member a leaves (for a client that may skip a
	// record it fetched as it closes: kcat).
	quiesceBeforeLeave bool
}

// runGroupScenario is the common group test: while a producer writes to
// the 4 partitions of topic, member a of group (started by start) gets
// every partition and consumes; member b joins and the partitions split
// 2/2 (as the members see it and as DescribeGroups shows it), both
// consume; a leaves and b gets all 4 and consumes. Then the producer stops
// and the group consumes the rest: every record exactly once (see
// scenarioOpts.atLeastOnce), and the committed offsets reach the end
// offsets.
func runGroupScenario(t *testing.T, addr, topic, group string, o scenarioOpts, start func(t *testing.T, name string, tally *groupTally) groupMember) {
	t.Helper()
	const partitions = 4
	adm := newAdmin(t, addr)
	createGroupTopic(t, adm, topic, partitions)
	prod := startGroupProducer(t, addr, topic, partitions)
	tally := newGroupTally()
	describe := func(ms map[string]groupMember) func() string {
		return func() string {
			var b strings.Builder
			for _, name := range slices.Sorted(maps.Keys(ms)) {
				fmt.Fprintf(&b, "%s has %v; ", name, ms[name].partitions(t))
			}
			return b.String() + tally.summary()
		}
	}

	a := start(t, "a", tally)
	awaitGroup(t, "member a to get every partition and consume", func() bool {
		return len(a.partitions(t)) == partitions && tally.count("a") >= 20
	}, describe(map[string]groupMember{"a": a}))

	b := start(t, "b", tally)
	both := map[string]groupMember{"a": a, "b": b}
	awaitGroup(t, "the partitions to split between a and b", func() bool {
		return balancedSplit(partitions, a.partitions(t), b.partitions(t))
	}, describe(both))
	fromA, fromB := tally.count("a"), tally.count("b")
	awaitGroup(t, "both members to consume", func() bool {
		return tally.count("a") >= fromA+20 && tally.count("b") >= fromB+20
	}, describe(both))
	awaitDescribedSplit(t, adm, group, topic, partitions, 2)

	produced := 0
	if o.quiesceBeforeLeave {
		prod.stop(t)
		produced += prod.n
		tally.awaitAll(t, endOffsets(t, adm, topic))
	}
	a.close(t)
	if o.quiesceBeforeLeave {
		prod = startGroupProducer(t, addr, topic, partitions)
	}
	awaitGroup(t, "member b to get every partition after a left", func() bool {
		return len(b.partitions(t)) == partitions
	}, describe(map[string]groupMember{"b": b}))
	fromB = tally.count("b")
	awaitGroup(t, "member b to consume alone", func() bool {
		return tally.count("b") >= fromB+20
	}, describe(map[string]groupMember{"b": b}))

	prod.stop(t)
	produced += prod.n
	ends := endOffsets(t, adm, topic)
	tally.awaitAll(t, ends)
	awaitCommitted(t, adm, group, topic, ends)
	b.close(t)
	tally.check(t, ends, !o.atLeastOnce)
	checkCommitted(t, adm, group, topic, ends)
	if offsetsSum(ends) != produced {
		t.Errorf("end offsets %v add up to %d, %d records were produced", ends, offsetsSum(ends), produced)
	}
	t.Logf("%s; produced %d records", tally.summary(), produced)
}
