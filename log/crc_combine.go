package log

import "math/bits"

// CRC-32C of a concatenation from the CRCs of its parts. A produced record
// batch carries the CRC-32C of its bytes from the attributes on, which the
// broker has just checked; the entry checksum covers the whole batch. With
// crcCombine the entry checksum costs the CRC of the 21 bytes before the
// attributes and a few hundred nanoseconds of arithmetic, instead of a
// second pass over every byte produced.
//
// The arithmetic is in GF(2)[x] modulo the Castagnoli polynomial, with bit
// 31 of a word the coefficient of x^0 (the reflected form hash/crc32
// uses). For a CRC with the usual pre- and post-inversion,
//
//	crc(A‖B) = crc(A)·x^(8·len(B)) + crc(B)   (mod P)
//
// the inversions of the two parts cancelling out.

// castagnoliReflected is the Castagnoli polynomial, reflected
// (crc32.Castagnoli).
const castagnoliReflected = 0x82f63b78

// x8nPowers[k][d] is x^(8·d·16^k) mod P, the shift of d·16^k bytes:
// xPow8n multiplies one factor per hexadecimal digit of a length.
var x8nPowers = func() (t [16][16]uint32) {
	step := uint32(1) << 23 // x^8
	for k := range t {
		t[k][0] = 1 << 31 // x^0
		for d := 1; d < 16; d++ {
			t[k][d] = gfMul(t[k][d-1], step)
		}
		step = gfMul(t[k][15], step) // x^(8·16^(k+1))
	}
	return t
}()

// gfMul is a·b mod P. It has no branch that depends on the operands: the
// batches of one request differ in length, and gfMul's former loop, a
// branch per bit of each operand, mispredicted about half of them (1.7 µs
// a combine in BenchmarkCRCCombineMixed, against 65 ns when one length
// repeated).
func gfMul(a, b uint32) uint32 {
	var p uint32
	for range 32 {
		p ^= b & -(a >> 31) // a's top bit is the coefficient of x^0
		a <<= 1
		b = b>>1 ^ castagnoliReflected&-(b&1) // b·x mod P
	}
	return p
}

// xPow8n is x^(8·n) mod P: the shift of n bytes. It takes one
// multiplication per hexadecimal digit of n (five for a batch below
// 1 MiB).
func xPow8n(n int64) uint32 {
	p := uint32(1) << 31 // x^0
	for k, u := 0, uint64(n); u != 0; k, u = k+1, u>>4 {
		p = gfMul(x8nPowers[k][u&15], p)
	}
	return p
}

// crcCombine is the CRC-32C of A‖B from crcA, crcB and len(B).
func crcCombine(crcA, crcB uint32, lenB int64) uint32 {
	return gfMul(xPow8n(lenB), crcA) ^ crcB
}

// crcShift is crcCombine that remembers the operator x^(8·len(B)) of the
// last length it combined for. The zero value is ready to use.
//
// From the second combine with one length on, it multiplies by the
// operator through a table (tabled): the product is linear in crcA, so it
// is the XOR of four lookups, one per byte of crcA, instead of gfMul's
// loop over 32 bits (about 35 ns; 230 ns with the branches it once had,
// the largest single cost of a request of 250 small batches, all of one
// length, in BenchmarkProduceMultiPartition/partitions=250). The first
// combine of a length does not build the table: one large batch alone
// would pay for the build (about a microsecond) and use it once.
type crcShift struct {
	n      int64
	op     uint32 // 0 (never a power of x) until the first combine
	tabled bool   // tab multiplies by op
	tab    [4][256]uint32
}

func (s *crcShift) combine(crcA, crcB uint32, lenB int64) uint32 {
	switch {
	case s.op == 0 || s.n != lenB:
		s.n, s.op, s.tabled = lenB, xPow8n(lenB), false
		return gfMul(s.op, crcA) ^ crcB
	case !s.tabled:
		s.build()
	}
	t := &s.tab
	return t[0][byte(crcA)] ^ t[1][byte(crcA>>8)] ^ t[2][byte(crcA>>16)] ^ t[3][byte(crcA>>24)] ^ crcB
}

// build fills tab for op: tab[j][v] is op·v', v' the word whose byte j is
// v and whose other bytes are zero.
func (s *crcShift) build() {
	// basis[k] is op times the word with only bit k set, the monomial
	// x^(31-k): op, op·x, op·x², … from bit 31 down.
	var basis [32]uint32
	b := s.op
	for k := 31; k >= 0; k-- {
		basis[k] = b
		if b&1 != 0 { // b·x mod P
			b = b>>1 ^ castagnoliReflected
		} else {
			b >>= 1
		}
	}
	for j := range s.tab {
		t := &s.tab[j]
		t[0] = 0
		for v := 1; v < 256; v++ {
			// v with its lowest bit cleared, plus that bit's product.
			t[v] = t[v&(v-1)] ^ basis[8*j+bits.TrailingZeros8(uint8(v))]
		}
	}
	s.tabled = true
}
