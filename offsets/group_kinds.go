package offsets

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kbin"
)

// groupKind is one kind of group whose records follow KIP-848's layout:
// consumer, share and streams groups. Their records share a group's record
// map in the store (rec.isCG), kept encoded by key and told apart by
// record type, since a group id names one kind of group at a time.
type groupKind struct {
	name        string // for errors: "consumer group"
	has         func(typ int16) bool
	memberKeyed func(typ int16) bool // keys that carry a member id
	decode      func(typ int16, value []byte) error
}

var (
	consumerKind = &groupKind{"consumer group", isConsumerType, cgMemberKeyed, decodeCGValue}
	shareKind    = &groupKind{"share group", isShareType, sgMemberKeyed, decodeSGValue}
	streamsKind  = &groupKind{"streams group", isStreamsType, stPerMember, decodeSTValue}
	groupKinds   = []*groupKind{consumerKind, shareKind, streamsKind}
)

// groupKindOf is the kind whose records have type typ, or nil.
func groupKindOf(typ int16) *groupKind {
	for _, k := range groupKinds {
		if k.has(typ) {
			return k
		}
	}
	return nil
}

// key encodes the key of a record of the kind: the record type as an
// int16, the group id and, for per-member records, the member id
// (parseKey reads it back).
func (k *groupKind) key(typ int16, group, member string) string {
	b := kbin.AppendInt16(nil, typ)
	b = kbin.AppendString(b, group)
	if k.memberKeyed(typ) {
		b = kbin.AppendString(b, member)
	}
	return string(b)
}

// parseKey decodes a record key of the kind: the record type as an int16,
// the group id and, for per-member records, the member id. ok is false
// for a record of another type; err is set for a key of this kind that
// does not decode.
func (k *groupKind) parseKey(key []byte) (typ int16, group, member string, ok bool, err error) {
	r := kbin.Reader{Src: key}
	typ = r.Int16()
	if !k.has(typ) {
		return typ, "", "", false, nil
	}
	group = r.String()
	if k.memberKeyed(typ) {
		member = r.String()
	}
	if err := r.Complete(); err != nil || len(r.Src) != 0 {
		return typ, "", "", false, fmt.Errorf("offsets: %s record key of type %d: %d bytes left, %v", k.name, typ, len(r.Src), err)
	}
	return typ, group, member, true, nil
}

// record decodes one record of the kind as the store keeps it: its value
// checked and kept encoded, or a tombstone.
func (k *groupKind) record(key, value []byte, version int16) (rec, bool, error) {
	_, group, _, ok, err := k.parseKey(key)
	if err != nil || !ok {
		return rec{}, false, err
	}
	r := rec{group: group, isCG: true, cgKey: string(key)}
	if value == nil {
		r.tombstone = true
		return r, true, nil
	}
	if err := k.decode(version, value); err != nil {
		return rec{}, false, fmt.Errorf("%s %s: %w", k.name, group, err)
	}
	r.cgValue = append([]byte(nil), value...)
	return r, true, nil
}
