package integration

// Transactions across SIGKILL of the binary in sync flush mode: an
// acknowledged commit is durable and complete, an abort is final, and
// transactions left open are aborted after the restart.

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/internal/testenv"
)

// crashTxnOutcome is what a producer of TestTxnCrashKill9 knows of one of
// its transactions.
type crashTxnOutcome int

const (
	// crashTxnOpen: never ended (EndTransaction not called): it must
	// never be visible to read_committed.
	crashTxnOpen crashTxnOutcome = iota
	// crashTxnAborted: EndTransaction with an abort was called
	// (acknowledged or not): never visible.
	crashTxnAborted
	// crashTxnCommitInFlight: EndTransaction with a commit was called but
	// did not return nil (the broker was killed): all its records are
	// visible, or none. The verification after the restart decides it.
	crashTxnCommitInFlight
	// crashTxnCommitted: EndTransaction with a commit returned nil: every
	// record is visible.
	crashTxnCommitted
)

func (o crashTxnOutcome) String() string {
	return [...]string{"open", "aborted", "commit in flight", "committed"}[o]
}

// crashTxn is one transaction of TestTxnCrashKill9.
type crashTxn struct {
	name    string   // r<round>.p<producer>.t<n>
	recs    []txnRec // produced, in order; values <name>.<i>
	acked   []bool   // acknowledged by the broker, by record
	outcome crashTxnOutcome
}

// crashTxnLog is every transaction of a TestTxnCrashKill9 run.
type crashTxnLog struct {
	mu   sync.Mutex
	txns []*crashTxn
	by   map[string]*crashTxn // by name
	// ended is, by transactional id, the producer id and epoch the
	// client had after its last acknowledged EndTxn: under transactions
	// v2 that EndTxn bumped the epoch durably (sync flush), so after a
	// restart the coordinator has that epoch or a later one.
	ended map[string][2]int64
}

func (l *crashTxnLog) add(tx *crashTxn) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.txns = append(l.txns, tx)
	if l.by == nil {
		l.by = map[string]*crashTxn{}
	}
	l.by[tx.name] = tx
}

// counts counts the transactions of round by outcome.
func (l *crashTxnLog) counts(round int) map[crashTxnOutcome]int {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := map[crashTxnOutcome]int{}
	for _, tx := range l.txns {
		if strings.HasPrefix(tx.name, fmt.Sprintf("r%d.", round)) {
			out[tx.outcome]++
		}
	}
	return out
}

// txnCrashTimeout is the transaction timeout of TestTxnCrashKill9's
// producers: transactions open at a kill are aborted this long after they
// started (the broker looks every 500 ms).
const txnCrashTimeout = 3 * time.Second

// TestTxnCrashKill9: the binary in sync flush mode is killed with SIGKILL
// while two kgo transactional producers (transactional ids reused in every
// round) run transactions of 1–8 records over 3 partitions, committing
// about two in three and aborting the others, then started again; N times
// (KBROKER_TXN_KILLS, 3 by default). Each round kills a random 100–800 ms
// after both producers had a commit acknowledged, then, in turn: just
// after producer 0 sent the EndTxn of a commit (within 0.5 ms, so that
// the commit is in flight at the kill), while producer 0 holds a
// transaction open with its records acknowledged, or at once. After each
// restart,
// once DescribeTransactions shows no transaction open or being completed
// and the last stable offsets reached the end offsets (transactions open
// at the kill are aborted when their 3 s timeout passes), a read_committed
// consumer reads from the start: every transaction of any round whose
// commit was acknowledged, whole; no aborted one, nor one never ended; a
// transaction whose commit was in flight at the kill whole or not at all
// (and the same in later rounds); each value once, in each producer's
// order per partition. A read_uncommitted consumer reads every
// acknowledged record exactly once. The producers run transactions v2
// (kbroker's default transaction.version 2): each transactional id's
// epoch after the restart is at least the one its last acknowledged
// EndTxn answered.
func TestTxnCrashKill9(t *testing.T) {
	t.Parallel()
	kills := testenv.Count(t, "KBROKER_TXN_KILLS", 3)
	start := time.Now()
	o := txnOpts()
	o.flush = "sync"
	b := startBinary(t, o.args(t)...)
	topic := topicName(t)
	createGroupTopic(t, newAdmin(t, b.Addr()), topic, 3)
	ids := []string{topic + ".p0", topic + ".p1"}

	log := &crashTxnLog{}
	for round := 1; round <= kills; round++ {
		txnCrashRound(t, b, topic, ids, round, log)
		restart := time.Now()
		b.start(t)
		t.Logf("round %d: restarted after the kill in %v", round, time.Since(restart).Round(time.Millisecond))
		txnCrashVerify(t, b.Addr(), topic, ids, round, log)
		if t.Failed() {
			return
		}
	}
	log.mu.Lock()
	defer log.mu.Unlock()
	t.Logf("%d kills, %d transactions verified, in %v", kills, len(log.txns), time.Since(start).Round(time.Millisecond))
}

