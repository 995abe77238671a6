package integration

// Shared pieces of the transaction tests (txn_*_test.go): broker
// settings, transactional kgo producers, reading a topic back at either
// isolation level, the last stable offset, and describing transactional
// ids.
//
// The tests: TestTxnKgo, TestTxnKgoFencing, TestTxnKgoTimeout and
// TestTxnRestart (kgo, kadm), TestTxnGroupSession (kgo's
// GroupTransactSession, exactly once across rebalances), TestTxnConfluent
// (librdkafka, cgo), TestTxnSarama and TestTxnSaramaFencing, and
// TestTxnCrashKill9 (SIGKILL of the binary in sync mode,
// KBROKER_TXN_KILLS rounds, 3 by default). With KBROKER_TXN_DEBUG set,
// kgo logs at debug level, librdkafka with its eos,protocol,msg debug
// contexts (to stderr) and sarama to stderr; a failed test prints its
// kgo clients' logs.

import (
	"context"
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
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/internal/testenv"
)

const (
	// txnTimeout is the transaction timeout of producers that are not
	// meant to time out: far above what a transaction of these tests
	// takes, even under -race on a loaded machine.
	txnTimeout = 10 * time.Second
	// txnShortTimeout is the timeout of transactions the broker is meant
	// to abort (the abort check runs every 500 ms: txnBrokerProps). Not
	// less: the test's first transaction must commit within it, and the
	// second's records must be stored before it ends, under -race on a
	// loaded machine.
	txnShortTimeout = 5 * time.Second
	// txnWait bounds each wait for the broker or a client to reach a
	// state.
	txnWait = 30 * time.Second
)

// txnDebug: KBROKER_TXN_DEBUG is set, so clients log their transactions
// in detail (kgo at debug level, librdkafka with its eos,protocol,msg
// debug contexts, sarama's logger); the logs are printed for failed tests.
func txnDebug(t testing.TB) bool { return testenv.Flag(t, "KBROKER_TXN_DEBUG") }

// txnBrokerProps are the broker settings of the transaction tests:
// timed-out transactions are looked for every 500 ms (instead of 10 s),
// and the group settings of the group tests.
var txnBrokerProps = map[string]string{
	"transaction.abort.timed.out.transaction.cleanup.interval.ms": "500",
	"transaction.max.timeout.ms":                                  "60000",
	"group.min.session.timeout.ms":                                "1000",
	"group.initial.rebalance.delay.ms":                            "0",
}

// txnOpts are brokerOpts with txnBrokerProps.
func txnOpts() brokerOpts {
	return brokerOpts{props: maps.Clone(txnBrokerProps)}
}

// kgoTxnLogLevel is the level of kgo clients' logs: info, debug with
// KBROKER_TXN_DEBUG.
func kgoTxnLogLevel(t testing.TB) kgo.LogLevel {
	if txnDebug(t) {
		return kgo.LogLevelDebug
	}
	return kgo.LogLevelInfo
}

// newTxnProducer returns a kgo client with transactional id id and
// transaction timeout timeout, producing to topic by record partition
// without lingering, logging to a memberLog named after id (printed if the
// test fails). It is closed at cleanup.
func newTxnProducer(t *testing.T, addr, topic, id string, timeout time.Duration, extra ...kgo.Opt) *kgo.Client {
	t.Helper()
	log := newMemberLog(t, "kgo transactional producer "+id)
	opts := append([]kgo.Opt{
		kgo.TransactionalID(id),
		kgo.TransactionTimeout(timeout),
		kgo.DefaultProduceTopic(topic),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerLinger(0),
		kgo.ClientID(id),
		kgo.WithLogger(kgo.BasicLogger(&log.buf, kgoTxnLogLevel(t), nil)),
	}, extra...)
	return newKgo(t, addr, opts...)
}

// txnRec is a record to produce in a transaction: its partition and value.
type txnRec struct {
	partition int32
	value     string
}

// txnRecords are n records with values "<tag>-<i>", spread over the
// partitions parts (record i to parts[i % len(parts)]).
func txnRecords(tag string, n int, parts ...int32) []txnRec {
	out := make([]txnRec, n)
	for i := range out {
		out[i] = txnRec{partition: parts[i%len(parts)], value: fmt.Sprintf("%s-%d", tag, i)}
	}
	return out
}

// produceTxn produces recs in the transaction cl has begun and waits for
// every acknowledgement, 4 records at a time: a transaction of more has
// several batches in a partition.
func produceTxn(ctx context.Context, cl *kgo.Client, recs []txnRec) error {
	for chunk := range slices.Chunk(recs, 4) {
		krs := make([]*kgo.Record, len(chunk))
		for i, r := range chunk {
			krs[i] = &kgo.Record{Partition: r.partition, Value: []byte(r.value)}
		}
		if err := cl.ProduceSync(ctx, krs...).FirstErr(); err != nil {
			return err
		}
	}
	return nil
}

