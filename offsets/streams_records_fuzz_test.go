package offsets

import (
	"reflect"
	"testing"
)

// FuzzStreamsGroupValue feeds arbitrary keys and values of every
// streams-group record type to the decoder: no panic, no allocation beyond
// what the input can hold (list capacities are bounded by the bytes left),
// and a value it accepts decodes the same once encoded again.
func FuzzStreamsGroupValue(f *testing.F) {
	for k, v := range streamsGroupRecords(seedStreamsGroup()) {
		f.Add([]byte(k), v)
	}
	// An endpoint with a bad presence byte, a huge array length.
	f.Add([]byte(streamsKind.key(stMemberMetadataType, "g", "m")), []byte{0, 0, 0, 0, 1, 1, 0, 0, 0, 0, 0, 0, 1, 7, 1})
	f.Add([]byte(streamsKind.key(stTopologyType, "g", "")), []byte{0, 0, 0, 0, 0, 1, 0xff, 0xff, 0xff, 0xff, 0x0f})
	f.Fuzz(func(t *testing.T, key, value []byte) {
		got, ok, err := decodeRec(key, value)
		if err != nil || !ok || !got.isCG || got.tombstone {
			return
		}
		typ, group, member, isSG, _ := streamsKind.parseKey(key)
		if !isSG {
			return // a consumer-group record: FuzzConsumerGroupValue
		}
		decode := func(v []byte) (StreamsGroup, StreamsMember) {
			sg := StreamsGroup{Group: group}
			mm := StreamsMember{MemberID: member}
			if err := applySTValue(&sg, typ, func() *StreamsMember { return &mm }, v); err != nil {
				t.Fatalf("accepted value %x does not decode: %v", v, err)
			}
			return sg, mm
		}
		sg, mm := decode(got.cgValue)
		enc := sg
		mm.hasMetadata = true
		enc.Members = []StreamsMember{mm}
		if typ == stTopologyType && enc.Topology == nil {
			t.Fatal("topology record decoded without a topology")
		}
		again, ok := streamsGroupRecords(&enc)[string(key)]
		if !ok {
			t.Fatalf("no record of key %x after encoding", key)
		}
		if _, ok, err := decodeRec(key, again); err != nil || !ok {
			t.Fatalf("re-encoded value %x refused: %v", again, err)
		}
		sg2, mm2 := decode(again)
		mm2.hasMetadata = true
		if !reflect.DeepEqual(sg, sg2) || !reflect.DeepEqual(mm, mm2) {
			t.Fatalf("value decoded as %+v %+v, after encoding again as %+v %+v", sg, mm, sg2, mm2)
		}
	})
}
