package offsets

import (
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/twmb/franz-go/pkg/kbin"
)

// The records of streams groups (KIP-1071) in __consumer_offsets, in the
// formats of Kafka 4.1's group coordinator (group-coordinator/src/main/
// resources/common/message/StreamsGroup*Key.json and *Value.json). Keys
// and values are encoded as those of consumer groups (consumer_records.go):
// the record type as an int16 and the key's int16-length strings; the
// value's version (0) and its fields in the flexible encoding. Record
// types:
//
//	17  StreamsGroupMetadata               group epoch
//	19  StreamsGroupMemberMetadata         a member's process, endpoint, client
//	20  StreamsGroupTargetAssignmentMetadata  target assignment epoch
//	21  StreamsGroupTargetAssignmentMember    a member's target tasks
//	22  StreamsGroupCurrentMemberAssignment   a member's epochs, state, tasks
//	    (with Kafka 4.4's assignment epochs of its active tasks, KIP-1251)
//	23  StreamsGroupTopology               the group's topology
//
// (18, StreamsGroupPartitionMetadata, is gone from Kafka 4.1: the topics'
// metadata hash in 17 replaced it.) A removed member gets tombstones for
// its 19, 21 and 22; a deleted group for every key it had. The records are
// kept, written, compacted and snapshotted as the consumer-group records
// are (rec.isCG); the two kinds share a group's record map, told apart by
// their type, since a group id names one kind of group at a time.
const (
	stMetadataType          = 17
	stMemberMetadataType    = 19
	stTargetMetadataType    = 20
	stTargetMemberType      = 21
	stCurrentAssignmentType = 22
	stTopologyType          = 23
)

// isStreamsType reports whether typ is a streams-group record type.
func isStreamsType(typ int16) bool {
	switch typ {
	case stMetadataType, stMemberMetadataType, stTargetMetadataType, stTargetMemberType, stCurrentAssignmentType, stTopologyType:
		return true
	}
	return false
}

func stPerMember(typ int16) bool {
	return typ == stMemberMetadataType || typ == stTargetMemberType || typ == stCurrentAssignmentType
}

// StreamsGroup is a streams group (KIP-1071) as its records describe it:
// what a restart needs to bring it back with its epochs, topology and
// task assignments.
type StreamsGroup struct {
	Group string
	// Epoch is the group epoch.
	Epoch int32
	// Topology is the group's topology, nil before any member sent one.
	Topology *StreamsTopology
	// AssignmentEpoch is the target assignment's epoch.
	AssignmentEpoch int32
	// Members are sorted by member id.
	Members []StreamsMember
}

// StreamsTopology is a streams application's topology.
type StreamsTopology struct {
	Epoch         int32
	Subtopologies []StreamsSubtopology
}

// StreamsSubtopology is one subtopology of a StreamsTopology.
type StreamsSubtopology struct {
	ID                      string
	SourceTopics            []string
	SourceTopicRegex        []string
	StateChangelogTopics    []StreamsTopicInfo
	RepartitionSinkTopics   []string
	RepartitionSourceTopics []StreamsTopicInfo
	CopartitionGroups       []StreamsCopartitionGroup
}

// StreamsTopicInfo is an internal topic of a subtopology.
type StreamsTopicInfo struct {
	Name              string
	Partitions        int32
	ReplicationFactor int16
	Configs           []KeyValue
}

// StreamsCopartitionGroup names, by index into its subtopology's lists,
// the topics that must have as many partitions.
type StreamsCopartitionGroup struct {
	SourceTopics, SourceTopicRegex, RepartitionSourceTopics []int16
}

// KeyValue is a topic config, client tag or assignment config.
type KeyValue struct {
	Key, Value string
}

// StreamsEndpoint is a member's user endpoint (Interactive Queries).
type StreamsEndpoint struct {
	Host string
	Port uint16
}

// TaskIDs are one subtopology's tasks, by partition.
type TaskIDs struct {
	Subtopology string
	Partitions  []int32
	// AssignmentEpochs are, for a member's current active tasks, the
	// member epochs at which it was given each task (KIP-1251; Kafka
	// 4.4's tagged field 0 of TaskIds, assignment_epochs): as many as
	// Partitions, or none (a record from before KIP-1251, or standby,
	// warm-up and target tasks, which have none).
	AssignmentEpochs []int32
}

// StreamsTasks are tasks by role.
type StreamsTasks struct {
	Active, Standby, Warmup []TaskIDs
}

