package txn

import (
	"reflect"
	"testing"
)

// FuzzDecodeRecord feeds arbitrary keys and values to the record decoder:
// no panic, and a record it accepts encodes to one that decodes the same.
func FuzzDecodeRecord(f *testing.F) {
	r := rec{id: "tx", producerID: 7, epoch: 2, timeoutMs: 60000, state: Ongoing,
		partitions: []TopicPartition{{"a", 0}, {"a", 1}, {"b", 3}}, startMs: 5, updateMs: 6, prevProducerID: -1}
	f.Add(r.appendKey(nil), r.appendValue(nil), false)
	f.Add(r.appendKey(nil), []byte(nil), true)
	f.Fuzz(func(t *testing.T, key, value []byte, null bool) {
		if null {
			value = nil
		}
		got, ok, err := decodeRec(key, value)
		if err != nil || !ok {
			return
		}
		var v []byte
		if !got.tombstone {
			v = got.appendValue(nil)
		}
		again, ok, err := decodeRec(got.appendKey(nil), v)
		if err != nil || !ok {
			t.Fatalf("re-encoded record refused: %v %t", err, ok)
		}
		if !reflect.DeepEqual(got, again) {
			t.Fatalf("record %+v became %+v", got, again)
		}
	})
}
