package cluster

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"

	klog "github.com/kbroker/kbroker/log"
)

// FileName is the state file in the metadata directory.
const FileName = "cluster"

// formatVersion is the file's "version"; a newer one is refused.
const formatVersion = 1

// maxFileSize bounds what Open reads: the state is small (quotas and
// configs set by hand), so a huge file is damage, not data.
const maxFileSize = 64 << 20

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// EntityPart is one component of a client-quota entity (Kafka's
// EntityData): a type ("user", "client-id" or "ip") and a name, where a
// nil name is the type's default entity.
type EntityPart struct {
	Type string  `json:"type"`
	Name *string `json:"name"`
}

// Quota is the quota values set for one entity.
type Quota struct {
	// Entity is sorted by Type; it identifies the entry.
	Entity []EntityPart `json:"entity"`
	// Values maps quota keys (producer_byte_rate, ...) to values.
	Values map[string]float64 `json:"values"`
}

// State is every run-time cluster setting. A *State from Store.Load is
// shared and must not be changed; Update hands its function a private
// copy.
type State struct {
	// FeaturesEpoch counts feature-level changes; ApiVersions reports it
	// as the finalized features epoch (Kafka: the metadata offset of the
	// last change), so clients can tell a newer answer from an older one.
	FeaturesEpoch int64 `json:"featuresEpoch"`
	// Features holds the finalized levels set by UpdateFeatures; a feature
	// not in it has its default level.
	Features map[string]int16 `json:"features,omitempty"`
	// Quotas are the client quotas, sorted by entity.
	Quotas []Quota `json:"quotas,omitempty"`
	// BrokerConfigs maps a broker id ("" for the cluster-wide default) to
	// the dynamic configs set on it.
	BrokerConfigs map[string]map[string]string `json:"brokerConfigs,omitempty"`
	// GroupConfigs maps a group id to the configs set on it.
	GroupConfigs map[string]map[string]string `json:"groupConfigs,omitempty"`
}

// clone returns a deep copy of s.
func (s *State) clone() *State {
	c := &State{FeaturesEpoch: s.FeaturesEpoch, Features: maps.Clone(s.Features)}
	for _, q := range s.Quotas {
		ent := make([]EntityPart, len(q.Entity))
		for i, p := range q.Entity {
			ent[i] = EntityPart{Type: p.Type}
			if p.Name != nil {
				n := *p.Name
				ent[i].Name = &n
			}
		}
		c.Quotas = append(c.Quotas, Quota{Entity: ent, Values: maps.Clone(q.Values)})
	}
	cloneNested := func(m map[string]map[string]string) map[string]map[string]string {
		if m == nil {
			return nil
		}
		out := make(map[string]map[string]string, len(m))
		for k, v := range m {
			out[k] = maps.Clone(v)
		}
		return out
	}
	c.BrokerConfigs = cloneNested(s.BrokerConfigs)
	c.GroupConfigs = cloneNested(s.GroupConfigs)
	return c
}

// Store holds the state and its file.
type Store struct {
	path  string
	state atomic.Pointer[State]
	// mu serialises Update: one writer at a time persists and publishes.
	mu sync.Mutex
}

// Open reads <dir>/cluster, or starts empty when there is none. A damaged
// file (bad JSON, CRC mismatch, unknown version) is an error: the broker
// must not start with settings silently lost.
func Open(dir string) (*Store, error) {
	s := &Store{path: filepath.Join(dir, FileName)}
	_ = os.Remove(s.path + ".tmp") // a write cut by a crash; the old file is intact
	data, err := readBounded(s.path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		s.state.Store(&State{})
		return s, nil
	case err != nil:
		return nil, err
	}
	st, err := Decode(data)
	if err != nil {
		return nil, fmt.Errorf("cluster: %s: %w", s.path, err)
	}
	s.state.Store(st)
	return s, nil
}

func readBounded(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("cluster: stat %s: %w", path, err)
	}
	if fi.Size() > maxFileSize {
		return nil, fmt.Errorf("cluster: %s is %d bytes, more than %d", path, fi.Size(), maxFileSize)
	}
	data := make([]byte, fi.Size())
	if _, err := f.ReadAt(data, 0); err != nil && fi.Size() > 0 {
		return nil, fmt.Errorf("cluster: read %s: %w", path, err)
	}
	return data, nil
}

