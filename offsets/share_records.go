package offsets

import (
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/twmb/franz-go/pkg/kbin"
)

// The records of share groups (KIP-932) in __consumer_offsets, in the
// formats of Kafka 4.2's group coordinator (group-coordinator/src/main/
// resources/common/message/ShareGroup*Key.json and *Value.json), encoded
// as the consumer-group records are (consumer_records.go): the key is the
// record type as an int16, the group id and, for per-member records, the
// member id; the value is its version (0) and its fields in the flexible
// encoding. Record types:
//
//	10  ShareGroupMemberMetadata            a member's rack, client, subscriptions
//	11  ShareGroupMetadata                  group epoch, metadata hash
//	12  ShareGroupTargetAssignmentMetadata  target assignment epoch
//	13  ShareGroupTargetAssignmentMember    a member's target partitions
//	14  ShareGroupCurrentMemberAssignment   a member's epochs, state, partitions
//	15  ShareGroupStatePartitionMetadata    topics whose share state is initialized
//
// Kafka 4.2 no longer writes ShareGroupPartitionMetadata (9): the
// subscribed topics' metadata is the hash in 11, and the topics a
// restart needs are those of 15. The metadata hash is kbroker's own
// (metadataHash in group/share), not Kafka's murmur3 of the same topics:
// only kbroker reads it back, to tell whether the subscribed topics
// changed while it was down. A removed member gets tombstones for its 10,
// 13 and 14; a deleted group for every key it had. Values stay encoded in
// the store, like the consumer-group ones.
const (
	sgMemberMetadataType         = 10
	sgMetadataType               = 11
	sgTargetMetadataType         = 12
	sgTargetMemberType           = 13
	sgCurrentAssignmentType      = 14
	sgStatePartitionMetadataType = 15
)

// isShareType reports whether a record type is a share-group one.
func isShareType(typ int16) bool {
	return typ >= sgMemberMetadataType && typ <= sgStatePartitionMetadataType
}

// sgMemberKeyed reports whether records of typ are per member.
func sgMemberKeyed(typ int16) bool {
	return typ == sgMemberMetadataType || typ == sgTargetMemberType || typ == sgCurrentAssignmentType
}

// ShareGroup is a share group (KIP-932) as its records describe it: what
// a restart needs to bring it back with its epochs and assignments.
type ShareGroup struct {
	Group string
	// Epoch is the group epoch; MetadataHash the hash of the subscribed
	// topics it was computed from.
	Epoch        int32
	MetadataHash int64
	// AssignmentEpoch is the target assignment's epoch.
	AssignmentEpoch int32
	// Initializing, Initialized and Deleting are the topics of the
	// state-partition metadata record, sorted by name (Deleting has no
	// partitions).
	Initializing, Initialized, Deleting []ShareTopic
	// Members are sorted by member id.
	Members []ShareMember
}

// ShareTopic is a topic of a share group's state-partition metadata.
type ShareTopic struct {
	ID         [16]byte
	Name       string
	Partitions []int32
	// CreateTimestamp is when the topic was added (milliseconds).
	CreateTimestamp int64
}

// ShareMember is one member of a ShareGroup. An empty RackID stands for
// Kafka's null.
type ShareMember struct {
	MemberID, RackID, ClientID, ClientHost string
	// SubscribedTopicNames are sorted.
	SubscribedTopicNames             []string
	MemberEpoch, PreviousMemberEpoch int32
	State                            int8
	Assigned, Target                 []TopicPartitions
	hasMetadata                      bool
}

func appendShareTopics(dst []byte, ts []ShareTopic, partitions bool) []byte {
	dst = kbin.AppendCompactArrayLen(dst, len(ts))
	for _, t := range ts {
		dst = kbin.AppendUuid(dst, t.ID)
		dst = kbin.AppendCompactString(dst, t.Name)
		if partitions {
			dst = kbin.AppendCompactArrayLen(dst, len(t.Partitions))
			for _, p := range t.Partitions {
				dst = kbin.AppendInt32(dst, p)
			}
			dst = kbin.AppendInt64(dst, t.CreateTimestamp)
		}
		dst = kbin.AppendUvarint(dst, 0)
	}
	return dst
}

