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
			// Twice through one crcShift: a fresh operator, then the kept one.
			var s crcShift
			for range 2 {
				if got := s.combine(crc32.Checksum(b[:cut], castagnoli), crc32.Checksum(b[cut:], castagnoli), int64(n-cut)); got != want {
					t.Fatalf("len %d cut %d: crcShift combined %08x, want %08x", n, cut, got, want)
				}
			}
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