// StreamsMember is one member of a StreamsGroup. Empty strings stand for
// Kafka's nulls.
type StreamsMember struct {
	MemberID, InstanceID, RackID, ClientID, ClientHost, ProcessID string
	RebalanceTimeoutMs, TopologyEpoch                             int32
	// UserEndpoint is nil when the member has none.
	UserEndpoint                     *StreamsEndpoint
	ClientTags                       []KeyValue
	MemberEpoch, PreviousMemberEpoch int32
	State                            int8
	Assigned, PendingRevocation      StreamsTasks
	Target                           StreamsTasks
	hasMetadata                      bool
}

func appendStrings(dst []byte, ss []string) []byte {
	dst = kbin.AppendCompactArrayLen(dst, len(ss))
	for _, s := range ss {
		dst = kbin.AppendCompactString(dst, s)
	}
	return dst
}

func appendKVs(dst []byte, kvs []KeyValue) []byte {
	dst = kbin.AppendCompactArrayLen(dst, len(kvs))
	for _, kv := range kvs {
		dst = kbin.AppendCompactString(dst, kv.Key)
		dst = kbin.AppendCompactString(dst, kv.Value)
		dst = kbin.AppendUvarint(dst, 0)
	}
	return dst
}

func appendInt16s(dst []byte, is []int16) []byte {
	// Kafka's CopartitionGroup indexes are int16, as in the heartbeat.
	dst = kbin.AppendCompactArrayLen(dst, len(is))
	for _, i := range is {
		dst = kbin.AppendInt16(dst, i)
	}
	return dst
}

func appendTopicInfos(dst []byte, ts []StreamsTopicInfo) []byte {
	dst = kbin.AppendCompactArrayLen(dst, len(ts))
	for _, t := range ts {
		dst = kbin.AppendCompactString(dst, t.Name)
		dst = kbin.AppendInt32(dst, t.Partitions)
		dst = kbin.AppendInt16(dst, t.ReplicationFactor)
		dst = appendKVs(dst, t.Configs)
		dst = kbin.AppendUvarint(dst, 0)
	}
	return dst
}

func appendTaskIDs(dst []byte, ts []TaskIDs) []byte {
	dst = kbin.AppendCompactArrayLen(dst, len(ts))
	for _, t := range ts {
		dst = kbin.AppendCompactString(dst, t.Subtopology)
		dst = kbin.AppendCompactArrayLen(dst, len(t.Partitions))
		for _, p := range t.Partitions {
			dst = kbin.AppendInt32(dst, p)
		}
		dst = appendAssignmentEpochs(dst, t.AssignmentEpochs, len(t.Partitions))
	}
	return dst
}

func appendStreamsTasks(dst []byte, t StreamsTasks) []byte {
	dst = appendTaskIDs(dst, t.Active)
	dst = appendTaskIDs(dst, t.Standby)
	return appendTaskIDs(dst, t.Warmup)
}

