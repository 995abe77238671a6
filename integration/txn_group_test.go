package integration

// Exactly-once consume-transform-produce with franz-go's
// GroupTransactSession: records of topic A consumed in a group, written
// transformed to topic B, and the group's offsets committed in the same
// transaction, across rebalances.

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// txnSession is one kgo GroupTransactSession consuming topic A and
// producing to topic B in a goroutine: each poll is one transaction.
type txnSession struct {
	name   string
	s      *kgo.GroupTransactSession
	assign *assignment
	log    *memberLog

	mu      sync.Mutex
	errs    []error
	commits int
	aborts  int

	cancel context.CancelFunc
	done   chan struct{}
	closed bool
}

// startTxnSession starts session name of group, consuming from in and
// producing to out with transactional id "<group>.<name>"; the test's
// cleanup closes it. Records of committed transactions go to tally.
func startTxnSession(t *testing.T, addr, group, in, out, name string, tally *groupTally, balancer kgo.GroupBalancer) *txnSession {
	t.Helper()
	m := &txnSession{name: name, assign: newAssignment(), log: newMemberLog(t, "kgo transact session "+name), done: make(chan struct{})}
	s, err := kgo.NewGroupTransactSession(
		kgo.SeedBrokers(addr),
		kgo.ClientID(name),
		kgo.WithLogger(kgo.BasicLogger(&m.log.buf, kgoTxnLogLevel(t), nil)),
		kgo.RequestTimeoutOverhead(5*time.Second),
		kgo.RetryTimeout(10*time.Second),
		kgo.TransactionalID(group+"."+name),
		kgo.TransactionTimeout(txnTimeout),
		kgo.ProducerLinger(0),
		kgo.ConsumerGroup(group),
		kgo.ConsumeTopics(in),
		kgo.Balancers(balancer),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.SessionTimeout(groupSessionTimeout),
		kgo.HeartbeatInterval(groupHeartbeat),
		kgo.RebalanceTimeout(groupRebalanceTimeout),
		kgo.FetchMaxWait(groupFetchWait),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.RetryBackoffFn(func(int) time.Duration { return 100 * time.Millisecond }),
		kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, a map[string][]int32) {
			m.log.Printf("test: assigned %v", a)
			m.assign.add(a[in])
		}),
		kgo.OnPartitionsRevoked(func(_ context.Context, _ *kgo.Client, r map[string][]int32) {
			m.log.Printf("test: revoked %v", r)
			m.assign.remove(r[in], false)
		}),
		kgo.OnPartitionsLost(func(_ context.Context, _ *kgo.Client, l map[string][]int32) {
			m.log.Printf("test: lost %v", l)
			m.assign.remove(l[in], true)
		}),
	)
	if err != nil {
		t.Fatalf("NewGroupTransactSession: %v", err)
	}
	m.s = s
	ctx, cancel := context.WithCancel(context.Background())
	m.cancel = cancel
	go m.run(ctx, out, tally)
	t.Cleanup(func() { m.close(t) })
	return m
}

func (m *txnSession) fail(err error) {
	m.log.Printf("test: %v", err)
	m.mu.Lock()
	defer m.mu.Unlock()
	m.errs = append(m.errs, err)
}

