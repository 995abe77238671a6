package coordlog

import (
	"encoding/binary"
	"hash/crc32"
	"testing"

	"github.com/kbroker/kbroker/partition"
)

// kv is a record of the fuzz test's trivial owner.
type kv struct{ k, v []byte }

// kvState keeps the last value per key; a key starting with 0xff does not
// decode.
type kvState struct{ m map[string][]byte }

func (s *kvState) AppendKey(dst []byte, r *kv) []byte { return append(dst, r.k...) }
func (s *kvState) AppendValue(dst []byte, r *kv) ([]byte, bool) {
	return append(dst, r.v...), r.v != nil
}
func (s *kvState) Decode(key, value []byte) (kv, bool, error) {
	if len(key) > 0 && key[0] == 0xff {
		return kv{}, false, ErrCorrupt
	}
	return kv{append([]byte(nil), key...), append([]byte(nil), value...)}, true, nil
}
func (s *kvState) Apply(r *kv) { s.m[string(r.k)] = r.v }
func (s *kvState) Live(yield func(*kv)) {
	for k, v := range s.m {
		yield(&kv{[]byte(k), v})
	}
}

// FuzzDecodeSnapshot feeds arbitrary bytes to the snapshot decoder: it
// must refuse or accept them without panicking, and whatever it accepts
// must encode back to a snapshot that decodes to the same state.
func FuzzDecodeSnapshot(f *testing.F) {
	const magic = "KBFUZZ01"
	good := func(parts uint32, recs ...kv) []byte {
		b := []byte(magic)
		b = binary.BigEndian.AppendUint32(b, parts)
		for range parts {
			b = binary.BigEndian.AppendUint64(b, 7)
		}
		for _, r := range recs {
			b = binary.BigEndian.AppendUint32(b, uint32(len(r.k)))
			b = append(b, r.k...)
			b = binary.BigEndian.AppendUint32(b, uint32(len(r.v)))
			b = append(b, r.v...)
		}
		return binary.BigEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
	}
	f.Add(good(2))
	f.Add(good(2, kv{[]byte("a"), []byte("1")}, kv{[]byte("b"), []byte("22")}))
	f.Add(good(1, kv{[]byte("a"), []byte("1")}))
	f.Add([]byte(magic))
	f.Fuzz(func(t *testing.T, data []byte) {
		newLog := func() (*Log[kv], *kvState) {
			st := &kvState{m: map[string][]byte{}}
			l := &Log[kv]{cfg: Config{Name: "fuzz", Magic: magic}, st: st, parts: make([]*partition.Partition, 2)}
			l.mu.cut = make([]int64, 2)
			return l, st
		}
		l, st := newLog()
		if err := l.decodeSnapshot(data); err != nil {
			return
		}
		again, st2 := newLog()
		if err := again.decodeSnapshot(l.encodeLocked(l.mu.cut)); err != nil {
			t.Fatalf("re-encoded snapshot refused: %v", err)
		}
		if len(st.m) != len(st2.m) {
			t.Fatalf("state of %d keys became %d", len(st.m), len(st2.m))
		}
		for k, v := range st.m {
			if string(st2.m[k]) != string(v) {
				t.Fatalf("key %q: %q became %q", k, v, st2.m[k])
			}
		}
	})
}
