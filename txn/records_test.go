package txn

import (
	"errors"
	"fmt"
	"reflect"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestRecordRoundTrip(t *testing.T) {
	for _, r := range []rec{
		{id: "a", producerID: 7, prevProducerID: 7, epoch: 3, lastEpoch: -1, timeoutMs: 60000, state: Empty, startMs: -1, updateMs: 100},
		{id: "b", producerID: 8, prevProducerID: -1, epoch: 0, lastEpoch: -1, timeoutMs: 1000, state: Ongoing,
			partitions: []TopicPartition{{"t", 0}, {"t", 2}, {"u", 1}}, startMs: 50, updateMs: 60},
		{id: "c", producerID: 9, prevProducerID: 4, epoch: 32767, lastEpoch: -1, timeoutMs: 1, state: PrepareAbort,
			partitions: []TopicPartition{{"x", 5}}, startMs: 1, updateMs: 2},
		{id: "d", producerID: 9, prevProducerID: 9, lastEpoch: -1, state: CompleteCommit, startMs: 1, updateMs: 2},
		{id: "e", tombstone: true},
	} {
		key := r.appendKey(nil)
		var value []byte
		if !r.tombstone {
			value = r.appendValue(nil)
		}
		got, ok, err := decodeRec(key, value)
		if err != nil || !ok {
			t.Fatalf("%s: %v %t", r.id, err, ok)
		}
		if !reflect.DeepEqual(got, r) {
			t.Errorf("got %+v, want %+v", got, r)
		}
	}
}

// TestRecordFormat checks the bytes against Kafka's schema as kmsg reads
// it: key version 0, value version 1 with PreviousProducerId as tag 0,
// Empty with a null partition list.
func TestRecordFormat(t *testing.T) {
	r := rec{id: "tx", producerID: 5, prevProducerID: 4, epoch: 2, timeoutMs: 900, state: Empty, startMs: -1, updateMs: 77}
	var k kmsg.TxnMetadataKey
	if err := k.ReadFrom(r.appendKey(nil)); err != nil || k.Version != 0 || k.TransactionalID != "tx" {
		t.Fatalf("key %+v %v", k, err)
	}
	var v kmsg.TxnMetadataValue
	if err := v.ReadFrom(r.appendValue(nil)); err != nil {
		t.Fatal(err)
	}
	if v.Version != 1 || v.ProducerID != 5 || v.PreviousProducerID != 4 || v.ProducerEpoch != 2 || v.TimeoutMillis != 900 ||
		v.State != 0 || v.Topics != nil || v.LastUpdateTimestamp != 77 || v.StartTimestamp != -1 || v.ClientTransactionVersion != 0 {
		t.Fatalf("value %+v", v)
	}
	r.state, r.partitions = CompleteAbort, nil
	if err := v.ReadFrom(r.appendValue(nil)); err != nil || v.Topics == nil || len(v.Topics) != 0 {
		t.Fatalf("CompleteAbort: topics %#v, %v", v.Topics, err)
	}
}

// TestDecodeKafkaRecords reads records as Kafka writes them.
func TestDecodeKafkaRecords(t *testing.T) {
	key := (&kmsg.TxnMetadataKey{Version: 0, TransactionalID: "k"}).AppendTo(nil)
	v0 := kmsg.NewTxnMetadataValue()
	v0.Version = 0
	v0.ProducerID, v0.ProducerEpoch, v0.TimeoutMillis = 11, 4, 5000
	v0.State = 1
	v0.Topics = []kmsg.TxnMetadataValueTopic{{Topic: "b", Partitions: []int32{2, 1}}, {Topic: "a", Partitions: []int32{0}}}
	v0.LastUpdateTimestamp, v0.StartTimestamp = 20, 10
	r, ok, err := decodeRec(key, v0.AppendTo(nil))
	want := rec{id: "k", producerID: 11, prevProducerID: -1, nextProducerID: -1, epoch: 4, lastEpoch: -1, timeoutMs: 5000, state: Ongoing,
		partitions: []TopicPartition{{"a", 0}, {"b", 1}, {"b", 2}}, startMs: 10, updateMs: 20}
	if err != nil || !ok || !reflect.DeepEqual(r, want) {
		t.Fatalf("v0: %+v %t %v", r, ok, err)
	}

	// A Dead value stands for the removal it announces.
	dead := v0
	dead.State = 6
	if r, ok, err := decodeRec(key, dead.AppendTo(nil)); err != nil || !ok || !r.tombstone {
		t.Fatalf("dead: %+v %t %v", r, ok, err)
	}
	for _, s := range []int8{7, 8, -1} {
		bad := v0
		bad.State = kmsg.TransactionState(s)
		if _, _, err := decodeRec(key, bad.AppendTo(nil)); !errors.Is(err, errRecord) {
			t.Errorf("state %d: %v", s, err)
		}
	}
	// A key of another version is a record type this coordinator does
	// not know: skipped.
	other := (&kmsg.TxnMetadataKey{Version: 1, TransactionalID: "k"}).AppendTo(nil)
	if _, ok, err := decodeRec(other, v0.AppendTo(nil)); ok || err != nil {
		t.Fatalf("key version 1: %t %v", ok, err)
	}
	for _, c := range []struct {
		name       string
		key, value []byte
	}{
		{"short key", []byte{0}, nil},
		{"truncated key", []byte{0, 0, 0, 9, 'a'}, nil},
		{"truncated value", key, v0.AppendTo(nil)[:12]},
		{"value version 2", key, []byte{0, 2, 0, 0}},
	} {
		if _, _, err := decodeRec(c.key, c.value); !errors.Is(err, errRecord) {
			t.Errorf("%s: %v", c.name, err)
		}
	}
}

func TestWriteError(t *testing.T) {
	for _, c := range []struct {
		in   error
		want *kerr.Error
	}{
		{fmt.Errorf("partition: %w", kerr.RequestTimedOut), kerr.CoordinatorNotAvailable},
		{fmt.Errorf("partition: %w", kerr.UnknownTopicOrPartition), kerr.CoordinatorNotAvailable},
		{fmt.Errorf("partition: %w", kerr.KafkaStorageError), kerr.NotCoordinator},
		{fmt.Errorf("partition: %w", kerr.NotLeaderForPartition), kerr.NotCoordinator},
		{fmt.Errorf("batch: %w", kerr.MessageTooLarge), kerr.UnknownServerError},
		{kerr.CoordinatorNotAvailable, kerr.CoordinatorNotAvailable},
		{errors.New("no code"), kerr.UnknownServerError},
	} {
		got := writeError(c.in)
		var ke *kerr.Error
		if !errors.As(got, &ke) || ke != c.want {
			t.Errorf("%v: got %v, want %s", c.in, got, c.want.Message)
		}
	}
	if writeError(nil) != nil {
		t.Error("nil")
	}
}

func TestStateNames(t *testing.T) {
	for s := Empty; s <= PrepareEpochFence; s++ {
		if got := kmsg.TransactionState(s).String(); got != s.String() {
			t.Errorf("state %d: %s, Kafka's %s", s, s, got)
		}
		if p, ok := ParseState(s.String()); !ok || p != s {
			t.Errorf("ParseState(%s) = %v %t", s, p, ok)
		}
	}
	if _, ok := ParseState("ongoing"); ok {
		t.Error("names are case-sensitive")
	}
}
