package offsets

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kbin"
)

// The records of consumer groups (KIP-848) in __consumer_offsets, in the
// formats of Kafka's group coordinator (group-coordinator/src/main/
// resources/common/message/ConsumerGroup*Key.json and *Value.json). A key
// is the record type as an int16, then the key's fields, not flexible: the
// group id and, for the per-member records, the member id, as int16-length
// strings. A value is its version (0) as an int16, then its fields in the
// flexible encoding (compact strings and arrays, tagged fields). Record
// types:
//
//	3  ConsumerGroupMetadata               group epoch
//	4  ConsumerGroupPartitionMetadata      subscribed topics: id, name, partitions
//	5  ConsumerGroupMemberMetadata         a member's subscription and client
//	6  ConsumerGroupTargetAssignmentMetadata  target assignment epoch
//	7  ConsumerGroupTargetAssignmentMember    a member's target partitions
//	8  ConsumerGroupCurrentMemberAssignment   a member's epochs, state, partitions
//
// A removed member gets tombstones for its 5, 7 and 8; a deleted group
// for every key it had. Tagged fields this code does not know (Kafka's
// ClassicMemberMetadata, a newer Kafka's MetadataHash) are skipped when
// read. The regular-expression records (16) are not written: the
// coordinator resolves a group's regular expressions again after a
// restart.
const (
	cgMetadataType          = 3
	cgPartitionMetadataType = 4
	cgMemberMetadataType    = 5
	cgTargetMetadataType    = 6
	cgTargetMemberType      = 7
	cgCurrentAssignmentType = 8
)

// ConsumerGroup is a consumer group (KIP-848) as its records describe it:
// what a restart needs to bring it back with its epochs and assignments.
type ConsumerGroup struct {
	Group string
	// Epoch is the group epoch.
	Epoch int32
	// Topics is the metadata of the subscribed topics as of the last
	// epoch bump, sorted by name.
	Topics []ConsumerTopic
	// AssignmentEpoch is the target assignment's epoch.
	AssignmentEpoch int32
	// Members are sorted by member id.
	Members []ConsumerMember
}

// ConsumerTopic is one subscribed topic's metadata.
type ConsumerTopic struct {
	ID         [16]byte
	Name       string
	Partitions int32
}

// ConsumerMember is one member of a ConsumerGroup. Empty strings stand
// for Kafka's nulls.
type ConsumerMember struct {
	MemberID, InstanceID, RackID, ClientID, ClientHost string
	// SubscribedTopicNames are sorted.
	SubscribedTopicNames               []string
	SubscribedTopicRegex               string
	ServerAssignor                     string
	RebalanceTimeoutMs                 int32
	MemberEpoch, PreviousMemberEpoch   int32
	State                              int8
	Assigned, PendingRevocation        []TopicPartitions
	Target                             []TopicPartitions
	hasMetadata, hasCurrent, hasTarget bool
}

// TopicPartitions is one topic's partitions, sorted, in an assignment.
type TopicPartitions struct {
	TopicID    [16]byte
	Partitions []int32
	// AssignmentEpochs are, in a member's current assignment, the member
	// epochs at which it was given each partition (KIP-1251; Kafka's
	// tagged field 0, assignment_epochs): as many as Partitions, or none
	// (a record from before KIP-1251, or another kind of assignment).
	AssignmentEpochs []int32
}

// isConsumerType reports whether a record type is a consumer-group one.
func isConsumerType(typ int16) bool { return typ >= cgMetadataType && typ <= cgCurrentAssignmentType }

// cgMemberKeyed reports whether records of typ are per member.
func cgMemberKeyed(typ int16) bool {
	return typ == cgMemberMetadataType || typ == cgTargetMemberType || typ == cgCurrentAssignmentType
}

// cgValue is the encoding of values: version 0, then the fields.
const cgValueVersion = 0

