//go:build cgo

package integration

// Transactions with confluent-kafka-go (librdkafka, cgo). Without cgo,
// txn_confluent_nocgo_test.go skips the test.

import (
	"maps"
	"slices"
	"testing"
	"time"

	ckafka "github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestTxnConfluent: a librdkafka transactional producer
// (InitTransactions, BeginTransaction, Produce, CommitTransaction or
// AbortTransaction) commits, aborts and commits transactions over two
// partitions, the last while a kgo producer's transaction, aborted in the
// end, is open on both. Then, as a consume-transform-produce application would, it
// reads an input topic with a librdkafka consumer, writes the records
// transformed and adds the consumer's offsets with
// SendOffsetsToTransaction: aborted first (the group has no committed
// offsets, nothing is visible), then committed (the group's offsets are
// the input's end offsets). A librdkafka read_committed consumer (its
// default isolation level) reads every committed record once, in order
// per partition, and no aborted one; so does a kgo one; a kgo
// read_uncommitted consumer reads the aborted records too.
func TestTxnConfluent(t *testing.T) {
	t.Parallel()
	needsClient(t, consClientNamed("confluent"))
	eachBroker(t, txnOpts(), func(t *testing.T, b testBroker) {
		testTxnConfluent(t, b.Addr())
	})
}

func testTxnConfluent(t *testing.T, addr string) {
	topic, in, group := topicName(t), topicName(t)+".in", groupName(t)
	id := "txn." + topic
	adm := newAdmin(t, addr)
	createGroupTopic(t, adm, topic, 2)
	createGroupTopic(t, adm, in, 2)
	produceGroupRecords(t, addr, in, 2, 10, "in")
	inEnds := endOffsets(t, adm, in)

	cfg := confluentBase(addr)
	cfg["client.id"] = "confluent-txn"
	cfg["transactional.id"] = id
	cfg["transaction.timeout.ms"] = int(txnTimeout / time.Millisecond)
	cfg["message.timeout.ms"] = int(txnTimeout / time.Millisecond) // at most the transaction timeout
	cfg["linger.ms"] = 5
	txnConfluentDebug(t, cfg)
	p, err := ckafka.NewProducer(&cfg)
	if err != nil {
		t.Fatalf("confluent NewProducer: %v", err)
	}
	drained := make(chan struct{})
	go func() { // drain the events channel (errors), which Close closes
		defer close(drained)
		for ev := range p.Events() {
			if e, ok := ev.(ckafka.Error); ok {
				t.Logf("confluent producer: %v", e)
			}
		}
	}()
	defer func() {
		p.Close()
		<-drained
	}()
	ctx := testCtx(t)
	if err := p.InitTransactions(ctx); err != nil {
		t.Fatalf("InitTransactions: %v", err)
	}

	var committed, all []txnRec
	txn := func(recs []txnRec, commit bool, offsets []ckafka.TopicPartition, meta *ckafka.ConsumerGroupMetadata) {
		t.Helper()
		if err := p.BeginTransaction(); err != nil {
			t.Fatalf("BeginTransaction: %v", err)
		}
		txnProduceConfluent(t, p, topic, recs)
		if offsets != nil {
			if err := p.SendOffsetsToTransaction(ctx, offsets, meta); err != nil {
				t.Fatalf("SendOffsetsToTransaction %v: %v", offsets, err)
			}
		}
		if commit {
			if err := p.CommitTransaction(ctx); err != nil {
				t.Fatalf("CommitTransaction: %v", err)
			}
			committed = append(committed, recs...)
		} else if err := p.AbortTransaction(ctx); err != nil {
			t.Fatalf("AbortTransaction: %v", err)
		}
		all = append(all, recs...)
	}
	txn(txnRecords("c1", 8, 0, 1), true, nil, nil)
	txn(txnRecords("a2", 6, 1, 0), false, nil, nil)
	// A kgo producer's transaction, aborted at last, spans one of
	// librdkafka's committed ones.
	kp := newTxnProducer(t, addr, topic, id+".kgo", txnTimeout)
	if err := kp.BeginTransaction(); err != nil {
		t.Fatalf("kgo BeginTransaction: %v", err)
	}
	ka, kb := txnRecords("kgo-aborted-a", 3, 1, 0), txnRecords("kgo-aborted-b", 2, 0, 1)
	if err := produceTxn(ctx, kp, ka); err != nil {
		t.Fatalf("kgo produce: %v", err)
	}
	all = append(all, ka...)
	txn(txnRecords("c3", 5, 1), true, nil, nil)
	if err := produceTxn(ctx, kp, kb); err != nil {
		t.Fatalf("kgo produce: %v", err)
	}
	if err := kp.EndTransaction(ctx, kgo.TryAbort); err != nil {
		t.Fatalf("kgo abort: %v", err)
	}
	all = append(all, kb...)

	// Consume, transform, produce, with the offsets in the transaction.
	inRecs, offsets, meta := txnConsumeConfluentInput(t, addr, in, group, inEnds)
	transformed := func(tag string) []txnRec {
		var out []txnRec
		for _, r := range inRecs {
			out = append(out, txnRec{partition: r.partition, value: tag + ":" + r.value})
		}
		return out
	}
	txn(transformed("a4"), false, offsets, meta)
	if got := committedOffsets(t, adm, group, in); len(got) != 0 {
		t.Errorf("group %s has committed offsets %v after the transaction that sent them aborted", group, got)
	}
	txn(transformed("c5"), true, offsets, meta)
	// Visible once the commit marker reaches __consumer_offsets, which
	// Kafka writes after answering EndTxn.
	awaitCommitted(t, adm, group, in, inEnds)

	ends := txnAwaitStable(t, adm, topic)
	want := txnByPartition(committed)
	txnCheckValues(t, "confluent read_committed", txnReadConfluent(t, addr, topic, 2), want)
	txnCheckValues(t, "kgo read_committed", txnReadTopic(t, addr, topic, kgo.ReadCommitted(), ends), want)
	txnCheckValues(t, "kgo read_uncommitted", txnReadTopic(t, addr, topic, kgo.ReadUncommitted(), ends), txnByPartition(all))
	if d := describeTxn(t, adm, id); d.State != "CompleteCommit" {
		t.Errorf("DescribeTransactions %s: %+v; want CompleteCommit", id, d)
	}
}

// txnConfluentDebug turns on librdkafka's transaction debugging in cfg
// with KBROKER_TXN_DEBUG (to stderr).
func txnConfluentDebug(t testing.TB, cfg ckafka.ConfigMap) {
	if txnDebug(t) {
		cfg["debug"] = "eos,protocol,msg"
		cfg["log_level"] = 7
	}
}

// txnProduceConfluent produces recs to topic with p, in its transaction,
// and waits for every delivery report.
func txnProduceConfluent(t *testing.T, p *ckafka.Producer, topic string, recs []txnRec) {
	t.Helper()
	deliveries := make(chan ckafka.Event, len(recs))
	for _, r := range recs {
		m := &ckafka.Message{TopicPartition: ckafka.TopicPartition{Topic: &topic, Partition: r.partition}, Value: []byte(r.value)}
		if err := p.Produce(m, deliveries); err != nil {
			t.Fatalf("confluent Produce: %v", err)
		}
	}
	timeout := time.After(txnWait)
	for i := range recs {
		select {
		case ev := <-deliveries:
			m, ok := ev.(*ckafka.Message)
			if !ok {
				t.Fatalf("confluent delivery report %T: %v", ev, ev)
			}
			if m.TopicPartition.Error != nil {
				t.Fatalf("confluent delivery of %s: %v", m.Value, m.TopicPartition.Error)
			}
		case <-timeout:
			t.Fatalf("confluent: %d of %d delivery reports in %v", i, len(recs), txnWait)
		}
	}
}

// txnConsumeConfluentInput reads topic's partitions up to ends with a
// librdkafka consumer of group (assigned, not subscribed) and returns the
// records, the offsets to commit for them and the consumer's group
// metadata for SendOffsetsToTransaction.
func txnConsumeConfluentInput(t *testing.T, addr, topic, group string, ends map[int32]int64) ([]txnRec, []ckafka.TopicPartition, *ckafka.ConsumerGroupMetadata) {
	t.Helper()
	cfg := confluentBase(addr)
	cfg["group.id"] = group
	cfg["enable.auto.commit"] = false
	cfg["enable.auto.offset.store"] = false
	cfg["fetch.wait.max.ms"] = 200
	txnConfluentDebug(t, cfg)
	c, err := ckafka.NewConsumer(&cfg)
	if err != nil {
		t.Fatalf("confluent NewConsumer: %v", err)
	}
	defer closeConfluent(t, c)
	var assign []ckafka.TopicPartition
	for _, p := range slices.Sorted(maps.Keys(ends)) {
		assign = append(assign, ckafka.TopicPartition{Topic: &topic, Partition: p, Offset: ckafka.OffsetBeginning})
	}
	if err := c.Assign(assign); err != nil {
		t.Fatalf("confluent Assign: %v", err)
	}
	var recs []txnRec
	next := map[int32]int64{}
	deadline := time.Now().Add(txnWait)
	for len(recs) < offsetsSum(ends) {
		if time.Now().After(deadline) {
			t.Fatalf("confluent consumer of %s: %d of %d records in %v", topic, len(recs), offsetsSum(ends), txnWait)
		}
		switch ev := c.Poll(100).(type) {
		case *ckafka.Message:
			if ev.TopicPartition.Error != nil {
				t.Fatalf("confluent consumer of %s: %v", topic, ev.TopicPartition.Error)
			}
			recs = append(recs, txnRec{partition: ev.TopicPartition.Partition, value: string(ev.Value)})
			next[ev.TopicPartition.Partition] = int64(ev.TopicPartition.Offset) + 1
		case ckafka.Error:
			t.Logf("confluent consumer of %s: %v", topic, ev)
		}
	}
	var offsets []ckafka.TopicPartition
	for _, p := range slices.Sorted(maps.Keys(next)) {
		offsets = append(offsets, ckafka.TopicPartition{Topic: &topic, Partition: p, Offset: ckafka.Offset(next[p])})
	}
	meta, err := c.GetConsumerGroupMetadata()
	if err != nil {
		t.Fatalf("GetConsumerGroupMetadata: %v", err)
	}
	return recs, offsets, meta
}

// txnReadConfluent reads partitions 0..partitions-1 of topic from the
// start with a librdkafka consumer at its default isolation level,
// read_committed, until it reports the end of every partition, and
// returns the values by partition.
func txnReadConfluent(t *testing.T, addr, topic string, partitions int32) map[int32][]string {
	t.Helper()
	cfg := confluentBase(addr)
	cfg["group.id"] = "kbroker-assign-only"
	cfg["enable.auto.commit"] = false
	cfg["enable.auto.offset.store"] = false
	cfg["enable.partition.eof"] = true
	cfg["fetch.wait.max.ms"] = 200
	txnConfluentDebug(t, cfg)
	c, err := ckafka.NewConsumer(&cfg)
	if err != nil {
		t.Fatalf("confluent NewConsumer: %v", err)
	}
	defer closeConfluent(t, c)
	var assign []ckafka.TopicPartition
	for p := range partitions {
		assign = append(assign, ckafka.TopicPartition{Topic: &topic, Partition: p, Offset: ckafka.OffsetBeginning})
	}
	if err := c.Assign(assign); err != nil {
		t.Fatalf("confluent Assign: %v", err)
	}
	got := map[int32][]string{}
	eof := map[int32]bool{}
	deadline := time.Now().Add(txnWait)
	for len(eof) < int(partitions) {
		if time.Now().After(deadline) {
			t.Fatalf("confluent read_committed consumer of %s: end of partitions %v only after %v; read %v", topic, eof, txnWait, got)
		}
		switch ev := c.Poll(100).(type) {
		case *ckafka.Message:
			if ev.TopicPartition.Error != nil {
				t.Fatalf("confluent read_committed consumer of %s: %v", topic, ev.TopicPartition.Error)
			}
			p := ev.TopicPartition.Partition
			if eof[p] {
				t.Errorf("confluent read_committed consumer of %s: %s at %d/%d after the end of the partition", topic, ev.Value, p, ev.TopicPartition.Offset)
			}
			got[p] = append(got[p], string(ev.Value))
		case ckafka.PartitionEOF:
			eof[ev.Partition] = true
		case ckafka.Error:
			t.Logf("confluent read_committed consumer of %s: %v", topic, ev)
		}
	}
	return got
}
