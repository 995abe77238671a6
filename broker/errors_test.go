package broker

import (
	"context"
	"errors"
	"fmt"
	"syscall"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	klog "github.com/kbroker/kbroker/log"
)

func TestErrorCode(t *testing.T) {
	for _, c := range []struct {
		name string
		err  error
		want int16
	}{
		{"nil", nil, 0},
		{"kerr", kerr.NotLeaderForPartition, kerr.NotLeaderForPartition.Code},
		{"wrapped kerr", fmt.Errorf("append orders-3: %w", kerr.CorruptMessage), kerr.CorruptMessage.Code},
		{"deadline", fmt.Errorf("flush: %w", context.DeadlineExceeded), kerr.RequestTimedOut.Code},
		{"log closed", fmt.Errorf("append: %w", klog.ErrClosed), kerr.KafkaStorageError.Code},
		{"fault", fmt.Errorf("read: %w", klog.ErrFault), kerr.KafkaStorageError.Code},
		{"entry too large", klog.ErrEntryTooLarge, kerr.MessageTooLarge.Code},
		{"write error", &klog.WriteError{Op: "flush", Err: syscall.EIO}, kerr.KafkaStorageError.Code},
		{"plain", errors.New("surprise"), kerr.UnknownServerError.Code},
	} {
		if got := errorCode(c.err); got != c.want {
			t.Errorf("%s: errorCode(%v) = %d, want %d", c.name, c.err, got, c.want)
		}
	}
}

// TestVersionCode is the per-version translation table: every row is a
// rule of Kafka's KafkaApis (or its absence) that a client of that version
// depends on.
func TestVersionCode(t *testing.T) {
	fenced := fmt.Errorf("txn: x: %w", kerr.ProducerFenced)
	for _, c := range []struct {
		key     kmsg.Key
		version int16
		in      error
		want    *kerr.Error
	}{
		{kmsg.InitProducerID, 3, fenced, kerr.InvalidProducerEpoch},
		{kmsg.InitProducerID, 4, fenced, kerr.ProducerFenced},
		{kmsg.AddPartitionsToTxn, 1, fenced, kerr.InvalidProducerEpoch},
		{kmsg.AddPartitionsToTxn, 2, fenced, kerr.ProducerFenced},
		{kmsg.AddOffsetsToTxn, 0, fenced, kerr.InvalidProducerEpoch},
		{kmsg.AddOffsetsToTxn, 3, fenced, kerr.ProducerFenced},
		{kmsg.EndTxn, 1, fenced, kerr.InvalidProducerEpoch},
		{kmsg.EndTxn, 2, fenced, kerr.ProducerFenced},
		{kmsg.EndTxn, 1, kerr.ConcurrentTransactions, kerr.ConcurrentTransactions},
		{kmsg.Produce, 13, fenced, kerr.InvalidProducerEpoch},
		{kmsg.Produce, 10, kerr.TransactionAbortable, kerr.InvalidTxnState},
		{kmsg.Produce, 11, kerr.TransactionAbortable, kerr.TransactionAbortable},
		{kmsg.Produce, 9, kerr.ConcurrentTransactions, kerr.NotEnoughReplicas},
		{kmsg.Produce, 9, kerr.CoordinatorLoadInProgress, kerr.NotEnoughReplicas},
		{kmsg.Produce, 9, kerr.CoordinatorNotAvailable, kerr.NotEnoughReplicas},
		{kmsg.Produce, 9, kerr.NotCoordinator, kerr.NotEnoughReplicas},
		{kmsg.Produce, 9, kerr.InvalidProducerIDMapping, kerr.InvalidProducerIDMapping},
		{kmsg.TxnOffsetCommit, 3, kerr.TransactionAbortable, kerr.InvalidTxnState},
		{kmsg.TxnOffsetCommit, 4, kerr.TransactionAbortable, kerr.TransactionAbortable},
		{kmsg.TxnOffsetCommit, 4, fenced, kerr.InvalidProducerEpoch},
		{kmsg.TxnOffsetCommit, 4, kerr.ConcurrentTransactions, kerr.ConcurrentTransactions},
		{kmsg.TxnOffsetCommit, 4, kerr.NotCoordinator, kerr.NotCoordinator},
		{kmsg.Fetch, 4, fenced, kerr.ProducerFenced},
	} {
		what := fmt.Sprintf("%s v%d %v", kmsg.NameForKey(c.key.Int16()), c.version, c.in)
		if got := versionCode(c.key, c.version, c.in); got != c.want.Code {
			t.Errorf("%s: versionCode = %d, want %s", what, got, c.want.Message)
		}
		got := forVersion(c.key, c.version, c.in)
		if c.want != kerr.ProducerFenced && errors.Is(got, kerr.ProducerFenced) {
			t.Errorf("%s: %v still is PRODUCER_FENCED", what, got)
		}
	}
	plain := errors.New("x")
	if forVersion(kmsg.Produce, 3, plain) != plain || forVersion(kmsg.Produce, 3, nil) != nil {
		t.Error("errors without a Kafka code must pass unchanged")
	}
	if got := versionCode(kmsg.Produce, 3, &klog.WriteError{Op: "append", Err: syscall.ENOSPC}); got != kerr.KafkaStorageError.Code {
		t.Errorf("a storage error through versionCode = %d, want KAFKA_STORAGE_ERROR", got)
	}
}

func TestCoordinatorWriteCode(t *testing.T) {
	for _, c := range []struct {
		in   error
		want *kerr.Error // nil: success
	}{
		{nil, nil},
		{kerr.UnknownTopicOrPartition, kerr.CoordinatorNotAvailable},
		{kerr.NotEnoughReplicas, kerr.CoordinatorNotAvailable},
		{fmt.Errorf("flush: %w", context.DeadlineExceeded), kerr.CoordinatorNotAvailable},
		{kerr.NotLeaderForPartition, kerr.NotCoordinator},
		{&klog.WriteError{Op: "flush", Err: syscall.EIO}, kerr.NotCoordinator},
		{klog.ErrClosed, kerr.NotCoordinator},
		{klog.ErrEntryTooLarge, kerr.InvalidCommitOffsetSize},
		{kerr.RecordListTooLarge, kerr.InvalidCommitOffsetSize},
		{kerr.InvalidFetchSize, kerr.InvalidCommitOffsetSize},
		{kerr.CoordinatorNotAvailable, kerr.CoordinatorNotAvailable},
		{kerr.NotCoordinator, kerr.NotCoordinator},
		{kerr.CorruptMessage, kerr.UnknownServerError},
		{errors.New("surprise"), kerr.UnknownServerError},
	} {
		var want int16
		if c.want != nil {
			want = c.want.Code
		}
		if got := coordinatorWriteCode(c.in); got != want {
			t.Errorf("coordinatorWriteCode(%v) = %d, want %d", c.in, got, want)
		}
	}
}
