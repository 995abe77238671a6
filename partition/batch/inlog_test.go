package batch

import (
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestValidateInLog: the batch faults Kafka finds in the log layer (base
// offset, LogValidator's header rules) are marked InLog, so that produce
// answers them with the partition's log start offset as Kafka does; those
// Kafka finds before the log, and corrupt or oversized batches, are not.
func TestValidateInLog(t *testing.T) {
	t.Parallel()
	build := func(edit func(*kmsg.RecordBatch)) func(t *testing.T) []byte {
		return func(t *testing.T) []byte { return buildBatch(t, spec{records: testRecords(2, 5), edit: edit}) }
	}
	for _, tc := range []struct {
		name  string
		make  func(t *testing.T) []byte
		inLog bool
	}{
		{"control batch", build(func(rb *kmsg.RecordBatch) { rb.Attributes |= 0x20 }), true},
		{"last offset delta past the records", build(func(rb *kmsg.RecordBatch) { rb.LastOffsetDelta = 5 }), true},
		{"record count short", build(func(rb *kmsg.RecordBatch) { rb.NumRecords = 1 }), true},
		{"no records", build(func(rb *kmsg.RecordBatch) { rb.NumRecords, rb.LastOffsetDelta = 0, -1 }), true},
		{"base offset 3", build(func(rb *kmsg.RecordBatch) { rb.FirstOffset = 3 }), true},
		{"LogAppendTime", build(func(rb *kmsg.RecordBatch) { rb.Attributes |= 0x08 }), true},
		{"bad crc", func(t *testing.T) []byte {
			b := build(nil)(t)
			b[len(b)-1] ^= 0xff
			return b
		}, false},
		{"two batches", func(t *testing.T) []byte { return append(build(nil)(t), build(nil)(t)...) }, false},
		{"truncated", func(t *testing.T) []byte { b := build(nil)(t); return b[:len(b)-1] }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Validate(tc.make(t), ValidateOptions{})
			var be *Error
			if !errors.As(err, &be) {
				t.Fatalf("got %v, want a *batch.Error", err)
			}
			if be.InLog != tc.inLog || be.Record != -1 {
				t.Fatalf("%v: InLog %v record %d, want InLog %v record -1", err, be.InLog, be.Record, tc.inLog)
			}
		})
	}
}