// run polls; for the records of each poll it begins a transaction,
// produces each transformed (key "<partition>/<offset>" of the input,
// value "t:<input value>") and ends the transaction with a commit, which
// the session turns into an abort if the group rebalanced meanwhile. The
// records of a committed transaction are tallied; those of an aborted one
// are delivered again.
func (m *txnSession) run(ctx context.Context, out string, tally *groupTally) {
	defer close(m.done)
	for {
		fs := m.s.PollRecords(ctx, 50)
		if ctx.Err() != nil {
			return
		}
		fs.EachError(func(topic string, p int32, err error) {
			if !errors.Is(err, context.Canceled) {
				m.log.Printf("test: fetch %s[%d]: %v", topic, p, err)
			}
		})
		recs := fs.Records()
		if len(recs) == 0 {
			continue
		}
		if err := m.s.Begin(); err != nil {
			m.fail(fmt.Errorf("Begin: %w", err))
			return
		}
		for _, r := range recs {
			o := &kgo.Record{Topic: out, Key: fmt.Appendf(nil, "%d/%d", r.Partition, r.Offset), Value: append([]byte("t:"), r.Value...)}
			m.s.Produce(context.Background(), o, func(_ *kgo.Record, err error) {
				if err != nil && !errors.Is(err, kgo.ErrAborting) {
					m.fail(fmt.Errorf("transactional produce: %w", err))
				}
			})
		}
		ectx, cancel := context.WithTimeout(context.Background(), txnWait)
		committed, err := m.s.End(ectx, kgo.TryCommit)
		cancel()
		if err != nil {
			m.fail(fmt.Errorf("End of a transaction of %d records: %w", len(recs), err))
			return
		}
		m.mu.Lock()
		if committed {
			m.commits++
		} else {
			m.aborts++
		}
		m.mu.Unlock()
		if committed {
			for _, r := range recs {
				tally.add(m.name, r.Partition, r.Offset)
			}
		} else {
			m.log.Printf("test: transaction of %d records aborted", len(recs))
		}
	}
}

func (m *txnSession) partitions(*testing.T) []int32 { return m.assign.partitions() }

// close stops polling and closes the session, leaving the group; it fails
// the test if the session failed.
func (m *txnSession) close(t *testing.T) {
	t.Helper()
	if m.closed {
		return
	}
	m.closed = true
	m.cancel()
	select {
	case <-m.done:
	case <-time.After(txnWait):
		t.Errorf("session %s still polling %v after it was stopped", m.name, txnWait)
		return
	}
	closed := make(chan struct{})
	go func() {
		m.s.Close()
		close(closed)
	}()
	select {
	case <-closed:
	case <-time.After(txnWait):
		t.Errorf("session %s: Close still blocked after %v", m.name, txnWait)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, err := range m.errs {
		t.Errorf("session %s: %v", m.name, err)
	}
	t.Logf("session %s: %d transactions committed, %d aborted", m.name, m.commits, m.aborts)
}

// TestTxnGroupSession: while a producer writes to the 4 partitions of
// topic A, kgo GroupTransactSession s1 consumes them in a group and, in
// one transaction per poll, writes each record transformed to topic B
// (3 partitions) and commits the group's offsets. Session s2 joins (the
// partitions split 2/2), then s1 leaves (s2 takes all 4). With the eager
// range balancer and the cooperative-sticky one. Every input record is in
// exactly one committed transaction; at the end a read_committed consumer
// reads from B each input record exactly once, transformed, in the input's
// order per partition; and the group's committed offsets are A's end
// offsets.
func TestTxnGroupSession(t *testing.T) {
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
			eachBroker(t, txnOpts(), func(t *testing.T, b testBroker) {
				testTxnGroupSession(t, b.Addr(), tt.balancer)
			})
		})
	}
}