// runTxn begins a transaction on cl, produces recs and ends it with a
// commit or an abort; any error fails the test.
func runTxn(t *testing.T, cl *kgo.Client, recs []txnRec, commit bool) {
	t.Helper()
	ctx := testCtx(t)
	if err := cl.BeginTransaction(); err != nil {
		t.Fatalf("BeginTransaction: %v", err)
	}
	if err := produceTxn(ctx, cl, recs); err != nil {
		t.Fatalf("produce %d records in a transaction: %v", len(recs), err)
	}
	if err := cl.EndTransaction(ctx, kgo.TransactionEndTry(commit)); err != nil {
		t.Fatalf("EndTransaction (commit %v): %v", commit, err)
	}
}

// txnByPartition groups the values of recs by partition, in order.
func txnByPartition(recs []txnRec) map[int32][]string {
	out := map[int32][]string{}
	for _, r := range recs {
		out[r.partition] = append(out[r.partition], r.value)
	}
	return out
}

// txnReadTopic reads partitions 0..len(ends)-1 of topic from the start at
// isolation level level, up to ends (end offsets at that level: the last
// stable offset for read_committed), and returns the values of the data
// records by partition, in order. It keeps control records to know where
// it is: the record (data or control) at ends[p]-1 ends partition p, which
// holds when no transaction is open below the end and the last record is
// a marker or a record read_committed returns. A data record at or
// beyond the end under read_committed fails the test (the broker served
// what is not stable yet; the callers read topics no one writes to, or
// only in an open transaction). It fails the test after txnWait.
// Options for the consumer come last.
func txnReadTopic(t *testing.T, addr, topic string, level kgo.IsolationLevel, ends map[int32]int64, opts ...kgo.Opt) map[int32][]string {
	t.Helper()
	vals, _ := txnReadTopicRecords(t, addr, topic, level, ends, opts...)
	return vals
}

// txnReadTopicRecords is txnReadTopic, also returning the data records.
func txnReadTopicRecords(t *testing.T, addr, topic string, level kgo.IsolationLevel, ends map[int32]int64, opts ...kgo.Opt) (map[int32][]string, map[int32][]*kgo.Record) {
	t.Helper()
	return txnReadFrom(t, addr, topic, level, nil, ends, opts...)
}

// txnReadFrom is txnReadTopicRecords starting each partition p at offset
// from[p] (0 if absent) instead of the start.
func txnReadFrom(t *testing.T, addr, topic string, level kgo.IsolationLevel, from, ends map[int32]int64, opts ...kgo.Opt) (map[int32][]string, map[int32][]*kgo.Record) {
	t.Helper()
	vals := map[int32][]string{}
	recs := map[int32][]*kgo.Record{}
	parts := map[int32]kgo.Offset{}
	next := map[int32]int64{} // the offset after the last record seen
	for p, e := range ends {
		next[p] = from[p]
		if e > from[p] {
			parts[p] = kgo.NewOffset().At(from[p])
		}
	}
	if len(parts) == 0 {
		return vals, recs
	}
	cl := newKgo(t, addr, append([]kgo.Opt{
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: parts}),
		kgo.FetchIsolationLevel(level),
		kgo.KeepControlRecords(),
		kgo.FetchMaxWait(200 * time.Millisecond),
	}, opts...)...)
	defer cl.Close()
	done := func() bool {
		for p, e := range ends {
			if next[p] < e {
				return false
			}
		}
		return true
	}
	ctx, cancel := context.WithTimeout(context.Background(), txnWait)
	defer cancel()
	for !done() {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("reading %s at %v: after %v got up to %v, want %v", topic, level, txnWait, next, ends)
		}
		fs.EachError(func(topic string, p int32, err error) {
			t.Errorf("reading %s[%d] at %v: %v", topic, p, level, err)
		})
		fs.EachRecord(func(r *kgo.Record) {
			if r.Offset >= ends[r.Partition] {
				if level == kgo.ReadCommitted() && !r.Attrs.IsControl() {
					t.Errorf("reading %s[%d] at %v: record %q at offset %d, at or beyond the last stable offset %d", topic, r.Partition, level, r.Value, r.Offset, ends[r.Partition])
				}
				return // beyond what the caller wants
			}
			if r.Offset < next[r.Partition] {
				t.Errorf("reading %s[%d] at %v: offset %d after %d", topic, r.Partition, level, r.Offset, next[r.Partition]-1)
			}
			next[r.Partition] = r.Offset + 1
			if !r.Attrs.IsControl() {
				vals[r.Partition] = append(vals[r.Partition], string(r.Value))
				recs[r.Partition] = append(recs[r.Partition], r)
			}
		})
		if t.Failed() {
			t.FailNow()
		}
	}
	return vals, recs
}

// txnCheckValues fails the test unless got are want, partition by partition,
// in order.
func txnCheckValues(t *testing.T, who string, got, want map[int32][]string) {
	t.Helper()
	for _, p := range slices.Sorted(maps.Keys(txnJoinKeys(got, want))) {
		if !slices.Equal(got[p], want[p]) {
			t.Errorf("%s: partition %d has %d records %s, want %d %s", who, p, len(got[p]), txnAbbrev(got[p]), len(want[p]), txnAbbrev(want[p]))
		}
	}
}