func appendNullable(dst []byte, s string) []byte {
	if s == "" {
		return kbin.AppendCompactNullableString(dst, nil)
	}
	return kbin.AppendCompactString(dst, s)
}

func appendTopicPartitions(dst []byte, tps []TopicPartitions) []byte {
	dst = kbin.AppendCompactArrayLen(dst, len(tps))
	for _, tp := range tps {
		dst = kbin.AppendUuid(dst, tp.TopicID)
		dst = kbin.AppendCompactArrayLen(dst, len(tp.Partitions))
		for _, p := range tp.Partitions {
			dst = kbin.AppendInt32(dst, p)
		}
		dst = appendAssignmentEpochs(dst, tp.AssignmentEpochs, len(tp.Partitions))
	}
	return dst
}

// assignmentEpochsTag is the tag of the assignment_epochs field of
// TopicPartitions (consumer groups) and TaskIds (streams groups).
const assignmentEpochsTag = 0

// appendAssignmentEpochs appends the tagged fields of a TopicPartitions
// or TaskIds with n partitions: assignment_epochs when there is one epoch
// per partition, else none.
func appendAssignmentEpochs(dst []byte, epochs []int32, n int) []byte {
	if len(epochs) == 0 || len(epochs) != n {
		return kbin.AppendUvarint(dst, 0) // no tagged fields
	}
	dst = kbin.AppendUvarint(dst, 1)
	dst = kbin.AppendUvarint(dst, assignmentEpochsTag)
	field := kbin.AppendCompactArrayLen(nil, len(epochs))
	for _, e := range epochs {
		field = kbin.AppendInt32(field, e)
	}
	dst = kbin.AppendUvarint(dst, uint32(len(field)))
	return append(dst, field...)
}

// consumerGroupRecords lists every record of cg: encoded key → value.
func consumerGroupRecords(cg *ConsumerGroup) map[string][]byte {
	out := make(map[string][]byte, 3+3*len(cg.Members))
	start := func() []byte { return kbin.AppendInt16(nil, cgValueVersion) }
	v := kbin.AppendInt32(start(), cg.Epoch)
	out[consumerKind.key(cgMetadataType, cg.Group, "")] = kbin.AppendUvarint(v, 0)

	v = kbin.AppendCompactArrayLen(start(), len(cg.Topics))
	for _, t := range cg.Topics {
		v = kbin.AppendUuid(v, t.ID)
		v = kbin.AppendCompactString(v, t.Name)
		v = kbin.AppendInt32(v, t.Partitions)
		v = kbin.AppendCompactArrayLen(v, 0) // no racks: PartitionMetadata
		v = kbin.AppendUvarint(v, 0)
	}
	out[consumerKind.key(cgPartitionMetadataType, cg.Group, "")] = kbin.AppendUvarint(v, 0)

	v = kbin.AppendInt32(start(), cg.AssignmentEpoch)
	out[consumerKind.key(cgTargetMetadataType, cg.Group, "")] = kbin.AppendUvarint(v, 0)

	for i := range cg.Members {
		m := &cg.Members[i]
		v = appendNullable(start(), m.InstanceID)
		v = appendNullable(v, m.RackID)
		v = kbin.AppendCompactString(v, m.ClientID)
		v = kbin.AppendCompactString(v, m.ClientHost)
		v = kbin.AppendCompactArrayLen(v, len(m.SubscribedTopicNames))
		for _, n := range m.SubscribedTopicNames {
			v = kbin.AppendCompactString(v, n)
		}
		v = appendNullable(v, m.SubscribedTopicRegex)
		v = kbin.AppendInt32(v, m.RebalanceTimeoutMs)
		v = appendNullable(v, m.ServerAssignor)
		out[consumerKind.key(cgMemberMetadataType, cg.Group, m.MemberID)] = kbin.AppendUvarint(v, 0)

		v = appendTopicPartitions(start(), m.Target)
		out[consumerKind.key(cgTargetMemberType, cg.Group, m.MemberID)] = kbin.AppendUvarint(v, 0)

		v = kbin.AppendInt32(start(), m.MemberEpoch)
		v = kbin.AppendInt32(v, m.PreviousMemberEpoch)
		v = kbin.AppendInt8(v, m.State)
		v = appendTopicPartitions(v, m.Assigned)
		v = appendTopicPartitions(v, m.PendingRevocation)
		out[consumerKind.key(cgCurrentAssignmentType, cg.Group, m.MemberID)] = kbin.AppendUvarint(v, 0)
	}
	return out
}

