package integration

// Transactions with sarama's transactional producer.

import (
	"log"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestTxnSarama: sarama's transactional SyncProducer (Idempotent, one open
// request, acks from all) commits a transaction over two partitions,
// aborts one that also adds a group's offsets (AddOffsetsToTxn), and
// commits one with other offsets of that group; with Kafka versions
// 0.11.0 (InitProducerId, AddPartitionsToTxn, AddOffsetsToTxn, EndTxn and
// TxnOffsetCommit v0), 2.0.0 (v1) and sarama's default, 2.8.0
// (AddPartitionsToTxn, EndTxn and TxnOffsetCommit v3). A kgo
// read_committed consumer reads the committed
// records once, in order per partition, and no aborted one; a
// read_uncommitted one reads all; the group's offsets are those of the
// committed transaction. All of it again after a clean restart.
func TestTxnSarama(t *testing.T) {
	if txnDebug(t) {
		// Before t.Parallel: no other test's sarama client reads it now.
		sarama.Logger = log.New(os.Stderr, "[sarama] ", log.Lmicroseconds)
	}
	t.Parallel()
	v011, v20 := sarama.V0_11_0_0, sarama.V2_0_0_0
	for _, tt := range []struct {
		name    string
		version *sarama.KafkaVersion
	}{
		{"V0_11_0_0", &v011},
		{"V2_0_0_0", &v20},
		{"default-version", nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			eachBroker(t, txnOpts(), func(t *testing.T, b testBroker) {
				testTxnSarama(t, b, tt.version)
			})
		})
	}
}

func testTxnSarama(t *testing.T, b testBroker, version *sarama.KafkaVersion) {
	addr := b.Addr()
	topic, group := topicName(t), groupName(t)
	id := "txn." + topic
	adm := newAdmin(t, addr)
	createGroupTopic(t, adm, topic, 2)

	cfg := saramaConfig(version, true)
	cfg.ClientID = "sarama-txn"
	cfg.Producer.Transaction.ID = id
	cfg.Producer.Transaction.Timeout = txnTimeout
	cfg.Producer.Transaction.Retry.Backoff = 50 * time.Millisecond
	cfg.Producer.Partitioner = sarama.NewManualPartitioner
	producer, err := sarama.NewSyncProducer([]string{addr}, cfg)
	if err != nil {
		t.Fatalf("NewSyncProducer (transactional): %v", err)
	}
	closed := false
	defer func() {
		if !closed {
			producer.Close()
		}
	}()
	if !producer.IsTransactional() {
		t.Fatalf("the producer is not transactional")
	}

	var committed, all []txnRec
	txn := func(recs []txnRec, commit bool, offsets map[int32]int64) {
		t.Helper()
		if err := producer.BeginTxn(); err != nil {
			t.Fatalf("BeginTxn: %v", err)
		}
		msgs := make([]*sarama.ProducerMessage, len(recs))
		for i, r := range recs {
			msgs[i] = &sarama.ProducerMessage{Topic: topic, Partition: r.partition, Value: sarama.StringEncoder(r.value)}
		}
		if err := producer.SendMessages(msgs); err != nil {
			t.Fatalf("SendMessages in a transaction: %v", err)
		}
		if offsets != nil {
			var pos []*sarama.PartitionOffsetMetadata
			for p, o := range offsets {
				pos = append(pos, &sarama.PartitionOffsetMetadata{Partition: p, Offset: o, LeaderEpoch: -1})
			}
			if err := producer.AddOffsetsToTxn(map[string][]*sarama.PartitionOffsetMetadata{topic: pos}, group); err != nil {
				t.Fatalf("AddOffsetsToTxn %v: %v", offsets, err)
			}
		}
		if commit {
			if err := producer.CommitTxn(); err != nil {
				t.Fatalf("CommitTxn: %v (status %v)", err, producer.TxnStatus())
			}
			committed = append(committed, recs...)
		} else if err := producer.AbortTxn(); err != nil {
			t.Fatalf("AbortTxn: %v (status %v)", err, producer.TxnStatus())
		}
		all = append(all, recs...)
		if producer.TxnStatus()&sarama.ProducerTxnFlagReady == 0 {
			t.Fatalf("after the transaction (commit %v) the producer is not ready: status %v", commit, producer.TxnStatus())
		}
	}
	txn(txnRecords("c1", 8, 0, 1), true, nil)
	txn(txnRecords("a2", 6, 1, 0), false, map[int32]int64{0: 1, 1: 1})
	if got := committedOffsets(t, adm, group, topic); len(got) != 0 {
		t.Errorf("group %s has committed offsets %v after the transaction that added them aborted", group, got)
	}
	txn(txnRecords("c3", 5, 1, 0), true, map[int32]int64{0: 2, 1: 5})
	// Visible once the commit marker reaches __consumer_offsets, which
	// Kafka writes after answering EndTxn.
	awaitCommitted(t, adm, group, topic, map[int32]int64{0: 2, 1: 5})

	check := func(when string) {
		t.Helper()
		ends := txnAwaitStable(t, adm, topic)
		txnCheckValues(t, "read_committed"+when, txnReadTopic(t, addr, topic, kgo.ReadCommitted(), ends), txnByPartition(committed))
		txnCheckValues(t, "read_uncommitted"+when, txnReadTopic(t, addr, topic, kgo.ReadUncommitted(), ends), txnByPartition(all))
		if d := describeTxn(t, adm, id); d.State != "CompleteCommit" {
			t.Errorf("DescribeTransactions %s%s: %+v; want CompleteCommit", id, when, d)
		}
	}
	check("")

	// All of it survives a clean restart, the transactional offsets too.
	closed = true
	if err := producer.Close(); err != nil {
		t.Errorf("close the producer: %v", err)
	}
	b.Restart(t)
	addr = b.Addr()
	adm = newAdmin(t, addr)
	checkCommitted(t, adm, group, topic, map[int32]int64{0: 2, 1: 5})
	check(" after a restart")
}

