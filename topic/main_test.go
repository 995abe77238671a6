package topic

import (
	"os"
	"path/filepath"
	"testing"

	"go.uber.org/goleak"

	"github.com/kbroker/kbroker/internal/testenv"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, testenv.LeakOptions()...)
}

// strp returns a pointer to s, for config maps.
func strp(s string) *string { return &s }

// newTestRegistry opens a registry on a fresh directory with Kafka's
// defaults, or the given ones.
func newTestRegistry(t *testing.T, opts ...Option) (*Registry, string) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "metadata")
	r, err := Open(dir, KafkaDefaults(), opts...)
	if err != nil {
		t.Fatalf("Open(%s): %v", dir, err)
	}
	return r, dir
}

// compact writes the registry's state to the topics file and empties the
// journal, as Open and a long journal do.
func compact(t *testing.T, r *Registry) {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.compactLocked(); err != nil {
		t.Fatal(err)
	}
}

// mustCreate creates a topic or fails the test.
func mustCreate(t *testing.T, r *Registry, name string, partitions int32, configs map[string]*string) Topic {
	t.Helper()
	tp, err := r.Create(name, partitions, configs, false)
	if err != nil {
		t.Fatalf("Create(%q, %d): %v", name, partitions, err)
	}
	return tp
}

// sameTopics compares two topic lists field by field.
func sameTopics(t *testing.T, got, want []Topic) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("got %d topics %v, want %d %v", len(got), names(got), len(want), names(want))
	}
	for i := range got {
		g, w := got[i], want[i]
		if g.Name != w.Name || g.ID != w.ID || g.Partitions != w.Partitions || g.Internal != w.Internal ||
			!g.Configs.Equal(w.Configs) || g.Configs.RetentionMs() != w.Configs.RetentionMs() {
			t.Fatalf("topic %d: got %+v, want %+v", i, g, w)
		}
	}
}

func names(ts []Topic) []string {
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = t.Name
	}
	return out
}

// listDir returns the names of the files in dir.
func listDir(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		out = append(out, e.Name())
	}
	return out
}