// txnCrashKillPoint is when a round of TestTxnCrashKill9 kills the broker.
type txnCrashKillPoint int

const (
	// killAnytime: at a random moment (mostly while a producer waits to
	// begin its next transaction, the previous one being completed).
	killAnytime txnCrashKillPoint = iota
	// killInEnd: producer 0's next commit is in flight (the kill follows
	// the EndTxn request by 0–0.5 ms).
	killInEnd
	// killOpen: producer 0 has its records of a transaction
	// acknowledged and does not end it: it is open with durable records.
	killOpen
)

func (k txnCrashKillPoint) String() string {
	return [...]string{"at a random moment", "with a commit in flight", "with a transaction open"}[k]
}

// txnCrashRound runs a transactional producer for each of ids on b until
// it has killed b with SIGKILL, a random 100–800 ms after each producer
// had a commit acknowledged, at the round's kill point, and records every
// transaction in log.
func txnCrashRound(t *testing.T, b *binaryBroker, topic string, ids []string, round int, log *crashTxnLog) {
	t.Helper()
	point := txnCrashKillPoint(round % 3)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	firstCommit := make([]chan struct{}, len(ids))
	done := make([]chan struct{}, len(ids)) // closed when producer k stopped
	clients := make([]*kgo.Client, len(ids))
	trigger := make(chan struct{})    // closed: producer 0 is to reach the kill point
	reached := make(chan struct{}, 1) // producer 0 is at the kill point
	for k, id := range ids {
		firstCommit[k] = make(chan struct{})
		done[k] = make(chan struct{})
		mlog := newMemberLog(t, fmt.Sprintf("kgo transactional producer %s of round %d", id, round))
		hook := &txnEndHook{reached: reached}
		cl, err := kgo.NewClient(
			kgo.WithHooks(hook),
			kgo.SeedBrokers(b.Addr()),
			kgo.ClientID(fmt.Sprintf("r%d.p%d", round, k)),
			kgo.TransactionalID(id),
			kgo.TransactionTimeout(txnCrashTimeout),
			kgo.DefaultProduceTopic(topic),
			kgo.RecordPartitioner(kgo.ManualPartitioner()),
			kgo.ProducerLinger(0),
			kgo.RequestTimeoutOverhead(2*time.Second),
			kgo.RetryTimeout(2*time.Second),
			kgo.RecordDeliveryTimeout(10*time.Second),
			kgo.WithLogger(kgo.BasicLogger(&mlog.buf, kgoTxnLogLevel(t), func() string { return time.Now().Format("15:04:05.000000 ") })),
		)
		if err != nil {
			t.Fatal(err)
		}
		clients[k] = cl
		t.Cleanup(cl.Close) // closed below unless the test fails first
		p := txnCrashProducer{cl: cl, id: id, round: round, k: k, log: log, mlog: mlog, firstCommit: firstCommit[k]}
		if k == 0 && point != killAnytime {
			p.point, p.trigger, p.reached, p.hook = point, trigger, reached, hook
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer close(done[k])
			p.run(ctx)
		}()
	}
	stopped := make(chan struct{})
	go func() {
		wg.Wait()
		close(stopped)
	}()

	for k := range ids {
		select {
		case <-firstCommit[k]:
		case <-done[k]:
			t.Fatalf("round %d: producer %d stopped before it had a commit acknowledged (%v)", round, k, log.counts(round))
		case <-b.exited:
			t.Fatalf("round %d: kbroker exited on its own: %v", round, b.err)
		case <-time.After(crashWait):
			t.Fatalf("round %d: producer %d had no commit acknowledged within %v", round, k, crashWait)
		}
	}
	time.Sleep(time.Duration(100+rand.IntN(701)) * time.Millisecond)
	if point != killAnytime {
		close(trigger)
		select {
		case <-reached:
		case <-done[0]:
			// It failed (its log says why): kill anyway.
			t.Logf("round %d: producer 0 stopped before the kill point (%v)", round, log.counts(round))
		case <-time.After(crashWait):
			t.Fatalf("round %d: producer 0 did not reach the kill point within %v", round, crashWait)
		}
		if point == killInEnd {
			time.Sleep(time.Duration(rand.IntN(500)) * time.Microsecond)
		}
	}
	b.kill9(t, fmt.Sprintf("round %d", round), crashWait)

	cancel()
	select {
	case <-stopped:
	case <-time.After(crashWait):
		t.Fatalf("round %d: the producers did not stop within %v", round, crashWait)
	}
	closed := make(chan struct{})
	go func() {
		for _, cl := range clients {
			cl.Close()
		}
		close(closed)
	}()
	select {
	case <-closed:
	case <-time.After(crashWait):
		t.Fatalf("round %d: closing the producers took over %v", round, crashWait)
	}
	t.Logf("round %d: killed the broker %v; transactions by outcome: %v", round, point, log.counts(round))
}

