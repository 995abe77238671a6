package integration

// Transactions with franz-go (kgo, kadm): commits and aborts over several
// partitions read back at both isolation levels, the last stable offset
// of an open transaction, DescribeTransactions and ListTransactions,
// fencing by a second producer with the same transactional id, and the
// broker aborting a transaction past its timeout.

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestTxnKgo: a kgo transactional producer commits and aborts
// transactions over 3 partitions (some over all, some over one or two;
// several batches per partition in the larger ones). After each,
// DescribeTransactions shows CompleteCommit or CompleteAbort with no
// partitions. With one more transaction open, ListEndOffsets under
// read_committed (the last stable offset) stays at the end offsets before
// it while read_uncommitted counts its records; DescribeTransactions
// shows it Ongoing with its partitions, timeout, producer id and epoch;
// ListTransactions lists it among the Ongoing; a read_committed consumer
// reads up to the last stable offset without its records, a
// read_uncommitted one reads them. Then a second producer's transaction
// stays open while the first commits another, and aborts: the last
// stable offsets stay at its first records until then. In the end a
// read_committed consumer reads every committed record exactly once, in
// order per partition, and no aborted one (also with one batch per
// fetch, and starting inside aborted transactions); a read_uncommitted
// one reads every record; each partition's end offset counts its records
// plus one marker per transaction that wrote to it. ListTransactions
// filters by producer id; a transaction timeout above
// transaction.max.timeout.ms is refused with INVALID_TRANSACTION_TIMEOUT;
// DescribeTransactions of an unknown id answers
// TRANSACTIONAL_ID_NOT_FOUND.
func TestTxnKgo(t *testing.T) {
	t.Parallel()
	eachBroker(t, txnOpts(), func(t *testing.T, b testBroker) {
		testTxnKgo(t, b.Addr())
	})
}

