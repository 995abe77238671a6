package compact

import (
	"crypto/md5"
	"encoding/binary"
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// SlotSize is the memory of one key in an OffsetMap: a 128-bit key hash and
// an offset, as Kafka's SkimpyOffsetMap (MD5 + offset = 24 bytes).
const SlotSize = 24

// LoadFactor is how full an OffsetMap may get before Put refuses new keys
// (Kafka's log.cleaner.io.buffer.load.factor default, 0.9).
const LoadFactor = 0.9

// slot is one entry: the key's MD5 as two words, and offset+1 so that the
// zero slot is empty. It holds no pointers, so the garbage collector never
// scans the map however large it is.
type slot struct {
	hi, lo uint64
	off    int64
}

// OffsetMap maps keys to the last offset seen for them, for one cleaning
// pass: the dedupe buffer of Kafka's cleaner. It stores only a 128-bit hash
// of each key, never the key, so its memory is fixed at SlotSize per slot
// whatever the keys' lengths. Two keys with the same MD5 would be taken for
// one and the older record dropped; with 128 bits that is below 10⁻²⁴ for
// 10⁷ keys, whereas 64 bits would give about 3·10⁻⁶ (COMPACTION-REFERENCE
// §4.7). Open addressing with linear probing; no deletes (a pass only
// adds).
//
// An OffsetMap is not safe for concurrent use.
type OffsetMap struct {
	// slots are in an anonymous mapping when mapped (NewOffsetMap), else
	// on the heap. A slot holds no pointers, so either is safe.
	slots  []slot
	mapped bool
	mask   uint64 // len(slots)-1; len is a power of two
	used   int
	limit  int // most keys before Put refuses new ones
}

// NewOffsetMap returns a map using at most memory bytes (at least one
// slot's worth; a power-of-two number of slots, rounded down).
//
// A map of mappedMapMin bytes or more lives in an anonymous memory
// mapping, outside the Go heap, and Reset gives its pages back to the
// kernel: the default dedupe buffer is 128 MB, and on the heap it was
// most of the broker's heap from the start, so the collector let garbage
// grow by as much again before collecting (the resident memory that grew
// case after case in kbench), and the map's pages, once a pass touched
// them, stayed resident for good. Mapped, the map costs resident memory
// only for the slots a pass touches, until the next Reset. Its mapping is
// unmapped when the map is garbage.
func NewOffsetMap(memory int64) *OffsetMap {
	n := uint64(1)
	for n*2*SlotSize <= uint64(max(memory, SlotSize)) {
		n *= 2
	}
	m := &OffsetMap{
		mask:  n - 1,
		limit: max(1, int(float64(n)*LoadFactor)),
	}
	if size := n * SlotSize; size >= mappedMapMin {
		mem, err := unix.Mmap(-1, 0, int(size), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
		if err == nil {
			m.slots = unsafe.Slice((*slot)(unsafe.Pointer(unsafe.SliceData(mem))), n)
			m.mapped = true
			runtime.AddCleanup(m, func(mem []byte) { unix.Munmap(mem) }, mem)
			return m
		}
		// No mapping (address space limits): the heap will do.
	}
	m.slots = make([]slot, n)
	return m
}

// mappedMapMin is the size from which an OffsetMap is mapped rather than
// on the Go heap.
const mappedMapMin = 1 << 20

// hash is the key's MD5, the hash Kafka's cleaner uses: well spread and
// wide enough that collisions do not happen in practice.
func hash(key []byte) (uint64, uint64) {
	sum := md5.Sum(key)
	return binary.LittleEndian.Uint64(sum[:8]), binary.LittleEndian.Uint64(sum[8:])
}

// find returns the slot of hash (hi, lo) or the empty slot where it would go.
func (m *OffsetMap) find(hi, lo uint64) *slot {
	for i := hi & m.mask; ; i = (i + 1) & m.mask {
		s := &m.slots[i]
		if s.off == 0 || (s.hi == hi && s.lo == lo) {
			return s
		}
	}
}

// Put records offset as the latest for key. It returns false, changing
// nothing, when key is new and the map is at its load limit: the pass then
// ends before this record (Kafka ends its round at the last mapped offset).
// Offsets must not be negative.
func (m *OffsetMap) Put(key []byte, offset int64) bool {
	hi, lo := hash(key)
	s := m.find(hi, lo)
	if s.off == 0 {
		if m.used >= m.limit {
			return false
		}
		m.used++
		s.hi, s.lo = hi, lo
	}
	s.off = offset + 1
	return true
}

// Get returns the latest offset recorded for key.
func (m *OffsetMap) Get(key []byte) (int64, bool) {
	hi, lo := hash(key)
	s := m.find(hi, lo)
	if s.off == 0 {
		return 0, false
	}
	return s.off - 1, true
}

// Len is the number of keys in the map.
func (m *OffsetMap) Len() int { return m.used }

// Room is how many more new keys fit.
func (m *OffsetMap) Room() int { return m.limit - m.used }

// Capacity is the most keys the map takes (its slots times LoadFactor).
func (m *OffsetMap) Capacity() int { return m.limit }

// Reset empties the map for the next pass, keeping its memory; a mapped
// map gives its pages back to the kernel (MADV_DONTNEED: they read as
// zero when touched again), so a map between passes is not resident.
func (m *OffsetMap) Reset() {
	m.used = 0
	if m.mapped {
		b := unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(m.slots))), len(m.slots)*SlotSize)
		if unix.Madvise(b, unix.MADV_DONTNEED) == nil {
			return
		}
	}
	clear(m.slots)
}
