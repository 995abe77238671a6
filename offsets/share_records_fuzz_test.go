package offsets

import (
	"reflect"
	"testing"
)

// FuzzShareGroupValue feeds arbitrary keys and values of the share-group
// record types to the decoder: no panic, no allocation beyond what the
// input holds, and a value it accepts decodes the same once encoded
// again.
func FuzzShareGroupValue(f *testing.F) {
	for k, v := range shareGroupRecords(seedShareGroup()) {
		f.Add([]byte(k), v)
	}
	f.Add([]byte(shareKind.key(sgStatePartitionMetadataType, "g", "")), []byte{0, 0, 1, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2, 'a', 0xff, 0xff, 0xff, 0x7f})
	f.Fuzz(func(t *testing.T, key, value []byte) {
		got, ok, err := decodeRec(key, value)
		if err != nil || !ok || !got.isCG || got.tombstone {
			return
		}
		typ, group, member, isShare, _ := shareKind.parseKey(key)
		if !isShare {
			return
		}
		decode := func(v []byte) (ShareGroup, ShareMember) {
			sg := ShareGroup{Group: group}
			mm := ShareMember{MemberID: member}
			if err := applySGValue(&sg, typ, func() *ShareMember { return &mm }, v); err != nil {
				t.Fatalf("accepted value %x does not decode: %v", v, err)
			}
			return sg, mm
		}
		sg, mm := decode(got.cgValue)
		enc := sg
		enc.Members = []ShareMember{mm}
		again, ok := shareGroupRecords(&enc)[string(key)]
		if !ok {
			t.Fatalf("no record of key %x after encoding", key)
		}
		if _, ok, err := decodeRec(key, again); err != nil || !ok {
			t.Fatalf("re-encoded value %x refused: %v", again, err)
		}
		sg2, mm2 := decode(again)
		if !reflect.DeepEqual(sg, sg2) || !reflect.DeepEqual(mm, mm2) {
			t.Fatalf("value decoded as %+v %+v, after encoding again as %+v %+v", sg, mm, sg2, mm2)
		}
	})
}
