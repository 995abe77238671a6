package log

import (
	"bytes"
	"errors"
	"testing"

	"golang.org/x/sys/unix"
)

// TestUnmap: unmapping pages of a file keeps its bytes (they stay in
// the page cache and are mapped again when read), parts of pages and empty
// spans are no-ops, and a span outside the file is an error.
// SyscallBytes hands out only readable bytes.
func TestUnmap(t *testing.T) {
	m, err := CreateMappedFile(t.TempDir(), 0, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	want := bytes.Repeat([]byte("0123456789abcdef"), 40000/16) // 40,000 bytes, ~10 pages
	if _, err := m.AppendBytes(want); err != nil {
		t.Fatal(err)
	}
	page := int64(unix.Getpagesize())
	for _, sp := range [][2]int64{{0, 40000}, {1, page - 2}, {100, 3 * page}, {0, 0}, {40000, 0}} {
		if err := m.Unmap(sp[0], sp[1]); err != nil {
			t.Fatalf("Unmap(%d, %d): %v", sp[0], sp[1], err)
		}
		got := make([]byte, len(want))
		if err := m.CopyTo(got, 0); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("bytes changed after Unmap(%d, %d)", sp[0], sp[1])
		}
	}
	for _, sp := range [][2]int64{{-1, 10}, {0, -1}, {1 << 20, 1}, {1, 1 << 20}} {
		if err := m.Unmap(sp[0], sp[1]); !errors.Is(err, ErrOutOfRange) {
			t.Errorf("Unmap(%d, %d) = %v, want ErrOutOfRange", sp[0], sp[1], err)
		}
	}
	if b, err := m.SyscallBytes(100, 200); err != nil || !bytes.Equal(b, want[100:300]) {
		t.Errorf("SyscallBytes(100, 200): %v, equal %v", err, bytes.Equal(b, want[100:300]))
	}
	if _, err := m.SyscallBytes(39990, 20); !errors.Is(err, ErrOutOfRange) {
		t.Errorf("SyscallBytes past the read position: %v, want ErrOutOfRange", err)
	}
}

// TestUnmapLocked: a file warm-up mlocked is left mapped, without an error
// (madvise refuses locked pages with EINVAL, which the fetch path would
// log for every response).
func TestUnmapLocked(t *testing.T) {
	m, err := CreateMappedFile(t.TempDir(), 0, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if _, err := m.AppendBytes(bytes.Repeat([]byte{7}, 3*unix.Getpagesize())); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mlock(m.data[:3*unix.Getpagesize()]); err != nil {
		t.Skipf("mlock not permitted here: %v", err)
	}
	defer unix.Munlock(m.data[:3*unix.Getpagesize()])
	m.locked.Store(true)
	if err := m.Unmap(0, int64(3*unix.Getpagesize())); err != nil {
		t.Fatalf("Unmap of a locked file: %v", err)
	}
}
