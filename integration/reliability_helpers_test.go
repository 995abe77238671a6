package integration

// The machinery of the reliability tests (reliability_crash_test.go,
// power_loss_test.go, shutdown_test.go): the full load they run against
// the kbroker binary, a record of everything the broker acknowledged, and
// the checks after each restart.
//
// The load, all at once: an idempotent acks=all producer on a topic of 3
// partitions ("plain"), a consumer-group member consuming it and
// committing after every poll, and a transactional producer committing
// and aborting small transactions over the 2 partitions of a second topic
// ("txn"). Every round uses a new transactional id, so a transaction open
// when the broker went down is ended only by the broker's timeout check,
// not by a fencing InitProducerId.

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"regexp"
	"slices"
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

const (
	relPlainPartitions = 3
	relTxnPartitions   = 2
	// relTxnTimeout is the transaction timeout of the transactional
	// producer: a transaction left open by a kill is aborted by the
	// broker that long after it began (the check runs every 200 ms:
	// relOpts).
	relTxnTimeout = 3 * time.Second
	// The producer of the plain topic pauses relPace after every
	// relPaceRecords records (at most ~2000 records a second).
	relPaceRecords = 20
	relPace        = 10 * time.Millisecond
	// relWait bounds every wait of the reliability tests.
	relWait = 30 * time.Second
)

// relOpts are the broker settings of the reliability tests in flush mode
// flush: the group settings of the group tests, timed-out transactions
// looked for every 200 ms, and committed offsets and transaction state
// snapshotted every 300 ms (so that kills also land around snapshots).
func relOpts(flush string) brokerOpts {
	props := maps.Clone(groupBrokerProps)
	props["transaction.abort.timed.out.transaction.cleanup.interval.ms"] = "200"
	props["kbroker.offsets.snapshot.interval.ms"] = "300"
	return brokerOpts{flush: flush, props: props}
}

// relAck is a record of the plain topic the broker acknowledged, and
// when the producer heard of it.
type relAck struct {
	crashAck
	at time.Time
}

// relCommit is a group commit of one partition the broker acknowledged,
// and when the member heard of it.
type relCommit struct {
	partition int32
	offset    int64
	at        time.Time
}

// relOutcome is what the client was told about a transaction.
type relOutcome int

const (
	// relOpen: never ended, or its abort failed. It must never become
	// visible to read_committed; the broker aborts it after its timeout.
	relOpen relOutcome = iota
	// relCommitted: EndTransaction(commit) returned nil (or a sentinel:
	// a plain record written to the txn topic to read up to).
	relCommitted
	// relAborted: EndTransaction(abort) returned nil.
	relAborted
	// relUnknown: EndTransaction(commit) failed (the broker went down
	// during it). It is either wholly visible or not at all.
	relUnknown
)

func (o relOutcome) String() string {
	return [...]string{"open", "committed", "aborted", "unknown"}[o]
}

// relTxnRec is a record of a transaction: its partition, its offset
// once acknowledged (else -1), and its value.
type relTxnRec struct {
	partition int32
	offset    int64
	value     string
}

// relTxn is one transaction of the transactional producer.
type relTxn struct {
	name    string // t<round>-<seq>
	round   int
	outcome relOutcome
	at      time.Time // when EndTransaction(commit) returned nil
	recs    []relTxnRec
	// lost is set once a lossy run found a committed transaction gone.
	lost bool
	// visible is set once its records were read (unknown outcome).
	visible bool
}

// relFigures are what the runs measured, for the log and README.
type relFigures struct {
	kills         int
	acked         int // plain records acknowledged
	commits       int // group commits acknowledged
	txnCommitted  int
	txnAborted    int
	txnOpen       int // open at an interruption
	txnHeld       int // of those, held open with acknowledged records
	txnUnknown    int // a commit in flight at an interruption
	unknownLanded int // of those, how many turned out committed
	sentinels     int
	// Lossy runs only: acknowledged but missing after a restart.
	lostRecords int
	lostCommits int // partitions whose committed offset went back
	lostTxns    int
	// How long before its kill the oldest lost record, group commit and
	// committed transaction was acknowledged.
	maxLossAge, maxCommitLossAge, maxTxnLossAge time.Duration
	lossPerRound                                []int
	// recoveries counts restarts whose log said the store was not clean.
	recoveries int
}

// relRun is a broker under the reliability load, and everything it
// acknowledged so far.
type relRun struct {
	t     *testing.T
	b     *binaryBroker
	lossy bool // a SIGKILL may lose acknowledged data (pool mode)
	pad   int  // the size of the plain topic's values
	// paced: the producer of the plain topic pauses now and then (see
	// relPace); unpaced, it has records in flight at every moment.
	paced bool

	plain, txnTopic, group string

	acked   []relAck
	commits map[int32]int64 // the highest acknowledged commit per partition
	// roundCommits are the last round's acknowledged commits, in order.
	roundCommits []relCommit
	// committed is what FetchOffsets showed after the last restart: where
	// the next member starts.
	committed map[int32]int64
	txns      []*relTxn
	byValue   map[string]*relTxn
	logMark   int // where the current run's log starts in b.logs
	// interruptedAt is when each round's broker was stopped.
	interruptedAt map[int]time.Time
	fig           relFigures
}

