package offsets

import (
	"reflect"
	"testing"

	"github.com/kbroker/kbroker/partition"
)

// seedShareGroup has two members, one with a rack, and topics in every
// part of the state-partition metadata.
func seedShareGroup() *ShareGroup {
	t1, t2 := [16]byte{1}, [16]byte{2}
	return &ShareGroup{
		Group: "sg", Epoch: 4, MetadataHash: -7, AssignmentEpoch: 4,
		Initializing: []ShareTopic{},
		Initialized: []ShareTopic{{ID: t1, Name: "a", Partitions: []int32{0, 1, 2}, CreateTimestamp: 1700000000000},
			{ID: t2, Name: "b", Partitions: []int32{0}, CreateTimestamp: 1700000000001}},
		Deleting: []ShareTopic{{ID: [16]byte{3}, Name: "gone"}},
		Members: []ShareMember{
			{MemberID: "m1", RackID: "r1", ClientID: "c1", ClientHost: "/10.0.0.1", SubscribedTopicNames: []string{"a", "b"},
				MemberEpoch: 4, PreviousMemberEpoch: 3, State: 0,
				Assigned: []TopicPartitions{{TopicID: t1, Partitions: []int32{0, 1}}},
				Target:   []TopicPartitions{{TopicID: t1, Partitions: []int32{0, 1}}}},
			{MemberID: "m2", ClientID: "c2", ClientHost: "/10.0.0.2", SubscribedTopicNames: []string{"a"},
				MemberEpoch: 4, PreviousMemberEpoch: 2, State: 0,
				Assigned: []TopicPartitions{{TopicID: t1, Partitions: []int32{2}}, {TopicID: t2, Partitions: []int32{0}}},
				Target:   []TopicPartitions{{TopicID: t1, Partitions: []int32{2}}, {TopicID: t2, Partitions: []int32{0}}}},
		},
	}
}

// sameShareGroup compares groups without the decoder's bookkeeping.
func sameShareGroup(a, b *ShareGroup) bool {
	clean := func(g *ShareGroup) ShareGroup {
		c := *g
		c.Members = append([]ShareMember(nil), g.Members...)
		for i := range c.Members {
			c.Members[i].hasMetadata = false
		}
		return c
	}
	return reflect.DeepEqual(clean(a), clean(b))
}

// TestShareGroupRecordsRoundTrip encodes a share group's records, checks
// their keys against Kafka's record types and decodes them back into the
// same group; records of other kinds beside them are ignored.
func TestShareGroupRecordsRoundTrip(t *testing.T) {
	want := seedShareGroup()
	recs := shareGroupRecords(want)
	if len(recs) != 3+3*len(want.Members) {
		t.Fatalf("got %d records, want %d", len(recs), 3+3*len(want.Members))
	}
	types := map[int16]int{}
	for k, v := range recs {
		r, ok, err := decodeRec([]byte(k), v)
		if err != nil || !ok || !r.isCG || r.group != "sg" {
			t.Fatalf("record %x: %+v %v %v", k, r, ok, err)
		}
		types[keyType(k)]++
	}
	if !reflect.DeepEqual(types, map[int16]int{10: 2, 11: 1, 12: 1, 13: 2, 14: 2, 15: 1}) {
		t.Fatalf("record types %v", types)
	}
	for k, v := range consumerGroupRecords(seedConsumerGroup()) {
		recs[k] = v
	}
	got, err := shareGroupOf("sg", recs)
	if err != nil {
		t.Fatal(err)
	}
	if !sameShareGroup(got, want) {
		t.Fatalf("got %+v, want %+v", got, want)
	}
	if cg, err := consumerGroupOf("g", ofTypes(recs, isConsumerType)); err != nil || len(cg.Members) != 2 {
		t.Fatalf("consumer records beside share ones: %+v %v", cg, err)
	}
	delete(recs, shareKind.key(sgMemberMetadataType, "sg", "m2"))
	got, _ = shareGroupOf("sg", recs)
	if len(got.Members) != 1 || got.Members[0].MemberID != "m1" {
		t.Fatalf("members without m2's metadata: %+v", got.Members)
	}
}

// TestRecordShareGroup checks what the store writes for a share group:
// everything at first, then only what changed, tombstones for a member
// gone and for everything once the group is deleted; that done hears of
// durability; and that the group comes back after a clean restart and a
// crash.
func TestRecordShareGroup(t *testing.T) {
	e := newEnv(t, partition.FlushSync, 1)
	sg := seedShareGroup()
	count := func(f func(done func(error))) int {
		p := e.ps.Partitions(offsetsTopic)[0]
		hw := p.HighWatermark()
		errc := make(chan error, 1)
		f(func(err error) { errc <- err })
		if err := <-errc; err != nil {
			t.Fatal(err)
		}
		return int(p.HighWatermark() - hw)
	}
	if n := count(func(d func(error)) { e.s.RecordShareGroup("sg", sg, d) }); n != 9 {
		t.Fatalf("first record: %d records written, want 9", n)
	}
	if n := count(func(d func(error)) { e.s.RecordShareGroup("sg", sg, d) }); n != 0 {
		t.Fatalf("unchanged group: %d records written, want 0", n)
	}
	changed := *seedShareGroup()
	changed.Epoch, changed.AssignmentEpoch = 5, 5
	changed.Members = changed.Members[:1]
	changed.Members[0].MemberEpoch = 5
	if n := count(func(d func(error)) { e.s.RecordShareGroup("sg", &changed, d) }); n != 6 {
		t.Fatalf("epoch bump and a member gone: %d records written, want 6 (epoch, assignment epoch, m1's epoch, 3 tombstones)", n)
	}
	for _, crash := range []bool{true, false} {
		e.restart(crash)
		var got *ShareGroup
		for _, g := range e.s.Groups() {
			if g.Group == "sg" {
				got = g.Share
				if g.Consumer != nil {
					t.Fatalf("share group read back as a consumer group: %+v", g.Consumer)
				}
			}
		}
		if got == nil || !sameShareGroup(got, &changed) {
			t.Fatalf("after a restart (crash %v): got %+v, want %+v", crash, got, changed)
		}
	}
	if n := count(func(d func(error)) { e.s.RecordShareGroup("sg", &changed, d) }); n != 0 {
		t.Fatalf("unchanged group after a restart: %d records written, want 0", n)
	}
	// The consumer-group writer leaves the share records alone.
	if n := count(func(d func(error)) { e.s.RecordConsumerGroup("sg", nil, d) }); n != 0 {
		t.Fatalf("consumer tombstones for a share group: %d records", n)
	}
	if n := count(func(d func(error)) { e.s.RecordShareGroup("sg", nil, d) }); n != 6 {
		t.Fatalf("deleted group: %d records written, want 6 tombstones", n)
	}
	e.restart(true)
	for _, g := range e.s.Groups() {
		if g.Group == "sg" {
			t.Fatalf("deleted group back after a restart: %+v", g)
		}
	}
}
