package testenv

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// recorder is a testing.TB that records failures instead of failing; its
// Fatalf ends the calling goroutine, as the real one does.
type recorder struct {
	testing.TB
	failed bool
	msg    string
}

func (r *recorder) Helper() {}
func (r *recorder) Errorf(format string, args ...any) {
	r.failed, r.msg = true, fmt.Sprintf(format, args...)
}
func (r *recorder) Fatalf(format string, args ...any) {
	r.Errorf(format, args...)
	panic(r)
}

// run calls f with a recorder and reports whether it failed.
func run(f func(t testing.TB)) (failed bool, msg string) {
	r := &recorder{}
	func() {
		defer func() {
			if v := recover(); v != nil && v != r {
				panic(v)
			}
		}()
		f(r)
	}()
	return r.failed, r.msg
}

func TestSettings(t *testing.T) {
	const name = "KBROKER_TESTENV_SELFTEST"
	for _, c := range []struct {
		value string
		f     func(t testing.TB) any
		want  any
		fail  bool
	}{
		{"", func(t testing.TB) any { return Count(t, name, 3) }, 3, false},
		{"7", func(t testing.TB) any { return Count(t, name, 3) }, 7, false},
		{"0", func(t testing.TB) any { return Count(t, name, 3) }, nil, true},
		{"-2", func(t testing.TB) any { return Count(t, name, 3) }, nil, true},
		{"many", func(t testing.TB) any { return Count(t, name, 3) }, nil, true},
		{"", func(t testing.TB) any { return Seed(t, name, 1) }, uint64(1), false},
		{"42", func(t testing.TB) any { return Seed(t, name, 1) }, uint64(42), false},
		{"x", func(t testing.TB) any { return Seed(t, name, 1) }, nil, true},
		{"", func(t testing.TB) any { return Duration(t, name, time.Second) }, time.Second, false},
		{"2m", func(t testing.TB) any { return Duration(t, name, time.Second) }, 2 * time.Minute, false},
		{"120", func(t testing.TB) any { return Duration(t, name, time.Second) }, nil, true},
		{"-1s", func(t testing.TB) any { return Duration(t, name, time.Second) }, nil, true},
		{"", func(t testing.TB) any { return Flag(t, name) }, false, false},
		{"1", func(t testing.TB) any { return Flag(t, name) }, true, false},
		{"false", func(t testing.TB) any { return Flag(t, name) }, false, false},
		{"yes", func(t testing.TB) any { return Flag(t, name) }, nil, true},
		{"", func(t testing.TB) any { return Addr(t, name) }, "", false},
		{"127.0.0.1:9092", func(t testing.TB) any { return Addr(t, name) }, "127.0.0.1:9092", false},
		{" localhost:41507\n", func(t testing.TB) any { return Addr(t, name) }, "localhost:41507", false},
		{"[::1]:9092", func(t testing.TB) any { return Addr(t, name) }, "[::1]:9092", false},
		{"127.0.0.1", func(t testing.TB) any { return Addr(t, name) }, nil, true},
		{":9092", func(t testing.TB) any { return Addr(t, name) }, nil, true},
		{"127.0.0.1:0", func(t testing.TB) any { return Addr(t, name) }, nil, true},
		{"127.0.0.1:kafka", func(t testing.TB) any { return Addr(t, name) }, nil, true},
		{"a:1,b:2", func(t testing.TB) any { return Addr(t, name) }, nil, true},
	} {
		t.Setenv(name, c.value)
		var got any
		failed, msg := run(func(tb testing.TB) { got = c.f(tb) })
		if failed != c.fail {
			t.Errorf("%s=%q: failed = %v (%s), want %v", name, c.value, failed, msg, c.fail)
			continue
		}
		if !c.fail && got != c.want {
			t.Errorf("%s=%q: got %v, want %v", name, c.value, got, c.want)
		}
	}
}

func TestRenamedSettingFails(t *testing.T) {
	t.Setenv("KBROKER_CRASH_KILLS", "5")
	failed, msg := run(func(tb testing.TB) { Count(tb, "KBROKER_STORE_KILLS", 20) })
	if !failed {
		t.Fatal("a setting under its former name was ignored")
	}
	t.Log(msg)
}

