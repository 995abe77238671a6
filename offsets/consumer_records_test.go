package offsets

import (
	"reflect"
	"testing"

	"github.com/kbroker/kbroker/partition"
)

// TestConsumerGroupRecordsRoundTrip encodes a group's records and decodes
// them back into the same group.
func TestConsumerGroupRecordsRoundTrip(t *testing.T) {
	want := seedConsumerGroup()
	recs := consumerGroupRecords(want)
	if len(recs) != 3+3*len(want.Members) {
		t.Fatalf("got %d records, want %d", len(recs), 3+3*len(want.Members))
	}
	for k, v := range recs {
		r, ok, err := decodeRec([]byte(k), v)
		if err != nil || !ok || !r.isCG || r.group != "g" {
			t.Fatalf("record %x: %+v %v %v", k, r, ok, err)
		}
	}
	got, err := consumerGroupOf("g", recs)
	if err != nil {
		t.Fatal(err)
	}
	if !sameConsumerGroup(got, want) {
		t.Fatalf("got %+v, want %+v", got, want)
	}
	// A member whose metadata record is missing is not a member.
	delete(recs, consumerKind.key(cgMemberMetadataType, "g", "m2"))
	got, _ = consumerGroupOf("g", recs)
	if len(got.Members) != 1 || got.Members[0].MemberID != "m1" {
		t.Fatalf("members without m2's metadata: %+v", got.Members)
	}
}

// sameConsumerGroup compares groups without the decoder's bookkeeping.
func sameConsumerGroup(a, b *ConsumerGroup) bool {
	clean := func(g *ConsumerGroup) ConsumerGroup {
		c := *g
		c.Members = append([]ConsumerMember(nil), g.Members...)
		for i := range c.Members {
			c.Members[i].hasMetadata, c.Members[i].hasCurrent, c.Members[i].hasTarget = false, false, false
		}
		return c
	}
	return reflect.DeepEqual(clean(a), clean(b))
}

// TestRecordConsumerGroup checks what the store writes for a consumer
// group: everything at first, then only what changed, tombstones for a
// member gone and for everything once the group is deleted, and that the
// group comes back from the log and from a snapshot after a restart.
func TestRecordConsumerGroup(t *testing.T) {
	e := newEnv(t, partition.FlushSync, 1)
	cg := seedConsumerGroup()
	// count is how many records f wrote: the offsets of the partition
	// it moved, less the commit that follows so that they all applied.
	count := func(f func()) int {
		p := e.ps.Partitions(offsetsTopic)[0]
		hw := p.HighWatermark()
		f()
		e.commit("sync-point", c("x", 0, 0))
		return int(p.HighWatermark() - hw - 1)
	}
	if n := count(func() { e.s.RecordConsumerGroup("g", cg, nil) }); n != 9 {
		t.Fatalf("first record: %d records written, want 9", n)
	}
	if n := count(func() { e.s.RecordConsumerGroup("g", cg, nil) }); n != 0 {
		t.Fatalf("unchanged group: %d records written, want 0", n)
	}
	changed := *seedConsumerGroup()
	changed.Epoch = 8
	changed.Members = changed.Members[:1] // m2 left
	if n := count(func() { e.s.RecordConsumerGroup("g", &changed, nil) }); n != 4 {
		t.Fatalf("epoch bump and a member gone: %d records written, want 4 (epoch, 3 tombstones)", n)
	}
	for _, crash := range []bool{true, false} {
		e.restart(crash)
		gs := e.s.Groups()
		var got *ConsumerGroup
		for _, g := range gs {
			if g.Group == "g" {
				got = g.Consumer
			}
		}
		if got == nil || !sameConsumerGroup(got, &changed) {
			t.Fatalf("after a restart (crash %v): got %+v, want %+v", crash, got, changed)
		}
	}
	// After a restart the store compares with what it read: nothing new.
	if n := count(func() { e.s.RecordConsumerGroup("g", &changed, nil) }); n != 0 {
		t.Fatalf("unchanged group after a restart: %d records written, want 0", n)
	}
	if n := count(func() { e.s.RecordConsumerGroup("g", nil, nil) }); n != 6 {
		t.Fatalf("deleted group: %d records written, want 6 tombstones", n)
	}
	e.restart(true)
	for _, g := range e.s.Groups() {
		if g.Group == "g" {
			t.Fatalf("deleted group back after a restart: %+v", g)
		}
	}
}