func testTxnKgo(t *testing.T, addr string) {
	const partitions = 3
	topic := topicName(t)
	id := "txn." + topic
	adm := newAdmin(t, addr)
	createGroupTopic(t, adm, topic, partitions)
	cl := newTxnProducer(t, addr, topic, id, txnTimeout)
	ctx := testCtx(t)

	var committed, all []txnRec
	markers := map[int32]int64{} // transactions that wrote to each partition
	txn := func(recs []txnRec, commit bool) {
		t.Helper()
		runTxn(t, cl, recs, commit)
		all = append(all, recs...)
		if commit {
			committed = append(committed, recs...)
		}
		for p := range txnByPartition(recs) {
			markers[p]++
		}
		// The coordinator completes the transaction once its markers are
		// written, which may follow the EndTxn answer (Kafka writes them
		// asynchronously; kbroker too, only faster).
		want := map[bool]string{true: "CompleteCommit", false: "CompleteAbort"}[commit]
		var d kadm.DescribedTransaction
		awaitGroup(t, fmt.Sprintf("DescribeTransactions %s after EndTransaction (commit %v) to show %s and no partitions", id, commit, want), func() bool {
			d = describeTxn(t, adm, id)
			return d.State == want && len(d.Topics) == 0
		}, func() string { return fmt.Sprintf("state %s, partitions %v", d.State, d.Topics) })
	}
	for i, s := range []struct {
		n      int
		parts  []int32
		commit bool
	}{
		{9, []int32{0, 1, 2}, true},
		{6, []int32{0, 1, 2}, false},
		{4, []int32{1}, true},
		{5, []int32{2, 0}, false},
		{7, []int32{2, 0}, true},
		{3, []int32{1, 2}, false},
		{10, []int32{0, 1, 2}, true},
	} {
		tag := fmt.Sprintf("a%d", i)
		if s.commit {
			tag = fmt.Sprintf("c%d", i)
		}
		txn(txnRecords(tag, s.n, s.parts...), s.commit)
	}

	// A transaction left open over partitions 0 and 1.
	before := endOffsets(t, adm, topic)
	if lso := txnStableOffsets(t, adm, topic); !equalOffsets(lso, before) {
		t.Fatalf("no transaction open: last stable offsets %v, end offsets %v", lso, before)
	}
	pid, epoch, err := cl.ProducerID(ctx)
	if err != nil {
		t.Fatalf("ProducerID: %v", err)
	}
	open := txnRecords("open", 5, 0, 1)
	if err := cl.BeginTransaction(); err != nil {
		t.Fatalf("BeginTransaction: %v", err)
	}
	if err := produceTxn(ctx, cl, open); err != nil {
		t.Fatalf("produce in the open transaction: %v", err)
	}
	wantEnd := maps.Clone(before)
	for p, vs := range txnByPartition(open) {
		wantEnd[p] += int64(len(vs))
	}
	checkEndOffsets(t, adm, topic, wantEnd)
	if lso := txnStableOffsets(t, adm, topic); !equalOffsets(lso, before) {
		t.Errorf("a transaction open on partitions 0 and 1: last stable offsets %v, want the end offsets before it %v (end offsets now %v)", lso, before, wantEnd)
	}
	d := describeTxn(t, adm, id)
	if d.State != "Ongoing" || !slices.Equal(txnPartitions(d, topic), []int32{0, 1}) || len(d.Topics) != 1 ||
		d.ProducerID != pid || d.ProducerEpoch != epoch || d.TimeoutMillis != int32(txnTimeout.Milliseconds()) || d.StartTimestamp <= 0 {
		t.Errorf("DescribeTransactions %s of the open transaction: %+v; want Ongoing on %s [0 1], producer %d epoch %d, timeout %d ms, a start time",
			id, d, topic, pid, epoch, txnTimeout.Milliseconds())
	}
	if st, ok := listTxnStates(t, adm, "Ongoing")[id]; !ok || st != "Ongoing" {
		t.Errorf("ListTransactions [Ongoing]: %s is %q (listed %v)", id, st, ok)
	}
	if _, ok := listTxnStates(t, adm, "CompleteCommit", "CompleteAbort")[id]; ok {
		t.Errorf("ListTransactions [CompleteCommit CompleteAbort] lists %s, whose transaction is open", id)
	}
	if st := listTxnStates(t, adm)[id]; st != "Ongoing" {
		t.Errorf("ListTransactions lists %s as %q, want Ongoing", id, st)
	}
	txnCheckValues(t, "read_committed with a transaction open", txnReadTopic(t, addr, topic, kgo.ReadCommitted(), before), txnByPartition(committed))
	txnCheckValues(t, "read_uncommitted with a transaction open", txnReadTopic(t, addr, topic, kgo.ReadUncommitted(), wantEnd), txnByPartition(append(slices.Clone(all), open...)))
	if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatalf("EndTransaction commit of the open transaction: %v", err)
	}
	all = append(all, open...)
	committed = append(committed, open...)
	for p := range txnByPartition(open) {
		markers[p]++
	}

	// Interleaved: p2 (another transactional id) opens a transaction on
	// partitions 0 and 1 and keeps it open while cl commits one over all
	// three; the last stable offsets of 0 and 1 stay at p2's first record
	// (cl's records after it are not readable yet), that of 2 reaches its
	// end. p2 writes more after cl's commit and aborts: read_committed
	// must drop p2's records but not cl's committed ones between them.
	id2 := id + ".2"
	p2 := newTxnProducer(t, addr, topic, id2, txnTimeout)
	before = txnAwaitStable(t, adm, topic)
	if err := p2.BeginTransaction(); err != nil {
		t.Fatalf("p2 BeginTransaction: %v", err)
	}
	b0, between, b1 := txnRecords("p2-aborted-a", 4, 1, 0), txnRecords("c-between", 6, 0, 1, 2), txnRecords("p2-aborted-b", 3, 0, 1)
	if err := produceTxn(ctx, p2, b0); err != nil {
		t.Fatalf("p2 produce: %v", err)
	}
	runTxn(t, cl, between, true)
	wantLSO := maps.Clone(before)
	wantLSO[2] = before[2] + int64(len(txnByPartition(between)[2])) + 1
	// The commit markers may follow the EndTxn answer (see txn above).
	var lso map[int32]int64
	awaitTxn(t, fmt.Sprintf("p2's transaction open on partitions 0 and 1 from %v, %s committed after it: last stable offsets %v", before, id, wantLSO), func() bool {
		lso = txnStableOffsets(t, adm, topic)
		return equalOffsets(lso, wantLSO)
	}, func() string { return fmt.Sprintf("last stable offsets %v", lso) })
	if err := produceTxn(ctx, p2, b1); err != nil {
		t.Fatalf("p2 produce: %v", err)
	}
	if err := p2.EndTransaction(ctx, kgo.TryAbort); err != nil {
		t.Fatalf("p2 abort: %v", err)
	}
	all = slices.Concat(all, b0, between, b1)
	committed = append(committed, between...)
	for _, recs := range [][]txnRec{b0, between} { // b1's partitions are b0's
		for p := range txnByPartition(recs) {
			markers[p]++
		}
	}
	var d2 kadm.DescribedTransaction
	awaitTxn(t, fmt.Sprintf("DescribeTransactions %s after its abort to show CompleteAbort", id2), func() bool {
		d2 = describeTxn(t, adm, id2)
		return d2.State == "CompleteAbort"
	}, func() string { return fmt.Sprintf("%+v", d2) })
	if ls := listTxnStates(t, adm); ls[id] != "CompleteCommit" || ls[id2] != "CompleteAbort" {
		t.Errorf("ListTransactions: %v; want %s CompleteCommit and %s CompleteAbort", ls, id, id2)
	}

	ends := txnAwaitStable(t, adm, topic)
	wantEnd = map[int32]int64{}
	for p := range int32(partitions) {
		wantEnd[p] = int64(len(txnByPartition(all)[p])) + markers[p]
	}
	if !equalOffsets(ends, wantEnd) {
		t.Errorf("end offsets %v, want %v (records plus one marker per transaction of the partition)", ends, wantEnd)
	}
	txnCheckValues(t, "read_committed", txnReadTopic(t, addr, topic, kgo.ReadCommitted(), ends), txnByPartition(committed))
	txnCheckValues(t, "read_uncommitted", txnReadTopic(t, addr, topic, kgo.ReadUncommitted(), ends), txnByPartition(all))
	// One batch per fetch: each response covers part of a transaction.
	small := []kgo.Opt{kgo.FetchMaxPartitionBytes(1), kgo.FetchMaxBytes(1)}
	txnCheckValues(t, "read_committed, a batch per fetch", txnReadTopic(t, addr, topic, kgo.ReadCommitted(), ends, small...), txnByPartition(committed))
	// Transactions v1 keep the epoch; v2 (transaction.version 2, KIP-890
	// part 2) bump it at every EndTxn, and the client goes on with the
	// epoch EndTxn answered: the coordinator's is the client's either way.
	_, epoch, err = cl.ProducerID(ctx)
	if err != nil {
		t.Fatalf("ProducerID: %v", err)
	}
	if d := describeTxn(t, adm, id); d.State != "CompleteCommit" || d.ProducerID != pid || d.ProducerEpoch != epoch {
		t.Errorf("DescribeTransactions %s at the end: %+v; want CompleteCommit, producer %d epoch %d", id, d, pid, epoch)
	}
	txnCheckReadFromAborted(t, addr, topic, ends, committed)

	// ListTransactions filtered by producer id; a timeout above
	// transaction.max.timeout.ms.
	ls, err := adm.ListTransactions(ctx, []int64{pid}, nil)
	if err != nil {
		t.Fatalf("ListTransactions of producer %d: %v", pid, err)
	}
	if _, ok := ls[id]; !ok || len(ls) != 1 {
		t.Errorf("ListTransactions of producer %d: %v; want %s alone", pid, ls, id)
	}
	tooLong := newTxnProducer(t, addr, topic, id+".too-long", 2*time.Minute)
	if _, _, err := tooLong.ProducerID(ctx); !errors.Is(err, kerr.InvalidTransactionTimeout) {
		t.Errorf("InitProducerId with a 2 minute transaction timeout, the broker's maximum being 1 minute: %v; want INVALID_TRANSACTION_TIMEOUT", err)
	}

	// An id nobody used.
	ds, err := adm.DescribeTransactions(ctx, id+".unknown")
	if err != nil {
		t.Fatalf("DescribeTransactions of an unknown id: %v", err)
	}
	if _, err := ds.On(id+".unknown", func(d *kadm.DescribedTransaction) error { return d.Err }); !errors.Is(err, kerr.TransactionalIDNotFound) {
		t.Errorf("DescribeTransactions of an unknown id: %v, want TRANSACTIONAL_ID_NOT_FOUND", err)
	}
}