// streamsGroupRecords lists every record of sg: encoded key → value.
func streamsGroupRecords(sg *StreamsGroup) map[string][]byte {
	out := make(map[string][]byte, 4+3*len(sg.Members))
	start := func() []byte { return kbin.AppendInt16(nil, cgValueVersion) }
	v := kbin.AppendInt32(start(), sg.Epoch)
	v = kbin.AppendInt64(v, 0) // MetadataHash: the coordinator checks the topics again after a restart
	v = appendKVs(v, nil)      // AssignmentConfigs: the broker's settings apply
	out[streamsKind.key(stMetadataType, sg.Group, "")] = kbin.AppendUvarint(v, 0)

	if t := sg.Topology; t != nil {
		v = kbin.AppendInt32(start(), t.Epoch)
		v = kbin.AppendCompactArrayLen(v, len(t.Subtopologies))
		for _, s := range t.Subtopologies {
			v = kbin.AppendCompactString(v, s.ID)
			v = appendStrings(v, s.SourceTopics)
			v = appendStrings(v, s.SourceTopicRegex)
			v = appendTopicInfos(v, s.StateChangelogTopics)
			v = appendStrings(v, s.RepartitionSinkTopics)
			v = appendTopicInfos(v, s.RepartitionSourceTopics)
			v = kbin.AppendCompactArrayLen(v, len(s.CopartitionGroups))
			for _, cg := range s.CopartitionGroups {
				v = appendInt16s(v, cg.SourceTopics)
				v = appendInt16s(v, cg.SourceTopicRegex)
				v = appendInt16s(v, cg.RepartitionSourceTopics)
				v = kbin.AppendUvarint(v, 0)
			}
			v = kbin.AppendUvarint(v, 0)
		}
		out[streamsKind.key(stTopologyType, sg.Group, "")] = kbin.AppendUvarint(v, 0)
	}

	v = kbin.AppendInt32(start(), sg.AssignmentEpoch)
	out[streamsKind.key(stTargetMetadataType, sg.Group, "")] = kbin.AppendUvarint(v, 0)

	for i := range sg.Members {
		m := &sg.Members[i]
		v = appendNullable(start(), m.InstanceID)
		v = appendNullable(v, m.RackID)
		v = kbin.AppendCompactString(v, m.ClientID)
		v = kbin.AppendCompactString(v, m.ClientHost)
		v = kbin.AppendInt32(v, m.RebalanceTimeoutMs)
		v = kbin.AppendInt32(v, m.TopologyEpoch)
		v = kbin.AppendCompactString(v, m.ProcessID)
		if e := m.UserEndpoint; e != nil {
			v = kbin.AppendInt8(v, 1) // a nullable struct: present
			v = kbin.AppendCompactString(v, e.Host)
			v = kbin.AppendUint16(v, e.Port)
			v = kbin.AppendUvarint(v, 0)
		} else {
			v = kbin.AppendInt8(v, -1)
		}
		v = appendKVs(v, m.ClientTags)
		out[streamsKind.key(stMemberMetadataType, sg.Group, m.MemberID)] = kbin.AppendUvarint(v, 0)

		v = appendStreamsTasks(start(), m.Target)
		out[streamsKind.key(stTargetMemberType, sg.Group, m.MemberID)] = kbin.AppendUvarint(v, 0)

		v = kbin.AppendInt32(start(), m.MemberEpoch)
		v = kbin.AppendInt32(v, m.PreviousMemberEpoch)
		v = kbin.AppendInt8(v, m.State)
		v = appendStreamsTasks(v, m.Assigned)
		v = appendStreamsTasks(v, m.PendingRevocation)
		out[streamsKind.key(stCurrentAssignmentType, sg.Group, m.MemberID)] = kbin.AppendUvarint(v, 0)
	}
	return out
}

func (r *cgReader) strings() []string {
	n := r.arrayLen()
	out := make([]string, 0, min(n, len(r.Src)))
	for range n {
		s := r.CompactString()
		if !r.Ok() {
			return nil
		}
		out = append(out, s)
	}
	return out
}

func (r *cgReader) kvs() []KeyValue {
	n := r.arrayLen()
	out := make([]KeyValue, 0, min(n, len(r.Src)))
	for range n {
		kv := KeyValue{Key: r.CompactString(), Value: r.CompactString()}
		r.tags()
		if !r.Ok() {
			return nil
		}
		out = append(out, kv)
	}
	return out
}

func (r *cgReader) int16s() []int16 {
	n := r.arrayLen()
	out := make([]int16, 0, min(n, len(r.Src)))
	for range n {
		i := r.Int16()
		if !r.Ok() {
			return nil
		}
		out = append(out, i)
	}
	return out
}

func (r *cgReader) topicInfos() []StreamsTopicInfo {
	n := r.arrayLen()
	out := make([]StreamsTopicInfo, 0, min(n, len(r.Src)))
	for range n {
		t := StreamsTopicInfo{Name: r.CompactString(), Partitions: r.Int32(), ReplicationFactor: r.Int16()}
		t.Configs = r.kvs()
		r.tags()
		if !r.Ok() {
			return nil
		}
		out = append(out, t)
	}
	return out
}

func (r *cgReader) taskIDs() []TaskIDs {
	n := r.arrayLen()
	out := make([]TaskIDs, 0, min(n, len(r.Src)))
	for range n {
		t := TaskIDs{Subtopology: r.CompactString()}
		np := r.arrayLen()
		t.Partitions = make([]int32, 0, min(np, len(r.Src)))
		for range np {
			t.Partitions = append(t.Partitions, r.Int32())
		}
		t.AssignmentEpochs = r.assignmentEpochs(len(t.Partitions))
		if !r.Ok() {
			return nil
		}
		out = append(out, t)
	}
	return out
}

func (r *cgReader) streamsTasks() StreamsTasks {
	return StreamsTasks{Active: r.taskIDs(), Standby: r.taskIDs(), Warmup: r.taskIDs()}
}

