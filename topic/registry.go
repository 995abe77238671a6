package topic

import (
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Topic is one topic as the registry knows it. Values returned by the
// registry are copies; changing them changes nothing.
type Topic struct {
	// Name is the topic name (ValidateName).
	Name string
	// ID is the topic id, random and never zero; it survives restarts and
	// changes when a topic is deleted and created again (KIP-516).
	ID ID
	// Partitions is the number of partitions, numbered 0 to Partitions-1.
	Partitions int32
	// Configs are the topic's config overrides and effective values.
	Configs Configs
	// Internal marks a topic created by the broker for a coordinator
	// (CreateInternal); Metadata reports it as is_internal.
	Internal bool
}

// Option configures a Registry at Open.
type Option func(*Registry)

// WithOnChange sets a function called after every successful mutation, once
// it is durable and visible to Get: (nil, t) for a created topic, (t, nil)
// for a deleted one, (before, after) for new partitions or configs. Calls
// come one at a time, in the order of the mutations, while the registry's
// writer lock is held: the function may call Get, ByID and List, but must
// not call a mutating method (that would deadlock) and should be quick. The
// partition layer uses it to create and drop partitions and to pick up new
// retention and size limits. Validate-only requests and mutations that
// change nothing do not call it.
func WithOnChange(fn func(old, new *Topic)) Option {
	return func(r *Registry) { r.onChange = fn }
}

// Registry holds the broker's topics: names, ids, partition counts and
// configs, persisted in <dir>/topics. Lookups (Get, ByID, List) take no lock
// and do not allocate (List excepted): they read an immutable snapshot
// through an atomic pointer. Mutations are serialized by one mutex; each
// builds a new snapshot, writes it to disk atomically and durably, and only
// then publishes it, so a reader never sees a state a crash could take back.
//
// One Registry owns a directory; two processes must not open the same one.
type Registry struct {
	dir      string
	defaults Defaults
	onChange func(old, new *Topic) // set at Open, then read-only

	state atomic.Pointer[snapshot] // written under mu, read by anyone

	mu sync.Mutex // serializes mutations: validate, persist, publish, notify
	// crashHook, set only by tests, is called at each step of a write
	// (log.WriteFileAtomicHooked); when it returns errCrash the write
	// stops there as if the process had died.
	crashHook func(step, tempPath string) error // guarded by mu
}

// snapshot is one immutable state of the registry.
type snapshot struct {
	byName map[string]*Topic
	byID   map[ID]*Topic
	byKey  map[string]string // collisionKey(name) -> name
	sorted []*Topic          // by name
}

func emptySnapshot() *snapshot {
	return &snapshot{byName: map[string]*Topic{}, byID: map[ID]*Topic{}, byKey: map[string]string{}}
}

// with returns a copy of s with old removed and nu added (either may be nil).
// Copying keeps lookups lock-free; it costs O(topics) per mutation, which
// the file write costs anyway.
func (s *snapshot) with(old, nu *Topic) *snapshot {
	n := &snapshot{
		byName: make(map[string]*Topic, len(s.byName)+1),
		byID:   make(map[ID]*Topic, len(s.byID)+1),
		byKey:  make(map[string]string, len(s.byKey)+1),
		sorted: make([]*Topic, 0, len(s.sorted)+1),
	}
	for _, t := range s.sorted {
		if old != nil && t.Name == old.Name {
			continue
		}
		n.add(t)
	}
	if nu != nil {
		n.add(nu)
	}
	slices.SortFunc(n.sorted, func(a, b *Topic) int { return strings.Compare(a.Name, b.Name) })
	return n
}

// add inserts t; the caller keeps sorted in order.
func (s *snapshot) add(t *Topic) {
	s.byName[t.Name] = t
	s.byID[t.ID] = t
	s.byKey[collisionKey(t.Name)] = t.Name
	s.sorted = append(s.sorted, t)
}

// Open loads the registry from <dir>/topics, creating dir if needed. It
// removes temporary files a crash left behind (they never replace the real
// file) and returns a *CorruptionError naming the file if its contents cannot
// be trusted. defaults are the broker-level values topics inherit; they must
// pass Defaults.Validate.
func Open(dir string, defaults Defaults, opts ...Option) (*Registry, error) {
	if err := defaults.Validate(); err != nil {
		return nil, err
	}
	defaults.Explicit = maps.Clone(defaults.Explicit)
	r := &Registry{dir: dir, defaults: defaults}
	for _, o := range opts {
		o(r)
	}
	s, err := load(dir, &r.defaults)
	if err != nil {
		return nil, err
	}
	r.state.Store(s)
	return r, nil
}

// Defaults returns the broker-level defaults the registry resolves topics with.
func (r *Registry) Defaults() Defaults {
	d := r.defaults
	d.Explicit = maps.Clone(d.Explicit)
	return d
}

// Get returns the topic called name. It takes no lock and does not allocate:
// the produce and fetch paths call it for every partition.
func (r *Registry) Get(name string) (Topic, bool) {
	t, ok := r.state.Load().byName[name]
	if !ok {
		return Topic{}, false
	}
	return *t, true
}

// ByID returns the topic with the given id (requests that name topics by
// id, KIP-516). Like Get it takes no lock and does not allocate.
func (r *Registry) ByID(id ID) (Topic, bool) {
	t, ok := r.state.Load().byID[id]
	if !ok {
		return Topic{}, false
	}
	return *t, true
}

// List returns every topic, sorted by name.
func (r *Registry) List() []Topic {
	s := r.state.Load()
	out := make([]Topic, len(s.sorted))
	for i, t := range s.sorted {
		out[i] = *t
	}
	return out
}

// Create creates a topic, as CreateTopics does (Kafka's
// ReplicationControlManager.createTopics). partitions -1 means
// Defaults.NumPartitions (CreateTopics v4+); configs are the topic's config
// overrides. With validateOnly nothing changes and the returned topic, which
// shows what would be created, has no id.
//
// Errors, in the order they are checked: an invalid name
// (INVALID_TOPIC_EXCEPTION); an internal or reserved name (INVALID_REQUEST,
// as Kafka for __cluster_metadata: only the broker creates internal topics,
// with CreateInternal); a topic of that name (TOPIC_ALREADY_EXISTS); a name
// that differs from an existing one only by '.' versus '_'
// (INVALID_TOPIC_EXCEPTION); a nil, unknown or invalid config value, or
// cleanup.policy with compact while Defaults.AllowCompact is off (INVALID_CONFIG); partitions 0 or below -1
// (INVALID_PARTITIONS). Replication factor is the handler's to check.
func (r *Registry) Create(name string, partitions int32, configs map[string]*string, validateOnly bool) (Topic, error) {
	return r.create(name, partitions, configs, validateOnly, false)
}

// CreateInternal creates one of the internal topics (IsInternal) for a
// coordinator of the broker itself; clients cannot (Create refuses them).
// It follows Create's rules otherwise, and the topic has Internal set.
func (r *Registry) CreateInternal(name string, partitions int32, configs map[string]*string) (Topic, error) {
	if !IsInternal(name) {
		return Topic{}, errorf(kerr.InvalidRequest, "%s is not an internal topic", name)
	}
	return r.create(name, partitions, configs, false, true)
}

func (r *Registry) create(name string, partitions int32, configs map[string]*string, validateOnly, internal bool) (Topic, error) {
	if err := ValidateName(name); err != nil {
		return Topic{}, err
	}
	if !internal && isReserved(name) {
		return Topic{}, errorf(kerr.InvalidRequest, "creation of internal topic %s is prohibited", name)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.state.Load()
	if _, ok := s.byName[name]; ok {
		return Topic{}, errorf(kerr.TopicAlreadyExists, "topic '%s' already exists", name)
	}
	if other, ok := s.byKey[collisionKey(name)]; ok {
		return Topic{}, errorf(kerr.InvalidTopicException, "topic '%s' collides with existing topic: %s", name, other)
	}
	c, err := newConfigs(configs, &r.defaults)
	if err != nil {
		return Topic{}, err
	}
	if err := refuseCompact(name, c.set, &r.defaults); err != nil {
		return Topic{}, err
	}
	if partitions == -1 {
		partitions = r.defaults.NumPartitions
	}
	if partitions < 1 {
		return Topic{}, errorf(kerr.InvalidPartitions, "number of partitions was set to an invalid non-positive value")
	}
	t := &Topic{Name: name, Partitions: partitions, Configs: c, Internal: internal}
	if validateOnly {
		return *t, nil
	}
	t.ID = newID()
	for s.byID[t.ID] != nil {
		t.ID = newID()
	}
	if err := r.commitLocked(s, nil, t); err != nil {
		return Topic{}, err
	}
	return *t, nil
}

// Delete deletes a topic, as DeleteTopics does, and returns what it was.
// A missing topic is UNKNOWN_TOPIC_OR_PARTITION; an internal one
// INVALID_REQUEST (Kafka lets clients delete them; kbroker's coordinators
// depend on them).
func (r *Registry) Delete(name string) (Topic, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.state.Load()
	t, ok := s.byName[name]
	if !ok {
		return Topic{}, errorf(kerr.UnknownTopicOrPartition, "topic '%s' does not exist", name)
	}
	if t.Internal || isReserved(name) {
		return Topic{}, errorf(kerr.InvalidRequest, "deletion of internal topic %s is prohibited", name)
	}
	if err := r.commitLocked(s, t, nil); err != nil {
		return Topic{}, err
	}
	return *t, nil
}

// CreatePartitions raises a topic's partition count to total, as
// CreatePartitions does (ReplicationControlManager.createPartitions). A
// missing topic is UNKNOWN_TOPIC_OR_PARTITION; a total that is not larger
// than the current count INVALID_PARTITIONS; an internal topic
// INVALID_REQUEST (more partitions would move groups and transactional ids
// to other partitions of their coordinator topic). With validateOnly nothing
// changes; the returned topic shows the result.
func (r *Registry) CreatePartitions(name string, total int32, validateOnly bool) (Topic, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.state.Load()
	t, ok := s.byName[name]
	if !ok {
		return Topic{}, errorf(kerr.UnknownTopicOrPartition, "topic '%s' does not exist", name)
	}
	if t.Internal {
		return Topic{}, errorf(kerr.InvalidRequest, "adding partitions to internal topic %s is prohibited", name)
	}
	switch {
	case total == t.Partitions:
		return Topic{}, errorf(kerr.InvalidPartitions, "topic already has %d partition(s)", t.Partitions)
	case total < t.Partitions:
		return Topic{}, errorf(kerr.InvalidPartitions,
			"the topic %s currently has %d partition(s); %d would not be an increase", name, t.Partitions, total)
	}
	nu := *t
	nu.Partitions = total
	if validateOnly {
		return nu, nil
	}
	if err := r.commitLocked(s, t, &nu); err != nil {
		return Topic{}, err
	}
	return nu, nil
}

// AlterConfigs replaces all of a topic's config overrides with configs, as
// the legacy AlterConfigs does: a config left out returns to its default. A
// nil value is INVALID_REQUEST (ConfigAdminManager); unknown names, invalid
// values and compact are INVALID_CONFIG; a missing topic is
// UNKNOWN_TOPIC_OR_PARTITION, checked after the configs as in Kafka; the
// empty name is INVALID_REQUEST and other invalid names
// INVALID_TOPIC_EXCEPTION. With validateOnly nothing changes; the returned
// topic shows the result.
func (r *Registry) AlterConfigs(name string, configs map[string]*string, validateOnly bool) (Topic, error) {
	if err := validateResourceName(name); err != nil {
		return Topic{}, err
	}
	if err := nullValues(configs, kerr.InvalidRequest, "null value not supported for : "); err != nil {
		return Topic{}, err
	}
	raw := make(map[string]string, len(configs))
	for k, v := range configs {
		raw[k] = *v
	}
	set, err := validateSet(raw, &r.defaults)
	if err != nil {
		return Topic{}, err
	}
	if err := refuseCompact(name, set, &r.defaults); err != nil {
		return Topic{}, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.replaceConfigsLocked(name, set, validateOnly)
}

// IncrementalAlterConfigs applies SET, DELETE, APPEND and SUBTRACT
// operations to a topic's config overrides, as IncrementalAlterConfigs does
// (ConfigurationControlManager.incrementalAlterConfigResource), then
// validates the whole result. A name given twice or a nil value with an
// operation other than DELETE is INVALID_REQUEST; APPEND or SUBTRACT on a
// config that is not a LIST, unknown names, invalid values and compact are
// INVALID_CONFIG; a missing topic is UNKNOWN_TOPIC_OR_PARTITION. Deleting a
// config the topic does not set succeeds and changes nothing, as in Kafka.
// With validateOnly nothing changes; the returned topic shows the result.
func (r *Registry) IncrementalAlterConfigs(name string, ops []AlterOp, validateOnly bool) (Topic, error) {
	if err := validateResourceName(name); err != nil {
		return Topic{}, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	var cur Configs
	if t, ok := r.state.Load().byName[name]; ok {
		cur = t.Configs
	}
	raw, err := incremental(cur, ops, &r.defaults)
	if err != nil {
		return Topic{}, err
	}
	set, err := validateSet(raw, &r.defaults)
	if err != nil {
		return Topic{}, err
	}
	if err := refuseCompact(name, set, &r.defaults); err != nil {
		return Topic{}, err
	}
	return r.replaceConfigsLocked(name, set, validateOnly)
}

// validateResourceName checks the topic name of an alter-configs resource as
// ControllerConfigurationValidator.validateTopicName: the empty name would be
// a cluster-wide default, which Kafka refuses for topics with INVALID_REQUEST.
func validateResourceName(name string) error {
	if name == "" {
		return errorf(kerr.InvalidRequest, "default topic resources are not allowed")
	}
	return ValidateName(name)
}

// replaceConfigsLocked installs set, valid and canonical, as the topic's
// overrides.
func (r *Registry) replaceConfigsLocked(name string, set map[string]string, validateOnly bool) (Topic, error) {
	s := r.state.Load()
	t, ok := s.byName[name]
	if !ok {
		return Topic{}, errorf(kerr.UnknownTopicOrPartition, "topic '%s' does not exist", name)
	}
	nu := *t
	nu.Configs = resolve(set, &r.defaults)
	if validateOnly || nu.Configs.Equal(t.Configs) {
		return nu, nil
	}
	if err := r.commitLocked(s, t, &nu); err != nil {
		return Topic{}, err
	}
	return nu, nil
}

// DescribeConfigs returns every config of a topic with its value and source
// (Configs.Describe). An invalid name is INVALID_TOPIC_EXCEPTION and a
// missing topic UNKNOWN_TOPIC_OR_PARTITION, as in Kafka's ConfigHelper.
func (r *Registry) DescribeConfigs(name string) ([]ConfigEntry, error) {
	if err := ValidateName(name); err != nil {
		return nil, err
	}
	t, ok := r.Get(name)
	if !ok {
		return nil, errorf(kerr.UnknownTopicOrPartition, "topic '%s' does not exist", name)
	}
	return t.Configs.Describe(r.defaults), nil
}

// commitLocked makes the state with old replaced by nu durable, publishes
// it and tells the OnChange function. On an error nothing is published: the
// registry keeps its previous state. The file on disk is then the previous
// state or, if only the directory sync failed, possibly the new one.
func (r *Registry) commitLocked(s *snapshot, old, nu *Topic) error {
	next := s.with(old, nu)
	if err := r.persistLocked(next); err != nil {
		return err
	}
	r.state.Store(next)
	if r.onChange != nil {
		r.onChange(copyTopic(old), copyTopic(nu))
	}
	return nil
}

func copyTopic(t *Topic) *Topic {
	if t == nil {
		return nil
	}
	c := *t
	return &c
}