// Load returns the current state; it must not be changed.
func (s *Store) Load() *State { return s.state.Load() }

// Update applies f to a copy of the state and, if f returns nil, writes the
// copy durably and publishes it. f's error comes back unchanged, with
// nothing written; a write error leaves the old state in place.
func (s *Store) Update(f func(*State) error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	next := s.state.Load().clone()
	if err := f(next); err != nil {
		return err
	}
	normalize(next)
	data, err := Encode(next)
	if err != nil {
		return err
	}
	if err := klog.WriteFileAtomic(s.path, data); err != nil {
		return fmt.Errorf("cluster: save state: %w", err)
	}
	s.state.Store(next)
	return nil
}

// normalize drops empty entries and sorts quotas, so equal states encode
// equally.
func normalize(s *State) {
	for k, v := range s.BrokerConfigs {
		if len(v) == 0 {
			delete(s.BrokerConfigs, k)
		}
	}
	for k, v := range s.GroupConfigs {
		if len(v) == 0 {
			delete(s.GroupConfigs, k)
		}
	}
	s.Quotas = slices.DeleteFunc(s.Quotas, func(q Quota) bool { return len(q.Values) == 0 })
	for i := range s.Quotas {
		SortEntity(s.Quotas[i].Entity)
	}
	slices.SortFunc(s.Quotas, func(a, b Quota) int { return CompareEntity(a.Entity, b.Entity) })
}

// SortEntity sorts an entity's parts by type.
func SortEntity(e []EntityPart) {
	slices.SortFunc(e, func(a, b EntityPart) int { return compareString(a.Type, b.Type) })
}

// CompareEntity orders entities (sorted by type) part by part; a default
// (nil) name sorts before every name.
func CompareEntity(a, b []EntityPart) int {
	for i := 0; i < len(a) && i < len(b); i++ {
		if c := compareString(a[i].Type, b[i].Type); c != 0 {
			return c
		}
		switch an, bn := a[i].Name, b[i].Name; {
		case an == nil && bn != nil:
			return -1
		case an != nil && bn == nil:
			return 1
		case an != nil:
			if c := compareString(*an, *bn); c != 0 {
				return c
			}
		}
	}
	return len(a) - len(b)
}

func compareString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// envelope is the file.
type envelope struct {
	Version  *int            `json:"version"`
	Checksum *uint32         `json:"crc32c"`
	State    json.RawMessage `json:"state"`
}

// Encode returns the file contents for s.
func Encode(s *State) ([]byte, error) {
	body, err := json.Marshal(s)
	if err != nil {
		return nil, fmt.Errorf("cluster: encode state: %w", err)
	}
	v, sum := formatVersion, crc32.Checksum(body, castagnoli)
	out, err := json.MarshalIndent(envelope{Version: &v, Checksum: &sum, State: body}, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("cluster: encode state: %w", err)
	}
	return append(out, '\n'), nil
}

// Decode parses file contents, checking version and CRC.
func Decode(data []byte) (*State, error) {
	var env envelope
	if err := json.Unmarshal(data, &env); err != nil {
		return nil, fmt.Errorf("cluster: decode: %w", err)
	}
	if env.Version == nil || env.Checksum == nil || env.State == nil {
		return nil, errors.New("cluster: decode: version, crc32c or state missing")
	}
	if *env.Version != formatVersion {
		return nil, fmt.Errorf("cluster: decode: format version %d, this broker reads %d", *env.Version, formatVersion)
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, env.State); err != nil {
		return nil, fmt.Errorf("cluster: decode: %w", err)
	}
	if sum := crc32.Checksum(compact.Bytes(), castagnoli); sum != *env.Checksum {
		return nil, fmt.Errorf("cluster: decode: crc32c %d, stored %d: the file is damaged", sum, *env.Checksum)
	}
	st := &State{}
	if err := json.Unmarshal(env.State, st); err != nil {
		return nil, fmt.Errorf("cluster: decode state: %w", err)
	}
	for _, q := range st.Quotas {
		for _, p := range q.Entity {
			if p.Type == "" {
				return nil, errors.New("cluster: decode: quota entity part without a type")
			}
		}
	}
	return st, nil
}