// startRel starts the binary with o and commit-log files of 1 MiB (so
// that the load rolls to new files every few rounds), and creates the
// topics. The values of the plain topic's records are padded to pad
// bytes.
func startRel(t *testing.T, o brokerOpts, lossy bool, pad int) *relRun {
	t.Helper()
	o.check(t)
	r := &relRun{
		t: t, lossy: lossy, pad: pad, paced: true,
		plain: topicName(t) + ".plain", txnTopic: topicName(t) + ".txn", group: groupName(t),
		commits: map[int32]int64{}, committed: map[int32]int64{}, byValue: map[string]*relTxn{},
		interruptedAt: map[int]time.Time{},
	}
	r.b = startBinary(t, append(o.args(t), "--segment-bytes", "1048576")...)
	adm := newAdmin(t, r.b.Addr())
	createGroupTopic(t, adm, r.plain, relPlainPartitions)
	createGroupTopic(t, adm, r.txnTopic, relTxnPartitions)
	return r
}

// relLoad is one round's load and what it was acknowledged.
type relLoad struct {
	mu          sync.Mutex
	acks        []relAck
	commits     map[int32]int64
	acked       []relCommit // the acknowledged commits, in order
	txns        []*relTxn
	unexpected  []string // errors while the broker was up
	interrupted atomic.Bool
	// Closed at the first acknowledgement of each kind.
	firstAck, firstCommit, firstTxn chan struct{}
	produced                        int
	ncommits                        int // group commits acknowledged
	// hold: the transactional producer holds a transaction open, its
	// records acknowledged, until the interruption; heldOpen is closed
	// once it does.
	hold     bool
	heldOpen chan struct{}
	held     int
}

// failf records an error a client saw; before the interruption it is
// one the broker should not have caused.
func (l *relLoad) failf(format string, args ...any) {
	if l.interrupted.Load() {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.unexpected = append(l.unexpected, fmt.Sprintf(format, args...))
}

// round runs the load on the broker until interrupt, called a random
// 0–300 ms after every part of the load had its first acknowledgement,
// has stopped it (SIGKILL, SIGTERM, ...: interrupt returns once the
// process is gone). In even rounds the transactional producer also holds
// a transaction open, its records acknowledged, from before the
// interruption on: only the broker's timeout can end it. Then round stops
// the clients, each within relWait, and adds what they were acknowledged
// to r.
func (r *relRun) round(round int, interrupt func()) {
	t := r.t
	t.Helper()
	l := &relLoad{
		commits:  maps.Clone(r.commits),
		firstAck: make(chan struct{}), firstCommit: make(chan struct{}), firstTxn: make(chan struct{}),
		hold: round%2 == 0, heldOpen: make(chan struct{}),
	}
	if !l.hold {
		close(l.heldOpen)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// Each client registers how to close it. After the interruption (or
	// when the round fails early) they are all closed at once, and one
	// that does not close in time is named.
	type closer struct {
		name string
		f    func()
		done chan struct{}
	}
	var (
		closersMu sync.Mutex
		closers   []*closer
		closing   bool
	)
	addCloser := func(name string, f func()) {
		c := &closer{name: name, f: f, done: make(chan struct{})}
		closersMu.Lock()
		defer closersMu.Unlock()
		closers = append(closers, c)
		if closing {
			go func() { c.f(); close(c.done) }()
		}
	}
	closeAll := func() []*closer {
		closersMu.Lock()
		defer closersMu.Unlock()
		if !closing {
			closing = true
			for _, c := range closers {
				go func() { c.f(); close(c.done) }()
			}
		}
		return slices.Clone(closers)
	}
	defer closeAll()
	var wg sync.WaitGroup
	for _, work := range []func(context.Context, int, *relLoad, func(string, func())){r.produce, r.consume, r.transact} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			work(ctx, round, l, addCloser)
		}()
	}

	for _, ch := range []struct {
		what string
		c    chan struct{}
	}{{"a produced record", l.firstAck}, {"a group commit", l.firstCommit}, {"a transaction", l.firstTxn}, {"a transaction held open", l.heldOpen}} {
		select {
		case <-ch.c:
		case <-r.b.exited:
			t.Fatalf("round %d: kbroker exited on its own: %v", round, r.b.err)
		case <-time.After(relWait):
			l.mu.Lock()
			defer l.mu.Unlock()
			t.Fatalf("round %d: no acknowledgement of %s within %v; client errors: %v", round, ch.what, relWait, l.unexpected)
		}
	}
	time.Sleep(time.Duration(rand.IntN(301)) * time.Millisecond)
	select {
	case <-r.b.exited:
		t.Fatalf("round %d: kbroker exited on its own: %v", round, r.b.err)
	default:
	}
	l.interrupted.Store(true)
	interruptedAt := time.Now()
	interrupt()

	// Close the clients at once (a transactional producer retries a
	// batch it may have sent until its client is closed, whatever its
	// context says): each must be done, and every request it had in
	// flight answered or failed, within relWait.
	cancel()
	timeout := time.After(relWait)
	for _, c := range closeAll() {
		select {
		case <-c.done:
		case <-timeout:
			t.Fatalf("round %d: closing the %s took over %v after the interruption", round, c.name, relWait)
		}
	}
	stopped := make(chan struct{})
	go func() {
		wg.Wait()
		close(stopped)
	}()
	select {
	case <-stopped:
	case <-timeout:
		t.Fatalf("round %d: the clients did not stop within %v of the interruption", round, relWait)
	}

	// What the round was acknowledged.
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, e := range l.unexpected {
		t.Errorf("round %d: while the broker was up: %s", round, e)
	}
	r.acked = append(r.acked, l.acks...)
	r.fig.acked += len(l.acks)
	r.fig.commits += l.ncommits
	for p, o := range l.commits {
		r.commits[p] = max(r.commits[p], o)
	}
	r.roundCommits = l.acked
	var open, unknown, committed, aborted int
	for _, tx := range l.txns {
		r.txns = append(r.txns, tx)
		for _, rec := range tx.recs {
			r.byValue[rec.value] = tx
		}
		switch tx.outcome {
		case relOpen:
			open++
		case relUnknown:
			unknown++
		case relCommitted:
			committed++
		case relAborted:
			aborted++
		}
	}
	r.fig.txnOpen += open
	r.fig.txnHeld += l.held
	r.fig.txnUnknown += unknown
	r.fig.txnCommitted += committed
	r.fig.txnAborted += aborted
	r.fig.kills++
	r.interruptedAt[round] = interruptedAt
	t.Logf("round %d: interrupted after %d of %d records acknowledged, commits %v, transactions: %d committed, %d aborted, %d open, %d commit in flight",
		round, len(l.acks), l.produced, l.commits, committed, aborted, open, unknown)
}

