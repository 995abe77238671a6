package compact

import (
	"fmt"
	"testing"
)

func TestOffsetMap(t *testing.T) {
	t.Parallel()
	m := NewOffsetMap(1 << 12) // 170 slots → 128 slots, 115 keys
	if m.Capacity() != 115 {
		t.Fatalf("capacity %d, want 115", m.Capacity())
	}
	for i := range m.Capacity() {
		if !m.Put(fmt.Appendf(nil, "k%d", i), int64(i)) {
			t.Fatalf("put %d refused below capacity", i)
		}
	}
	if m.Room() != 0 || m.Put([]byte("new"), 1000) {
		t.Fatalf("a new key was accepted at the load limit (room %d)", m.Room())
	}
	// An existing key can still move to a later offset.
	if !m.Put([]byte("k3"), 2000) {
		t.Fatal("update of an existing key refused at the load limit")
	}
	for i := range m.Capacity() {
		want := int64(i)
		if i == 3 {
			want = 2000
		}
		if got, ok := m.Get(fmt.Appendf(nil, "k%d", i)); !ok || got != want {
			t.Fatalf("k%d: got %d %t, want %d", i, got, ok, want)
		}
	}
	if _, ok := m.Get([]byte("new")); ok {
		t.Fatal("refused key is present")
	}
	// The empty key and a nil key are keys like any other (a nil key
	// never reaches the map: keyless records are not mapped).
	m.Reset()
	if m.Len() != 0 {
		t.Fatalf("len %d after reset", m.Len())
	}
	if !m.Put([]byte{}, 0) {
		t.Fatal("empty key refused")
	}
	if got, ok := m.Get(nil); !ok || got != 0 {
		t.Fatalf("empty key: got %d %t, want offset 0", got, ok)
	}
	if tiny := NewOffsetMap(1); tiny.Capacity() != 1 {
		t.Fatalf("tiny map capacity %d, want 1", tiny.Capacity())
	}
}

func BenchmarkOffsetMapPut(b *testing.B) {
	m := NewOffsetMap(128 << 20)
	keys := make([][]byte, 1<<16)
	for i := range keys {
		keys[i] = fmt.Appendf(nil, "key-%08d", i)
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		m.Put(keys[i&(len(keys)-1)], int64(i))
		i++
	}
}

// TestMappedOffsetMapReset: a map large enough to be mapped outside the
// heap keeps and finds keys, and after Reset (its pages given back) is
// empty and takes keys again; a heap map does the same.
func TestMappedOffsetMapReset(t *testing.T) {
	for _, size := range []int64{mappedMapMin / 2, 4 * mappedMapMin} {
		m := NewOffsetMap(size)
		if want := size >= mappedMapMin; m.mapped != want {
			t.Fatalf("%d bytes: mapped %v, want %v", size, m.mapped, want)
		}
		for round := range 3 {
			for i := range 1000 {
				if !m.Put(fmt.Appendf(nil, "k%d", i), int64(i+round)) {
					t.Fatalf("%d bytes, round %d: key %d refused", size, round, i)
				}
			}
			for i := range 1000 {
				if got, ok := m.Get(fmt.Appendf(nil, "k%d", i)); !ok || got != int64(i+round) {
					t.Fatalf("%d bytes, round %d: key %d at %d %v", size, round, i, got, ok)
				}
			}
			m.Reset()
			if m.Len() != 0 {
				t.Fatalf("%d bytes: %d keys after Reset", size, m.Len())
			}
			if _, ok := m.Get([]byte("k1")); ok {
				t.Fatalf("%d bytes: a key survived Reset", size)
			}
		}
	}
}
