package topic

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	klog "github.com/kbroker/kbroker/log"
)

// The topics file, <dir>/topics (dir is <data>/metadata):
//
//	{
//	  "version": 1,
//	  "crc32c": 2290851310,
//	  "topics": [
//	    {"name": "orders", "id": "k3hTeN5aQ1qL0Wc3s9oYxA", "partitions": 3,
//	     "configs": {"retention.ms": "86400000"}},
//	    {"name": "__consumer_offsets", "id": "...", "partitions": 50, "internal": true}
//	  ]
//	}
//
// crc32c is the CRC-32C (Castagnoli) of the "topics" array in compact JSON
// (the bytes json.Compact gives), so an operator may reformat the file but a
// flipped digit in an id or a config is caught. Topics are sorted by name;
// configs hold only the values set on the topic, in canonical form.
//
// Writes are atomic (log.WriteFileAtomic): the new contents go to a
// temporary file in the same directory (topics.tmp), which is fsynced,
// renamed over topics, and the directory fsynced. A crash leaves the old
// file or the new one, never a mix; Open deletes temporary files, so a
// torn one is never read.
const (
	fileName      = "topics"
	formatVersion = 1
	// oldTempPrefix and log.TempSuffix frame the random temporary names
	// that versions before log.WriteFileAtomic used (.topics-*.tmp); Open
	// still removes such leftovers of a crash.
	oldTempPrefix = ".topics-"
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// fileTopic is one topic in the file.
type fileTopic struct {
	Name       string            `json:"name"`
	ID         ID                `json:"id"`
	Partitions int32             `json:"partitions"`
	Internal   bool              `json:"internal,omitempty"`
	Configs    map[string]string `json:"configs,omitempty"`
}

// fileEnvelope is the whole file. Pointers tell a missing field from a zero.
type fileEnvelope struct {
	Version  *int            `json:"version"`
	Checksum *uint32         `json:"crc32c"`
	Topics   json.RawMessage `json:"topics"`
}

// errCrash, returned by a test's crashHook, stops a write where it is,
// leaving its files behind as a killed process would.
var errCrash = klog.ErrSimulatedCrash

// toFile is t as the file and the journal store it.
func toFile(t *Topic) fileTopic {
	return fileTopic{Name: t.Name, ID: t.ID, Partitions: t.Partitions, Internal: t.Internal, Configs: t.Configs.set}
}

// encode returns the file contents for s and the journal base they make.
func encode(s *snapshot) ([]byte, journalBase, error) {
	list := make([]fileTopic, 0, len(s.sorted))
	for _, t := range s.sorted {
		list = append(list, toFile(t))
	}
	body, err := json.Marshal(list)
	if err != nil {
		return nil, journalBase{}, fmt.Errorf("topic: encode topics: %w", err)
	}
	v, sum := formatVersion, crc32.Checksum(body, castagnoli)
	out, err := json.MarshalIndent(fileEnvelope{Version: &v, Checksum: &sum, Topics: body}, "", "  ")
	if err != nil {
		return nil, journalBase{}, fmt.Errorf("topic: encode topics: %w", err)
	}
	return append(out, '\n'), baseOf(body), nil
}

// decode parses file contents into a snapshot, checking everything a
// damaged or hand-edited file could get wrong. Topics are resolved against d.
func decode(path string, data []byte, d *Defaults) (*snapshot, journalBase, error) {
	corrupt := func(format string, args ...any) error {
		return &CorruptionError{File: path, Reason: fmt.Sprintf(format, args...)}
	}
	var env fileEnvelope
	if err := json.Unmarshal(data, &env); err != nil {
		return nil, journalBase{}, corrupt("not valid JSON: %v", err)
	}
	switch {
	case env.Version == nil:
		return nil, journalBase{}, corrupt("no format version")
	case *env.Version != formatVersion:
		return nil, journalBase{}, corrupt("format version %d, this kbroker reads version %d", *env.Version, formatVersion)
	case env.Checksum == nil:
		return nil, journalBase{}, corrupt("no checksum")
	case env.Topics == nil:
		return nil, journalBase{}, corrupt("no topics array")
	}
	var body bytes.Buffer
	if err := json.Compact(&body, env.Topics); err != nil {
		return nil, journalBase{}, corrupt("topics array: %v", err)
	}
	if sum := crc32.Checksum(body.Bytes(), castagnoli); sum != *env.Checksum {
		return nil, journalBase{}, corrupt("checksum mismatch: file says %d, topics array has %d", *env.Checksum, sum)
	}
	var list []fileTopic
	if err := json.Unmarshal(body.Bytes(), &list); err != nil {
		return nil, journalBase{}, corrupt("topics array: %v", err)
	}
	s := emptySnapshot()
	for i, ft := range list {
		if reason := checkFileTopic(&ft); reason != "" {
			return nil, journalBase{}, corrupt("topic %d: %s", i, reason)
		}
		switch {
		case s.byName[ft.Name] != nil:
			return nil, journalBase{}, corrupt("topic %s listed twice", ft.Name)
		case s.byID[ft.ID] != nil:
			return nil, journalBase{}, corrupt("topics %s and %s have the same id %s", s.byID[ft.ID].Name, ft.Name, ft.ID)
		}
		if other, ok := s.byKey[collisionKey(ft.Name)]; ok {
			return nil, journalBase{}, corrupt("topics %s and %s collide", other, ft.Name)
		}
		t, err := fromFile(&ft, d)
		if err != nil {
			return nil, journalBase{}, corrupt("topic %s: %v", ft.Name, err)
		}
		s.add(t)
	}
	// The writer sorts; a hand-edited file need not be.
	slices.SortFunc(s.sorted, func(a, b *Topic) int { return strings.Compare(a.Name, b.Name) })
	return s, baseOf(body.Bytes()), nil
}

// checkFileTopic checks what a stored topic can get wrong on its own, and
// returns why it cannot be trusted, or "".
func checkFileTopic(ft *fileTopic) string {
	if err := ValidateName(ft.Name); err != nil {
		return err.Error()
	}
	switch {
	case ft.ID.IsZero():
		return fmt.Sprintf("topic %s: zero id", ft.Name)
	case ft.Partitions < 1:
		return fmt.Sprintf("topic %s: %d partitions", ft.Name, ft.Partitions)
	case ft.Internal != IsInternal(ft.Name):
		return fmt.Sprintf("topic %s: internal is %t", ft.Name, ft.Internal)
	}
	return ""
}

// fromFile resolves a stored topic's configs against d. A config Kafka
// no longer has (removedConfigs), stored by an older kbroker, is dropped.
func fromFile(ft *fileTopic, d *Defaults) (*Topic, error) {
	for name := range removedConfigs {
		delete(ft.Configs, name)
	}
	set, err := validateSet(ft.Configs, d)
	if err != nil {
		return nil, err
	}
	return &Topic{Name: ft.Name, ID: ft.ID, Partitions: ft.Partitions, Internal: ft.Internal, Configs: resolve(set, d)}, nil
}

// load reads <dir>/topics, creating dir when it does not exist and removing
// temporary files left by a crash. A missing file is an empty registry
// (found false).
func load(dir string, d *Defaults) (s *snapshot, base journalBase, found bool, err error) {
	if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, journalBase{}, false, fmt.Errorf("topic: create %s: %w", dir, err)
		}
		// Make the new directory's own entry durable before files go in it.
		if err := klog.SyncDir(filepath.Dir(filepath.Clean(dir))); err != nil {
			return nil, journalBase{}, false, err
		}
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, journalBase{}, false, fmt.Errorf("topic: read %s: %w", dir, err)
	}
	for _, e := range entries {
		if n := e.Name(); n == fileName+klog.TempSuffix || n == journalName+klog.TempSuffix ||
			strings.HasPrefix(n, oldTempPrefix) && strings.HasSuffix(n, klog.TempSuffix) {
			// A write that never reached its rename: the real file is intact.
			if err := os.Remove(filepath.Join(dir, n)); err != nil {
				return nil, journalBase{}, false, fmt.Errorf("topic: remove leftover %s: %w", filepath.Join(dir, n), err)
			}
		}
	}
	path := filepath.Join(dir, fileName)
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return emptySnapshot(), journalBase{}, false, nil
	}
	if err != nil {
		return nil, journalBase{}, false, fmt.Errorf("topic: read %s: %w", path, err)
	}
	s, base, err = decode(path, data, d)
	return s, base, err == nil, err
}

// persistLocked writes s to <dir>/topics atomically and durably, and
// returns the journal base of the new file.
func (r *Registry) persistLocked(s *snapshot) (base journalBase, err error) {
	data, base, err := encode(s)
	if err != nil {
		return base, err
	}
	path := filepath.Join(r.dir, fileName)
	if err := klog.WriteFileAtomicHooked(path, data, r.crashHook); err != nil {
		return base, fmt.Errorf("topic: persist %s: %w", path, err)
	}
	return base, nil
}
