package offsets

import (
	"reflect"
	"testing"
)

// seedConsumerGroup has a member of every kind: static with a rack and a
// regular expression, and one revoking partitions.
func seedConsumerGroup() *ConsumerGroup {
	t1, t2 := [16]byte{1}, [16]byte{2}
	return &ConsumerGroup{
		Group: "g", Epoch: 7, AssignmentEpoch: 6,
		Topics: []ConsumerTopic{{ID: t1, Name: "a", Partitions: 4}, {ID: t2, Name: "b", Partitions: 2}},
		Members: []ConsumerMember{
			{MemberID: "m1", InstanceID: "i1", RackID: "r1", ClientID: "c1", ClientHost: "/10.0.0.1",
				SubscribedTopicNames: []string{"a"}, SubscribedTopicRegex: "b.*", ServerAssignor: "uniform", RebalanceTimeoutMs: 5000,
				MemberEpoch: 6, PreviousMemberEpoch: 5, State: 0,
				Assigned: []TopicPartitions{{TopicID: t1, Partitions: []int32{0, 1}, AssignmentEpochs: []int32{4, 6}}}, PendingRevocation: []TopicPartitions{},
				Target: []TopicPartitions{{TopicID: t1, Partitions: []int32{0, 1}}}},
			{MemberID: "m2", ClientID: "c2", ClientHost: "/10.0.0.2", SubscribedTopicNames: []string{"a", "b"}, RebalanceTimeoutMs: -1,
				MemberEpoch: 5, PreviousMemberEpoch: 4, State: 1,
				Assigned:          []TopicPartitions{{TopicID: t1, Partitions: []int32{2}}},
				PendingRevocation: []TopicPartitions{{TopicID: t1, Partitions: []int32{3}, AssignmentEpochs: []int32{3}}},
				Target:            []TopicPartitions{{TopicID: t1, Partitions: []int32{2, 3}}, {TopicID: t2, Partitions: []int32{0, 1}}}},
		},
	}
}

// FuzzConsumerGroupValue feeds arbitrary values of every consumer-group
// record type to the decoder: no panic, no allocation beyond what the
// input can hold (array lengths are bounded by the bytes left), and a
// value it accepts decodes the same once encoded again.
func FuzzConsumerGroupValue(f *testing.F) {
	for k, v := range consumerGroupRecords(seedConsumerGroup()) {
		f.Add([]byte(k), v)
	}
	f.Add([]byte(consumerKind.key(cgMemberMetadataType, "g", "m")), []byte{0, 0, 0, 0, 1, 1, 1, 0, 0xff, 0xff, 0xff, 0xff, 0, 1, 0, 0})
	f.Fuzz(func(t *testing.T, key, value []byte) {
		got, ok, err := decodeRec(key, value)
		if err != nil || !ok || !got.isCG || got.tombstone {
			return
		}
		typ, group, member, isCG, _ := consumerKind.parseKey(key)
		if !isCG {
			return // a share- or streams-group record: their own fuzz targets
		}
		decode := func(v []byte) (ConsumerGroup, ConsumerMember) {
			cg := ConsumerGroup{Group: group}
			mm := ConsumerMember{MemberID: member}
			if err := applyCGValue(&cg, typ, func() *ConsumerMember { return &mm }, v); err != nil {
				t.Fatalf("accepted value %x does not decode: %v", v, err)
			}
			return cg, mm
		}
		cg, mm := decode(got.cgValue)
		enc := cg
		enc.Members = []ConsumerMember{mm}
		again, ok := consumerGroupRecords(&enc)[string(key)]
		if !ok {
			t.Fatalf("no record of key %x after encoding", key)
		}
		if _, ok, err := decodeRec(key, again); err != nil || !ok {
			t.Fatalf("re-encoded value %x refused: %v", again, err)
		}
		cg2, mm2 := decode(again)
		if !reflect.DeepEqual(cg, cg2) || !reflect.DeepEqual(mm, mm2) {
			t.Fatalf("value decoded as %+v %+v, after encoding again as %+v %+v", cg, mm, cg2, mm2)
		}
	})
}