// TestTxnKgoFencing: producer p1 commits a transaction, then begins
// another and writes to two partitions; p2, a second kgo producer with
// the same transactional id, initializes (which aborts p1's transaction
// and bumps the epoch twice) and commits a transaction. p1 is fenced:
// its next produce fails with INVALID_PRODUCER_EPOCH or PRODUCER_FENCED
// and its commit fails ("produce"), or its commit fails with one of them
// at once ("end"). A read_committed consumer sees p1's first transaction
// and p2's, none of p1's writes after the fence's abort;
// DescribeTransactions shows p2's epoch. p2 goes on committing.
func TestTxnKgoFencing(t *testing.T) {
	t.Parallel()
	for _, viaProduce := range []bool{true, false} {
		name := map[bool]string{true: "produce", false: "end"}[viaProduce]
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			eachBroker(t, txnOpts(), func(t *testing.T, b testBroker) {
				testTxnFencing(t, b.Addr(), viaProduce)
			})
		})
	}
}

func testTxnFencing(t *testing.T, addr string, viaProduce bool) {
	topic := topicName(t)
	id := "txn." + topic
	adm := newAdmin(t, addr)
	createGroupTopic(t, adm, topic, 2)
	ctx := testCtx(t)

	p1 := newTxnProducer(t, addr, topic, id, txnTimeout, kgo.ClientID("p1"))
	first := txnRecords("p1-committed", 4, 0, 1)
	runTxn(t, p1, first, true)
	pid1, epoch1, err := p1.ProducerID(ctx)
	if err != nil {
		t.Fatalf("p1 ProducerID: %v", err)
	}
	if err := p1.BeginTransaction(); err != nil {
		t.Fatalf("p1 BeginTransaction: %v", err)
	}
	if err := produceTxn(ctx, p1, txnRecords("p1-fenced", 4, 0, 1)); err != nil {
		t.Fatalf("p1 produce: %v", err)
	}

	p2 := newTxnProducer(t, addr, topic, id, txnTimeout, kgo.ClientID("p2"))
	second := txnRecords("p2-committed", 4, 0, 1)
	runTxn(t, p2, second, true)
	pid2, epoch2, err := p2.ProducerID(ctx)
	if err != nil {
		t.Fatalf("p2 ProducerID: %v", err)
	}
	if pid2 != pid1 || epoch2 <= epoch1 {
		t.Errorf("p2 has producer %d epoch %d, p1 had %d epoch %d: want the same producer id with a higher epoch", pid2, epoch2, pid1, epoch1)
	}
	t.Logf("p1: producer %d epoch %d; p2: producer %d epoch %d", pid1, epoch1, pid2, epoch2)

	if viaProduce {
		err := produceTxn(ctx, p1, txnRecords("p1-after-fence", 2, 0, 1))
		t.Logf("p1's produce after the fence: %v", err)
		if !txnIsFenced(err) {
			t.Errorf("p1's produce after the fence: %v; want INVALID_PRODUCER_EPOCH or PRODUCER_FENCED", err)
		}
		err = p1.EndTransaction(ctx, kgo.TryCommit)
		t.Logf("p1's commit after the fence: %v", err)
		if err == nil {
			t.Errorf("p1's commit after the fence succeeded")
		}
	} else {
		err := p1.EndTransaction(ctx, kgo.TryCommit)
		t.Logf("p1's commit after the fence: %v", err)
		if !txnIsFenced(err) {
			t.Errorf("p1's commit after the fence: %v; want PRODUCER_FENCED or INVALID_PRODUCER_EPOCH", err)
		}
	}

	third := txnRecords("p2-again", 4, 1, 0)
	runTxn(t, p2, third, true)
	ends := txnAwaitStable(t, adm, topic)
	got := txnReadTopic(t, addr, topic, kgo.ReadCommitted(), ends)
	if v, ok := txnContainsAny(got, "p1-fenced", "p1-after-fence"); ok {
		t.Errorf("read_committed sees a write of the fenced producer: %s", v)
	}
	txnCheckValues(t, "read_committed", got, txnByPartition(slices.Concat(first, second, third)))
	// Under transactions v2 p2's last commit moved the epoch on.
	if _, epoch2, err = p2.ProducerID(ctx); err != nil {
		t.Fatalf("p2 ProducerID: %v", err)
	}
	if d := describeTxn(t, adm, id); d.State != "CompleteCommit" || d.ProducerID != pid2 || d.ProducerEpoch != epoch2 {
		t.Errorf("DescribeTransactions %s: %+v; want CompleteCommit, producer %d epoch %d", id, d, pid2, epoch2)
	}
}

