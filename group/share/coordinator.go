package share

import (
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"go.uber.org/zap"
)

// LeaveEpoch is the member epoch of a heartbeat that leaves the group.
const LeaveEpoch = -1

// Coordinator runs the share groups of one broker: membership and
// assignment (heartbeat.go), share sessions (session.go) and the
// share-partitions' delivery state (partition.go), kept durable by a Store
// once one is attached. See doc.go.
type Coordinator struct {
	cfg Config
	lg  *zap.Logger
	// groupConfig returns a group's overrides; never nil.
	groupConfig func(group string) GroupConfig
	// taken reports whether a group id is used by a group of another type
	// (classic or consumer); never nil.
	taken func(group string) bool
	store atomic.Pointer[Store]
	now   func() time.Time
	// record stores a group's records after a change no request waits
	// for (expiry, an administrator's offsets) or that one waits for
	// through done; never nil.
	record func(group string, done func(error))

	mu struct {
		sync.Mutex
		closed   bool
		groups   map[string]*group
		sessions map[sessionKey]*session
		parts    map[Key]*Partition
	}
	stop chan struct{}
	wg   sync.WaitGroup
}

// Option configures a Coordinator.
type Option func(*Coordinator)

// WithGroupConfigs sets where a group's configs come from.
func WithGroupConfigs(f func(group string) GroupConfig) Option {
	return func(c *Coordinator) { c.groupConfig = f }
}

// WithTaken sets the check that a group id belongs to a group of another
// type: share groups share the group-id namespace with the others.
func WithTaken(f func(group string) bool) Option { return func(c *Coordinator) { c.taken = f } }

// WithRecorder sets how a group is recorded after a change that no
// heartbeat answers for (a member's session expired, a group created by
// AlterShareGroupOffsets, a deletion): record takes the group's state with
// Record (no group: it was deleted) and stores it, then calls done if not
// nil.
func WithRecorder(record func(group string, done func(error))) Option {
	return func(c *Coordinator) { c.record = record }
}

// WithLogger sets the logger.
func WithLogger(lg *zap.Logger) Option { return func(c *Coordinator) { c.lg = lg } }

// WithClock sets the clock (tests).
func WithClock(now func() time.Time) Option { return func(c *Coordinator) { c.now = now } }

// New starts a coordinator without durable state; SetStore attaches it.
func New(cfg Config, opts ...Option) (*Coordinator, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	c := &Coordinator{cfg: cfg, lg: zap.NewNop(), now: time.Now, stop: make(chan struct{}),
		groupConfig: func(string) GroupConfig { return GroupConfig{} }, taken: func(string) bool { return false },
		record: func(_ string, done func(error)) {
			if done != nil {
				done(nil)
			}
		}}
	for _, o := range opts {
		o(c)
	}
	c.mu.groups = map[string]*group{}
	c.mu.sessions = map[sessionKey]*session{}
	c.mu.parts = map[Key]*Partition{}
	c.wg.Add(1)
	go c.expireLoop()
	return c, nil
}

// SetStore attaches the durable store and loads the share-partitions it
// holds (at start-up, before any request).
func (c *Coordinator) SetStore(s *Store) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k, st := range s.States() {
		c.mu.parts[k] = restorePartition(st, c.cfg.PartitionMaxRecordLocks, c.cfg.DeliveryCountLimit)
		// The group comes back empty: members rejoin after a restart
		// (membership is not stored; see doc.go).
		if c.mu.groups[k.Group] == nil {
			c.mu.groups[k.Group] = newGroup(k.Group)
		}
	}
	c.store.Store(s)
}

// Store is the attached store, or nil.
func (c *Coordinator) Store() *Store { return c.store.Load() }

// Close stops the expiry loop.
func (c *Coordinator) Close() {
	c.mu.Lock()
	if c.mu.closed {
		c.mu.Unlock()
		return
	}
	c.mu.closed = true
	c.mu.Unlock()
	close(c.stop)
	c.wg.Wait()
}

// expireLoop removes members whose session timed out.
func (c *Coordinator) expireLoop() {
	defer c.wg.Done()
	t := time.NewTicker(c.cfg.CheckInterval)
	defer t.Stop()
	for {
		select {
		case <-c.stop:
			return
		case <-t.C:
			c.expireMembers()
		}
	}
}

// expireMembers removes the members past their session deadline.
func (c *Coordinator) expireMembers() {
	now := c.now()
	type gone struct{ group, member string }
	var out []gone
	c.mu.Lock()
	for _, g := range c.mu.groups {
		for id, m := range g.members {
			if now.After(m.expires) {
				out = append(out, gone{g.id, id})
			}
		}
	}
	for _, x := range out {
		c.lg.Info("share group member session expired", zap.String("group", x.group), zap.String("member", x.member))
		c.removeMemberLocked(c.mu.groups[x.group], x.member)
	}
	c.mu.Unlock()
	for _, x := range out {
		c.record(x.group, nil)
		c.releaseMember(x.group, x.member)
	}
}

// removeMemberLocked takes a member out of its group and drops its share
// session; the caller releases its records (releaseMember) after
// unlocking.
func (c *Coordinator) removeMemberLocked(g *group, id string) {
	if g == nil || g.members[id] == nil {
		return
	}
	delete(g.members, id)
	g.epoch++
	g.changes++
	delete(c.mu.sessions, sessionKey{g.id, id})
}

// releaseMember releases the records member holds in every share-partition
// of the group and stores the changed states.
func (c *Coordinator) releaseMember(groupID, memberID string) {
	keys := c.groupPartitions(groupID)
	for _, k := range keys {
		c.mu.Lock()
		p := c.mu.parts[k]
		c.mu.Unlock()
		if p != nil {
			p.ReleaseMember(memberID)
		}
	}
	c.Persist(keys, nil)
}

