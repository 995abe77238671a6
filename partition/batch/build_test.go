package batch

import (
	"bytes"
	"testing"
)

func TestAppendBuildRoundTrip(t *testing.T) {
	recs := []KeyValue{
		{Key: []byte("k1"), Value: []byte("v1")},
		{Key: []byte("k2"), Value: nil},
		{Key: nil, Value: bytes.Repeat([]byte("x"), 300)},
	}
	prefix := []byte("prefix")
	out := AppendBuild(append([]byte(nil), prefix...), BuildOptions{Timestamp: 1234, ProducerID: NoProducerID, ProducerEpoch: NoProducerEpoch}, recs)
	if !bytes.Equal(out[:len(prefix)], prefix) {
		t.Fatal("prefix clobbered")
	}
	b := out[len(prefix):]
	info, err := Validate(b, ValidateOptions{MaxMessageBytes: 1 << 20, ProduceVersion: 9, FullValidation: true})
	if err != nil {
		t.Fatalf("Validate: %v", err)
	}
	if !ChecksumOK(b) {
		t.Fatal("bad checksum")
	}
	h, err := ParseHeader(b)
	if err != nil {
		t.Fatal(err)
	}
	if h.NumRecords != 3 || h.LastOffsetDelta != 2 || h.BaseTimestamp != 1234 || h.MaxTimestamp != 1234 || h.ProducerID != NoProducerID {
		t.Fatalf("header %+v", h)
	}
	_ = info
	var got []KeyValue
	if err := Records(b, func(r Record) bool {
		if r.Timestamp != 1234 || int(r.OffsetDelta) != len(got) {
			t.Errorf("record %d: ts %d delta %d", len(got), r.Timestamp, r.OffsetDelta)
		}
		got = append(got, KeyValue{Key: bytes.Clone(r.Key), Value: bytes.Clone(r.Value)})
		return true
	}); err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 {
		t.Fatalf("got %d records", len(got))
	}
	for i := range recs {
		if !bytes.Equal(got[i].Key, recs[i].Key) || !bytes.Equal(got[i].Value, recs[i].Value) ||
			(got[i].Value == nil) != (recs[i].Value == nil) || (got[i].Key == nil) != (recs[i].Key == nil) {
			t.Errorf("record %d: got %q/%q want %q/%q", i, got[i].Key, got[i].Value, recs[i].Key, recs[i].Value)
		}
	}
}