// TestTxnKgoTimeout: a kgo producer with a 5 s transaction timeout
// commits a transaction, begins another, writes to two partitions and
// goes silent: its client is closed ("closed"), or stays open doing
// nothing ("silent"). While the transaction is open the last stable
// offsets stay below the end offsets and DescribeTransactions shows it
// Ongoing with the 5 s timeout; then the broker aborts it: the last
// stable offsets reach the end offsets (past the abort markers),
// DescribeTransactions and ListTransactions show CompleteAbort with the
// epoch bumped, and a read_committed consumer reads past the aborted
// records without seeing them. The silent producer's commit then fails.
func TestTxnKgoTimeout(t *testing.T) {
	t.Parallel()
	for _, closeClient := range []bool{true, false} {
		name := map[bool]string{true: "closed", false: "silent"}[closeClient]
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			eachBroker(t, txnOpts(), func(t *testing.T, b testBroker) {
				testTxnTimeout(t, b.Addr(), closeClient)
			})
		})
	}
}

func testTxnTimeout(t *testing.T, addr string, closeClient bool) {
	topic := topicName(t)
	id := "txn." + topic
	adm := newAdmin(t, addr)
	createGroupTopic(t, adm, topic, 2)
	// Kafka takes the partitions' leadership a moment after creating
	// them; the first transaction must not spend its short timeout on it.
	awaitTopicReady(t, addr, topic)
	ctx := testCtx(t)

	cl := newTxnProducer(t, addr, topic, id, txnShortTimeout)
	first := txnRecords("committed", 4, 0, 1)
	runTxn(t, cl, first, true)
	pid, epoch, err := cl.ProducerID(ctx)
	if err != nil {
		t.Fatalf("ProducerID: %v", err)
	}
	// Kafka writes the commit markers after answering EndTxn.
	before := txnAwaitStable(t, adm, topic)
	timedOut := txnRecords("timed-out", 6, 0, 1)
	if err := cl.BeginTransaction(); err != nil {
		t.Fatalf("BeginTransaction: %v", err)
	}
	if err := produceTxn(ctx, cl, timedOut); err != nil {
		t.Fatalf("produce: %v", err)
	}
	// The transaction may already have timed out on a very slow machine:
	// then only what follows is checked.
	d := describeTxn(t, adm, id)
	lso := txnStableOffsets(t, adm, topic)
	if d.State == "Ongoing" {
		if !equalOffsets(lso, before) {
			t.Errorf("transaction open: last stable offsets %v, want %v", lso, before)
		}
		if d.TimeoutMillis != int32(txnShortTimeout.Milliseconds()) || !slices.Equal(txnPartitions(d, topic), []int32{0, 1}) {
			t.Errorf("DescribeTransactions %s of the open transaction: %+v; want a timeout of %d ms, partitions [0 1]", id, d, txnShortTimeout.Milliseconds())
		}
	} else {
		t.Logf("the transaction was no longer open when described: %+v", d)
	}
	if closeClient {
		cl.Close()
	}

	ends := txnAwaitStable(t, adm, topic)
	for p := range int32(2) {
		if want := before[p] + int64(len(txnByPartition(timedOut)[p])) + 1; ends[p] != want {
			t.Errorf("partition %d: end offset %d after the abort, want %d (%d before, the records and an abort marker)", p, ends[p], want, before[p])
		}
	}
	awaitTxn(t, "DescribeTransactions to show CompleteAbort", func() bool {
		d = describeTxn(t, adm, id)
		return d.State == "CompleteAbort"
	}, func() string { return fmt.Sprintf("%+v", d) })
	// The abort fences the producer with one bump, also under
	// transactions v2 (as Kafka 4.4 does).
	bumped := epoch + 1
	if d.ProducerID != pid || d.ProducerEpoch != bumped || len(d.Topics) != 0 {
		t.Errorf("DescribeTransactions %s after the timeout: %+v; want producer %d epoch %d (bumped), no partitions", id, d, pid, bumped)
	}
	if st, ok := listTxnStates(t, adm, "CompleteAbort")[id]; !ok || st != "CompleteAbort" {
		t.Errorf("ListTransactions [CompleteAbort]: %s is %q (listed %v)", id, st, ok)
	}
	txnCheckValues(t, "read_committed", txnReadTopic(t, addr, topic, kgo.ReadCommitted(), ends), txnByPartition(first))
	txnCheckValues(t, "read_uncommitted", txnReadTopic(t, addr, topic, kgo.ReadUncommitted(), ends), txnByPartition(slices.Concat(first, timedOut)))

	if !closeClient {
		err := cl.EndTransaction(ctx, kgo.TryCommit)
		t.Logf("commit after the timeout: %v", err)
		if err == nil {
			t.Errorf("the commit of a transaction the broker aborted succeeded")
		}
		if got := txnReadTopic(t, addr, topic, kgo.ReadCommitted(), txnAwaitStable(t, adm, topic)); !t.Failed() {
			txnCheckValues(t, "read_committed after the commit attempt", got, txnByPartition(first))
		}
	}
}

