package offsets

import (
	"reflect"
	"testing"

	"github.com/kbroker/kbroker/partition"
)

// seedStreamsGroup has a topology with every kind of topic, a static
// member with an endpoint and client tags, and one revoking tasks.
func seedStreamsGroup() *StreamsGroup {
	return &StreamsGroup{
		Group: "app", Epoch: 7, AssignmentEpoch: 6,
		Topology: &StreamsTopology{Epoch: 2, Subtopologies: []StreamsSubtopology{
			{ID: "0", SourceTopics: []string{"in"}, RepartitionSinkTopics: []string{"app-rep"}},
			{ID: "1",
				RepartitionSourceTopics: []StreamsTopicInfo{{Name: "app-rep", Partitions: 4, ReplicationFactor: 1}},
				StateChangelogTopics:    []StreamsTopicInfo{{Name: "app-changelog", Configs: []KeyValue{{"cleanup.policy", "compact"}}}},
				CopartitionGroups:       []StreamsCopartitionGroup{{RepartitionSourceTopics: []int16{0}}}},
		}},
		Members: []StreamsMember{
			{MemberID: "m1", InstanceID: "i1", RackID: "r1", ClientID: "c1", ClientHost: "/10.0.0.1", ProcessID: "p1",
				RebalanceTimeoutMs: 30000, TopologyEpoch: 2, UserEndpoint: &StreamsEndpoint{Host: "h1", Port: 8080},
				ClientTags: []KeyValue{{"zone", "a"}}, MemberEpoch: 6, PreviousMemberEpoch: 5,
				Assigned: StreamsTasks{Active: []TaskIDs{{"0", []int32{0, 1}, []int32{4, 6}}}, Standby: []TaskIDs{{"1", []int32{2}, nil}}},
				Target:   StreamsTasks{Active: []TaskIDs{{"0", []int32{0, 1}, nil}}, Standby: []TaskIDs{{"1", []int32{2}, nil}}}},
			{MemberID: "m2", ClientID: "c2", ClientHost: "/10.0.0.2", ProcessID: "p2", RebalanceTimeoutMs: -1, TopologyEpoch: 1,
				MemberEpoch: 5, PreviousMemberEpoch: 4, State: 1,
				// Tasks without epochs: a record from before KIP-1251.
				Assigned:          StreamsTasks{Active: []TaskIDs{{"1", []int32{0}, nil}}},
				PendingRevocation: StreamsTasks{Active: []TaskIDs{{"1", []int32{1}, []int32{3}}}, Warmup: []TaskIDs{{"0", []int32{3}, nil}}},
				Target:            StreamsTasks{Active: []TaskIDs{{"1", []int32{0, 2, 3}, nil}}}},
		},
	}
}

// sameStreamsGroup compares groups by their records: equal records, equal
// groups (the decoder makes empty lists of absent ones).
func sameStreamsGroup(a, b *StreamsGroup) bool {
	return reflect.DeepEqual(streamsGroupRecords(a), streamsGroupRecords(b))
}

