package offsets

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TopicPartition names one partition whose offset a group commits.
type TopicPartition struct {
	Topic     string
	Partition int32
}

// Offset is a committed offset as OffsetFetch reports it.
type Offset struct {
	Offset int64
	// LeaderEpoch is the leader epoch the consumer saw, or -1.
	LeaderEpoch int32
	// Metadata is the client's string, "" when none.
	Metadata        string
	CommitTimestamp int64
	// ExpireTimestamp is an explicit expiry (OffsetCommit v1–v4 with a
	// retention time), or -1.
	ExpireTimestamp int64
}

// Member is one group member in a group metadata record.
type Member struct {
	MemberID, InstanceID, ClientID, ClientHost string
	SessionTimeoutMs, RebalanceTimeoutMs       int32
	Subscription, Assignment                   []byte
}

// GroupRecord is what a group metadata record says of a classic group
// after a rebalance, when a static member was replaced, or when it
// empties: an empty Members means the group is empty.
type GroupRecord struct {
	Group        string
	ProtocolType string
	Generation   int32
	Protocol     string
	Leader       string
	Members      []Member
}

// Key versions of __consumer_offsets records (Kafka's GroupCoordinator
// record types): 0 and 1 are offset commits, 2 group metadata. Values are
// written at OffsetCommitValue v3 (v1 when the commit has an expire
// timestamp) and GroupMetadataValue v3.
const (
	offsetKeyVersion = 1
	groupKeyVersion  = 2
)

// rec is one decoded record: an offset commit (or its tombstone) or a
// group metadata record (or its tombstone). The run-time writers build
// recs and encode them; replay decodes them; both apply them the same way.
type rec struct {
	group string
	// isGroup: a group metadata record; otherwise an offset record for tp.
	isGroup bool
	tp      TopicPartition
	// tombstone deletes the key.
	tombstone bool
	offset    Offset
	// meta is the encoded GroupMetadataValue, kept as is for snapshots;
	// empty, protocolType and generation are decoded from it.
	meta         []byte
	metaEmpty    bool
	metaTime     int64
	protocolType string
	generation   int32
	// isCG: a consumer-group (KIP-848) or share-group (KIP-932)
	// record, kept encoded: cgKey is its key, cgValue its value
	// (consumer_records.go, share_records.go).
	isCG    bool
	cgKey   string
	cgValue []byte
}

// appendKey appends the record key.
func (r *rec) appendKey(dst []byte) []byte {
	if r.isCG {
		return append(dst, r.cgKey...)
	}
	if r.isGroup {
		k := kmsg.GroupMetadataKey{Version: groupKeyVersion, Group: r.group}
		return k.AppendTo(dst)
	}
	k := kmsg.OffsetCommitKey{Version: offsetKeyVersion, Group: r.group, Topic: r.tp.Topic, Partition: r.tp.Partition}
	return k.AppendTo(dst)
}

// appendValue appends the record value; a tombstone has none (null).
func (r *rec) appendValue(dst []byte) []byte {
	switch {
	case r.tombstone:
		return dst
	case r.isCG:
		return append(dst, r.cgValue...)
	case r.isGroup:
		return append(dst, r.meta...)
	}
	v := kmsg.OffsetCommitValue{
		Version:         3,
		Offset:          r.offset.Offset,
		LeaderEpoch:     r.offset.LeaderEpoch,
		Metadata:        r.offset.Metadata,
		CommitTimestamp: r.offset.CommitTimestamp,
		ExpireTimestamp: r.offset.ExpireTimestamp,
	}
	if r.offset.ExpireTimestamp >= 0 {
		v.Version = 1
	}
	return v.AppendTo(dst)
}

// groupRec builds the metadata record of g at time now.
func groupRec(g GroupRecord, now int64) rec {
	v := kmsg.NewGroupMetadataValue()
	v.Version = 3
	v.ProtocolType = g.ProtocolType
	v.Generation = g.Generation
	if g.Protocol != "" {
		v.Protocol = &g.Protocol
	}
	if g.Leader != "" {
		v.Leader = &g.Leader
	}
	v.CurrentStateTimestamp = now
	for _, m := range g.Members {
		vm := kmsg.GroupMetadataValueMember{
			MemberID:               m.MemberID,
			ClientID:               m.ClientID,
			ClientHost:             m.ClientHost,
			RebalanceTimeoutMillis: m.RebalanceTimeoutMs,
			SessionTimeoutMillis:   m.SessionTimeoutMs,
			Subscription:           m.Subscription,
			Assignment:             m.Assignment,
		}
		if m.InstanceID != "" {
			vm.InstanceID = &m.InstanceID
		}
		v.Members = append(v.Members, vm)
	}
	return rec{
		group: g.Group, isGroup: true, meta: v.AppendTo(nil),
		metaEmpty: len(g.Members) == 0, metaTime: now,
		protocolType: g.ProtocolType, generation: g.Generation,
	}
}

