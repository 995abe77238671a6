package log

import (
	"bytes"
	"encoding/binary"
	"path/filepath"
	"testing"

	"go.uber.org/goleak"

	"github.com/kbroker/kbroker/internal/testenv"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m, testenv.LeakOptions()...) }

// testConfig is a small log in a fresh temporary directory.
func testConfig(t testing.TB, fileSize int64) Config {
	t.Helper()
	return Config{Dir: t.TempDir(), FileSize: fileSize, KeySize: 20}
}

// forEachAppendMode runs test once per append mode, as subtests.
func forEachAppendMode(t *testing.T, test func(*testing.T, AppendMode)) {
	for _, mode := range []AppendMode{AppendMapped, AppendPwrite} {
		t.Run(mode.String(), func(t *testing.T) { test(t, mode) })
	}
}

// openLog opens cfg, failing the test on error, and closes it at cleanup.
func openLog(t testing.TB, cfg Config) (*CommitLog, RecoveryReport) {
	t.Helper()
	l, r, err := Open(cfg, 0, nil)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { l.Close() })
	return l, r
}

// key builds a 20-byte key from n.
func key(n int) []byte {
	k := make([]byte, 20)
	binary.BigEndian.PutUint64(k[12:], uint64(n))
	return k
}

// payload builds n deterministic bytes that depend on seed.
func payload(seed, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(seed*31 + i*7)
	}
	return b
}

// readAll returns every entry from position 0 as copies.
func readAll(t testing.TB, l *CommitLog, from int64) []Entry {
	t.Helper()
	var out []Entry
	err := l.Iterate(from, func(e Entry) error {
		e.Key = bytes.Clone(e.Key)
		e.Payload = bytes.Clone(e.Payload)
		out = append(out, e)
		return nil
	})
	if err != nil {
		t.Fatalf("Iterate: %v", err)
	}
	return out
}

// crash abandons l the way a SIGKILL would (see Abandon).
func crash(l *CommitLog) { l.Abandon() }

// segmentPath is the path of the file holding global position pos.
func segmentPath(cfg Config, pos int64) string {
	return filepath.Join(cfg.Dir, "commitlog", FileName(pos-pos%cfg.FileSize))
}