// errCGValue is wrapped by the errors of values that do not decode.
var errCGValue = errors.New("offsets: bad consumer group record value")

// cgReader decodes a value; the first problem sticks in err.
type cgReader struct {
	kbin.Reader
	err error
}

func (r *cgReader) fail(format string, args ...any) {
	if r.err == nil {
		r.err = fmt.Errorf("%w: "+format, append([]any{errCGValue}, args...)...)
	}
}

// arrayLen is a compact array's length; null counts as empty.
func (r *cgReader) arrayLen() int {
	return max(int(r.CompactArrayLen()), 0)
}

func (r *cgReader) nullable() string {
	if s := r.CompactNullableString(); s != nil {
		return *s
	}
	return ""
}

// tags skips the tagged fields of a structure.
func (r *cgReader) tags() {
	for n := r.Uvarint(); n > 0 && r.Ok(); n-- {
		r.Uvarint()
		r.Span(int(r.Uvarint()))
	}
}

func (r *cgReader) topicPartitions() []TopicPartitions {
	n := r.arrayLen()
	out := make([]TopicPartitions, 0, n)
	for range n {
		tp := TopicPartitions{TopicID: r.Uuid()}
		np := r.arrayLen()
		tp.Partitions = make([]int32, 0, np)
		for range np {
			tp.Partitions = append(tp.Partitions, r.Int32())
		}
		tp.AssignmentEpochs = r.assignmentEpochs(len(tp.Partitions))
		if !r.Ok() {
			return nil
		}
		out = append(out, tp)
	}
	return out
}

// assignmentEpochs reads the tagged fields of a TopicPartitions or
// TaskIds with n partitions and returns its assignment_epochs, if any.
func (r *cgReader) assignmentEpochs(n int) []int32 {
	var out []int32
	for nt := r.Uvarint(); nt > 0 && r.Ok(); nt-- {
		tag, field := r.Uvarint(), r.Span(int(r.Uvarint()))
		if tag == assignmentEpochsTag {
			out = decodeAssignmentEpochs(field, n)
		}
	}
	return out
}

// decodeAssignmentEpochs decodes the assignment_epochs tagged field of a
// TopicPartitions with n partitions; epochs that do not decode or are not
// one per partition are dropped (the member's epoch stands in for them).
func decodeAssignmentEpochs(field []byte, n int) []int32 {
	fr := kbin.Reader{Src: field}
	k := int(fr.CompactArrayLen())
	if k != n || k <= 0 || k > len(field)/4 {
		return nil
	}
	out := make([]int32, k)
	for i := range out {
		out[i] = fr.Int32()
	}
	if !fr.Ok() {
		return nil
	}
	return out
}

// start reads the version: values of another version are from a Kafka
// this code does not know, an error as for any value that does not decode.
func (r *cgReader) start(typ int16) {
	if v := r.Int16(); v != cgValueVersion {
		r.fail("record type %d: value version %d", typ, v)
	}
}

// finish checks that the value was whole and ended there.
func (r *cgReader) finish(typ int16) error {
	r.tags()
	if err := r.Complete(); err != nil {
		r.fail("record type %d: truncated", typ)
	} else if len(r.Src) != 0 {
		r.fail("record type %d: %d bytes past the value", typ, len(r.Src))
	}
	return r.err
}