// txnCrashProducer is one producer of a round of TestTxnCrashKill9.
type txnCrashProducer struct {
	cl          *kgo.Client
	id          string // transactional id
	round, k    int
	log         *crashTxnLog
	mlog        *memberLog
	firstCommit chan struct{} // closed at the first acknowledged commit

	// For the producer that brings the kill point about: once trigger is
	// closed, its next transaction reaches point and says so on reached.
	point   txnCrashKillPoint
	trigger chan struct{}
	reached chan struct{}
	hook    *txnEndHook
}

// txnEndHook is a kgo hook that, once armed, signals reached when the
// client has written an EndTxn request.
type txnEndHook struct {
	armed   atomic.Bool
	reached chan struct{}
}

func (h *txnEndHook) OnBrokerWrite(_ kgo.BrokerMetadata, key int16, _ int, _, _ time.Duration, err error) {
	if key == int16(kmsg.EndTxn) && err == nil && h.armed.CompareAndSwap(true, false) {
		h.reached <- struct{}{}
	}
}

// run runs transactions until one fails (the broker is gone) or ctx
// ends, recording each in the log.
func (p *txnCrashProducer) run(ctx context.Context) {
	committed := false
	for n := 0; ctx.Err() == nil; n++ {
		tx := &crashTxn{name: fmt.Sprintf("r%d.p%d.t%d", p.round, p.k, n)}
		recs := make([]*kgo.Record, 1+rand.IntN(8))
		for i := range recs {
			r := txnRec{partition: rand.Int32N(3), value: fmt.Sprintf("%s.%d", tx.name, i)}
			tx.recs = append(tx.recs, r)
			recs[i] = &kgo.Record{Partition: r.partition, Value: []byte(r.value)}
		}
		tx.acked = make([]bool, len(recs))
		p.log.add(tx)
		if err := p.cl.BeginTransaction(); err != nil {
			p.mlog.Printf("test: %s: BeginTransaction: %v", tx.name, err)
			return
		}
		if err := p.produce(ctx, tx, recs); err != nil {
			p.mlog.Printf("test: %s: produce: %v", tx.name, err)
			return
		}
		commit := rand.IntN(3) != 0
		atPoint := false
		if p.trigger != nil {
			select {
			case <-p.trigger:
				atPoint = true
				p.trigger = nil
			default:
			}
		}
		if atPoint && p.point == killOpen {
			p.mlog.Printf("test: %s: at the kill point, open", tx.name)
			p.reached <- struct{}{}
			<-ctx.Done()
			return
		}
		if atPoint {
			commit = true
		}
		p.log.mu.Lock()
		tx.outcome = map[bool]crashTxnOutcome{true: crashTxnCommitInFlight, false: crashTxnAborted}[commit]
		p.log.mu.Unlock()
		if atPoint {
			p.mlog.Printf("test: %s: at the kill point, committing", tx.name)
			p.hook.armed.Store(true) // it signals reached once EndTxn is written
		}
		if err := p.cl.EndTransaction(ctx, kgo.TransactionEndTry(commit)); err != nil {
			p.mlog.Printf("test: %s: EndTransaction (commit %v): %v", tx.name, commit, err)
			return
		}
		if pid, epoch, err := p.cl.ProducerID(ctx); err == nil {
			p.log.mu.Lock()
			if p.log.ended == nil {
				p.log.ended = map[string][2]int64{}
			}
			p.log.ended[p.id] = [2]int64{pid, int64(epoch)}
			p.log.mu.Unlock()
		}
		if commit {
			p.log.mu.Lock()
			tx.outcome = crashTxnCommitted
			p.log.mu.Unlock()
			if !committed {
				committed = true
				close(p.firstCommit)
			}
		}
	}
}

