package batch

import (
	"bytes"
	"compress/gzip"
	"errors"
	"testing"

	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// holdBigSlots takes every slot of bigDecompressions until the test ends.
func holdBigSlots(t *testing.T) {
	for range cap(bigDecompressions) {
		bigDecompressions <- struct{}{}
	}
	t.Cleanup(func() {
		for range cap(bigDecompressions) {
			<-bigDecompressions
		}
	})
}

// lz4Sized is raw as an lz4 frame that declares its content size.
func lz4Sized(t *testing.T, raw []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	w := lz4.NewWriter(&buf)
	if err := w.Apply(lz4.SizeOption(uint64(len(raw)))); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(raw); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func gzipped(t *testing.T, raws ...[]byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	for _, raw := range raws { // one member each
		w := gzip.NewWriter(&buf)
		w.Write(raw)
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
	}
	return buf.Bytes()
}

// TestDecompressDeclaredSize: a gzip, lz4 or zstd stream that declares
// more output than the bound is refused before anything is decoded or
// allocated, and without the slot of large decompressions (the stop
// signal is closed: a decompression that went for the slot would stop);
// one that declares less still decodes, a gzip stream of several members
// (whose trailer tells only the last one's size) included.
func TestDecompressDeclaredSize(t *testing.T) {
	t.Parallel()
	stopped := make(chan struct{})
	close(stopped)
	big := make([]byte, 8<<20)
	enc, _ := zstd.NewWriter(nil)
	defer enc.Close()
	for _, tc := range []struct {
		name  string
		codec Codec
		in    []byte
	}{
		{"gzip", CodecGzip, gzipped(t, big)},
		{"lz4", CodecLZ4, lz4Sized(t, big)},
		{"zstd", CodecZstd, enc.EncodeAll(big, nil)},
	} {
		d := getDecompressor()
		// The pool may hand over a buffer another parallel test grew:
		// what matters is that this refusal grows none.
		before := cap(d.buf)
		_, err := d.decompress(tc.codec, tc.in, 4<<20, stopped)
		if !errors.Is(err, errTooLarge) || d.spent != 0 || cap(d.buf) > max(before, decompressFree) {
			t.Fatalf("%s: %v after %d bytes of output, a buffer of %d (%d before); want errTooLarge before any", tc.name, err, d.spent, cap(d.buf), before)
		}
		putDecompressor(d)
	}
	// Within decompressFree, declared or not, no slot is needed, and the
	// stop signal does not apply.
	small := bytes.Repeat([]byte("small "), 100<<10)
	multi := gzipped(t, small, []byte("tail"))
	for _, tc := range []struct {
		name  string
		codec Codec
		in    []byte
		want  []byte
	}{
		{"gzip members", CodecGzip, multi, append(bytes.Clone(small), "tail"...)},
		{"lz4", CodecLZ4, lz4Sized(t, small), small},
		{"zstd", CodecZstd, enc.EncodeAll(small, nil), small},
	} {
		d := getDecompressor()
		out, err := d.decompress(tc.codec, tc.in, 4<<20, stopped)
		if err != nil || !bytes.Equal(out, tc.want) {
			t.Fatalf("%s: %d bytes, %v; want %d", tc.name, len(out), err, len(tc.want))
		}
		// The last gzip member declares 4 bytes: the first is beyond a
		// bound of 100 KiB all the same.
		if tc.name == "gzip members" {
			if _, err := d.decompress(tc.codec, tc.in, 100<<10, stopped); !errors.Is(err, errTooLarge) {
				t.Fatalf("gzip members past the bound: %v, want errTooLarge", err)
			}
		}
		putDecompressor(d)
	}
}

// TestDecompressStop: a decompression that needs the slot of large
// decompressions gives up when its stop signal closes, whether it waits
// for the slot or finds the signal closed; Validate answers it with the
// retriable NOT_LEADER_OR_FOLLOWER, and a small batch still validates.
// Not parallel: it holds every slot.
func TestDecompressStop(t *testing.T) {
	holdBigSlots(t)
	stop := make(chan struct{})
	in := gzipped(t, make([]byte, 3<<20))
	done := make(chan error, 1)
	go func() {
		d := getDecompressor()
		defer putDecompressor(d)
		_, err := d.decompress(CodecGzip, in, 64<<20, stop)
		done <- err
	}()
	close(stop) // the decompression waits for a slot, or is about to
	if err := <-done; !errors.Is(err, errStopped) {
		t.Fatalf("waiting for a slot: %v, want errStopped", err)
	}

	records := []kmsg.Record{{Key: []byte("k"), Value: make([]byte, 3<<20)}}
	b := buildBatch(t, spec{codec: CodecGzip, records: records})
	_, err := Validate(b, ValidateOptions{FullValidation: true, Stop: stop})
	wantBatchErr(t, err, kerr.NotLeaderForPartition)
	small := buildBatch(t, spec{codec: CodecGzip, records: testRecords(10, 100)})
	if _, err := Validate(small, ValidateOptions{FullValidation: true, Stop: stop}); err != nil {
		t.Fatalf("a small batch after the stop: %v", err)
	}
}

// TestZstdDeclared: the content sizes of every frame are summed from
// their headers, skippable frames and checksums included, so that a bomb
// of many small frames is refused before it is decoded; a frame without
// a declared size, or bytes that are not frames, give no sum.
func TestZstdDeclared(t *testing.T) {
	t.Parallel()
	enc, _ := zstd.NewWriter(nil, zstd.WithEncoderCRC(true))
	defer enc.Close()
	frame := enc.EncodeAll(make([]byte, 1<<20), nil)
	text := enc.EncodeAll(bytes.Repeat([]byte("some text, "), 1000), nil)
	skippable := append([]byte{0x50, 0x2a, 0x4d, 0x18, 3, 0, 0, 0}, 'a', 'b', 'c')
	var bomb []byte
	for range 80 {
		bomb = append(bomb, frame...)
	}
	for _, tc := range []struct {
		name string
		in   []byte
		want int64
		ok   bool
	}{
		{"one frame", frame, 1 << 20, true},
		{"frames", append(append(bytes.Clone(text), skippable...), frame...), 11000 + 1<<20, true},
		{"bomb", bomb, 80 << 20, true},
		{"cut", frame[:len(frame)-1], 0, false},
		{"garbage", []byte("not zstd at all"), 0, false},
	} {
		got, ok := zstdDeclared(tc.in)
		if got != tc.want || ok != tc.ok {
			t.Fatalf("%s: %d, %v; want %d, %v", tc.name, got, ok, tc.want, tc.ok)
		}
	}
	d := getDecompressor()
	defer putDecompressor(d)
	stopped := make(chan struct{})
	close(stopped) // a decompression that went for the slot would stop
	if _, err := d.decompress(CodecZstd, bomb, 64<<20, stopped); !errors.Is(err, errTooLarge) || d.spent != 0 {
		t.Fatalf("a bomb of 80 frames: %v after %d bytes, want errTooLarge before any", err, d.spent)
	}
	out, err := d.decompress(CodecZstd, append(bytes.Clone(text), frame...), 4<<20, nil)
	if err != nil || len(out) != 11000+1<<20 {
		t.Fatalf("two frames: %d bytes, %v", len(out), err)
	}
}