// applyCGValue decodes the value of a record of type typ into cg (member
// is the member id of a per-member record; m finds or adds the member).
func applyCGValue(cg *ConsumerGroup, typ int16, m func() *ConsumerMember, value []byte) error {
	r := &cgReader{Reader: kbin.Reader{Src: value}}
	r.start(typ)
	switch typ {
	case cgMetadataType:
		cg.Epoch = r.Int32()
	case cgPartitionMetadataType:
		n := r.arrayLen()
		cg.Topics = make([]ConsumerTopic, 0, n)
		for range n {
			t := ConsumerTopic{ID: r.Uuid(), Name: r.CompactString(), Partitions: r.Int32()}
			for np := r.arrayLen(); np > 0 && r.Ok(); np-- {
				r.Int32()
				for nr := r.arrayLen(); nr > 0 && r.Ok(); nr-- {
					r.CompactString()
				}
				r.tags()
			}
			r.tags()
			if !r.Ok() {
				break
			}
			cg.Topics = append(cg.Topics, t)
		}
	case cgTargetMetadataType:
		cg.AssignmentEpoch = r.Int32()
	case cgMemberMetadataType:
		mm := m()
		mm.InstanceID, mm.RackID = r.nullable(), r.nullable()
		mm.ClientID, mm.ClientHost = r.CompactString(), r.CompactString()
		n := r.arrayLen()
		mm.SubscribedTopicNames = make([]string, 0, n)
		for range n {
			mm.SubscribedTopicNames = append(mm.SubscribedTopicNames, r.CompactString())
		}
		mm.SubscribedTopicRegex = r.nullable()
		mm.RebalanceTimeoutMs = r.Int32()
		mm.ServerAssignor = r.nullable()
		mm.hasMetadata = true
	case cgTargetMemberType:
		mm := m()
		mm.Target = r.topicPartitions()
		mm.hasTarget = true
	case cgCurrentAssignmentType:
		mm := m()
		mm.MemberEpoch, mm.PreviousMemberEpoch, mm.State = r.Int32(), r.Int32(), r.Int8()
		mm.Assigned = r.topicPartitions()
		mm.PendingRevocation = r.topicPartitions()
		mm.hasCurrent = true
	}
	return r.finish(typ)
}

// decodeCGValue checks that a value of record type typ decodes.
func decodeCGValue(typ int16, value []byte) error {
	var cg ConsumerGroup
	var mm ConsumerMember
	return applyCGValue(&cg, typ, func() *ConsumerMember { return &mm }, value)
}

// consumerGroupOf decodes a group's records (encoded key → value) into a
// ConsumerGroup. Only members with a metadata record are members: the
// other records of a member without one (a partial write) are dropped.
func consumerGroupOf(group string, recs map[string][]byte) (*ConsumerGroup, error) {
	cg := &ConsumerGroup{Group: group}
	members := map[string]*ConsumerMember{}
	var errs []error
	for _, k := range slices.Sorted(maps.Keys(recs)) {
		typ, _, member, ok, err := consumerKind.parseKey([]byte(k))
		if err != nil || !ok {
			errs = append(errs, fmt.Errorf("key %x: %w", k, err))
			continue
		}
		find := func() *ConsumerMember {
			mm := members[member]
			if mm == nil {
				mm = &ConsumerMember{MemberID: member}
				members[member] = mm
			}
			return mm
		}
		if err := applyCGValue(cg, typ, find, recs[k]); err != nil {
			errs = append(errs, err)
		}
	}
	for _, id := range slices.Sorted(maps.Keys(members)) {
		if mm := members[id]; mm.hasMetadata {
			cg.Members = append(cg.Members, *mm)
		}
	}
	slices.SortFunc(cg.Topics, func(a, b ConsumerTopic) int { return strings.Compare(a.Name, b.Name) })
	return cg, errors.Join(errs...)
}