// produce produces recs of tx and waits for every acknowledgement, or
// for ctx to end: kgo does not fail a record whose produce request was in
// flight at the kill until the client is closed (then the promises run;
// the caller verifies after closing).
func (p *txnCrashProducer) produce(ctx context.Context, tx *crashTxn, recs []*kgo.Record) error {
	var (
		wg       sync.WaitGroup
		firstErr error
	)
	for i, r := range recs {
		wg.Add(1)
		p.cl.Produce(ctx, r, func(_ *kgo.Record, err error) {
			defer wg.Done()
			p.log.mu.Lock()
			defer p.log.mu.Unlock()
			if err == nil {
				tx.acked[i] = true
			} else if firstErr == nil {
				firstErr = err
			}
		})
	}
	done := make(chan struct{})
	go func() {
		wg.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-ctx.Done():
		return ctx.Err()
	}
	p.log.mu.Lock()
	defer p.log.mu.Unlock()
	return firstErr
}

// txnCrashVerify waits until the restarted broker has no transaction of
// ids open and the last stable offsets reached the end offsets, then
// checks what read_committed and read_uncommitted consumers read against
// log, and decides the commits that were in flight at the kill.
func txnCrashVerify(t *testing.T, addr, topic string, ids []string, round int, log *crashTxnLog) {
	t.Helper()
	adm := newAdmin(t, addr)
	states := map[string]string{}
	described := map[string]kadm.DescribedTransaction{}
	awaitTxn(t, fmt.Sprintf("round %d: the transactions to be complete after the restart", round), func() bool {
		for _, id := range ids {
			described[id] = describeTxn(t, adm, id)
			states[id] = described[id].State
		}
		for _, st := range states {
			if st != "CompleteCommit" && st != "CompleteAbort" && st != "Empty" {
				return false
			}
		}
		return true
	}, func() string { return fmt.Sprint(states) })
	log.mu.Lock()
	for _, id := range ids {
		// Transactions v2: the epoch of an acknowledged EndTxn survives
		// the kill (it is in the durable Prepare record).
		if e, ok := log.ended[id]; ok {
			d := described[id]
			if d.ProducerID == e[0] && int64(d.ProducerEpoch) < e[1] {
				t.Errorf("round %d: %s has producer %d epoch %d after the restart, below the epoch %d its last acknowledged EndTxn gave", round, id, d.ProducerID, d.ProducerEpoch, e[1])
			}
		}
	}
	log.mu.Unlock()
	ends := txnAwaitStable(t, adm, topic)

	log.mu.Lock()
	defer log.mu.Unlock()
	type pos struct {
		partition int32
		index     int // in the partition, as read
	}
	committed := txnReadTopic(t, addr, topic, kgo.ReadCommitted(), ends)
	seen := map[string]pos{}
	visible := map[*crashTxn]int{} // records read, by transaction
	for p, vs := range committed {
		last := map[string][2]int{} // the last (transaction, record) number read of each producer "r<round>.p<k>"
		for i, v := range vs {
			if prev, dup := seen[v]; dup {
				t.Errorf("read_committed: %s at %d/%d and at index %d of partition %d", v, p, i, prev.index, prev.partition)
				continue
			}
			seen[v] = pos{p, i}
			tx, ri, prod, tn := txnCrashParse(log, v)
			if tx == nil || tx.recs[ri].partition != p {
				t.Errorf("read_committed: %s in partition %d: no such record was produced", v, p)
				continue
			}
			visible[tx]++
			if l, ok := last[prod]; ok && (tn < l[0] || tn == l[0] && ri <= l[1]) {
				t.Errorf("read_committed: partition %d: %s after %s.t%d.%d: out of the producer's order", p, v, prod, l[0], l[1])
			}
			last[prod] = [2]int{tn, ri}
		}
	}
	decided := map[string]bool{}
	for _, tx := range log.txns {
		n := visible[tx]
		switch tx.outcome {
		case crashTxnCommitted:
			if n != len(tx.recs) {
				t.Errorf("round %d: transaction %s, its commit acknowledged, has %d of its %d records visible to read_committed", round, tx.name, n, len(tx.recs))
			}
		case crashTxnCommitInFlight:
			switch n {
			case len(tx.recs):
				tx.outcome = crashTxnCommitted
				decided[tx.name] = true
			case 0:
				tx.outcome = crashTxnAborted
				decided[tx.name] = false
			default:
				t.Errorf("round %d: transaction %s, its commit in flight at the kill, has %d of its %d records visible to read_committed: want all or none", round, tx.name, n, len(tx.recs))
			}
		default:
			if n != 0 {
				t.Errorf("round %d: transaction %s (%v) has %d of its %d records visible to read_committed", round, tx.name, tx.outcome, n, len(tx.recs))
			}
		}
	}

	uncommitted := txnReadTopic(t, addr, topic, kgo.ReadUncommitted(), ends)
	read := map[string]int{}
	for p, vs := range uncommitted {
		for _, v := range vs {
			if read[v]++; read[v] == 2 {
				t.Errorf("read_uncommitted: %s twice (partition %d)", v, p)
			}
			if tx, ri, _, _ := txnCrashParse(log, v); tx == nil || tx.recs[ri].partition != p {
				t.Errorf("read_uncommitted: %s in partition %d: no such record was produced", v, p)
			}
		}
	}
	missing := 0
	for _, tx := range log.txns {
		for i, r := range tx.recs {
			if tx.acked[i] && read[r.value] == 0 {
				if missing++; missing <= 10 {
					t.Errorf("read_uncommitted: %s (%v), acknowledged in partition %d, is missing", r.value, tx.outcome, r.partition)
				}
			}
		}
	}
	if missing > 10 {
		t.Errorf("read_uncommitted: %d acknowledged records missing", missing)
	}
	var nvis int
	for _, vs := range committed {
		nvis += len(vs)
	}
	t.Logf("round %d: transactional ids %v; end offsets %v; %d records visible to read_committed, %d to read_uncommitted; commits in flight at the kill, visible or not: %v",
		round, states, ends, nvis, len(read), decided)
}

// txnCrashParse finds the transaction and record of a value
// "r<round>.p<k>.t<n>.<i>" in log (locked by the caller), with its
// producer "r<round>.p<k>" and n.
func txnCrashParse(log *crashTxnLog, v string) (tx *crashTxn, index int, producer string, n int) {
	dot := strings.LastIndexByte(v, '.')
	if dot < 0 {
		return nil, 0, "", 0
	}
	tx = log.by[v[:dot]]
	i, err := strconv.Atoi(v[dot+1:])
	if tx == nil || err != nil || i < 0 || i >= len(tx.recs) {
		return nil, 0, "", 0
	}
	name := tx.name
	tdot := strings.LastIndex(name, ".t")
	n, _ = strconv.Atoi(name[tdot+2:])
	return tx, i, name[:tdot], n
}
