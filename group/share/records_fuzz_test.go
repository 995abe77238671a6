package share

import (
	"reflect"
	"testing"
)

// FuzzDecodeRecord feeds arbitrary keys and values to the state record
// decoder: no panic, and a record it accepts re-encodes to the same bytes
// and restores to a partition without panicking.
func FuzzDecodeRecord(f *testing.F) {
	r := rec{key: Key{Group: "g", TopicID: TopicID{7}, Partition: 2}, state: PartitionState{StateEpoch: 1, StartOffset: 10,
		Batches: []StateBatch{{10, 12, Acknowledged, 1}, {13, 13, Available, 3}}}}
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
		if !got.deleted {
			v = got.appendValue(nil)
			restorePartition(got.state, 100, 5)
		}
		again, ok, err := decodeRec(got.appendKey(nil), v)
		if err != nil || !ok || !reflect.DeepEqual(again, got) {
			t.Fatalf("record %+v became %+v (%t, %v)", got, again, ok, err)
		}
	})
}
