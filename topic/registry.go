package topic

import (
	"errors"
	"fmt"
	"maps"
	"path/filepath"
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
	dir string
	// defaults are the broker-level values topics inherit; guarded by mu
	// (SetDefaults changes them at run time).
	defaults Defaults
	onChange func(old, new *Topic) // set at Open, then read-only

	state atomic.Pointer[snapshot] // the durable state; written under pubMu, read by anyone

	mu sync.Mutex // serializes mutations: validate, append to the journal
	// head is the state with every accepted mutation, durable or not; new
	// mutations are validated against it. Guarded by mu.
	head *snapshot
	// journal holds the mutations since the topics file; replaced (under
	// mu) by a compaction once it is longer than compactBytes (tests
	// lower it).
	journal      *journal
	compactBytes int64
	// crashHook, set only by tests, is called at each step of a write
	// (log.WriteFileAtomicHooked, and "journal-written" for a journal
	// append); when it returns errCrash the write stops there as if the
	// process had died.
	crashHook func(step, tempPath string) error // guarded by mu

	// pubMu orders publication: accepted changes become visible (state)
	// and are told to onChange in the order they were accepted, once
	// durable. Lock order: mu, then pubMu.
	pubMu   sync.Mutex
	pending []*change // guarded by pubMu; appended under mu too
}

// change is one accepted mutation waiting to be durable and published.
type change struct {
	j        *journal
	end      int64 // durable once j.synced reaches it
	snap     *snapshot
	old, new *Topic
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
	r := &Registry{dir: dir, defaults: defaults, compactBytes: journalCompactBytes}
	for _, o := range opts {
		o(r)
	}
	s, base, found, err := load(dir, &r.defaults)
	if err != nil {
		return nil, err
	}
	recs, tail, err := readJournal(dir, base)
	if err != nil {
		return nil, err
	}
	if s, err = replay(s, recs, filepath.Join(dir, journalName), &r.defaults); err != nil {
		return nil, err
	}
	if r.journal, err = r.startJournal(s, base, found, len(recs), tail); err != nil {
		return nil, err
	}
	r.head = s
	r.state.Store(s)
	return r, nil
}

// startJournal compacts at Open: the topics file takes in the journal's
// records (or is written for the first time), and an empty journal based
// on it starts, so that start-up never replays a long one. When that
// cannot be written (a full disk: a restart must need no space), the
// existing journal is appended to where its records end if the topics
// file on disk is still the one it follows; otherwise the registry opens
// without a journal, and each mutation tries to start one (failing, with
// the disk's error, while there is no space).
func (r *Registry) startJournal(s *snapshot, base journalBase, found bool, records int, tail int64) (*journal, error) {
	rewrite := records > 0 || !found
	newBase := base
	var err error
	if rewrite {
		newBase, err = r.persistLocked(s)
	}
	if err == nil && r.crashHook != nil {
		err = r.crashHook("journal-create", filepath.Join(r.dir, journalName))
	}
	if err == nil {
		var j *journal
		if j, err = createJournal(r.dir, newBase); err == nil {
			return j, nil
		}
	}
	// Nothing new could be written. Without a rewrite attempted, the
	// journal on disk still follows the topics file: append to it. After
	// one (which may have replaced the file before failing), only a new
	// journal is safe; each mutation tries to start it.
	if tail > 0 && !rewrite {
		return openJournal(r.dir, tail)
	}
	return missingJournal(r.dir, err), nil
}

// missingJournal stands for a journal that could not be created: its
// sticky error fails appends until a mutation starts a real one.
func missingJournal(dir string, cause error) *journal {
	j := &journal{path: filepath.Join(dir, journalName)}
	failed := fmt.Errorf("topic: no journal to record changes in: %w", cause)
	j.err.Store(&failed)
	return j
}

// Close closes the journal. Mutations after Close fail; lookups go on.
func (r *Registry) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.journal == nil {
		return nil
	}
	err := r.journal.retireLocked()
	closed := errors.New("topic: registry closed")
	r.journal.err.Store(&closed)
	return err
}

// replay applies journal records to s.
func replay(s *snapshot, recs []journalRecord, path string, d *Defaults) (*snapshot, error) {
	if len(recs) == 0 {
		return s, nil
	}
	// One private copy changed in place, sorted once at the end: a copy
	// per record (snapshot.with) made replaying 2,000 creations cost a
	// third of a second of start-up.
	n := emptySnapshot()
	for _, t := range s.sorted {
		n.add(t)
	}
	for i, rec := range recs {
		corrupt := func(format string, args ...any) error {
			return &CorruptionError{File: path, Reason: fmt.Sprintf("record %d: ", i) + fmt.Sprintf(format, args...)}
		}
		if rec.Del != "" {
			old, ok := n.byName[rec.Del]
			if !ok {
				return nil, corrupt("deletes topic %s, which does not exist", rec.Del)
			}
			n.remove(old)
			continue
		}
		if reason := checkFileTopic(rec.Put); reason != "" {
			return nil, corrupt("%s", reason)
		}
		t, err := fromFile(rec.Put, d)
		if err != nil {
			return nil, corrupt("topic %s: %v", rec.Put.Name, err)
		}
		if old, ok := n.byName[t.Name]; ok {
			n.remove(old)
		}
		n.byName[t.Name] = t
		n.byID[t.ID] = t
		n.byKey[collisionKey(t.Name)] = t.Name
	}
	n.sorted = n.sorted[:0]
	for _, t := range n.byName {
		n.sorted = append(n.sorted, t)
	}
	slices.SortFunc(n.sorted, func(a, b *Topic) int { return strings.Compare(a.Name, b.Name) })
	return n, nil
}