// produce is the idempotent producer of the plain topic.
func (r *relRun) produce(ctx context.Context, round int, l *relLoad, addCloser func(string, func())) {
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(r.b.Addr()),
		kgo.DefaultProduceTopic(r.plain),
		kgo.ClientID(fmt.Sprintf("rel-producer-%d", round)),
		kgo.RecordDeliveryTimeout(5*time.Second),
		kgo.RequestTimeoutOverhead(3*time.Second),
		kgo.RetryTimeout(3*time.Second),
		kgo.ProduceRequestTimeout(3*time.Second),
		kgo.ProducerLinger(0),
		kgo.MaxBufferedRecords(500),
		// Uncompressed, so that the padding takes room in the log.
		kgo.ProducerBatchCompression(kgo.NoCompression()),
	)
	if err != nil {
		l.failf("producer: %v", err)
		return
	}
	var pending sync.WaitGroup // one per Produce until its promise
	addCloser("producer", cl.Close)
	n := 0
	for ctx.Err() == nil {
		if r.paced && n%relPaceRecords == relPaceRecords-1 {
			// Paced, so that re-reading everything after each restart
			// stays cheap.
			time.Sleep(relPace)
		}
		value := fmt.Sprintf("r%d-%d-", round, n)
		value += strings.Repeat("x", max(0, r.pad-len(value)))
		n++
		pending.Add(1)
		cl.Produce(ctx, &kgo.Record{Value: []byte(value)}, func(rec *kgo.Record, err error) {
			defer pending.Done()
			if err != nil {
				if !errors.Is(err, context.Canceled) {
					l.failf("produce %s: %v", value, err)
				}
				return
			}
			at := time.Now()
			l.mu.Lock()
			defer l.mu.Unlock()
			if len(l.acks) == 0 {
				close(l.firstAck)
			}
			l.acks = append(l.acks, relAck{crashAck: crashAck{round: round, partition: rec.Partition, offset: rec.Offset, value: value}, at: at})
		})
	}
	pending.Wait() // the client is closed: every promise is called
	l.mu.Lock()
	l.produced = n
	l.mu.Unlock()
}

// consume is the group member on the plain topic: it commits after every
// poll, and must start every partition exactly at the offset committed
// before the round.
func (r *relRun) consume(ctx context.Context, round int, l *relLoad, addCloser func(string, func())) {
	log := newMemberLog(r.t, fmt.Sprintf("reliability member of round %d", round))
	cl, err := kgo.NewClient(append(groupKgoOpts(r.group, r.plain),
		kgo.SeedBrokers(r.b.Addr()),
		kgo.ClientID(fmt.Sprintf("rel-member-%d", round)),
		kgo.RequestTimeoutOverhead(3*time.Second),
		kgo.RetryTimeout(3*time.Second),
		kgo.WithLogger(kgo.BasicLogger(&log.buf, kgoGroupLogLevel(r.t), nil)),
	)...)
	if err != nil {
		l.failf("member: %v", err)
		return
	}
	addCloser("group member", func() {
		// Leave without waiting for the broker, which is gone.
		gone, cancel := context.WithCancel(context.Background())
		cancel()
		cl.LeaveGroupContext(gone)
		cl.Close()
	})
	next := maps.Clone(r.committed) // the offset each partition must deliver next
	for ctx.Err() == nil {
		fs := cl.PollRecords(ctx, 200)
		recs := fs.Records()
		if ctx.Err() != nil {
			cl.AllowRebalance()
			return
		}
		fs.EachError(func(topic string, p int32, err error) {
			l.failf("member: fetch %s[%d]: %v", topic, p, err)
		})
		if len(recs) == 0 {
			cl.AllowRebalance()
			continue
		}
		offs := map[int32]int64{}
		for _, rec := range recs {
			if rec.Offset != next[rec.Partition] {
				l.failf("member: partition %d: delivered offset %d, want %d (committed %v before the round)", rec.Partition, rec.Offset, next[rec.Partition], r.committed)
			}
			next[rec.Partition] = rec.Offset + 1
			offs[rec.Partition] = rec.Offset + 1
		}
		err := cl.CommitRecords(ctx, recs...)
		cl.AllowRebalance()
		if err != nil {
			if ctx.Err() == nil {
				l.failf("member: commit of %v: %v", offs, err)
			}
			log.Printf("test: commit of %v: %v", offs, err)
			return // the broker is gone: the commit's outcome is unknown
		}
		at := time.Now()
		l.mu.Lock()
		for p, o := range offs {
			l.commits[p] = max(l.commits[p], o)
			l.acked = append(l.acked, relCommit{partition: p, offset: o, at: at})
		}
		if l.ncommits++; l.ncommits == 1 {
			close(l.firstCommit)
		}
		l.mu.Unlock()
	}
}