// TestStreamsGroupRecordsRoundTrip encodes a group's records and decodes
// them back into the same group.
func TestStreamsGroupRecordsRoundTrip(t *testing.T) {
	want := seedStreamsGroup()
	recs := streamsGroupRecords(want)
	if len(recs) != 3+3*len(want.Members) {
		t.Fatalf("got %d records, want %d", len(recs), 3+3*len(want.Members))
	}
	for k, v := range recs {
		r, ok, err := decodeRec([]byte(k), v)
		if err != nil || !ok || !r.isCG || r.group != "app" {
			t.Fatalf("record %x: %+v %v %v", k, r, ok, err)
		}
	}
	got, err := streamsGroupOf("app", recs)
	if err != nil {
		t.Fatal(err)
	}
	if !sameStreamsGroup(got, want) {
		t.Fatalf("got %+v, want %+v", got, want)
	}
	if m := got.Members[0]; m.UserEndpoint == nil || *m.UserEndpoint != *want.Members[0].UserEndpoint || m.ProcessID != "p1" ||
		!reflect.DeepEqual(m.Assigned.Standby, want.Members[0].Assigned.Standby) {
		t.Fatalf("member m1 decoded as %+v", m)
	}
	// Assignment epochs come back where they were stored, and only there.
	if m := got.Members[0]; !reflect.DeepEqual(m.Assigned.Active[0].AssignmentEpochs, []int32{4, 6}) || m.Target.Active[0].AssignmentEpochs != nil {
		t.Fatalf("member m1's epochs decoded as %+v, target %+v", m.Assigned.Active, m.Target.Active)
	}
	if m := got.Members[1]; m.Assigned.Active[0].AssignmentEpochs != nil || !reflect.DeepEqual(m.PendingRevocation.Active[0].AssignmentEpochs, []int32{3}) {
		t.Fatalf("member m2's epochs decoded as %+v, pending %+v", m.Assigned.Active, m.PendingRevocation.Active)
	}
	if got.Topology.Subtopologies[1].StateChangelogTopics[0].Configs[0].Value != "compact" {
		t.Fatalf("topology decoded as %+v", got.Topology)
	}
	// The records of a streams group are not a consumer group's.
	if len(ofTypes(recs, isConsumerType)) != 0 || len(ofTypes(recs, isShareType)) != 0 {
		t.Fatal("streams records taken for consumer-group records")
	}
	// A member whose metadata record is missing is not a member.
	delete(recs, streamsKind.key(stMemberMetadataType, "app", "m2"))
	got, _ = streamsGroupOf("app", recs)
	if len(got.Members) != 1 || got.Members[0].MemberID != "m1" {
		t.Fatalf("members without m2's metadata: %+v", got.Members)
	}
	// A group without a topology yet has no topology record.
	noTopo := seedStreamsGroup()
	noTopo.Topology = nil
	got, err = streamsGroupOf("app", streamsGroupRecords(noTopo))
	if err != nil || got.Topology != nil || !sameStreamsGroup(got, noTopo) {
		t.Fatalf("group without topology: %+v %v", got, err)
	}
}

// TestRecordStreamsGroup checks what the store writes for a streams
// group: everything at first, then only what changed, tombstones for a
// member gone and for everything once the group is deleted, and that the
// group comes back from the log (kill -9) and from a snapshot (clean
// restart), and is not taken for a consumer group.
func TestRecordStreamsGroup(t *testing.T) {
	e := newEnv(t, partition.FlushSync, 1)
	sg := seedStreamsGroup()
	count := func(f func()) int {
		p := e.ps.Partitions(offsetsTopic)[0]
		hw := p.HighWatermark()
		f()
		e.commit("sync-point", c("x", 0, 0))
		return int(p.HighWatermark() - hw - 1)
	}
	if n := count(func() { e.s.RecordStreamsGroup("app", sg, nil) }); n != 9 {
		t.Fatalf("first record: %d records written, want 9", n)
	}
	if n := count(func() { e.s.RecordStreamsGroup("app", sg, nil) }); n != 0 {
		t.Fatalf("unchanged group: %d records written, want 0", n)
	}
	changed := *seedStreamsGroup()
	changed.Epoch = 8
	changed.Members = changed.Members[:1] // m2 left
	if n := count(func() { e.s.RecordStreamsGroup("app", &changed, nil) }); n != 4 {
		t.Fatalf("epoch bump and a member gone: %d records written, want 4 (epoch, 3 tombstones)", n)
	}
	for _, crash := range []bool{true, false} {
		e.restart(crash)
		var got *StreamsGroup
		for _, g := range e.s.Groups() {
			if g.Group == "app" {
				if g.Consumer != nil {
					t.Fatalf("streams group read as a consumer group: %+v", g.Consumer)
				}
				got = g.Streams
			}
		}
		if got == nil || !sameStreamsGroup(got, &changed) {
			t.Fatalf("after a restart (crash %v): got %+v, want %+v", crash, got, changed)
		}
	}
	if n := count(func() { e.s.RecordStreamsGroup("app", &changed, nil) }); n != 0 {
		t.Fatalf("unchanged group after a restart: %d records written, want 0", n)
	}
	if n := count(func() { e.s.RecordStreamsGroup("app", nil, nil) }); n != 6 {
		t.Fatalf("deleted group: %d records written, want 6 tombstones", n)
	}
	e.restart(true)
	for _, g := range e.s.Groups() {
		if g.Group == "app" {
			t.Fatalf("deleted group back after a restart: %+v", g)
		}
	}
}