// remove takes t out of the maps of a snapshot being built (replay); the
// caller rebuilds sorted.
func (s *snapshot) remove(t *Topic) {
	delete(s.byName, t.Name)
	delete(s.byID, t.ID)
	if s.byKey[collisionKey(t.Name)] == t.Name {
		delete(s.byKey, collisionKey(t.Name))
	}
}

// Defaults returns the broker-level defaults the registry resolves topics with.
func (r *Registry) Defaults() Defaults {
	r.mu.Lock()
	defer r.mu.Unlock()
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
	r.mu.Lock()
	locked := true
	defer func() {
		if locked {
			r.mu.Unlock()
		}
	}()
	s := r.head
	if _, ok := s.byName[name]; ok {
		// Also for an internal topic the coordinators created: Kafka's
		// CreateTopics of an existing __consumer_offsets is
		// TOPIC_ALREADY_EXISTS, like any existing topic's.
		locked = false
		r.settleUnlock()
		return Topic{}, errorf(kerr.TopicAlreadyExists, "topic '%s' already exists", name)
	}
	if !internal && isReserved(name) {
		return Topic{}, errorf(kerr.InvalidRequest, "creation of internal topic %s is prohibited", name)
	}
	if other, ok := s.byKey[collisionKey(name)]; ok {
		locked = false
		r.settleUnlock()
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
	ch, err := r.commitLocked(s, nil, t)
	if err != nil {
		return Topic{}, err
	}
	locked = false
	r.mu.Unlock()
	if err := r.await(ch); err != nil {
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
	s := r.head
	t, ok := s.byName[name]
	if !ok {
		r.settleUnlock()
		return Topic{}, errorf(kerr.UnknownTopicOrPartition, "topic '%s' does not exist", name)
	}
	if t.Internal || isReserved(name) {
		r.mu.Unlock()
		return Topic{}, errorf(kerr.InvalidRequest, "deletion of internal topic %s is prohibited", name)
	}
	c, err := r.commitLocked(s, t, nil)
	r.mu.Unlock()
	if err == nil {
		err = r.await(c)
	}
	if err != nil {
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
	locked := true
	defer func() {
		if locked {
			r.mu.Unlock()
		}
	}()
	s := r.head
	t, ok := s.byName[name]
	if !ok {
		locked = false
		r.settleUnlock()
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
	c, err := r.commitLocked(s, t, &nu)
	if err != nil {
		return Topic{}, err
	}
	locked = false
	r.mu.Unlock()
	if err := r.await(c); err != nil {
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
	r.mu.Lock() // r.defaults may change (SetDefaults)
	set, err := validateSet(raw, &r.defaults)
	if err == nil {
		err = refuseCompact(name, set, &r.defaults)
	}
	if err != nil {
		r.mu.Unlock()
		return Topic{}, err
	}
	t, c, err := r.replaceConfigsLocked(name, set, validateOnly)
	r.mu.Unlock()
	return r.finish(t, c, err)
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
	var cur Configs
	if t, ok := r.head.byName[name]; ok {
		cur = t.Configs
	}
	raw, err := incremental(cur, ops, &r.defaults)
	if err != nil {
		r.mu.Unlock()
		return Topic{}, err
	}
	set, err := validateSet(raw, &r.defaults)
	if err != nil {
		r.mu.Unlock()
		return Topic{}, err
	}
	if err := refuseCompact(name, set, &r.defaults); err != nil {
		r.mu.Unlock()
		return Topic{}, err
	}
	t, c, err := r.replaceConfigsLocked(name, set, validateOnly)
	r.mu.Unlock()
	return r.finish(t, c, err)
}

// settleUnlock unlocks mu and waits until every change accepted so far is
// durable and published, so that an answer derived from the head state (a
// topic that exists, or does not) agrees with lookups when it is given: a
// client told TOPIC_ALREADY_EXISTS finds the topic in Metadata. The caller
// holds mu.
func (r *Registry) settleUnlock() {
	r.pubMu.Lock()
	var last *change
	if n := len(r.pending); n > 0 {
		last = r.pending[n-1]
	}
	r.pubMu.Unlock()
	r.mu.Unlock()
	if last != nil {
		_ = r.await(last) // its own waiter reports a failure
	}
}

// finish waits for c, if there is a change, and returns t.
func (r *Registry) finish(t Topic, c *change, err error) (Topic, error) {
	if err == nil && c != nil {
		err = r.await(c)
	}
	if err != nil {
		return Topic{}, err
	}
	return t, nil
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
// overrides; the caller awaits the returned change, if any, after
// unlocking.
func (r *Registry) replaceConfigsLocked(name string, set map[string]string, validateOnly bool) (Topic, *change, error) {
	s := r.head
	t, ok := s.byName[name]
	if !ok {
		return Topic{}, nil, errorf(kerr.UnknownTopicOrPartition, "topic '%s' does not exist", name)
	}
	nu := *t
	nu.Configs = resolve(set, &r.defaults)
	if validateOnly || nu.Configs.Equal(t.Configs) {
		return nu, nil, nil
	}
	c, err := r.commitLocked(s, t, &nu)
	if err != nil {
		return Topic{}, nil, err
	}
	return nu, c, nil
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
	return t.Configs.Describe(r.Defaults()), nil
}

// SetDefaults replaces the broker-level defaults at run time (dynamic
// broker configs: AlterConfigs on the BROKER resource, as Kafka's
// DynamicLogConfig) and re-resolves every topic: a topic that does not
// override a changed config takes the new value at once, and OnChange hears
// of every topic whose effective configs changed, so partitions apply them.
// The topics file holds only overrides, so nothing is written. defaults
// must pass Defaults.Validate.
func (r *Registry) SetDefaults(defaults Defaults) error {
	if err := defaults.Validate(); err != nil {
		return err
	}
	defaults.Explicit = maps.Clone(defaults.Explicit)
	defaults.Dynamic = maps.Clone(defaults.Dynamic)
	r.mu.Lock()
	defer r.mu.Unlock()
	// Changes accepted before this one were resolved against the old
	// defaults: let them publish first, or publishing one later would put
	// its stale snapshot back over the re-resolved state. Holding mu, no
	// new change is accepted meanwhile, so head and state then agree.
	r.pubMu.Lock()
	var last *change
	if n := len(r.pending); n > 0 {
		last = r.pending[n-1]
	}
	r.pubMu.Unlock()
	if last != nil {
		if err := r.await(last); err != nil {
			return err
		}
	}
	r.defaults = defaults
	s := r.head
	next := emptySnapshot()
	type reresolved struct{ old, nu *Topic }
	var changes []reresolved
	for _, t := range s.sorted {
		nu := *t
		nu.Configs = resolve(t.Configs.set, &r.defaults)
		if nu.Configs.sameEffective(t.Configs) {
			next.add(t)
			continue
		}
		next.add(&nu)
		changes = append(changes, reresolved{t, &nu})
	}
	r.head = next
	r.state.Store(next)
	if r.onChange != nil {
		for _, c := range changes {
			r.onChange(copyTopic(c.old), copyTopic(c.nu))
		}
	}
	return nil
}

// commitLocked accepts the state with old replaced by nu: it appends the
// change to the journal (compacting the journal first when it is long),
// makes it the head and queues it for publication. The caller unlocks mu
// and then calls await, which returns once the change is durable and
// published. On an error nothing changed.
func (r *Registry) commitLocked(s *snapshot, old, nu *Topic) (*change, error) {
	next := s.with(old, nu)
	if r.journal.f == nil || r.journal.tail.Load() > r.compactBytes {
		// Compact a long journal, or start the one Open could not.
		if err := r.compactLocked(); err != nil {
			return nil, err
		}
	}
	rec := journalRecord{Del: ""}
	if nu != nil {
		ft := toFile(nu)
		rec.Put = &ft
	} else {
		rec.Del = old.Name
	}
	var hook func(string) error
	if r.crashHook != nil {
		hook = func(step string) error { return r.crashHook(step, r.journal.path) }
	}
	end, err := r.journal.appendLocked(rec, hook)
	if err != nil {
		return nil, err
	}
	c := &change{j: r.journal, end: end, snap: next, old: copyTopic(old), new: copyTopic(nu)}
	r.head = next
	r.pubMu.Lock()
	r.pending = append(r.pending, c)
	r.pubMu.Unlock()
	return c, nil
}

// compactLocked writes the head to the topics file and starts an empty
// journal based on it. Changes in the old journal that are not yet durable
// are, once the topics file is: their waiters find them so.
func (r *Registry) compactLocked() error {
	if e := r.journal.err.Load(); e != nil && r.journal.f != nil {
		return *e
	}
	base, err := r.persistLocked(r.head)
	if err != nil {
		return err
	}
	j, err := createJournal(r.dir, base)
	if err != nil {
		return err
	}
	old := r.journal
	r.journal = j
	return old.retireLocked()
}

// await waits until c is durable, then publishes every durable change in
// order (state and onChange), c among them. Concurrent mutations share the
// journal's fdatasync calls.
func (r *Registry) await(c *change) error {
	if err := c.j.sync(c.end); err != nil {
		return err
	}
	r.pubMu.Lock()
	defer r.pubMu.Unlock()
	for len(r.pending) > 0 {
		p := r.pending[0]
		if p.j.synced.Load() < p.end {
			break
		}
		r.pending[0] = nil
		r.pending = r.pending[1:]
		r.state.Store(p.snap)
		if r.onChange != nil {
			r.onChange(copyTopic(p.old), copyTopic(p.new))
		}
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