// shareGroupRecords lists every record of sg: encoded key → value.
func shareGroupRecords(sg *ShareGroup) map[string][]byte {
	out := make(map[string][]byte, 3+3*len(sg.Members))
	start := func() []byte { return kbin.AppendInt16(nil, cgValueVersion) }
	v := kbin.AppendInt32(start(), sg.Epoch)
	v = kbin.AppendInt64(v, sg.MetadataHash)
	out[shareKind.key(sgMetadataType, sg.Group, "")] = kbin.AppendUvarint(v, 0)

	v = kbin.AppendInt32(start(), sg.AssignmentEpoch)
	out[shareKind.key(sgTargetMetadataType, sg.Group, "")] = kbin.AppendUvarint(v, 0)

	v = appendShareTopics(start(), sg.Initializing, true)
	v = appendShareTopics(v, sg.Initialized, true)
	v = appendShareTopics(v, sg.Deleting, false)
	out[shareKind.key(sgStatePartitionMetadataType, sg.Group, "")] = kbin.AppendUvarint(v, 0)

	for i := range sg.Members {
		m := &sg.Members[i]
		v = appendNullable(start(), m.RackID)
		v = kbin.AppendCompactString(v, m.ClientID)
		v = kbin.AppendCompactString(v, m.ClientHost)
		v = kbin.AppendCompactArrayLen(v, len(m.SubscribedTopicNames))
		for _, n := range m.SubscribedTopicNames {
			v = kbin.AppendCompactString(v, n)
		}
		out[shareKind.key(sgMemberMetadataType, sg.Group, m.MemberID)] = kbin.AppendUvarint(v, 0)

		v = appendTopicPartitions(start(), m.Target)
		out[shareKind.key(sgTargetMemberType, sg.Group, m.MemberID)] = kbin.AppendUvarint(v, 0)

		v = kbin.AppendInt32(start(), m.MemberEpoch)
		v = kbin.AppendInt32(v, m.PreviousMemberEpoch)
		v = kbin.AppendInt8(v, m.State)
		v = appendTopicPartitions(v, m.Assigned)
		out[shareKind.key(sgCurrentAssignmentType, sg.Group, m.MemberID)] = kbin.AppendUvarint(v, 0)
	}
	return out
}

func (r *cgReader) shareTopics(partitions bool) []ShareTopic {
	n := r.arrayLen()
	out := make([]ShareTopic, 0, n)
	for range n {
		t := ShareTopic{ID: r.Uuid(), Name: r.CompactString()}
		if partitions {
			np := r.arrayLen()
			t.Partitions = make([]int32, 0, np)
			for range np {
				t.Partitions = append(t.Partitions, r.Int32())
			}
			t.CreateTimestamp = r.Int64()
		}
		r.tags()
		if !r.Ok() {
			return nil
		}
		out = append(out, t)
	}
	return out
}

// applySGValue decodes the value of a share-group record of type typ into
// sg (m finds or adds the member of a per-member record).
func applySGValue(sg *ShareGroup, typ int16, m func() *ShareMember, value []byte) error {
	r := &cgReader{Reader: kbin.Reader{Src: value}}
	r.start(typ)
	switch typ {
	case sgMetadataType:
		sg.Epoch, sg.MetadataHash = r.Int32(), r.Int64()
	case sgTargetMetadataType:
		sg.AssignmentEpoch = r.Int32()
	case sgStatePartitionMetadataType:
		sg.Initializing = r.shareTopics(true)
		sg.Initialized = r.shareTopics(true)
		sg.Deleting = r.shareTopics(false)
	case sgMemberMetadataType:
		mm := m()
		mm.RackID = r.nullable()
		mm.ClientID, mm.ClientHost = r.CompactString(), r.CompactString()
		n := r.arrayLen()
		mm.SubscribedTopicNames = make([]string, 0, n)
		for range n {
			mm.SubscribedTopicNames = append(mm.SubscribedTopicNames, r.CompactString())
		}
		mm.hasMetadata = true
	case sgTargetMemberType:
		m().Target = r.topicPartitions()
	case sgCurrentAssignmentType:
		mm := m()
		mm.MemberEpoch, mm.PreviousMemberEpoch, mm.State = r.Int32(), r.Int32(), r.Int8()
		mm.Assigned = r.topicPartitions()
	}
	return r.finish(typ)
}

// decodeSGValue checks that a value of share-group record type typ
// decodes.
func decodeSGValue(typ int16, value []byte) error {
	var sg ShareGroup
	var mm ShareMember
	return applySGValue(&sg, typ, func() *ShareMember { return &mm }, value)
}

// shareGroupOf decodes a group's share-group records (encoded key →
// value; records of other kinds are ignored) into a ShareGroup, nil when
// it has none. Only members with a metadata record are members, as for
// consumer groups.
func shareGroupOf(group string, recs map[string][]byte) (*ShareGroup, error) {
	var sg *ShareGroup
	members := map[string]*ShareMember{}
	var errs []error
	for _, k := range slices.Sorted(maps.Keys(recs)) {
		typ, _, member, ok, err := shareKind.parseKey([]byte(k))
		if err != nil {
			errs = append(errs, fmt.Errorf("key %x: %w", k, err))
		}
		if !ok {
			continue
		}
		if sg == nil {
			sg = &ShareGroup{Group: group}
		}
		find := func() *ShareMember {
			mm := members[member]
			if mm == nil {
				mm = &ShareMember{MemberID: member}
				members[member] = mm
			}
			return mm
		}
		if err := applySGValue(sg, typ, find, recs[k]); err != nil {
			errs = append(errs, err)
		}
	}
	if sg == nil {
		return nil, errors.Join(errs...)
	}
	for _, id := range slices.Sorted(maps.Keys(members)) {
		if mm := members[id]; mm.hasMetadata {
			sg.Members = append(sg.Members, *mm)
		}
	}
	return sg, errors.Join(errs...)
}