// transact is the transactional producer: transactions of 1–4 records
// over the partitions of the txn topic, two in three committed, the rest
// aborted, one after the other, with the transactional id rel-<round>.
func (r *relRun) transact(ctx context.Context, round int, l *relLoad, addCloser func(string, func())) {
	id := fmt.Sprintf("rel.%s.%d", r.txnTopic, round)
	log := newMemberLog(r.t, "reliability transactional producer "+id)
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(r.b.Addr()),
		kgo.TransactionalID(id),
		kgo.TransactionTimeout(relTxnTimeout),
		kgo.DefaultProduceTopic(r.txnTopic),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerLinger(0),
		kgo.ClientID(id),
		kgo.RequestTimeoutOverhead(3*time.Second),
		kgo.RetryTimeout(3*time.Second),
		kgo.RecordDeliveryTimeout(5*time.Second),
		kgo.ProduceRequestTimeout(3*time.Second),
		kgo.WithLogger(kgo.BasicLogger(&log.buf, kgoGroupLogLevel(r.t), nil)),
	)
	if err != nil {
		l.failf("transactional producer: %v", err)
		return
	}
	addCloser("transactional producer", cl.Close)
	ended := 0
	for seq := 0; ctx.Err() == nil; seq++ {
		tx := &relTxn{name: fmt.Sprintf("t%d-%d", round, seq), round: round}
		krs := make([]*kgo.Record, 1+rand.IntN(4))
		for i := range krs {
			p := int32(rand.IntN(relTxnPartitions))
			v := fmt.Sprintf("%s-%d", tx.name, i)
			tx.recs = append(tx.recs, relTxnRec{partition: p, offset: -1, value: v})
			krs[i] = &kgo.Record{Partition: p, Value: []byte(v)}
		}
		l.mu.Lock()
		l.txns = append(l.txns, tx)
		l.mu.Unlock()
		if err := cl.BeginTransaction(); err != nil {
			l.failf("transaction %s: begin: %v", tx.name, err)
			return
		}
		res := cl.ProduceSync(ctx, krs...) // results in the order of the acknowledgements
		l.mu.Lock()
		for _, pr := range res {
			if i := slices.Index(krs, pr.Record); i >= 0 && pr.Err == nil {
				tx.recs[i].offset = pr.Record.Offset
			}
		}
		l.mu.Unlock()
		if err := res.FirstErr(); err != nil {
			if ctx.Err() == nil {
				l.failf("transaction %s: produce: %v", tx.name, err)
			}
			return // left open
		}
		if l.hold && ended > 0 {
			close(l.heldOpen)
			l.mu.Lock()
			l.held++
			l.mu.Unlock()
			<-ctx.Done()
			return
		}
		commit := rand.IntN(3) != 0
		err := cl.EndTransaction(ctx, kgo.TransactionEndTry(commit))
		l.mu.Lock()
		switch {
		case err == nil && commit:
			tx.outcome, tx.at = relCommitted, time.Now()
		case err == nil:
			tx.outcome = relAborted
		case commit:
			tx.outcome = relUnknown
		}
		if err == nil {
			if ended++; ended == 1 {
				close(l.firstTxn)
			}
		}
		l.mu.Unlock()
		if err != nil {
			if ctx.Err() == nil {
				l.failf("transaction %s: end (commit %v): %v", tx.name, commit, err)
			}
			return
		}
	}
}

// kill is an interruption: SIGKILL, then wait for the process to go.
func (r *relRun) kill() {
	t := r.t
	t.Helper()
	r.b.kill9(t, "interruption", relWait)
}

// relBadLog finds what must not be in a broker's log: errors, panics,
// data races.
var relBadLog = regexp.MustCompile(`(?m)^.*(\tERROR\t|\tDPANIC\t|\tPANIC\t|\tFATAL\t|^panic:|WARNING: DATA RACE).*$`)

// checkLog fails the test if the log of the broker's current run (since
// the last restart) has an error line.
func (r *relRun) checkLog(what string) {
	r.t.Helper()
	all := r.b.logs.String()
	run := all[min(r.logMark, len(all)):]
	if bad := relBadLog.FindAllString(run, 5); len(bad) > 0 {
		r.t.Errorf("%s: the broker's log has errors:\n%s", what, strings.Join(bad, "\n"))
	}
}

