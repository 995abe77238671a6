package protocol

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"testing"
)

func TestReadSize(t *testing.T) {
	const limit = 1 << 20
	sized := func(n uint32) []byte { return binary.BigEndian.AppendUint32(nil, n) }
	tests := []struct {
		name    string
		in      []byte
		want    int32
		wantErr error
	}{
		{"zero", sized(0), 0, nil},
		{"small", sized(42), 42, nil},
		{"exactly the limit", sized(limit), limit, nil},
		{"one above the limit", sized(limit + 1), 0, ErrFrameTooLarge},
		{"max int32", sized(math.MaxInt32), 0, ErrFrameTooLarge},
		{"minus one", sized(0xffffffff), 0, ErrFrameTooLarge},
		{"min int32", sized(0x80000000), 0, ErrFrameTooLarge},
		{"nothing", nil, 0, io.EOF},
		{"short", []byte{0, 0}, 0, io.ErrUnexpectedEOF},
	}
	for _, tt := range tests {
		// A plain reader takes the general path, a bufio.Reader (what
		// connections use) the in-place one: both must agree.
		for _, buffered := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/buffered=%v", tt.name, buffered), func(t *testing.T) {
				var r io.Reader = bytes.NewReader(tt.in)
				if buffered {
					r = bufio.NewReader(r)
				}
				got, err := ReadSize(r, limit)
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("ReadSize: got error %v, want %v", err, tt.wantErr)
				}
				if err == nil && got != tt.want {
					t.Fatalf("ReadSize: got %d, want %d", got, tt.want)
				}
			})
		}
	}
}

// TestReadSizeConsumes: on a buffered reader the prefix is consumed and
// the body follows, with no allocation.
func TestReadSizeConsumes(t *testing.T) {
	in := append(binary.BigEndian.AppendUint32(nil, 3), "abc"...)
	r := bytes.NewReader(nil)
	br := bufio.NewReader(r)
	body := make([]byte, 3)
	allocs := testing.AllocsPerRun(100, func() {
		r.Reset(in)
		br.Reset(r)
		n, err := ReadSize(br, 1<<20)
		if err != nil || n != 3 {
			t.Fatalf("ReadSize: got %d, %v, want 3", n, err)
		}
		if _, err := io.ReadFull(br, body); err != nil || string(body) != "abc" {
			t.Fatalf("body: got %q, %v", body, err)
		}
	})
	if allocs != 0 {
		t.Fatalf("ReadSize on a bufio.Reader: got %v allocations, want 0", allocs)
	}
}

// claimReader delivers n bytes and then io.EOF, however much is asked.
type claimReader struct{ n int }

func (r *claimReader) Read(p []byte) (int, error) {
	if r.n == 0 {
		return 0, io.EOF
	}
	m := min(len(p), r.n)
	for i := range p[:m] {
		p[i] = byte(i)
	}
	r.n -= m
	return m, nil
}

// TestReadBodyGrowsAsBytesArrive: a client that declares a 50 MiB frame
// and sends 10 KiB must not make the broker allocate 50 MiB.
func TestReadBodyGrowsAsBytesArrive(t *testing.T) {
	const claimed, sent = 50 << 20, 10 << 10
	var buf []byte
	var err error
	alloc := allocBytes(func() { buf, err = ReadBody(&claimReader{n: sent}, claimed, nil) })
	if !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("ReadBody: got error %v, want io.ErrUnexpectedEOF", err)
	}
	if len(buf) != sent {
		t.Errorf("ReadBody returned %d bytes, want the %d that arrived", len(buf), sent)
	}
	if alloc >= 1<<20 {
		t.Errorf("ReadBody of a frame claiming %d bytes with %d sent allocated %d bytes, want < 1 MiB", claimed, sent, alloc)
	}
}

// chunkReader hands out its data at most step bytes per Read, as a socket
// does.
type chunkReader struct {
	data []byte
	step int
}

func (r *chunkReader) Read(p []byte) (int, error) {
	if len(r.data) == 0 {
		return 0, io.EOF
	}
	n := copy(p[:min(len(p), r.step)], r.data)
	r.data = r.data[n:]
	return n, nil
}