// TestTxnSaramaFencing: sarama producer p1 commits a transaction, begins
// another and sends to two partitions; p2, a second sarama producer with
// the same transactional id, is created (InitProducerId: p1's
// transaction is aborted, p1 fenced) and commits. p1's commit fails, and
// a kgo read_committed consumer sees p1's first transaction and p2's,
// nothing of the fenced one. With Kafka versions 2.0.0 (EndTxn v1, whose
// fencing error is INVALID_PRODUCER_EPOCH) and 2.8.0 (v3,
// PRODUCER_FENCED).
func TestTxnSaramaFencing(t *testing.T) {
	t.Parallel()
	v20 := sarama.V2_0_0_0
	for _, tt := range []struct {
		name    string
		version *sarama.KafkaVersion
	}{
		{"V2_0_0_0", &v20},
		{"default-version", nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			eachBroker(t, txnOpts(), func(t *testing.T, b testBroker) {
				testTxnSaramaFencing(t, b.Addr(), tt.version)
			})
		})
	}
}

func testTxnSaramaFencing(t *testing.T, addr string, version *sarama.KafkaVersion) {
	topic := topicName(t)
	id := "txn." + topic
	adm := newAdmin(t, addr)
	createGroupTopic(t, adm, topic, 2)
	newProducer := func() sarama.SyncProducer {
		t.Helper()
		cfg := saramaConfig(version, true)
		cfg.Producer.Transaction.ID = id
		cfg.Producer.Transaction.Timeout = txnTimeout
		cfg.Producer.Transaction.Retry.Backoff = 50 * time.Millisecond
		cfg.Producer.Partitioner = sarama.NewManualPartitioner
		p, err := sarama.NewSyncProducer([]string{addr}, cfg)
		if err != nil {
			t.Fatalf("NewSyncProducer (transactional): %v", err)
		}
		t.Cleanup(func() { p.Close() })
		return p
	}
	send := func(p sarama.SyncProducer, recs []txnRec) error {
		msgs := make([]*sarama.ProducerMessage, len(recs))
		for i, r := range recs {
			msgs[i] = &sarama.ProducerMessage{Topic: topic, Partition: r.partition, Value: sarama.StringEncoder(r.value)}
		}
		return p.SendMessages(msgs)
	}
	txn := func(p sarama.SyncProducer, recs []txnRec) {
		t.Helper()
		if err := p.BeginTxn(); err != nil {
			t.Fatalf("BeginTxn: %v", err)
		}
		if err := send(p, recs); err != nil {
			t.Fatalf("SendMessages: %v", err)
		}
		if err := p.CommitTxn(); err != nil {
			t.Fatalf("CommitTxn: %v", err)
		}
	}

	p1 := newProducer()
	first := txnRecords("p1-committed", 4, 0, 1)
	txn(p1, first)
	if err := p1.BeginTxn(); err != nil {
		t.Fatalf("p1 BeginTxn: %v", err)
	}
	if err := send(p1, txnRecords("p1-fenced", 4, 0, 1)); err != nil {
		t.Fatalf("p1 SendMessages: %v", err)
	}
	p2 := newProducer()
	second := txnRecords("p2-committed", 4, 1, 0)
	txn(p2, second)
	err := p1.CommitTxn()
	t.Logf("p1's commit after the fence: %v (status %v)", err, p1.TxnStatus())
	if err == nil {
		t.Errorf("p1's commit after the fence succeeded")
	}

	ends := txnAwaitStable(t, adm, topic)
	got := txnReadTopic(t, addr, topic, kgo.ReadCommitted(), ends)
	if v, ok := txnContainsAny(got, "p1-fenced"); ok {
		t.Errorf("read_committed sees a write of the fenced producer: %s", v)
	}
	txnCheckValues(t, "read_committed", got, txnByPartition(slices.Concat(first, second)))
	if d := describeTxn(t, adm, id); d.State != "CompleteCommit" {
		t.Errorf("DescribeTransactions %s: %+v; want CompleteCommit", id, d)
	}
}