// relStoreOpenedRE finds the clean flag of the "store opened" line.
var relStoreOpenedRE = regexp.MustCompile(`store opened.*"clean": (true|false)`)

// storeClean waits for the "store opened" line of the current run (the
// process writes its log to stderr, which may arrive after the listening
// line on stdout) and returns its clean flag.
func (r *relRun) storeClean(what string) bool {
	t := r.t
	t.Helper()
	start := time.Now()
	for {
		run := r.b.logs.String()[r.logMark:]
		if m := relStoreOpenedRE.FindStringSubmatch(run); m != nil {
			return m[1] == "true"
		}
		if time.Since(start) > relWait {
			t.Fatalf("%s: no \"store opened\" line with clean in the log of the restart within %v:\n%s", what, relWait, run)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// restart checks the log of the run that just ended, starts the broker
// again on its data directory, and returns whether the new run found the
// store clean (no recovery scan). The start, recovery included, must
// succeed and log no error.
func (r *relRun) restart(round int) bool {
	t := r.t
	t.Helper()
	r.checkLog(fmt.Sprintf("round %d: before the restart", round))
	r.logMark = len(r.b.logs.String())
	start := time.Now()
	r.b.start(t)
	took := time.Since(start)
	clean := r.storeClean(fmt.Sprintf("round %d", round))
	if !clean {
		r.fig.recoveries++
	}
	r.checkLog(fmt.Sprintf("round %d: the restart", round))
	t.Logf("round %d: restarted in %v (store clean: %v)", round, took.Round(time.Millisecond), clean)
	return clean
}

// relShort is a value of the plain topic without its padding.
func relShort(v string) string { return strings.TrimRight(v, "x") }

// relRecord is a record read back: data or control.
type relRecord struct {
	offset  int64
	value   string
	control bool
	txnal   bool // in a transactional batch
}

// relRead reads topic from the start at isolation level level, up to
// until[p] for each partition p with until[p] >= 0: it stops once it has
// seen a record (data or control) at or past until[p] on every such
// partition, so the record at until[p] must be one the level delivers.
// It returns the records up to until, by partition, in order.
func relRead(t *testing.T, addr, topic string, level kgo.IsolationLevel, until map[int32]int64) map[int32][]relRecord {
	t.Helper()
	got := map[int32][]relRecord{}
	parts := map[int32]kgo.Offset{}
	next := map[int32]int64{}
	for p, u := range until {
		if u >= 0 {
			parts[p] = kgo.NewOffset().AtStart()
			next[p] = 0
		}
	}
	if len(parts) == 0 {
		return got
	}
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(addr),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: parts}),
		kgo.FetchIsolationLevel(level),
		kgo.KeepControlRecords(),
		kgo.FetchMaxWait(200*time.Millisecond),
		kgo.RequestTimeoutOverhead(5*time.Second),
		kgo.RetryTimeout(10*time.Second),
	)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	done := func() bool {
		for p := range parts {
			if next[p] <= until[p] {
				return false
			}
		}
		return true
	}
	ctx, cancel := context.WithTimeout(context.Background(), relWait)
	defer cancel()
	for !done() {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			for p := range parts {
				if next[p] <= until[p] {
					t.Logf("reading %s[%d] is stuck at %d: %s", topic, p, next[p], relFetchDump(t, addr, topic, p, next[p], level))
				}
			}
			t.Fatalf("reading %s: after %v got up to %v (next offsets), want past %v", topic, relWait, next, until)
		}
		fs.EachError(func(topic string, p int32, err error) {
			t.Errorf("reading %s[%d]: %v", topic, p, err)
		})
		fs.EachRecord(func(rec *kgo.Record) {
			p := rec.Partition
			if rec.Offset > until[p] {
				return
			}
			if rec.Offset < next[p] {
				t.Errorf("reading %s[%d]: offset %d after %d", topic, p, rec.Offset, next[p]-1)
			}
			next[p] = rec.Offset + 1
			got[p] = append(got[p], relRecord{offset: rec.Offset, value: string(rec.Value), control: rec.Attrs.IsControl(), txnal: rec.Attrs.IsTransactional()})
		})
		if t.Failed() {
			t.FailNow()
		}
	}
	return got
}

// relStable are topic's last stable offsets, by partition.
func relStable(t *testing.T, adm *kadm.Client, topic string) map[int32]int64 {
	t.Helper()
	lo, err := adm.ListCommittedOffsets(testCtx(t), topic)
	if err == nil {
		err = lo.Error()
	}
	if err != nil {
		t.Fatalf("ListCommittedOffsets %s: %v", topic, err)
	}
	got := map[int32]int64{}
	lo.Each(func(o kadm.ListedOffset) { got[o.Partition] = o.Offset })
	return got
}

// verify checks, after a restart, everything acknowledged so far; final
// also waits for every transaction to be ended (the last stable offsets
// reach the end offsets) and checks them all.
func (r *relRun) verify(round int, final bool) {
	t := r.t
	t.Helper()
	start := time.Now()
	adm := newAdmin(t, r.b.Addr())
	ends, read := r.verifyPlain(round, adm)
	r.verifyCommits(round, adm, ends)
	r.verifyTxns(round, adm, final)
	t.Logf("round %d: verified %d acknowledged records among %d read, commits %v, %d transactions, in %v",
		round, len(r.acked), read, r.committed, len(r.txns), time.Since(start).Round(time.Millisecond))
}