func TestWantCodeAndErr(t *testing.T) {
	wrapped := fmt.Errorf("append t-0: %w", kerr.CorruptMessage)
	for _, c := range []struct {
		name string
		f    func(t testing.TB)
		fail bool
	}{
		{"code equal", func(tb testing.TB) { WantCode(tb, "x", kerr.CorruptMessage.Code, kerr.CorruptMessage) }, false},
		{"code zero", func(tb testing.TB) { WantCode(tb, "x", 0, nil) }, false},
		{"code differs", func(tb testing.TB) { WantCode(tb, "x", kerr.NotCoordinator.Code, kerr.CorruptMessage) }, true},
		{"code not zero", func(tb testing.TB) { WantCode(tb, "x", kerr.NotCoordinator.Code, nil) }, true},
		{"err wraps", func(tb testing.TB) { WantErr(tb, "x", wrapped, kerr.CorruptMessage) }, false},
		{"err nil", func(tb testing.TB) { WantErr(tb, "x", nil, nil) }, false},
		{"err differs", func(tb testing.TB) { WantErr(tb, "x", wrapped, kerr.NotCoordinator) }, true},
		{"err missing", func(tb testing.TB) { WantErr(tb, "x", nil, kerr.CorruptMessage) }, true},
		{"err unexpected", func(tb testing.TB) { WantErr(tb, "x", wrapped, nil) }, true},
	} {
		if failed, msg := run(c.f); failed != c.fail {
			t.Errorf("%s: failed = %v (%s), want %v", c.name, failed, msg, c.fail)
		}
	}
}

func TestEventually(t *testing.T) {
	n := 0
	if failed, msg := run(func(tb testing.TB) { Eventually(tb, time.Minute, "third try", func() bool { n++; return n == 3 }) }); failed {
		t.Fatalf("a condition that comes true failed: %s", msg)
	}
	if failed, _ := run(func(tb testing.TB) { Eventually(tb, time.Millisecond, "never", func() bool { return false }) }); !failed {
		t.Fatal("a condition that never holds passed")
	}
}

func TestKill9(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a child process")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	// The test binary itself, blocked reading its stdin, is the child.
	cmd := exec.Command(exe, "-test.run=^TestKill9Child$")
	cmd.Env = append(os.Environ(), "KBROKER_TESTENV_CHILD=1")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	defer stdin.Close()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() {
		cmd.Wait()
		close(exited)
	}()
	Kill9(t, "child", cmd.Process, exited, time.Minute)
	if cmd.ProcessState == nil || cmd.ProcessState.Success() {
		t.Fatalf("child state after SIGKILL: %v", cmd.ProcessState)
	}
	// Killing it again finds it gone: that is a failure of the loop.
	if failed, _ := run(func(tb testing.TB) { Kill9(tb, "child", cmd.Process, exited, time.Minute) }); !failed {
		t.Fatal("killing a process that already exited passed")
	}
}

// TestKill9Child is the child of TestKill9: it waits for stdin to close.
func TestKill9Child(t *testing.T) {
	if os.Getenv("KBROKER_TESTENV_CHILD") == "" {
		t.Skip("only as TestKill9's child")
	}
	os.Stdin.Read(make([]byte, 1))
}

// TestMappingSizes: a file mapped and read shows its resident bytes under
// its path, and nothing is summed for a mapping no one matches.
func TestMappingSizes(t *testing.T) {
	path := filepath.Join(t.TempDir(), "mapped")
	if err := os.WriteFile(path, bytes.Repeat([]byte{1}, 64<<10), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b, err := syscall.Mmap(int(f.Fd()), 0, 64<<10, syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Munmap(b)
	sum := 0
	for i := 0; i < len(b); i += 4096 {
		sum += int(b[i])
	}
	if sum != 16 {
		t.Fatalf("read %d", sum)
	}
	sizes, err := MappingSizes(func(h []string) bool { return len(h) >= 6 && h[5] == path }, "Rss", "Size")
	if errors.Is(err, os.ErrNotExist) {
		t.Skipf("no smaps: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	if sizes["Size"] != 64<<10 || sizes["Rss"] != 64<<10 {
		t.Errorf("sizes %v, want Size and Rss of 64 KiB", sizes)
	}
	none, err := MappingSizes(func([]string) bool { return false }, "Rss")
	if err != nil || none["Rss"] != 0 {
		t.Errorf("no mapping matched: %v, %v", none, err)
	}
}
