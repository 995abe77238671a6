package share

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// The records of __share_group_state. Kafka's share coordinator writes
// ShareSnapshot and ShareUpdate records keyed by group, topic id and
// partition; kbroker writes only whole snapshots of a share-partition
// (bounded by group.share.partition.max.record.locks), so the latest
// record of a key is its state and a snapshot of the coordinator log is
// the set of latest records. A tombstone (null value) deletes the key
// (DeleteShareGroupOffsets, DeleteGroups).
//
// Key (version 0 is the only one):
//
//	int16  key version (0)
//	int16  group id length, group id bytes
//	[16]byte topic id
//	int32  partition
//
// Value:
//
//	int16  value version (0)
//	int32  state epoch
//	int64  start offset (SPSO)
//	int32  batch count, then per batch:
//	       int64 first offset, int64 last offset, int8 state, int16 delivery count
//
// All integers are big-endian. The decoder bounds every length by the
// bytes present, so a damaged record is an error, never a large
// allocation.

const (
	recordKeyVersion   = 0
	recordValueVersion = 0
	batchSize          = 8 + 8 + 1 + 2
)

// Key names one share-partition: a group's view of one topic-partition.
type Key struct {
	Group     string
	TopicID   [16]byte
	Partition int32
}

// String is the key as Kafka's SharePartitionKey prints it,
// group:topicId:partition, which also picks the coordinator-log partition.
func (k Key) String() string { return fmt.Sprintf("%s:%x:%d", k.Group, k.TopicID, k.Partition) }

// rec is one record of __share_group_state: a share-partition's state or,
// with deleted, its tombstone.
type rec struct {
	key     Key
	deleted bool
	state   PartitionState
}

// errRecord is wrapped by every decoding error.
var errRecord = errors.New("share: bad state record")

func (r *rec) appendKey(dst []byte) []byte {
	dst = binary.BigEndian.AppendUint16(dst, recordKeyVersion)
	dst = binary.BigEndian.AppendUint16(dst, uint16(len(r.key.Group)))
	dst = append(dst, r.key.Group...)
	dst = append(dst, r.key.TopicID[:]...)
	return binary.BigEndian.AppendUint32(dst, uint32(r.key.Partition))
}

func (r *rec) appendValue(dst []byte) []byte {
	dst = binary.BigEndian.AppendUint16(dst, recordValueVersion)
	dst = binary.BigEndian.AppendUint32(dst, uint32(r.state.StateEpoch))
	dst = binary.BigEndian.AppendUint64(dst, uint64(r.state.StartOffset))
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(r.state.Batches)))
	for _, b := range r.state.Batches {
		dst = binary.BigEndian.AppendUint64(dst, uint64(b.First))
		dst = binary.BigEndian.AppendUint64(dst, uint64(b.Last))
		dst = append(dst, byte(b.State))
		dst = binary.BigEndian.AppendUint16(dst, uint16(b.DeliveryCount))
	}
	return dst
}

// decodeRec decodes a stored record; value nil is a tombstone. ok is false
// for a key version this broker does not know, which replay skips.
func decodeRec(key, value []byte) (r rec, ok bool, err error) {
	if len(key) < 2 {
		return rec{}, false, fmt.Errorf("%w: key of %d bytes", errRecord, len(key))
	}
	if v := binary.BigEndian.Uint16(key); v != recordKeyVersion {
		return rec{}, false, nil
	}
	key = key[2:]
	if len(key) < 2 {
		return rec{}, false, fmt.Errorf("%w: short key", errRecord)
	}
	n := int(binary.BigEndian.Uint16(key))
	key = key[2:]
	if len(key) != n+16+4 {
		return rec{}, false, fmt.Errorf("%w: key length %d for a group id of %d bytes", errRecord, len(key), n)
	}
	r.key.Group = string(key[:n])
	copy(r.key.TopicID[:], key[n:n+16])
	r.key.Partition = int32(binary.BigEndian.Uint32(key[n+16:]))
	if r.key.Partition < 0 {
		return rec{}, false, fmt.Errorf("%w: partition %d", errRecord, r.key.Partition)
	}
	if value == nil {
		r.deleted = true
		return r, true, nil
	}
	const head = 2 + 4 + 8 + 4
	if len(value) < head {
		return rec{}, false, fmt.Errorf("%w: value of %d bytes for %s", errRecord, len(value), r.key)
	}
	if v := binary.BigEndian.Uint16(value); v != recordValueVersion {
		return rec{}, false, fmt.Errorf("%w: value version %d for %s", errRecord, v, r.key)
	}
	r.state.StateEpoch = int32(binary.BigEndian.Uint32(value[2:]))
	r.state.StartOffset = int64(binary.BigEndian.Uint64(value[6:]))
	count := binary.BigEndian.Uint32(value[14:])
	value = value[head:]
	if r.state.StartOffset < 0 || uint64(len(value)) != uint64(count)*batchSize {
		return rec{}, false, fmt.Errorf("%w: start offset %d, %d batches in %d bytes for %s", errRecord, r.state.StartOffset, count, len(value), r.key)
	}
	if count > 0 {
		r.state.Batches = make([]StateBatch, count)
	}
	prev := r.state.StartOffset - 1
	for i := range r.state.Batches {
		b := &r.state.Batches[i]
		b.First = int64(binary.BigEndian.Uint64(value))
		b.Last = int64(binary.BigEndian.Uint64(value[8:]))
		b.State = RecordState(value[16])
		b.DeliveryCount = int16(binary.BigEndian.Uint16(value[17:]))
		value = value[batchSize:]
		switch {
		case b.First <= prev || b.Last < b.First:
			return rec{}, false, fmt.Errorf("%w: batch %d-%d out of order for %s", errRecord, b.First, b.Last, r.key)
		case b.State != Available && b.State != Acknowledged && b.State != Archived:
			return rec{}, false, fmt.Errorf("%w: state %d for %s", errRecord, b.State, r.key)
		case b.DeliveryCount < 0:
			return rec{}, false, fmt.Errorf("%w: delivery count %d for %s", errRecord, b.DeliveryCount, r.key)
		}
		prev = b.Last
	}
	return r, true, nil
}