// verifyPlain reads the plain topic at read_uncommitted: offsets dense
// from 0 up to the end offsets, each value once, every acknowledged
// record at its offset (in a lossy run, the missing ones are counted and
// forgotten). It returns the end offsets and how many records it read.
func (r *relRun) verifyPlain(round int, adm *kadm.Client) (map[int32]int64, int) {
	t := r.t
	t.Helper()
	ends := endOffsets(t, adm, r.plain)
	if len(ends) != relPlainPartitions {
		t.Fatalf("round %d: end offsets of %d partitions, want %d: %v", round, len(ends), relPlainPartitions, ends)
	}
	until := map[int32]int64{}
	for p, e := range ends {
		until[p] = e - 1
	}
	got := relRead(t, r.b.Addr(), r.plain, kgo.ReadUncommitted(), until)
	where := map[string]string{}
	read := 0
	for p, recs := range got {
		if int64(len(recs)) != ends[p] {
			t.Fatalf("round %d: partition %d: read %d records up to the end offset %d", round, p, len(recs), ends[p])
		}
		for i, rec := range recs {
			if rec.offset != int64(i) || rec.control {
				t.Fatalf("round %d: partition %d: record %d has offset %d (control %v): offsets are not dense from 0", round, p, i, rec.offset, rec.control)
			}
			at := fmt.Sprintf("partition %d offset %d", p, rec.offset)
			if prev, ok := where[rec.value]; ok {
				t.Errorf("round %d: value %q at %s and at %s", round, relShort(rec.value), prev, at)
			}
			where[rec.value] = at
		}
		read += len(recs)
	}
	kept := r.acked[:0]
	lost := 0
	for _, a := range r.acked {
		recs := got[a.partition]
		if a.offset < int64(len(recs)) && recs[a.offset].value == a.value {
			kept = append(kept, a)
			continue
		}
		what := fmt.Sprintf("partition %d ends at %d", a.partition, len(recs))
		if a.offset < int64(len(recs)) {
			what = fmt.Sprintf("there is %q", relShort(recs[a.offset].value))
		}
		lost++
		if !r.lossy {
			kept = append(kept, a)
			if lost <= 20 {
				t.Errorf("round %d: LOST %q acknowledged in round %d at partition %d offset %d: %s", round, relShort(a.value), a.round, a.partition, a.offset, what)
			}
			continue
		}
		age := r.interruptedAt[round].Sub(a.at)
		r.fig.maxLossAge = max(r.fig.maxLossAge, age)
		if lost <= 3 {
			t.Logf("round %d: lost %q acknowledged in round %d at partition %d offset %d, %v before the kill: %s", round, relShort(a.value), a.round, a.partition, a.offset, age.Round(time.Millisecond), what)
		}
	}
	if lost > 0 && !r.lossy {
		t.Errorf("round %d: %d acknowledged records lost", round, lost)
	}
	r.acked = kept
	if r.lossy {
		r.fig.lostRecords += lost
		r.fig.lossPerRound = append(r.fig.lossPerRound, lost)
	}
	return ends, read
}

// verifyCommits checks the group's committed offsets: at least the last
// acknowledged commit of each partition (in a lossy run, the ones that
// went back are counted), at most the end offsets.
func (r *relRun) verifyCommits(round int, adm *kadm.Client, ends map[int32]int64) {
	t := r.t
	t.Helper()
	got := committedOffsets(t, adm, r.group, r.plain)
	for p, a := range r.commits {
		if g, ok := got[p]; !ok || g < a {
			if !r.lossy {
				t.Errorf("round %d: LOST commit: partition %d has committed offset %d (present %v), but a commit of %d was acknowledged", round, p, g, ok, a)
			} else {
				r.fig.lostCommits++
				// The oldest lost: the first acknowledged in the round
				// past what survived.
				var age time.Duration
				for _, c := range r.roundCommits {
					if c.partition == p && c.offset > g {
						age = r.interruptedAt[round].Sub(c.at)
						break
					}
				}
				r.fig.maxCommitLossAge = max(r.fig.maxCommitLossAge, age)
				t.Logf("round %d: lost commit: partition %d has committed offset %d (present %v), a commit of %d was acknowledged; the first lost one %v before the kill", round, p, g, ok, a, age.Round(100*time.Microsecond))
			}
		}
	}
	for p, g := range got {
		if g > ends[p] {
			t.Errorf("round %d: partition %d has committed offset %d past its end offset %d", round, p, g, ends[p])
		}
	}
	r.committed = got
	r.commits = maps.Clone(got)
}