// decodeRec decodes a stored record. ok is false for a key this store
// does not know (a newer Kafka record type), which replay skips; err is
// for a record of a known type that does not decode.
func decodeRec(key, value []byte) (r rec, ok bool, err error) {
	if len(key) < 2 {
		return rec{}, false, fmt.Errorf("offsets: record key of %d bytes", len(key))
	}
	version := int16(key[0])<<8 | int16(key[1])
	switch version {
	case 0, 1:
		var k kmsg.OffsetCommitKey
		if err := k.ReadFrom(key); err != nil {
			return rec{}, false, fmt.Errorf("offsets: offset commit key: %w", err)
		}
		r = rec{group: k.Group, tp: TopicPartition{k.Topic, k.Partition}}
		if value == nil {
			r.tombstone = true
			return r, true, nil
		}
		var v kmsg.OffsetCommitValue
		if err := v.ReadFrom(value); err != nil {
			return rec{}, false, fmt.Errorf("offsets: offset commit value for %s/%s/%d: %w", k.Group, k.Topic, k.Partition, err)
		}
		r.offset = Offset{Offset: v.Offset, LeaderEpoch: v.LeaderEpoch, Metadata: v.Metadata, CommitTimestamp: v.CommitTimestamp, ExpireTimestamp: -1}
		if v.Version < 3 {
			r.offset.LeaderEpoch = -1
		}
		if v.Version == 1 && v.ExpireTimestamp >= 0 {
			// A negative expire timestamp means none (Kafka writes -1).
			r.offset.ExpireTimestamp = v.ExpireTimestamp
		}
		return r, true, nil
	case 2:
		var k kmsg.GroupMetadataKey
		if err := k.ReadFrom(key); err != nil {
			return rec{}, false, fmt.Errorf("offsets: group metadata key: %w", err)
		}
		r = rec{group: k.Group, isGroup: true}
		if value == nil {
			r.tombstone = true
			return r, true, nil
		}
		var v kmsg.GroupMetadataValue
		if err := v.ReadFrom(value); err != nil {
			return rec{}, false, fmt.Errorf("offsets: group metadata value for %s: %w", k.Group, err)
		}
		r.meta = append([]byte(nil), value...)
		r.metaEmpty = len(v.Members) == 0
		r.metaTime = v.CurrentStateTimestamp
		r.protocolType, r.generation = v.ProtocolType, v.Generation
		return r, true, nil
	default:
		if k := groupKindOf(version); k != nil {
			return k.record(key, value, version)
		}
	}
	return rec{}, false, nil
}

// decodeGroupRecord decodes a stored GroupMetadataValue of group.
func decodeGroupRecord(group string, meta []byte) (GroupRecord, error) {
	var v kmsg.GroupMetadataValue
	if err := v.ReadFrom(meta); err != nil {
		return GroupRecord{}, fmt.Errorf("offsets: group metadata value for %s: %w", group, err)
	}
	g := GroupRecord{Group: group, ProtocolType: v.ProtocolType, Generation: v.Generation}
	if v.Protocol != nil {
		g.Protocol = *v.Protocol
	}
	if v.Leader != nil {
		g.Leader = *v.Leader
	}
	for _, vm := range v.Members {
		m := Member{
			MemberID: vm.MemberID, ClientID: vm.ClientID, ClientHost: vm.ClientHost,
			SessionTimeoutMs: vm.SessionTimeoutMillis, RebalanceTimeoutMs: vm.RebalanceTimeoutMillis,
			Subscription: vm.Subscription, Assignment: vm.Assignment,
		}
		if v.Version == 0 {
			// v0 has one timeout, the session timeout, which then
			// bounds the rebalance too (MemberMetadata's default).
			m.RebalanceTimeoutMs = m.SessionTimeoutMs
		}
		if vm.InstanceID != nil {
			m.InstanceID = *vm.InstanceID
		}
		g.Members = append(g.Members, m)
	}
	return g, nil
}
