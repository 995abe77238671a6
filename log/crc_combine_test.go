package log

import (
	"hash/crc32"
	"math/rand/v2"
	"testing"
)

func TestCRCCombine(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for _, n := range []int{0, 1, 2, 3, 7, 8, 21, 100, 4095, 4096, 65537, 1 << 20} {
		for range 4 {
			b := make([]byte, n)
			for i := range b {
				b[i] = byte(rng.Uint32())
			}
			cut := 0
			if n > 0 {
				cut = rng.IntN(n + 1)
			}
			want := crc32.Checksum(b, castagnoli)
			got := crcCombine(crc32.Checksum(b[:cut], castagnoli), crc32.Checksum(b[cut:], castagnoli), int64(n-cut))
			if got != want {
				t.Fatalf("len %d cut %d: combined %08x, want %08x", n, cut, got, want)
			}
			// Three times through one crcShift: a fresh operator, then
			// the kept one through the table it builds, then the table.
			var s crcShift
			for range 3 {
				if got := s.combine(crc32.Checksum(b[:cut], castagnoli), crc32.Checksum(b[cut:], castagnoli), int64(n-cut)); got != want {
					t.Fatalf("len %d cut %d: crcShift combined %08x, want %08x", n, cut, got, want)
				}
			}
		}
	}
}

// TestXPow8n holds xPow8n's table of hexadecimal digits to the CRC of
// zeros, which multiplies the register by x^8 a byte: with the CRC's
// inversions, a·x^(8·n) = ^Update(^a, n zero bytes).
func TestXPow8n(t *testing.T) {
	zeros := make([]byte, 1<<24+300)
	lens := []int{1 << 20, 1<<24 + 299, 999_983, 65_537, 0xfedcb}
	for n := range 4200 {
		lens = append(lens, n)
	}
	for _, n := range lens {
		want := ^crc32.Update(^uint32(1<<31), castagnoli, zeros[:n])
		if got := xPow8n(int64(n)); got != want {
			t.Fatalf("xPow8n(%d) = %08x, want %08x", n, got, want)
		}
	}
}

// TestCRCShiftTable: the table crcShift builds for a length multiplies
// every value as gfMul does, for lengths whose operators have few and many
// bits set, and after a change of length.
func TestCRCShiftTable(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	var s crcShift
	for _, n := range []int64{1, 4096, 4200, 4096, 1 << 20, 999_983} {
		op := xPow8n(n)
		for i := range 2000 {
			a, b := rng.Uint32(), rng.Uint32()
			if i < 32 {
				a = 1 << i // every basis word
			}
			if got, want := s.combine(a, b, n), gfMul(op, a)^b; got != want {
				t.Fatalf("len %d, crc %08x (combine %d): %08x, want %08x", n, a, i, got, want)
			}
		}
		if !s.tabled {
			t.Fatalf("len %d: no table after repeated combines", n)
		}
	}
}

func BenchmarkCRC(b *testing.B) {
	for _, n := range []int{1 << 10, 16 << 10, 1 << 20} {
		buf := make([]byte, n)
		b.Run("checksum/"+sizeLabel(n), func(b *testing.B) {
			b.SetBytes(int64(n))
			for b.Loop() {
				crc32.Checksum(buf, castagnoli)
			}
		})
		b.Run("combine/"+sizeLabel(n), func(b *testing.B) {
			b.SetBytes(int64(n))
			for b.Loop() {
				crcCombine(1, 2, int64(n))
			}
		})
		// The batches of one request, all of one length (AppendMany).
		b.Run("shift/"+sizeLabel(n), func(b *testing.B) {
			b.SetBytes(int64(n))
			var s crcShift
			c := uint32(1)
			for b.Loop() {
				c = s.combine(c, 2, int64(n))
			}
		})
	}
}

// BenchmarkCRCCombineMixed is a combine per batch of a request whose
// batches all differ in length (kgo's batches to several partitions), so
// that neither the kept operator nor the branch predictor can learn the
// operands: what AppendMany pays per batch of 4 KiB or more.
func BenchmarkCRCCombineMixed(b *testing.B) {
	rng := rand.New(rand.NewPCG(11, 12))
	lens := make([]int64, 1024)
	for i := range lens {
		lens[i] = minCombineTail + rng.Int64N(1<<20)
	}
	var s crcShift
	c := uint32(1)
	i := 0
	for b.Loop() {
		c = s.combine(c, 2, lens[i%len(lens)])
		i++
	}
}

func sizeLabel(n int) string {
	if n >= 1<<20 {
		return "1MiB"
	}
	if n >= 16<<10 {
		return "16KiB"
	}
	return "1KiB"
}