// verifyTxns checks the txn topic at read_committed, up to the last
// record below the last stable offset that read_committed must deliver
// (a control record or one outside transactions, such as the sentinel,
// a plain record written to each partition after each restart): no
// record of an aborted or open transaction is visible, every committed
// one is wholly visible, one whose commit was in flight wholly or not at
// all. final first waits until no transaction is open (the broker aborted
// those open at the kills), so that everything is checked.
func (r *relRun) verifyTxns(round int, adm *kadm.Client, final bool) {
	t := r.t
	t.Helper()
	if final {
		start := time.Now()
		var lso, hwm map[int32]int64
		for {
			hwm = endOffsets(t, adm, r.txnTopic)
			lso = relStable(t, adm, r.txnTopic)
			if equalOffsets(lso, hwm) {
				break
			}
			if time.Since(start) > relWait {
				t.Fatalf("round %d: after %v the last stable offsets of %s are %v, the end offsets %v: a transaction is still open", round, relWait, r.txnTopic, lso, hwm)
			}
			time.Sleep(50 * time.Millisecond)
		}
		t.Logf("round %d: every transaction ended %v after the restart's check began (last stable offsets %v)", round, time.Since(start).Round(time.Millisecond), lso)
	}

	// Sentinels: one plain record per partition.
	sentinel := &relTxn{name: fmt.Sprintf("s%d", round), outcome: relCommitted}
	cl := newKgo(t, r.b.Addr(), kgo.DefaultProduceTopic(r.txnTopic), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	var krs []*kgo.Record
	for p := range int32(relTxnPartitions) {
		krs = append(krs, &kgo.Record{Partition: p, Value: fmt.Appendf(nil, "%s-%d", sentinel.name, p)})
	}
	res := cl.ProduceSync(testCtx(t), krs...)
	if err := res.FirstErr(); err != nil {
		t.Fatalf("round %d: produce the sentinels: %v", round, err)
	}
	cl.Close()
	for _, pr := range res {
		rec := relTxnRec{partition: pr.Record.Partition, offset: pr.Record.Offset, value: string(pr.Record.Value)}
		sentinel.recs = append(sentinel.recs, rec)
		r.byValue[rec.value] = sentinel
	}
	r.txns = append(r.txns, sentinel)
	r.fig.sentinels++

	lso := relStable(t, adm, r.txnTopic)
	if final {
		if hwm := endOffsets(t, adm, r.txnTopic); !equalOffsets(lso, hwm) {
			t.Fatalf("round %d: last stable offsets %v after the sentinels, end offsets %v", round, lso, hwm)
		}
	}
	// read_committed delivers (with control records kept) every control
	// record and every record outside transactions below the last
	// stable offset: the last of them, found at read_uncommitted, is
	// where the read_committed pass can stop.
	hwm := endOffsets(t, adm, r.txnTopic)
	last := map[int32]int64{}
	for p, e := range hwm {
		last[p] = e - 1
	}
	all := relRead(t, r.b.Addr(), r.txnTopic, kgo.ReadUncommitted(), last)
	until := map[int32]int64{}
	for p := range int32(relTxnPartitions) {
		until[p] = -1
		for _, rec := range all[p] {
			if rec.offset < lso[p] && (rec.control || !rec.txnal) {
				until[p] = rec.offset
			}
			if !rec.control && r.byValue[rec.value] == nil {
				t.Errorf("round %d: %s has %q at partition %d offset %d, which nobody wrote", round, r.txnTopic, rec.value, p, rec.offset)
			}
		}
	}
	if final {
		for _, rec := range sentinel.recs {
			if until[rec.partition] != rec.offset {
				t.Fatalf("round %d: the sentinel of partition %d is at %d, below the last stable offset %d, but reading stops at %d", round, rec.partition, rec.offset, lso[rec.partition], until[rec.partition])
			}
		}
	}

	got := relRead(t, r.b.Addr(), r.txnTopic, kgo.ReadCommitted(), until)
	seen := map[string]int64{} // value: offset
	for p, recs := range got {
		for _, rec := range recs {
			if rec.control {
				continue
			}
			tx := r.byValue[rec.value]
			if tx == nil {
				t.Errorf("round %d: read_committed shows %q at partition %d offset %d, which nobody wrote", round, rec.value, p, rec.offset)
				continue
			}
			if prev, ok := seen[rec.value]; ok {
				t.Errorf("round %d: read_committed shows %q at partition %d offsets %d and %d", round, rec.value, p, prev, rec.offset)
			}
			seen[rec.value] = rec.offset
			switch tx.outcome {
			case relOpen, relAborted:
				t.Errorf("round %d: read_committed shows %q at partition %d offset %d, of transaction %s, which is %v", round, rec.value, p, rec.offset, tx.name, tx.outcome)
			}
		}
	}
	for _, tx := range r.txns {
		if tx.lost || (tx.outcome != relCommitted && tx.outcome != relUnknown) {
			continue
		}
		var below, visible []string
		for _, rec := range tx.recs {
			if rec.offset < 0 || rec.offset > until[rec.partition] {
				continue
			}
			below = append(below, rec.value)
			if o, ok := seen[rec.value]; ok {
				visible = append(visible, rec.value)
				if o != rec.offset {
					t.Errorf("round %d: %q of transaction %s is at offset %d, acknowledged at %d", round, rec.value, tx.name, o, rec.offset)
				}
			}
		}
		switch {
		case len(visible) == len(below):
			if tx.outcome == relUnknown && len(visible) > 0 {
				tx.visible = true
			}
		case len(visible) > 0:
			t.Errorf("round %d: transaction %s (%v) is partly visible to read_committed: %v of %v", round, tx.name, tx.outcome, visible, below)
		case tx.outcome == relCommitted && r.lossy:
			tx.lost = true
			r.fig.lostTxns++
			age := r.interruptedAt[tx.round].Sub(tx.at)
			if tx.at.IsZero() {
				age = 0 // a sentinel, written after a restart
			}
			r.fig.maxTxnLossAge = max(r.fig.maxTxnLossAge, age)
			t.Logf("round %d: lost committed transaction %s, acknowledged %v before its kill: none of %v visible", round, tx.name, age.Round(100*time.Microsecond), below)
		case tx.outcome == relCommitted:
			t.Errorf("round %d: LOST committed transaction %s: none of %v visible to read_committed (last stable offsets %v, read up to %v)", round, tx.name, below, lso, until)
		}
	}
	if final {
		for _, tx := range r.txns {
			if tx.outcome == relUnknown && tx.visible {
				r.fig.unknownLanded++
			}
		}
	}
}

// report checks the log of the broker's last run and logs the figures.
func (r *relRun) report(what string, took time.Duration) {
	r.checkLog(what + ": the last run")
	f := r.fig
	if testenv.Flag(r.t, "KBROKER_RELIABILITY_DEBUG") {
		r.t.Logf("log of the broker:\n%s", r.b.logs.String())
	}
	if aborted := strings.Count(r.b.logs.String(), "aborting a timed-out transaction"); aborted < f.txnHeld {
		r.t.Errorf("%s: the broker aborted %d timed-out transactions, but %d were held open at interruptions", what, aborted, f.txnHeld)
	} else {
		r.t.Logf("%s: the broker aborted %d timed-out transactions (%d held open at interruptions)", what, aborted, f.txnHeld)
	}
	r.t.Logf("%s: %d interruptions survived in %v (%d restarts recovered a crash); %d acknowledged records verified (%d still present); %d acknowledged group commits; transactions: %d committed, %d aborted, %d open at an interruption (%d held open with acknowledged records), %d with the commit in flight (%d of them landed), %d sentinels",
		what, f.kills, took.Round(time.Millisecond), f.recoveries, f.acked, len(r.acked), f.commits, f.txnCommitted, f.txnAborted, f.txnOpen, f.txnHeld, f.txnUnknown, f.unknownLanded, f.sentinels)
	if r.lossy {
		r.t.Logf("%s: lost %d acknowledged records (per kill %v), the oldest acknowledged %v before its kill; %d group commits went back (partitions × kills), the oldest lost acknowledged %v before its kill; %d committed transactions lost, the oldest acknowledged %v before its kill",
			what, f.lostRecords, f.lossPerRound, f.maxLossAge.Round(100*time.Microsecond), f.lostCommits, f.maxCommitLossAge.Round(100*time.Microsecond), f.lostTxns, f.maxTxnLossAge.Round(100*time.Microsecond))
	}
}

// relFetchDump describes what one Fetch of partition p of topic at offset
// returns, for a read that got stuck there.
func relFetchDump(t *testing.T, addr, topic string, p int32, offset int64, level kgo.IsolationLevel) string {
	t.Helper()
	topics, err := newAdmin(t, addr).ListTopics(testCtx(t), topic)
	if err != nil || topics[topic].Err != nil {
		return fmt.Sprintf("ListTopics: %v %v", err, topics[topic].Err)
	}
	cl := newKgo(t, addr)
	defer cl.Close()
	req := kmsg.NewPtrFetchRequest()
	req.ReplicaID, req.MaxBytes, req.SessionEpoch = -1, 1<<20, -1
	if level == kgo.ReadCommitted() {
		req.IsolationLevel = 1
	}
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic, rt.TopicID = topic, topics[topic].ID
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes, rp.CurrentLeaderEpoch = p, offset, 1<<20, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(testCtx(t), cl)
	if err != nil {
		return fmt.Sprintf("Fetch: %v", err)
	}
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		return fmt.Sprintf("Fetch: %d topics in the response", len(resp.Topics))
	}
	fp := resp.Topics[0].Partitions[0]
	out := fmt.Sprintf("Fetch: error %d, high watermark %d, last stable %d, log start %d, %d aborted transactions, %d bytes",
		fp.ErrorCode, fp.HighWatermark, fp.LastStableOffset, fp.LogStartOffset, len(fp.AbortedTransactions), len(fp.RecordBatches))
	for raw, i := fp.RecordBatches, 0; len(raw) >= 12 && i < 3; i++ {
		size := 12 + int(int32(binary.BigEndian.Uint32(raw[8:12])))
		if size > len(raw) || size < 12 {
			out += fmt.Sprintf("; a batch of %d bytes with %d left: %x", size, len(raw), raw[:min(len(raw), 64)])
			break
		}
		var rb kmsg.RecordBatch
		if err := rb.ReadFrom(raw[:size]); err != nil {
			out += fmt.Sprintf("; unreadable batch: %v: %x", err, raw[:min(len(raw), 64)])
			break
		}
		out += fmt.Sprintf("; batch at %d, last offset delta %d, %d records, attributes %#x, producer %d/%d, crc %#x",
			rb.FirstOffset, rb.LastOffsetDelta, rb.NumRecords, rb.Attributes, rb.ProducerID, rb.ProducerEpoch, uint32(rb.CRC))
		raw = raw[size:]
	}
	return out
}