func txnJoinKeys[V any](a, b map[int32]V) map[int32]bool {
	out := map[int32]bool{}
	for k := range a {
		out[k] = true
	}
	for k := range b {
		out[k] = true
	}
	return out
}

// txnAbbrev shows vs, at most 12 of them.
func txnAbbrev(vs []string) string {
	if len(vs) <= 12 {
		return fmt.Sprint(vs)
	}
	return fmt.Sprintf("%v ... %v", vs[:6], vs[len(vs)-6:])
}

// txnStableOffsets are topic's end offsets under read_committed (the last
// stable offsets), by partition.
func txnStableOffsets(t *testing.T, adm *kadm.Client, topic string) map[int32]int64 {
	t.Helper()
	lo, err := adm.ListCommittedOffsets(testCtx(t), topic)
	if err != nil {
		t.Fatalf("ListCommittedOffsets: %v", err)
	}
	if err := lo.Error(); err != nil {
		t.Fatalf("ListCommittedOffsets %s: %v", topic, err)
	}
	got := map[int32]int64{}
	lo.Each(func(o kadm.ListedOffset) { got[o.Partition] = o.Offset })
	return got
}

// txnAwaitStable waits until topic's last stable offsets reach its end
// offsets (no transaction open in it), and returns them.
func txnAwaitStable(t *testing.T, adm *kadm.Client, topic string) map[int32]int64 {
	t.Helper()
	var lso, hwm map[int32]int64
	awaitTxn(t, "the last stable offsets of "+topic+" to reach the end offsets", func() bool {
		hwm = endOffsets(t, adm, topic)
		lso = txnStableOffsets(t, adm, topic)
		return equalOffsets(lso, hwm)
	}, func() string { return fmt.Sprintf("last stable %v, end %v", lso, hwm) })
	return hwm
}

// awaitTxn polls cond every 20 ms until it holds; after txnWait it fails
// the test with what and state().
func awaitTxn(t *testing.T, what string, cond func() bool, state func() string) {
	t.Helper()
	start := time.Now()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Since(start) > txnWait {
			t.Fatalf("waited %v for %s: %s", txnWait, what, state())
		}
		<-tick.C
	}
	t.Logf("%s: after %v", what, time.Since(start).Round(time.Millisecond))
}

// describeTxn describes transactional id id.
func describeTxn(t *testing.T, adm *kadm.Client, id string) kadm.DescribedTransaction {
	t.Helper()
	ds, err := adm.DescribeTransactions(testCtx(t), id)
	if err != nil {
		t.Fatalf("DescribeTransactions %s: %v", id, err)
	}
	d, err := ds.On(id, nil)
	if err == nil {
		err = d.Err
	}
	if err != nil {
		t.Fatalf("DescribeTransactions %s: %v", id, err)
	}
	return d
}

// txnPartitions are the partitions of topic in a described transaction,
// sorted.
func txnPartitions(d kadm.DescribedTransaction, topic string) []int32 {
	var ps []int32
	for p := range d.Topics[topic] {
		ps = append(ps, p)
	}
	slices.Sort(ps)
	return ps
}

// listTxnStates lists the transactional ids in states (all if none), with
// their states.
func listTxnStates(t *testing.T, adm *kadm.Client, states ...string) map[string]string {
	t.Helper()
	ls, err := adm.ListTransactions(testCtx(t), nil, states)
	if err != nil {
		t.Fatalf("ListTransactions %v: %v", states, err)
	}
	out := map[string]string{}
	for id, l := range ls {
		out[id] = l.State
	}
	return out
}

// txnIsFenced reports whether err is one of the errors a fenced producer
// gets: PRODUCER_FENCED from the coordinator, INVALID_PRODUCER_EPOCH from
// a partition.
func txnIsFenced(err error) bool {
	return errors.Is(err, kerr.ProducerFenced) || errors.Is(err, kerr.InvalidProducerEpoch)
}

// txnContainsAny reports whether some value of vals starts with one of
// prefixes, and returns the first.
func txnContainsAny(vals map[int32][]string, prefixes ...string) (string, bool) {
	for _, p := range slices.Sorted(maps.Keys(vals)) {
		for _, v := range vals[p] {
			for _, pre := range prefixes {
				if strings.HasPrefix(v, pre) {
					return fmt.Sprintf("partition %d: %s", p, v), true
				}
			}
		}
	}
	return "", false
}

// txnV2 reports whether the broker at addr runs transactions v2 (KIP-890
// part 2): ApiVersions finalizes transaction.version at 2 or more, as
// kbroker and Kafka 4 do by default. Kafka 4 clients then bump the epoch
// with every EndTxn.
func txnV2(t *testing.T, addr string) bool {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	resp, err := kmsg.NewPtrApiVersionsRequest().RequestWith(testCtx(t), cl)
	if err != nil {
		t.Fatalf("ApiVersions: %v", err)
	}
	for _, f := range resp.FinalizedFeatures {
		if f.Name == "transaction.version" {
			return f.MaxVersionLevel >= 2
		}
	}
	return false
}