func testTxnGroupSession(t *testing.T, addr string, balancer kgo.GroupBalancer) {
	const partitions = 4
	in, out, group := topicName(t)+".a", topicName(t)+".b", groupName(t)
	adm := newAdmin(t, addr)
	createGroupTopic(t, adm, in, partitions)
	createGroupTopic(t, adm, out, 3)
	prod := startGroupProducer(t, addr, in, partitions)
	tally := newGroupTally()
	describe := func(ms ...*txnSession) func() string {
		return func() string {
			var b strings.Builder
			for _, m := range ms {
				fmt.Fprintf(&b, "%s has %v; ", m.name, m.partitions(t))
			}
			return b.String() + tally.summary()
		}
	}

	s1 := startTxnSession(t, addr, group, in, out, "s1", tally, balancer)
	awaitTxn(t, "s1 to get every partition and commit", func() bool {
		return len(s1.partitions(t)) == partitions && tally.count("s1") >= 20
	}, describe(s1))

	s2 := startTxnSession(t, addr, group, in, out, "s2", tally, balancer)
	awaitTxn(t, "the partitions to split between s1 and s2", func() bool {
		return balancedSplit(partitions, s1.partitions(t), s2.partitions(t))
	}, describe(s1, s2))
	from1, from2 := tally.count("s1"), tally.count("s2")
	awaitTxn(t, "both sessions to commit", func() bool {
		return tally.count("s1") >= from1+20 && tally.count("s2") >= from2+20
	}, describe(s1, s2))

	s1.close(t)
	awaitTxn(t, "s2 to get every partition after s1 left", func() bool {
		return len(s2.partitions(t)) == partitions
	}, describe(s2))
	from2 = tally.count("s2")
	awaitTxn(t, "s2 to commit alone", func() bool {
		return tally.count("s2") >= from2+20
	}, describe(s2))

	prod.stop(t)
	ends := endOffsets(t, adm, in)
	tally.awaitAll(t, ends)
	awaitCommitted(t, adm, group, in, ends)
	s2.close(t)
	tally.check(t, ends, true)
	checkCommitted(t, adm, group, in, ends)
	if offsetsSum(ends) != prod.n {
		t.Errorf("end offsets of %s %v add up to %d, %d records were produced", in, ends, offsetsSum(ends), prod.n)
	}

	// B holds each input record once, transformed, in order.
	inVals := txnReadTopic(t, addr, in, kgo.ReadUncommitted(), ends)
	outEnds := txnAwaitStable(t, adm, out)
	_, outRecs := txnReadTopicRecords(t, addr, out, kgo.ReadCommitted(), outEnds)
	seen := map[int32]map[int64]int{}
	n := 0
	for _, bp := range slices.Sorted(maps.Keys(outRecs)) {
		last := map[int32]int64{} // the last input offset of each input partition in this partition of B
		for _, r := range outRecs[bp] {
			n++
			p, o, err := txnParseInputKey(string(r.Key))
			if err != nil || p < 0 || p >= partitions || o < 0 || o >= ends[p] {
				t.Errorf("%s[%d] offset %d: key %q is no input record (%v); input end offsets %v", out, bp, r.Offset, r.Key, err, ends)
				continue
			}
			if seen[p] == nil {
				seen[p] = map[int64]int{}
			}
			if seen[p][o]++; seen[p][o] == 2 {
				t.Errorf("%s: input record %d/%d twice (again at %d/%d)", out, p, o, bp, r.Offset)
			}
			if want := "t:" + inVals[p][o]; string(r.Value) != want {
				t.Errorf("%s[%d] offset %d (input %d/%d): value %q, want %q", out, bp, r.Offset, p, o, r.Value, want)
			}
			if l, ok := last[p]; ok && o <= l {
				t.Errorf("%s[%d] offset %d: input %d/%d after input %d/%d: out of order", out, bp, r.Offset, p, o, p, l)
			}
			last[p] = o
		}
	}
	missing := 0
	for p, e := range ends {
		for o := range e {
			if seen[p][o] == 0 {
				if missing++; missing <= 5 {
					t.Errorf("%s: input record %d/%d missing", out, p, o)
				}
			}
		}
	}
	if n != offsetsSum(ends) || missing > 0 {
		t.Errorf("%s has %d records read_committed (%d inputs missing), want %d, one per input record", out, n, missing, offsetsSum(ends))
	}
	t.Logf("%s; %d records transformed exactly once", tally.summary(), n)
}

// txnParseInputKey parses a key "<partition>/<offset>".
func txnParseInputKey(k string) (int32, int64, error) {
	ps, os, ok := strings.Cut(k, "/")
	if !ok {
		return 0, 0, errors.New("no slash")
	}
	p, err := strconv.ParseInt(ps, 10, 32)
	if err != nil {
		return 0, 0, err
	}
	o, err := strconv.ParseInt(os, 10, 64)
	return int32(p), o, err
}
