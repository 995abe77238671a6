package log

import (
	"hash/crc32"
	"testing"
)

// FuzzCRCCombine: the CRC-32C of any input, cut anywhere, is the
// combination of the CRCs of its two parts.
func FuzzCRCCombine(f *testing.F) {
	f.Add([]byte("0123456789abcdefghijklmnopqrstuvwxyz"), uint16(21))
	f.Add([]byte{}, uint16(0))
	f.Fuzz(func(t *testing.T, b []byte, cut uint16) {
		c := min(int(cut), len(b))
		want := crc32.Checksum(b, castagnoli)
		if got := crcCombine(crc32.Checksum(b[:c], castagnoli), crc32.Checksum(b[c:], castagnoli), int64(len(b)-c)); got != want {
			t.Fatalf("len %d cut %d: combined %08x, want %08x", len(b), c, got, want)
		}
		var s crcShift // the operator, then its table
		for range 2 {
			if got := s.combine(crc32.Checksum(b[:c], castagnoli), crc32.Checksum(b[c:], castagnoli), int64(len(b)-c)); got != want {
				t.Fatalf("len %d cut %d: crcShift combined %08x, want %08x", len(b), c, got, want)
			}
		}
	})
}
