package topic

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// populate makes a registry with a few topics and some history.
func populate(t *testing.T, r *Registry) {
	t.Helper()
	mustCreate(t, r, "orders", 3, map[string]*string{"retention.ms": strp("86400000"), "cleanup.policy": strp("delete")})
	mustCreate(t, r, "events.v1", 1, map[string]*string{"message.timestamp.type": strp("LogAppendTime")})
	mustCreate(t, r, "doomed", 1, nil)
	if _, err := r.CreateInternal(GroupMetadataTopic, 50, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := r.CreatePartitions("events.v1", 4, false); err != nil {
		t.Fatal(err)
	}
	if _, err := r.IncrementalAlterConfigs("orders", []AlterOp{{Name: "max.message.bytes", Op: OpSet, Value: strp("5000")}}, false); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Delete("doomed"); err != nil {
		t.Fatal(err)
	}
}

func TestPersistenceRoundTrip(t *testing.T) {
	t.Parallel()
	r, dir := newTestRegistry(t)
	populate(t, r)
	want := r.List()
	if got := names(want); !slices.Equal(got, []string{GroupMetadataTopic, "events.v1", "orders"}) {
		t.Fatalf("List = %v", got)
	}
	r2, err := Open(dir, KafkaDefaults())
	if err != nil {
		t.Fatal(err)
	}
	sameTopics(t, r2.List(), want)
	orders, _ := r2.Get("orders")
	if orders.Configs.MaxMessageBytes() != 5000 || orders.Configs.RetentionMs() != 86400000 || orders.Partitions != 3 {
		t.Fatalf("orders after reopen: %+v", orders)
	}
	if ev, _ := r2.Get("events.v1"); ev.Partitions != 4 || ev.Configs.TimestampType() != LogAppendTime {
		t.Fatalf("events.v1 after reopen: %+v", ev)
	}
	if co, ok := r2.ByID(want[0].ID); !ok || !co.Internal || co.Name != GroupMetadataTopic {
		t.Fatalf("ByID of the internal topic after reopen: %+v, %t", co, ok)
	}
	// The reopened registry keeps working and rules still hold.
	_, err = r2.Create("events_v1", 1, nil, false)
	if err == nil {
		t.Fatal("collision not detected after reopen")
	}
	mustCreate(t, r2, "doomed", 1, nil)
	if files := listDir(t, dir); !slices.Equal(files, []string{"topics", "topics.journal"}) {
		t.Fatalf("files in %s: %v, want only topics and its journal", dir, files)
	}
}

func TestFileFormat(t *testing.T) {
	t.Parallel()
	r, dir := newTestRegistry(t)
	populate(t, r)
	compact(t, r)
	data, err := os.ReadFile(filepath.Join(dir, "topics"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"version": 1`, `"crc32c": `, `"name": "orders"`, `"retention.ms": "86400000"`, `"internal": true`} {
		if !bytes.Contains(data, []byte(want)) {
			t.Errorf("file lacks %s:\n%s", want, data)
		}
	}
	// An operator may reformat the file; the checksum covers the content.
	var compact bytes.Buffer
	if err := json.Compact(&compact, data); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "topics"), compact.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	r2, err := Open(dir, KafkaDefaults())
	if err != nil {
		t.Fatalf("Open of the compacted file: %v", err)
	}
	sameTopics(t, r2.List(), r.List())
}

func TestDefaultsApplyOnReopen(t *testing.T) {
	t.Parallel()
	r, dir := newTestRegistry(t)
	mustCreate(t, r, "inherits", 1, nil)
	mustCreate(t, r, "overrides", 1, map[string]*string{"retention.ms": strp("1000")})
	d := KafkaDefaults()
	d.RetentionMs = 42
	r2, err := Open(dir, d)
	if err != nil {
		t.Fatal(err)
	}
	if in, _ := r2.Get("inherits"); in.Configs.RetentionMs() != 42 {
		t.Errorf("inheriting topic: retention %d, want the new broker default 42", in.Configs.RetentionMs())
	}
	if ov, _ := r2.Get("overrides"); ov.Configs.RetentionMs() != 1000 {
		t.Errorf("overriding topic: retention %d, want its own 1000", ov.Configs.RetentionMs())
	}
}

func TestOpenCreatesDirectory(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "data", "metadata")
	r, err := Open(dir, KafkaDefaults())
	if err != nil {
		t.Fatal(err)
	}
	if len(r.List()) != 0 {
		t.Fatal("new registry not empty")
	}
	mustCreate(t, r, "x", 1, nil)
	if _, err := os.Stat(filepath.Join(dir, "topics")); err != nil {
		t.Fatal(err)
	}
}

func TestLeftoverTempFilesIgnored(t *testing.T) {
	t.Parallel()
	r, dir := newTestRegistry(t)
	populate(t, r)
	compact(t, r)
	want := r.List()
	good, err := os.ReadFile(filepath.Join(dir, "topics"))
	if err != nil {
		t.Fatal(err)
	}
	// A crashed write: a torn copy of a newer state, and an empty one.
	torn := append([]byte(nil), good[:len(good)/2]...)
	if err := os.WriteFile(filepath.Join(dir, ".topics-123.tmp"), torn, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, ".topics-456.tmp"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	// Not ours: must be left alone.
	if err := os.WriteFile(filepath.Join(dir, "other.tmp"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	r2, err := Open(dir, KafkaDefaults())
	if err != nil {
		t.Fatal(err)
	}
	sameTopics(t, r2.List(), want)
	if files := listDir(t, dir); !slices.Equal(files, []string{"other.tmp", "topics", "topics.journal"}) {
		t.Fatalf("files after Open: %v, want the leftovers removed", files)
	}
}

// TestCrashAtEachStep kills a mutation at each step of its journal append,
// and a compaction at each step of its file write, and reopens the
// directory. A journal record torn by the crash was never acknowledged and
// is not there; a whole one is (the page cache outlives a killed process),
// and a compaction loses nothing at any step.
func TestCrashAtEachStep(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		step    string
		compact bool // crash a compaction rather than an append
		torn    bool
		newSeen bool
	}{
		{"journal-written", false, true, false},
		{"journal-written", false, false, true},
		{"written", true, true, true},
		{"synced", true, false, true},
		{"renamed", true, false, true},
		{"dir-synced", true, false, true},
	} {
		t.Run(fmt.Sprintf("%s/compact=%t/torn=%t", tc.step, tc.compact, tc.torn), func(t *testing.T) {
			t.Parallel()
			r, dir := newTestRegistry(t)
			mustCreate(t, r, "old", 1, nil)
			before := r.List()
			if tc.compact {
				mustCreate(t, r, "new", 1, nil)
			}
			hook := func(step, path string) error {
				if step != tc.step {
					return nil
				}
				if tc.torn {
					// The write was torn: only part of it reached the file.
					if step == "journal-written" {
						// Zero bytes inside the record (the file is
						// allocated ahead, so cutting it would not do).
						f, err := os.OpenFile(path, os.O_RDWR, 0)
						if err != nil {
							return err
						}
						defer f.Close()
						if _, err := f.WriteAt(make([]byte, 8), r.journal.tail.Load()+20); err != nil {
							return err
						}
						return errCrash
					}
					if err := os.Truncate(path, 10); err != nil {
						return err
					}
				}
				return errCrash
			}
			r.mu.Lock()
			r.crashHook = hook
			var err error
			if tc.compact {
				err = r.compactLocked()
			}
			r.mu.Unlock()
			if !tc.compact {
				_, err = r.Create("new", 1, nil, false)
				// The crashed process published nothing.
				if _, ok := r.Get("new"); ok {
					t.Fatal("state published although the write did not finish")
				}
			}
			if !errors.Is(err, errCrash) {
				t.Fatalf("mutation during a crash: got %v", err)
			}
			r.journal.close()
			r2, err := Open(dir, KafkaDefaults())
			if err != nil {
				t.Fatalf("Open after a crash at %s: %v", tc.step, err)
			}
			defer r2.Close()
			_, hasNew := r2.Get("new")
			if hasNew != tc.newSeen {
				t.Fatalf("after a crash at %s: new topic present %t, want %t", tc.step, hasNew, tc.newSeen)
			}
			if old, ok := r2.Get("old"); !ok || old.ID != before[0].ID {
				t.Fatalf("after a crash at %s: old topic %+v, %t", tc.step, old, ok)
			}
			if files := listDir(t, dir); !slices.Equal(files, []string{"topics", "topics.journal"}) {
				t.Fatalf("files after reopen: %v", files)
			}
			// And the reopened registry accepts mutations.
			mustCreate(t, r2, "after", 1, nil)
		})
	}
}

func TestWriteErrorKeepsState(t *testing.T) {
	t.Parallel()
	var calls int
	r, dir := newTestRegistry(t, WithOnChange(func(_, _ *Topic) { calls++ }))
	mustCreate(t, r, "old", 1, nil)
	diskFull := errors.New("no space left on device")
	r.mu.Lock()
	r.crashHook = func(step, _ string) error {
		if step == "journal-written" {
			return diskFull
		}
		return nil
	}
	r.mu.Unlock()
	if _, err := r.Create("new", 1, nil, false); !errors.Is(err, diskFull) {
		t.Fatalf("Create with a failing write: %v", err)
	}
	if _, err := r.Delete("old"); !errors.Is(err, diskFull) {
		t.Fatalf("Delete with a failing write: %v", err)
	}
	if _, ok := r.Get("new"); ok {
		t.Fatal("failed Create is visible")
	}
	if _, ok := r.Get("old"); !ok {
		t.Fatal("failed Delete took effect")
	}
	if calls != 1 {
		t.Fatalf("OnChange called %d times, want 1 (for the first Create)", calls)
	}
	if files := listDir(t, dir); !slices.Equal(files, []string{"topics", "topics.journal"}) {
		t.Fatalf("a failed write left %v", files)
	}
	r.mu.Lock()
	r.crashHook = nil
	r.mu.Unlock()
	mustCreate(t, r, "new", 1, nil)
}

// writeFile writes a topics file with the given topics array and a correct
// checksum, so the test reaches the checks behind the checksum.
func writeFile(t *testing.T, dir string, version int, topics string) string {
	t.Helper()
	var body bytes.Buffer
	if err := json.Compact(&body, []byte(topics)); err != nil {
		t.Fatalf("bad test JSON %s: %v", topics, err)
	}
	sum := crc32.Checksum(body.Bytes(), castagnoli)
	data, _ := json.Marshal(map[string]any{"version": version, "crc32c": sum, "topics": json.RawMessage(body.Bytes())})
	path := filepath.Join(dir, "topics")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestCorruptFile(t *testing.T) {
	t.Parallel()
	const id1, id2 = "AAAAAAAAAAAAAAAAAAAAAg", "AAAAAAAAAAAAAAAAAAAAAw"
	raw := func(content string) func(t *testing.T, dir string) string {
		return func(t *testing.T, dir string) string {
			path := filepath.Join(dir, "topics")
			if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
			return path
		}
	}
	withSum := func(version int, topics string) func(t *testing.T, dir string) string {
		return func(t *testing.T, dir string) string { return writeFile(t, dir, version, topics) }
	}
	for _, tc := range []struct {
		what   string
		write  func(t *testing.T, dir string) string
		reason string
	}{
		{"empty file", raw(""), "not valid JSON"},
		{"garbage", raw("\x00\x01garbage"), "not valid JSON"},
		{"array", raw("[]"), "not valid JSON"},
		{"no version", raw(`{"crc32c": 1, "topics": []}`), "no format version"},
		{"newer version", withSum(2, `[]`), "format version 2"},
		{"no checksum", raw(`{"version": 1, "topics": []}`), "no checksum"},
		{"no topics", raw(`{"version": 1, "crc32c": 0}`), "no topics array"},
		{"checksum mismatch", raw(`{"version": 1, "crc32c": 1, "topics": []}`), "checksum mismatch"},
		{"topics not an array", withSum(1, `{"a": 1}`), "topics array"},
		{"bad id", withSum(1, `[{"name": "a", "id": "!!", "partitions": 1}]`), "topics array"},
		{"zero id", withSum(1, `[{"name": "a", "id": "AAAAAAAAAAAAAAAAAAAAAA", "partitions": 1}]`), "zero id"},
		{"no id", withSum(1, `[{"name": "a", "partitions": 1}]`), "zero id"},
		{"bad name", withSum(1, `[{"name": "a/b", "id": "`+id1+`", "partitions": 1}]`), "topic name is invalid"},
		{"zero partitions", withSum(1, `[{"name": "a", "id": "`+id1+`", "partitions": 0}]`), "0 partitions"},
		{"internal flag on a normal topic", withSum(1, `[{"name": "a", "id": "`+id1+`", "partitions": 1, "internal": true}]`), "internal is true"},
		{"internal topic without the flag", withSum(1, `[{"name": "__consumer_offsets", "id": "`+id1+`", "partitions": 1}]`), "internal is false"},
		{"duplicate name", withSum(1, `[{"name": "a", "id": "`+id1+`", "partitions": 1}, {"name": "a", "id": "`+id2+`", "partitions": 1}]`), "listed twice"},
		{"duplicate id", withSum(1, `[{"name": "a", "id": "`+id1+`", "partitions": 1}, {"name": "b", "id": "`+id1+`", "partitions": 1}]`), "same id"},
		{"collision", withSum(1, `[{"name": "a.b", "id": "`+id1+`", "partitions": 1}, {"name": "a_b", "id": "`+id2+`", "partitions": 1}]`), "collide"},
		{"bad config", withSum(1, `[{"name": "a", "id": "`+id1+`", "partitions": 1, "configs": {"retention.ms": "-5"}}]`), "retention.ms"},
		{"unknown config", withSum(1, `[{"name": "a", "id": "`+id1+`", "partitions": 1, "configs": {"nope": "1"}}]`), "unknown topic config name"},
		{"partitions overflow", withSum(1, `[{"name": "a", "id": "`+id1+`", "partitions": 4294967296}]`), "topics array"},
	} {
		t.Run(tc.what, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			path := tc.write(t, dir)
			_, err := Open(dir, KafkaDefaults())
			var ce *CorruptionError
			if !errors.As(err, &ce) {
				t.Fatalf("Open: got %v, want a *CorruptionError", err)
			}
			if ce.File != path || !strings.Contains(err.Error(), path) || !strings.Contains(ce.Reason, tc.reason) {
				t.Fatalf("Open: got %q, want the file %s and a reason containing %q", err, path, tc.reason)
			}
		})
	}
	// A valid hand-written file with a config loads, unsorted. The config
	// Kafka 4.4 no longer has, which older kbrokers stored, is dropped.
	dir := t.TempDir()
	writeFile(t, dir, 1, `[{"name": "z", "id": "`+id2+`", "partitions": 2, "configs": {"retention.ms": " 10", "message.downconversion.enable": "false"}}, {"name": "a", "id": "`+id1+`", "partitions": 1}]`)
	r, err := Open(dir, KafkaDefaults())
	if err != nil {
		t.Fatal(err)
	}
	if got := names(r.List()); !slices.Equal(got, []string{"a", "z"}) {
		t.Fatalf("List = %v", got)
	}
	z, _ := r.Get("z")
	if _, ok := z.Configs.Override("message.downconversion.enable"); z.Configs.RetentionMs() != 10 || ok {
		t.Fatalf("z: %+v", z)
	}
}

// TestTruncatedFile cuts a valid file at every byte: Open either refuses it
// with a *CorruptionError or, where the cut removed only trailing space,
// loads the full state. It never panics and never loads a partial state.
func TestTruncatedFile(t *testing.T) {
	t.Parallel()
	r, dir := newTestRegistry(t)
	populate(t, r)
	compact(t, r)
	want := r.List()
	good, err := os.ReadFile(filepath.Join(dir, "topics"))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "topics")
	d := KafkaDefaults()
	loaded := 0
	for n := 0; n < len(good); n++ {
		// decode is what Open runs on the file's bytes; calling it directly
		// keeps the loop free of file system work.
		snap, _, err := decode(path, good[:n], &d)
		var ce *CorruptionError
		switch {
		case errors.As(err, &ce):
			if ce.File != path {
				t.Fatalf("cut at %d: error names %s, want %s", n, ce.File, path)
			}
		case err == nil:
			got := make([]Topic, len(snap.sorted))
			for i, tp := range snap.sorted {
				got[i] = *tp
			}
			sameTopics(t, got, want)
			loaded++
		default:
			t.Fatalf("cut at %d: unexpected error %v", n, err)
		}
	}
	if loaded != 1 { // only the cut of the final newline
		t.Fatalf("%d truncated files loaded, want 1", loaded)
	}
	// A torn file on disk is refused by Open too.
	if err := os.WriteFile(path, good[:len(good)/2], 0o644); err != nil {
		t.Fatal(err)
	}
	var ce *CorruptionError
	if _, err := Open(dir, KafkaDefaults()); !errors.As(err, &ce) {
		t.Fatalf("Open of a torn file: got %v, want a *CorruptionError", err)
	}
	// Flipping a digit of a config is caught by the checksum.
	flipped := bytes.Replace(good, []byte(`"86400000"`), []byte(`"86400001"`), 1)
	if err := os.WriteFile(path, flipped, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(dir, KafkaDefaults()); err == nil || !strings.Contains(err.Error(), "checksum mismatch") {
		t.Fatalf("flipped digit: got %v, want a checksum mismatch", err)
	}
}

func TestUnreadableFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "topics"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(dir, KafkaDefaults()); err == nil || !strings.Contains(err.Error(), "topics") {
		t.Fatalf("topics is a directory: got %v, want an error naming it", err)
	}
}