// TestTxnRestart: a transaction committed and one aborted (another
// transactional id) before a clean restart of the broker stay so after
// it, and one left open stays open: DescribeTransactions shows it Ongoing
// with its partitions, producer id and epoch, the last stable offsets
// stay at its first records, read_committed sees only the committed one.
// A new producer with its transactional id then initializes, which aborts
// it (the epoch goes up by two: the abort's bump and the new producer's;
// by three under transactions v2, where the commit bumps it too), and
// commits: read_committed sees the two committed transactions, none
// of the open one's records, and read_uncommitted all of them.
func TestTxnRestart(t *testing.T) {
	t.Parallel()
	eachBroker(t, txnOpts(), func(t *testing.T, b testBroker) {
		testTxnRestart(t, b)
	})
}

func testTxnRestart(t *testing.T, b testBroker) {
	topic := topicName(t)
	id, id2 := "txn."+topic, "txn."+topic+".2"
	adm := newAdmin(t, b.Addr())
	createGroupTopic(t, adm, topic, 2)
	ctx := testCtx(t)

	p1 := newTxnProducer(t, b.Addr(), topic, id, txnTimeout)
	p2 := newTxnProducer(t, b.Addr(), topic, id2, txnTimeout)
	first := txnRecords("committed", 5, 0, 1)
	aborted := txnRecords("aborted", 3, 1, 0)
	open := txnRecords("open", 4, 0, 1)
	runTxn(t, p1, first, true)
	runTxn(t, p2, aborted, false)
	pid, epoch, err := p1.ProducerID(ctx)
	if err != nil {
		t.Fatalf("ProducerID: %v", err)
	}
	before := txnAwaitStable(t, adm, topic)
	if err := p1.BeginTransaction(); err != nil {
		t.Fatalf("BeginTransaction: %v", err)
	}
	if err := produceTxn(ctx, p1, open); err != nil {
		t.Fatalf("produce in the open transaction: %v", err)
	}
	hwm := endOffsets(t, adm, topic)
	p1.Close() // the broker's address changes with the restart
	p2.Close()

	b.Restart(t)
	adm = newAdmin(t, b.Addr())
	if d := describeTxn(t, adm, id); d.State != "Ongoing" || !slices.Equal(txnPartitions(d, topic), []int32{0, 1}) || d.ProducerID != pid || d.ProducerEpoch != epoch {
		t.Errorf("DescribeTransactions %s after the restart: %+v; want Ongoing on %s [0 1], producer %d epoch %d", id, d, topic, pid, epoch)
	}
	if d := describeTxn(t, adm, id2); d.State != "CompleteAbort" {
		t.Errorf("DescribeTransactions %s after the restart: %+v; want CompleteAbort", id2, d)
	}
	checkEndOffsets(t, adm, topic, hwm)
	if lso := txnStableOffsets(t, adm, topic); !equalOffsets(lso, before) {
		t.Errorf("after the restart, with a transaction open: last stable offsets %v, want %v", lso, before)
	}
	txnCheckValues(t, "read_committed after the restart", txnReadTopic(t, b.Addr(), topic, kgo.ReadCommitted(), before), txnByPartition(first))

	p3 := newTxnProducer(t, b.Addr(), topic, id, txnTimeout)
	after := txnRecords("after", 4, 1, 0)
	runTxn(t, p3, after, true)
	pid3, epoch3, err := p3.ProducerID(ctx)
	if err != nil {
		t.Fatalf("ProducerID: %v", err)
	}
	want := epoch + 2
	if txnV2(t, b.Addr()) {
		want++
	}
	if pid3 != pid || epoch3 != want {
		t.Errorf("the new producer of %s has producer %d epoch %d; want %d epoch %d (the open transaction's abort bumps it, InitProducerId too, and under transactions v2 the commit once more)", id, pid3, epoch3, pid, want)
	}
	ends := txnAwaitStable(t, adm, topic)
	txnCheckValues(t, "read_committed", txnReadTopic(t, b.Addr(), topic, kgo.ReadCommitted(), ends), txnByPartition(slices.Concat(first, after)))
	txnCheckValues(t, "read_uncommitted", txnReadTopic(t, b.Addr(), topic, kgo.ReadUncommitted(), ends), txnByPartition(slices.Concat(first, aborted, open, after)))
	if d := describeTxn(t, adm, id); d.State != "CompleteCommit" || d.ProducerEpoch != epoch3 {
		t.Errorf("DescribeTransactions %s at the end: %+v; want CompleteCommit with epoch %d", id, d, epoch3)
	}
}

