package log

import (
	"context"
	"errors"
	"os"
	"testing"
)

// TestMappedFileView: View shows exactly the readable bytes, holds the file
// while fn runs (Destroy waits for it), reports a removed file as not held
// without running fn, and turns a fault on the mapping into ErrFault.
func TestMappedFileView(t *testing.T) {
	dir := t.TempDir()
	m, err := CreateMappedFile(dir, 0, 4*pageSize)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.AppendBytes([]byte("hello")); err != nil {
		t.Fatal(err)
	}
	var seen string
	held, err := m.View(func(b []byte) { seen = string(b) })
	if !held || err != nil || seen != "hello" {
		t.Fatalf("View = %v, %v, saw %q; want held, no error, %q", held, err, seen, "hello")
	}

	// While fn runs the file is held: a Destroy that may not wait fails.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var insideErr error
	held, err = m.View(func([]byte) { insideErr = m.Destroy(ctx) })
	if !held || err != nil {
		t.Fatalf("View = %v, %v; want held", held, err)
	}
	if !errors.Is(insideErr, context.Canceled) {
		t.Fatalf("Destroy while View holds the file: %v, want it to wait (context.Canceled)", insideErr)
	}
	if err := m.Destroy(context.Background()); err != nil {
		t.Fatalf("Destroy after View: %v", err)
	}
	ran := false
	held, err = m.View(func([]byte) { ran = true })
	if held || err != nil || ran {
		t.Fatalf("View of a destroyed file = %v, %v (fn ran: %v); want not held, no error", held, err, ran)
	}
}

// TestMappedFileViewFault: touching a page the file no longer backs
// (SIGBUS; here the file is shrunk under the mapping, in production a media
// error) is ErrFault from View, not a crash, and the file stays usable for
// its owner to close.
func TestMappedFileViewFault(t *testing.T) {
	dir := t.TempDir()
	m, err := CreateMappedFile(dir, 0, 4*pageSize)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if _, err := m.AppendBytes(make([]byte, 3*pageSize)); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(m.Path(), 0); err != nil {
		t.Fatal(err)
	}
	var sum byte
	held, err := m.View(func(b []byte) {
		for _, c := range b {
			sum += c
		}
	})
	if !held || !errors.Is(err, ErrFault) {
		t.Fatalf("View of a truncated file = %v, %v; want held, ErrFault", held, err)
	}
}

// TestMappedFileViewPanics: a panic in fn that is not a memory fault is a
// bug and goes on, and the file is released all the same.
func TestMappedFileViewPanics(t *testing.T) {
	m, err := CreateMappedFile(t.TempDir(), 0, pageSize)
	if err != nil {
		t.Fatal(err)
	}
	func() {
		defer func() {
			if r := recover(); r != "boom" {
				t.Fatalf("recovered %v, want the panic of fn", r)
			}
		}()
		_, _ = m.View(func([]byte) { panic("boom") })
	}()
	if err := m.Destroy(context.Background()); err != nil {
		t.Fatalf("Destroy after a panicking View (the file must be released): %v", err)
	}
}
