package layering

import (
	"bufio"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// A layer is a set of packages (directories relative to the module root)
// and the internal packages their non-test files may import. The rules are
// allow-lists: a package in no layer fails the test until it is placed in
// one, so a new package cannot slip past the layering unnoticed.
type layer struct {
	name string
	// members match a package directory exactly, or every directory below
	// it when they end in "/...".
	members []string
	// may lists what members may import, with the same patterns;
	// layer-mates are allowed only when listed.
	may []string
}

// leaf packages are the codec and the storage primitives, and the fault
// injector (rules over decoded requests, applied by the broker): they
// import nothing internal, so each can be tested, fuzzed and reasoned
// about alone.
var leaf = []string{"log", "flush", "protocol", "sendfile", "partition/batch", "partition/compact", "fault"}

var layers = []layer{
	{
		name:    "leaf: codec and storage primitives, test support",
		members: append(slices.Clone(leaf), "internal/..."),
		may:     nil,
	},
	{
		// The consume queue is its own package below partition;
		// internal/metric holds the partition's flush histograms.
		name:    "storage: partitions over the commit log",
		members: []string{"consumequeue", "partition"},
		may:     []string{"log", "flush", "partition/batch", "partition/compact", "consumequeue", "internal/metric"},
	},
	{
		// Coordinators and the topic registry never see the wire or the
		// server: the broker translates requests for them.
		name:    "coordinators",
		members: []string{"topic", "cluster", "group", "group/...", "coordlog", "offsets", "txn", "security", "security/..."},
		may: []string{"log", "flush", "partition", "partition/batch", "consumequeue",
			"topic", "cluster", "group", "group/...", "coordlog", "offsets", "txn", "security", "security/..."},
	},
	{
		name:    "server",
		members: []string{"broker", "admin", "admin/..."},
		may: []string{"log", "flush", "protocol", "sendfile", "partition", "partition/batch", "consumequeue",
			"topic", "cluster", "group", "group/...", "coordlog", "offsets", "txn", "security", "security/...",
			"broker", "admin", "admin/...", "internal/metric", "fault"},
	},
	{
		// Commands sit on the server (and its admin listener); kbench
		// also drives the codecs directly to measure the storage floor.
		name:    "commands",
		members: []string{"cmd/..."},
		may:     []string{"broker", "admin", "protocol", "partition/batch", "log", "flush", "partition"},
	},
	{
		// Only test files: black-box tests see everything.
		name:    "end-to-end tests",
		members: []string{"integration"},
		may:     []string{"..."},
	},
}

// Extra prohibitions stated by the architecture, checked on top of the
// allow-lists so that widening a layer cannot quietly break them.
var forbidden = map[string][]string{
	"partition": {"broker", "protocol"},
}

func matches(pattern, dir string) bool {
	if pattern == "..." {
		return true
	}
	if base, ok := strings.CutSuffix(pattern, "/..."); ok {
		return dir == base || strings.HasPrefix(dir, base+"/")
	}
	return dir == pattern
}

func matchesAny(patterns []string, dir string) bool {
	return slices.ContainsFunc(patterns, func(p string) bool { return matches(p, dir) })
}

// layerOf is the first layer whose members match dir.
func layerOf(dir string) (layer, bool) {
	for _, l := range layers {
		if matchesAny(l.members, dir) {
			return l, true
		}
	}
	return layer{}, false
}

// moduleRoot finds go.mod above the test's directory and reads the module
// path from it.
func moduleRoot(t *testing.T) (root, module string) {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		f, err := os.Open(filepath.Join(dir, "go.mod"))
		if err == nil {
			defer f.Close()
			sc := bufio.NewScanner(f)
			for sc.Scan() {
				if m, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "module "); ok {
					return dir, strings.TrimSpace(m)
				}
			}
			t.Fatalf("%s/go.mod names no module", dir)
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the test directory")
		}
		dir = parent
	}
}

// internalImports maps each package directory of the module to the
// internal packages its non-test files import (whatever their build tags:
// a rule holds on every platform). Test files may import more (a test of
// log may use internal test support); they are not part of the layering.
func internalImports(t *testing.T, root, module string) map[string]map[string]bool {
	t.Helper()
	pkgs := map[string]map[string]bool{}
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			name := d.Name()
			if path != root && (strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") || name == "testdata" || name == "vendor") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		rel, err := filepath.Rel(root, filepath.Dir(path))
		if err != nil {
			return err
		}
		dir := filepath.ToSlash(rel)
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		if pkgs[dir] == nil {
			pkgs[dir] = map[string]bool{}
		}
		for _, imp := range f.Imports {
			p, err := strconv.Unquote(imp.Path.Value)
			if err != nil {
				return err
			}
			if p == module {
				pkgs[dir]["."] = true
			} else if sub, ok := strings.CutPrefix(p, module+"/"); ok {
				pkgs[dir][sub] = true
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return pkgs
}

func TestLayering(t *testing.T) {
	root, module := moduleRoot(t)
	pkgs := internalImports(t, root, module)
	if len(pkgs) < 10 {
		t.Fatalf("found only %d packages under %s: the walk is broken", len(pkgs), root)
	}
	for dir, imports := range pkgs {
		l, ok := layerOf(dir)
		if !ok {
			t.Errorf("package %s is in no layer: add it to a layer in %s", dir, "internal/layering/layering_test.go")
			continue
		}
		for imp := range imports {
			if imp == dir {
				continue
			}
			if !matchesAny(l.may, imp) {
				t.Errorf("%s (%s) imports %s, which its layer does not allow", dir, l.name, imp)
			}
			if slices.Contains(forbidden[dir], imp) {
				t.Errorf("%s imports %s, which the architecture forbids", dir, imp)
			}
		}
	}
}

// TestRulesCatchViolations makes sure the rules can fail: a leaf importing
// anything, partition importing the broker, a coordinator importing the
// broker, and an unknown package are all refused.
func TestRulesCatchViolations(t *testing.T) {
	allowed := func(dir, imp string) bool {
		l, ok := layerOf(dir)
		return ok && matchesAny(l.may, imp) && !slices.Contains(forbidden[dir], imp)
	}
	for _, c := range []struct {
		dir, imp string
		want     bool
	}{
		{"log", "flush", false},
		{"protocol", "partition/batch", false},
		{"partition/batch", "log", false},
		{"sendfile", "log", false},
		{"internal/testenv", "log", false},
		{"partition", "broker", false},
		{"partition", "protocol", false},
		{"consumequeue", "partition", false},
		{"txn", "broker", false},
		{"group/consumer", "broker", false},
		{"offsets", "protocol", false},
		{"topic", "broker", false},
		{"newthing", "log", false},
		{"partition", "log", true},
		{"partition", "consumequeue", true},
		{"offsets", "coordlog", true},
		{"topic", "log", true},
		{"broker", "sendfile", true},
		{"cmd/kbroker", "broker", true},
		{"cmd/kbroker", "integration", false},
	} {
		if got := allowed(c.dir, c.imp); got != c.want {
			t.Errorf("%s importing %s: allowed = %v, want %v", c.dir, c.imp, got, c.want)
		}
	}
}