// groupPartitions lists the keys of a group's share-partitions.
func (c *Coordinator) groupPartitions(groupID string) []Key {
	c.mu.Lock()
	defer c.mu.Unlock()
	var keys []Key
	for k := range c.mu.parts {
		if k.Group == groupID {
			keys = append(keys, k)
		}
	}
	return keys
}

// Persist stores the states of the share-partitions of keys that changed
// since last stored, then calls done (if not nil) with the first error.
// Without a store it calls done(nil) at once.
func (c *Coordinator) Persist(keys []Key, done func(error)) {
	s := c.store.Load()
	if done == nil {
		done = func(error) {}
	}
	if s == nil {
		done(nil)
		return
	}
	var (
		mu      sync.Mutex
		pending = 1
		first   error
	)
	finish := func(err error) {
		mu.Lock()
		if err != nil && first == nil {
			first = err
		}
		pending--
		last := pending == 0
		mu.Unlock()
		if last {
			done(first)
		}
	}
	for _, k := range keys {
		c.mu.Lock()
		p := c.mu.parts[k]
		c.mu.Unlock()
		if p == nil {
			continue
		}
		st, version, changed := p.State()
		if !changed {
			continue
		}
		mu.Lock()
		pending++
		mu.Unlock()
		s.Write(k, st, func(err error) {
			if err == nil {
				p.Stored(version)
			} else {
				c.lg.Warn("share-partition state not stored", zap.Stringer("key", k), zap.Error(err))
			}
			finish(err)
		})
	}
	finish(nil)
}

// Partition returns the share-partition of k, creating it when the group
// first fetches it: it starts at start(reset), where reset is the group's
// share.auto.offset.reset. A new partition is stored by the next Persist.
func (c *Coordinator) Partition(k Key, start func(earliest bool) int64) *Partition {
	c.mu.Lock()
	p := c.mu.parts[k]
	c.mu.Unlock()
	if p != nil {
		return p
	}
	earliest := c.groupConfig(k.Group).AutoOffsetReset == "earliest"
	off := start(earliest)
	c.mu.Lock()
	defer c.mu.Unlock()
	if p = c.mu.parts[k]; p == nil {
		p = newPartition(off, 0, c.cfg.PartitionMaxRecordLocks, c.cfg.DeliveryCountLimit)
		c.mu.parts[k] = p
	}
	return p
}

// Existing returns the share-partition of k, or nil if the group never
// fetched it.
func (c *Coordinator) Existing(k Key) *Partition {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.mu.parts[k]
}

// LockDuration is the acquisition lock duration for group.
func (c *Coordinator) LockDuration(groupID string) time.Duration {
	if d := c.groupConfig(groupID).RecordLockDuration; d > 0 {
		return d
	}
	return c.cfg.RecordLockDuration
}

// Now is the coordinator's clock.
func (c *Coordinator) Now() time.Time { return c.now() }

// Has reports whether a share group of that id exists.
func (c *Coordinator) Has(groupID string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.mu.groups[groupID] != nil
}

// Listing is one group in ListGroups.
type Listing struct {
	Group, State string
}

// List lists the share groups, sorted by id.
func (c *Coordinator) List() []Listing {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]Listing, 0, len(c.mu.groups))
	for _, g := range c.mu.groups {
		out = append(out, Listing{Group: g.id, State: g.state()})
	}
	slices.SortFunc(out, func(a, b Listing) int {
		switch {
		case a.Group < b.Group:
			return -1
		case a.Group > b.Group:
			return 1
		}
		return 0
	})
	return out
}

// Delete deletes an empty share group and its share-partition states:
// GROUP_ID_NOT_FOUND if there is no such group, NON_EMPTY_GROUP while it
// has members. done hears when the deletion is durable.
func (c *Coordinator) Delete(groupID string, done func(error)) {
	c.mu.Lock()
	g := c.mu.groups[groupID]
	if g == nil {
		c.mu.Unlock()
		done(kerr.GroupIDNotFound)
		return
	}
	if len(g.members) > 0 {
		c.mu.Unlock()
		done(kerr.NonEmptyGroup)
		return
	}
	delete(c.mu.groups, groupID)
	var keys []Key
	for k := range c.mu.parts {
		if k.Group == groupID {
			keys = append(keys, k)
			delete(c.mu.parts, k)
		}
	}
	c.mu.Unlock()
	// The group's records and its share-partition states go together;
	// done hears the first failure of either.
	both := joinDone(2, done)
	c.record(groupID, both)
	c.deleteStates(keys, both)
}

// joinDone returns a callback that calls done once it was called n
// times, with the first error (done may be nil).
func joinDone(n int, done func(error)) func(error) {
	if done == nil {
		done = func(error) {}
	}
	var (
		mu    sync.Mutex
		first error
	)
	return func(err error) {
		mu.Lock()
		if err != nil && first == nil {
			first = err
		}
		n--
		last := n == 0
		mu.Unlock()
		if last {
			done(first)
		}
	}
}

// deleteStates writes tombstones for keys; done hears the first error.
func (c *Coordinator) deleteStates(keys []Key, done func(error)) {
	s := c.store.Load()
	if s == nil || len(keys) == 0 {
		done(nil)
		return
	}
	var (
		mu      sync.Mutex
		pending = len(keys)
		first   error
	)
	for _, k := range keys {
		s.Delete(k, func(err error) {
			mu.Lock()
			if err != nil && first == nil {
				first = err
			}
			pending--
			last := pending == 0
			mu.Unlock()
			if last {
				done(first)
			}
		})
	}
}
