package offsets

import (
	"bytes"
	"testing"
)

// FuzzDecodeRecord feeds arbitrary keys and values to the record decoder:
// no panic, and a record it accepts encodes to one that decodes the same.
func FuzzDecodeRecord(f *testing.F) {
	o := rec{group: "g", tp: TopicPartition{"t", 3}, offset: Offset{Offset: 42, LeaderEpoch: 1, Metadata: "m", CommitTimestamp: 9, ExpireTimestamp: -1}}
	f.Add(o.appendKey(nil), o.appendValue(nil), false)
	g := groupRec(GroupRecord{Group: "g", ProtocolType: "consumer", Generation: 3, Protocol: "range", Leader: "m1",
		Members: []Member{{MemberID: "m1", ClientID: "c", Subscription: []byte{1}}}}, 77)
	f.Add(g.appendKey(nil), g.appendValue(nil), false)
	f.Add(g.appendKey(nil), []byte(nil), true)
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
		if again.group != got.group || again.tp != got.tp || again.tombstone != got.tombstone || again.offset != got.offset ||
			again.isGroup != got.isGroup || !bytes.Equal(again.meta, got.meta) || again.protocolType != got.protocolType ||
			again.generation != got.generation || again.metaEmpty != got.metaEmpty || again.metaTime != got.metaTime {
			t.Fatalf("record %+v became %+v", got, again)
		}
	})
}
