package batch

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"testing"
	"time"

	"github.com/klauspost/compress/snappy"
	"github.com/klauspost/compress/snappy/xerial"
	"github.com/klauspost/compress/zstd"
)

func TestDecompressFormats(t *testing.T) {
	t.Parallel()
	raw := bytes.Repeat([]byte("kafka record bytes "), 5000) // ~95 KB: several xerial blocks
	half := len(raw) / 2

	gz := func(p []byte) []byte {
		var buf bytes.Buffer
		w := gzip.NewWriter(&buf)
		w.Write(p)
		w.Close()
		return buf.Bytes()
	}
	enc, _ := zstd.NewWriter(nil)
	defer enc.Close()

	xerialV0 := xerial.Encode(nil, raw)
	binary.BigEndian.PutUint32(xerialV0[8:], 0)

	// A literal 'a', a copy of 4 at offset 1, then a copy of 4 at offset 0,
	// which s2 reads as "repeat the last offset" and snappy refuses.
	s2Only := []byte{9, 0x00, 'a', 0x01, 0x01, 0x01, 0x00}
	if _, err := snappy.Decode(nil, s2Only); err != nil {
		t.Fatalf("the lenient decoder should accept the s2 block: %v", err)
	}

	tests := []struct {
		name  string
		codec Codec
		in    []byte
		ok    bool
	}{
		{"gzip", CodecGzip, gz(raw), true},
		{"gzip two members", CodecGzip, append(gz(raw[:half]), gz(raw[half:])...), true},
		{"gzip truncated", CodecGzip, gz(raw)[:100], false},
		{"zstd two frames", CodecZstd, enc.EncodeAll(raw[half:], enc.EncodeAll(raw[:half], nil)), true},
		{"zstd garbage", CodecZstd, []byte{0x28, 0xb5, 0x2f, 0xfd, 1, 2, 3}, false},
		{"snappy raw", CodecSnappy, snappy.Encode(nil, raw), true},
		{"snappy xerial", CodecSnappy, xerial.Encode(nil, raw), true},
		{"snappy xerial empty", CodecSnappy, xerial.Encode(nil, nil), true},
		{"snappy xerial version 0", CodecSnappy, xerialV0, false},
		{"snappy xerial truncated block", CodecSnappy, xerial.Encode(nil, raw)[:200], false},
		{"snappy xerial zero block", CodecSnappy, append(xerial.Encode(nil, nil), 0, 0, 0, 0), false},
		// An s2 "repeat offset" copy (offset 0) is not snappy: Java refuses it.
		{"snappy s2 extension", CodecSnappy, s2Only, false},
		{"lz4 garbage", CodecLZ4, []byte{0x04, 0x22, 0x4d, 0x18, 0xff}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			d := getDecompressor()
			defer putDecompressor(d)
			out, err := d.decompress(tc.codec, tc.in, 1<<20, nil)
			if tc.ok {
				if err != nil {
					t.Fatalf("got error %v", err)
				}
				want := raw
				if tc.name == "snappy xerial empty" {
					want = nil
				}
				if !bytes.Equal(out, want) {
					t.Fatalf("got %d bytes, want %d", len(out), len(want))
				}
				return
			}
			if err == nil {
				t.Fatal("got no error")
			}
		})
	}
}

func TestDecompressBound(t *testing.T) {
	t.Parallel()
	raw := make([]byte, 3<<20)
	enc, _ := zstd.NewWriter(nil)
	defer enc.Close()
	for _, tc := range []struct {
		name  string
		codec Codec
		in    []byte
	}{
		{"zstd", CodecZstd, enc.EncodeAll(raw, nil)},
		{"snappy xerial", CodecSnappy, xerial.Encode(nil, raw)},
		{"snappy raw", CodecSnappy, snappy.Encode(nil, raw)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			d := getDecompressor()
			defer putDecompressor(d)
			if _, err := d.decompress(tc.codec, tc.in, 1<<20, nil); !errors.Is(err, errTooLarge) {
				t.Fatalf("got %v, want errTooLarge", err)
			}
			// Exactly at the bound is allowed.
			out, err := d.decompress(tc.codec, tc.in, len(raw), nil)
			if err != nil || len(out) != len(raw) {
				t.Fatalf("at the bound: %d bytes, %v", len(out), err)
			}
		})
	}
}

// TestDecompressBigSlots: output within decompressFree needs no slot of
// bigDecompressions; a decompression that outgrows it waits for one, so
// however many connections send decompression bombs, at most
// cap(bigDecompressions) large buffers exist at once. Not parallel: it
// holds every slot.
func TestDecompressBigSlots(t *testing.T) {
	for range cap(bigDecompressions) {
		bigDecompressions <- struct{}{}
	}
	held := true
	release := func() {
		if held {
			held = false
			for range cap(bigDecompressions) {
				<-bigDecompressions
			}
		}
	}
	defer release()

	codecs := []Codec{CodecGzip, CodecSnappy, CodecLZ4, CodecZstd}
	small := bytes.Repeat([]byte("small batch "), decompressFree/2/12)
	for _, c := range codecs {
		d := getDecompressor()
		out, err := d.decompress(c, compressWith(t, c, false, small), 64<<20, nil)
		if err != nil || !bytes.Equal(out, small) {
			t.Fatalf("%v within decompressFree with every slot taken: %d bytes, %v", c, len(out), err)
		}
		putDecompressor(d)
	}

	// 3 MiB of zeros in a few KiB each, within the bound of 4 MiB (one
	// that declares more than the bound is refused before it needs a
	// slot: TestDecompressDeclaredSize).
	bombs := map[Codec][]byte{}
	for _, c := range codecs {
		bombs[c] = compressWith(t, c, false, make([]byte, 3<<20))
	}
	done := make(chan error, len(bombs))
	for c, b := range bombs {
		go func() {
			d := getDecompressor()
			_, err := d.decompress(c, b, 4<<20, nil)
			putDecompressor(d)
			if err == nil {
				err = errTooLarge // as expected: decoded, once it had a slot
			}
			done <- err
		}()
	}
	select {
	case err := <-done:
		t.Fatalf("a decompression past decompressFree ran while every slot was taken (%v)", err)
	case <-time.After(100 * time.Millisecond):
	}
	release()
	for range bombs {
		if err := <-done; !errors.Is(err, errTooLarge) {
			t.Fatalf("bomb: got %v, want errTooLarge", err)
		}
	}
	if n := len(bigDecompressions); n != 0 {
		t.Fatalf("%d slots still taken after every decompressor was put back", n)
	}
}