func TestReadBody(t *testing.T) {
	for _, size := range []int{0, 1, growStep - 1, growStep, growStep + 1, 3*growStep + 17, 5 << 20} {
		data := make([]byte, size)
		for i := range data {
			data[i] = byte(i * 7)
		}
		got, err := ReadBody(&chunkReader{data: data, step: 7919}, int32(size), nil)
		if err != nil {
			t.Fatalf("size %d: %v", size, err)
		}
		if !bytes.Equal(got, data) {
			t.Fatalf("size %d: body differs", size)
		}
		// Only the frame is consumed: what follows stays in the reader.
		r := io.MultiReader(bytes.NewReader(data), bytes.NewReader([]byte("next")))
		if _, err := ReadBody(r, int32(size), nil); err != nil {
			t.Fatal(err)
		}
		if rest, _ := io.ReadAll(r); string(rest) != "next" {
			t.Fatalf("size %d: %q left after the body, want %q", size, rest, "next")
		}
	}
}

// TestReadBodyGrowsToPowersOfTwo: a large body grows the buffer to a
// power of two, so that the buffer, reused, also takes the next frame a
// little larger than this one.
func TestReadBodyGrowsToPowersOfTwo(t *testing.T) {
	const size = 3<<20 + 12345
	data := make([]byte, size)
	buf, err := ReadBody(bytes.NewReader(data), size, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(buf) != size || cap(buf) != 4<<20 {
		t.Fatalf("len %d cap %d, want len %d cap %d", len(buf), cap(buf), size, 4<<20)
	}
	larger := append(data, make([]byte, 100<<10)...)
	allocs := testing.AllocsPerRun(10, func() {
		if buf, err = ReadBody(bytes.NewReader(larger), int32(len(larger)), buf[:0]); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 1 { // the bytes.Reader
		t.Errorf("reading a slightly larger frame into the grown buffer: %v allocations, want 1", allocs)
	}
}

// TestReadBodyReusesBuffer: a buffer large enough is reused, so a
// connection's steady state reads frames without allocating.
func TestReadBodyReusesBuffer(t *testing.T) {
	data := bytes.Repeat([]byte("x"), 200<<10)
	buf := make([]byte, 0, len(data))
	r := bytes.NewReader(data)
	allocs := testing.AllocsPerRun(100, func() {
		r.Reset(data)
		var err error
		if buf, err = ReadBody(r, int32(len(data)), buf[:0]); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Errorf("ReadBody into a large enough buffer: %v allocations, want 0", allocs)
	}
}

// TestReadBodyShort: a body cut short reports io.ErrUnexpectedEOF.
func TestReadBodyShort(t *testing.T) {
	for _, size := range []int32{10, growStep * 3} {
		_, err := ReadBody(bytes.NewReader(make([]byte, size-1)), size, nil)
		if !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Errorf("size %d with one byte missing: got %v, want io.ErrUnexpectedEOF", size, err)
		}
	}
}

// TestReadBodyGrowCallsGrow: ReadBodyGrow grows through the caller's
// function in ReadBody's steps, each asking for at most twice what
// arrived (or one step), never more than the frame, and the bytes read
// are the frame's.
func TestReadBodyGrowCallsGrow(t *testing.T) {
	const size = 5<<20 + 777
	data := make([]byte, size)
	for i := range data {
		data[i] = byte(i * 7)
	}
	var needs []int
	grow := func(buf []byte, need, sz int) []byte {
		if sz != size || need > size || need > max(growStep, 2*len(buf)) || need <= len(buf) {
			t.Errorf("grow(len %d, need %d, size %d): out of bounds", len(buf), need, sz)
		}
		needs = append(needs, need)
		nb := make([]byte, len(buf), need)
		copy(nb, buf)
		return nb
	}
	buf, err := ReadBodyGrow(bytes.NewReader(data), size, make([]byte, 0, 1<<20), grow)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(buf, data) {
		t.Fatal("the bytes read differ from the frame's")
	}
	if want := []int{2 << 20, 4 << 20, size}; !slices.Equal(needs, want) {
		t.Errorf("grow asked for %v, want %v", needs, want)
	}
}