// txnCheckReadFromAborted starts read_committed consumers inside aborted
// transactions: in each partition of topic, at the second record of the
// first aborted transaction with two or more records there. They must
// read the committed records from there on (committed are all the
// committed records, ends the end offsets), whether a fetch returns what
// there is or only one batch (a range that starts, or ends, inside an
// aborted transaction).
func txnCheckReadFromAborted(t *testing.T, addr, topic string, ends map[int32]int64, committed []txnRec) {
	t.Helper()
	isCommitted := map[string]bool{}
	for _, r := range committed {
		isCommitted[r.value] = true
	}
	tag := func(v string) string { return v[:strings.LastIndexByte(v, '-')] }
	_, all := txnReadTopicRecords(t, addr, topic, kgo.ReadUncommitted(), ends)
	_, com := txnReadTopicRecords(t, addr, topic, kgo.ReadCommitted(), ends)
	from, fromEnds := map[int32]int64{}, map[int32]int64{}
	for p, rs := range all {
		for i := 1; i < len(rs); i++ {
			v, prev := string(rs[i].Value), string(rs[i-1].Value)
			if !isCommitted[v] && tag(v) == tag(prev) {
				from[p], fromEnds[p] = rs[i].Offset, ends[p]
				break
			}
		}
	}
	if len(from) == 0 {
		t.Fatalf("no aborted transaction with two records in a partition of %s", topic)
	}
	want := map[int32][]string{}
	for p := range from {
		want[p] = []string{}
		for _, r := range com[p] {
			if r.Offset >= from[p] {
				want[p] = append(want[p], string(r.Value))
			}
		}
	}
	small := []kgo.Opt{kgo.FetchMaxPartitionBytes(1), kgo.FetchMaxBytes(1)}
	got, _ := txnReadFrom(t, addr, topic, kgo.ReadCommitted(), from, fromEnds)
	txnCheckValues(t, fmt.Sprintf("read_committed from %v, inside aborted transactions", from), got, want)
	got, _ = txnReadFrom(t, addr, topic, kgo.ReadCommitted(), from, fromEnds, small...)
	txnCheckValues(t, fmt.Sprintf("read_committed from %v, inside aborted transactions, a batch per fetch", from), got, want)
}
