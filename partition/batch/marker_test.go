package batch

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestEndTxnMarkerMatchesKmsg builds markers and reads them back with
// franz-go's decoders (kmsg's RecordBatch, ControlRecordKey and
// EndTxnMarker, generated from Kafka's message definitions) and with
// ParseEndTxnMarker.
func TestEndTxnMarkerMatchesKmsg(t *testing.T) {
	for _, m := range []EndTxnMarker{{Commit: true, CoordinatorEpoch: 7}, {Commit: false, CoordinatorEpoch: -1}, {Commit: true, CoordinatorEpoch: 1 << 30}} {
		b := AppendEndTxnMarker([]byte("pre"), 1_700_000_000_123, 42, 3, m)[3:]
		if !ChecksumOK(b) {
			t.Fatal("bad checksum")
		}
		var rb kmsg.RecordBatch
		if err := rb.ReadFrom(b); err != nil {
			t.Fatal(err)
		}
		if rb.Attributes != AttrTransactional|AttrControl || rb.ProducerID != 42 || rb.ProducerEpoch != 3 ||
			rb.FirstSequence != -1 || rb.NumRecords != 1 || rb.LastOffsetDelta != 0 ||
			rb.FirstTimestamp != 1_700_000_000_123 || rb.MaxTimestamp != 1_700_000_000_123 {
			t.Fatalf("header %+v", rb)
		}
		var rec kmsg.Record
		if err := rec.ReadFrom(rb.Records); err != nil {
			t.Fatal(err)
		}
		var key kmsg.ControlRecordKey
		if err := key.ReadFrom(rec.Key); err != nil {
			t.Fatal(err)
		}
		wantType := kmsg.ControlRecordKeyTypeAbort
		if m.Commit {
			wantType = kmsg.ControlRecordKeyTypeCommit
		}
		if key.Version != 0 || key.Type != wantType {
			t.Fatalf("key %+v, want type %v", key, wantType)
		}
		var val kmsg.EndTxnMarker
		if err := val.ReadFrom(rec.Value); err != nil {
			t.Fatal(err)
		}
		if val.Version != 0 || val.CoordinatorEpoch != m.CoordinatorEpoch {
			t.Fatalf("value %+v", val)
		}
		got, err := ParseEndTxnMarker(b)
		if err != nil || got != m {
			t.Fatalf("ParseEndTxnMarker = %+v, %v; want %+v", got, err, m)
		}
		// Stamping (offset, leader epoch, LogAppendTime) keeps it readable.
		if err := Stamp(b, 99, 0, 1_800_000_000_000); err != nil {
			t.Fatal(err)
		}
		if got, err := ParseEndTxnMarker(b); err != nil || got != m {
			t.Fatalf("after Stamp: %+v, %v", got, err)
		}
		if n := testing.AllocsPerRun(100, func() { _, _ = ParseEndTxnMarker(b) }); n != 0 {
			t.Fatalf("ParseEndTxnMarker allocates %v times", n)
		}
	}
}

// TestEndTxnMarkerFromKmsg parses a marker encoded by kmsg, with a value
// of a newer version carrying extra bytes (read as version 0, as Kafka does).
func TestEndTxnMarkerFromKmsg(t *testing.T) {
	key := (&kmsg.ControlRecordKey{Type: kmsg.ControlRecordKeyTypeCommit}).AppendTo(nil)
	val := append((&kmsg.EndTxnMarker{Version: 0, CoordinatorEpoch: 12}).AppendTo(nil), 0, 0, 0)
	binary.BigEndian.PutUint16(val, 1)
	b := AppendBuild(nil, BuildOptions{Timestamp: 5, Attributes: AttrTransactional | AttrControl, ProducerID: 1, ProducerEpoch: 0},
		[]KeyValue{{Key: key, Value: val}})
	m, err := ParseEndTxnMarker(b)
	if err != nil || !m.Commit || m.CoordinatorEpoch != 12 {
		t.Fatalf("got %+v, %v", m, err)
	}
}

func TestEndTxnMarkerRejects(t *testing.T) {
	good := AppendEndTxnMarker(nil, 1, 1, 0, EndTxnMarker{Commit: true, CoordinatorEpoch: 1})
	build := func(attrs int16, recs []KeyValue) []byte {
		return AppendBuild(nil, BuildOptions{Timestamp: 1, Attributes: attrs, ProducerID: 1}, recs)
	}
	ctl := int16(AttrTransactional | AttrControl)
	key := func(version, typ int16) []byte {
		var k [4]byte
		binary.BigEndian.PutUint16(k[:], uint16(version))
		binary.BigEndian.PutUint16(k[2:], uint16(typ))
		return k[:]
	}
	value := []byte{0, 0, 0, 0, 0, 1}
	cases := map[string]struct {
		b    []byte
		code *kerr.Error
	}{
		"short":           {good[:HeaderSize-1], kerr.CorruptMessage},
		"truncated":       {good[:len(good)-1], kerr.CorruptMessage},
		"magic 1":         {func() []byte { b := bytes.Clone(good); b[MagicOffset] = 1; return b }(), kerr.CorruptMessage},
		"data batch":      {build(AttrTransactional, []KeyValue{{Key: key(0, 1), Value: value}}), kerr.InvalidRecord},
		"key version 1":   {build(ctl, []KeyValue{{Key: key(1, 1), Value: value}}), kerr.InvalidRecord},
		"leader change":   {build(ctl, []KeyValue{{Key: key(0, 2), Value: value}}), kerr.InvalidRecord},
		"short key":       {build(ctl, []KeyValue{{Key: []byte{0, 0, 1}, Value: value}}), kerr.InvalidRecord},
		"null key":        {build(ctl, []KeyValue{{Value: value}}), kerr.InvalidRecord},
		"short value":     {build(ctl, []KeyValue{{Key: key(0, 0), Value: value[:5]}}), kerr.InvalidRecord},
		"negative value":  {build(ctl, []KeyValue{{Key: key(0, 0), Value: []byte{0xff, 0xff, 0, 0, 0, 1}}}), kerr.InvalidRecord},
		"compressed flag": {func() []byte { b := bytes.Clone(good); b[AttributesOffset+1] |= byte(CodecGzip); return b }(), kerr.InvalidRecord},
		"no records": {func() []byte {
			b := bytes.Clone(good)
			binary.BigEndian.PutUint32(b[NumRecordsOffset:], 0)
			return b
		}(), kerr.InvalidRecord},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			m, err := ParseEndTxnMarker(tc.b)
			var be *Error
			if !errors.As(err, &be) || !errors.Is(err, tc.code) {
				t.Fatalf("got %+v, %v; want an *Error with %v", m, err, tc.code)
			}
		})
	}
}