// applySTValue decodes the value of a streams-group record of type typ
// into sg (m finds or adds the member of a per-member record).
func applySTValue(sg *StreamsGroup, typ int16, m func() *StreamsMember, value []byte) error {
	r := &cgReader{Reader: kbin.Reader{Src: value}}
	r.start(typ)
	switch typ {
	case stMetadataType:
		sg.Epoch = r.Int32()
		r.Int64() // MetadataHash
		r.kvs()   // AssignmentConfigs
	case stTopologyType:
		t := &StreamsTopology{Epoch: r.Int32()}
		n := r.arrayLen()
		t.Subtopologies = make([]StreamsSubtopology, 0, min(n, len(r.Src)))
		for range n {
			s := StreamsSubtopology{ID: r.CompactString()}
			s.SourceTopics = r.strings()
			s.SourceTopicRegex = r.strings()
			s.StateChangelogTopics = r.topicInfos()
			s.RepartitionSinkTopics = r.strings()
			s.RepartitionSourceTopics = r.topicInfos()
			nc := r.arrayLen()
			s.CopartitionGroups = make([]StreamsCopartitionGroup, 0, min(nc, len(r.Src)))
			for range nc {
				cg := StreamsCopartitionGroup{SourceTopics: r.int16s(), SourceTopicRegex: r.int16s(), RepartitionSourceTopics: r.int16s()}
				r.tags()
				if !r.Ok() {
					break
				}
				s.CopartitionGroups = append(s.CopartitionGroups, cg)
			}
			r.tags()
			if !r.Ok() {
				break
			}
			t.Subtopologies = append(t.Subtopologies, s)
		}
		sg.Topology = t
	case stTargetMetadataType:
		sg.AssignmentEpoch = r.Int32()
	case stMemberMetadataType:
		mm := m()
		mm.InstanceID, mm.RackID = r.nullable(), r.nullable()
		mm.ClientID, mm.ClientHost = r.CompactString(), r.CompactString()
		mm.RebalanceTimeoutMs, mm.TopologyEpoch = r.Int32(), r.Int32()
		mm.ProcessID = r.CompactString()
		mm.UserEndpoint = nil
		switch r.Int8() {
		case -1:
		case 1:
			mm.UserEndpoint = &StreamsEndpoint{Host: r.CompactString(), Port: r.Uint16()}
			r.tags()
		default:
			r.fail("record type %d: bad endpoint presence byte", typ)
		}
		mm.ClientTags = r.kvs()
		mm.hasMetadata = true
	case stTargetMemberType:
		m().Target = r.streamsTasks()
	case stCurrentAssignmentType:
		mm := m()
		mm.MemberEpoch, mm.PreviousMemberEpoch, mm.State = r.Int32(), r.Int32(), r.Int8()
		mm.Assigned = r.streamsTasks()
		mm.PendingRevocation = r.streamsTasks()
	}
	return r.finish(typ)
}

// decodeSTValue checks that a value of streams-group record type typ
// decodes.
func decodeSTValue(typ int16, value []byte) error {
	var sg StreamsGroup
	var mm StreamsMember
	return applySTValue(&sg, typ, func() *StreamsMember { return &mm }, value)
}

// streamsGroupOf decodes a group's streams-group records (encoded key →
// value; records of other types are skipped) into a StreamsGroup, nil when
// it has none. Only members with a metadata record are members: the other
// records of a member without one (a partial write) are dropped.
func streamsGroupOf(group string, recs map[string][]byte) (*StreamsGroup, error) {
	var sg *StreamsGroup
	members := map[string]*StreamsMember{}
	var errs []error
	for _, k := range slices.Sorted(maps.Keys(recs)) {
		typ, _, member, ok, err := streamsKind.parseKey([]byte(k))
		if err != nil {
			errs = append(errs, fmt.Errorf("key %x: %w", k, err))
			continue
		}
		if !ok {
			continue
		}
		if sg == nil {
			sg = &StreamsGroup{Group: group}
		}
		find := func() *StreamsMember {
			mm := members[member]
			if mm == nil {
				mm = &StreamsMember{MemberID: member}
				members[member] = mm
			}
			return mm
		}
		if err := applySTValue(sg, typ, find, recs[k]); err != nil {
			errs = append(errs, err)
		}
	}
	for _, id := range slices.Sorted(maps.Keys(members)) {
		if mm := members[id]; mm.hasMetadata {
			sg.Members = append(sg.Members, *mm)
		}
	}
	return sg, errors.Join(errs...)
}
