package group

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime/pprof"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kbroker/kbroker/group/grouperr"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kbroker/kbroker/group/consumer"
)

// Config holds the classic group settings. Each field's kafka tag is its
// Kafka broker property; DefaultConfig has Kafka 3.x/4.x's defaults
// (GroupCoordinatorConfig.java).
type Config struct {
	// InitialRebalanceDelay is how long the first rebalance of an Empty
	// group waits for more members; each member that joins meanwhile
	// extends it by up to the same delay, within the group's rebalance
	// timeout (InitialDelayedJoin). Zero is allowed (tests use it).
	InitialRebalanceDelay time.Duration `kafka:"group.initial.rebalance.delay.ms"`
	// MinSessionTimeout and MaxSessionTimeout bound the session timeout
	// a JoinGroup may ask for (INVALID_SESSION_TIMEOUT outside).
	MinSessionTimeout time.Duration `kafka:"group.min.session.timeout.ms"`
	MaxSessionTimeout time.Duration `kafka:"group.max.session.timeout.ms"`
	// MaxSize is the most members a group may have
	// (GROUP_MAX_SIZE_REACHED); Kafka's default is Integer.MAX_VALUE.
	MaxSize int `kafka:"group.max.size"`
	// Consumer holds the settings of consumer-protocol (KIP-848) groups,
	// which the Coordinator keeps in a consumer.Coordinator sharing its
	// group-id namespace.
	Consumer consumer.Config
}

// DefaultConfig returns Kafka's defaults: a 3 s initial rebalance delay,
// session timeouts between 6 s and 30 min, and no practical size limit.
func DefaultConfig() Config {
	return Config{
		InitialRebalanceDelay: 3 * time.Second,
		MinSessionTimeout:     6 * time.Second,
		MaxSessionTimeout:     30 * time.Minute,
		MaxSize:               math.MaxInt32,
		Consumer:              consumer.DefaultConfig(),
	}
}

// Validate reports every invalid setting at once.
func (c *Config) Validate() error {
	var errs []error
	if c.InitialRebalanceDelay < 0 {
		errs = append(errs, fmt.Errorf("group: group.initial.rebalance.delay.ms %v is negative", c.InitialRebalanceDelay))
	}
	if c.MinSessionTimeout <= 0 {
		errs = append(errs, fmt.Errorf("group: group.min.session.timeout.ms %v must be positive", c.MinSessionTimeout))
	}
	if c.MaxSessionTimeout < c.MinSessionTimeout {
		errs = append(errs, fmt.Errorf("group: group.max.session.timeout.ms %v is below group.min.session.timeout.ms %v",
			c.MaxSessionTimeout, c.MinSessionTimeout))
	}
	if c.MaxSize < 1 {
		errs = append(errs, fmt.Errorf("group: group.max.size %d must be at least 1", c.MaxSize))
	}
	if err := c.Consumer.Validate(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// Option configures a Coordinator's dependencies.
type Option func(*Coordinator)

// WithStateHook registers fn to hear when a group becomes Stable (a
// generation got its assignment), Empty (its last member left or expired,
// or a rebalance ended with no member) or Dead (deleted). The offsets
// layer uses it: it records each generation, as Kafka writes group
// metadata, and an Empty group's offsets start to age
// (offsets.retention.minutes). fn runs after
// the group's lock is released, on the goroutine that caused the change; it
// must not block, and since the group may have changed again by then, it
// should treat the call as a hint and re-check with Describe if it matters.
// Creating a group (Empty from the start) is not reported.
func WithStateHook(fn func(groupID string, s State)) Option {
	return func(c *Coordinator) { c.onState = fn }
}

// WithConsumerChangeHook registers fn as the change hook of the consumer
// coordinator (consumer.WithChangeHook): it hears of every change of a
// consumer group that its records show, to persist them.
func WithConsumerChangeHook(fn func(groupID string)) Option {
	return func(c *Coordinator) { c.onConsumerChange = fn }
}

// Coordinator holds the classic groups of the broker, in memory, and the
// consumer.Coordinator of its consumer-protocol groups (Consumer), with
// which it shares the group-id namespace: an id names a group of one kind
// at a time.
//
// Join and Sync complete through a callback, because they park until the
// rest of the group catches up; the other calls answer at once. See doc.go.
type Coordinator struct {
	cfg     Config
	onState func(groupID string, s State)
	// onConsumerChange is the consumer coordinator's change hook.
	onConsumerChange func(groupID string)
	consumer         *consumer.Coordinator
	// replaced hears of Empty classic groups deleted for a consumer group
	// (SetOffsetsHooks).
	replaced atomic.Pointer[func(groupID string)]

	// wg counts calls and timer callbacks in progress, so that Close can
	// wait for them. Add happens under mu while not closed.
	wg sync.WaitGroup

	mu struct {
		sync.Mutex
		closed bool
		groups map[string]*group
	}
}

// New returns a Coordinator with no groups, or the error of cfg.Validate.
func New(cfg Config, opts ...Option) (*Coordinator, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	c := &Coordinator{cfg: cfg}
	for _, o := range opts {
		o(c)
	}
	c.mu.groups = make(map[string]*group)
	copts := []consumer.Option{consumer.WithClassic(classicSide{c})}
	if c.onConsumerChange != nil {
		copts = append(copts, consumer.WithChangeHook(c.onConsumerChange))
	}
	cc, err := consumer.New(cfg.Consumer, copts...)
	if err != nil {
		return nil, err
	}
	c.consumer = cc
	return c, nil
}

// Consumer is the coordinator of the consumer-protocol (KIP-848) groups.
func (c *Coordinator) Consumer() *consumer.Coordinator { return c.consumer }

// OffsetsHooks connect the coordinators to the committed offsets, once
// the offsets layer is there. HasOffsets is called with coordinator locks
// held: it must be quick and must not call the coordinators.
type OffsetsHooks struct {
	// HasOffsets tells whether a group has committed offsets: an Empty
	// consumer group without any is deleted after a while (see
	// consumer.Coordinator.SetOffsetsProbe).
	HasOffsets func(groupID string) bool
	// ClassicReplaced hears that an Empty classic group was deleted so
	// that a consumer group could have its id; its group metadata should
	// go (Kafka writes the classic group's tombstone), its offsets stay.
	ClassicReplaced func(groupID string)
}

// SetOffsetsHooks sets the hooks (each may be nil).
func (c *Coordinator) SetOffsetsHooks(h OffsetsHooks) {
	if h.HasOffsets != nil {
		c.consumer.SetOffsetsProbe(h.HasOffsets)
	}
	if h.ClassicReplaced != nil {
		c.replaced.Store(&h.ClassicReplaced)
	}
}

// Close stops the coordinator: it waits for calls and timers in progress,
// stops every timer and answers every parked JoinGroup and SyncGroup with
// NOT_COORDINATOR (as Kafka does when it unloads a group), so clients look
// for the coordinator again. Later calls get COORDINATOR_NOT_AVAILABLE.
// Groups keep their state (no hook runs): shutting down is not deleting.
// Close must not be called from a Join or Sync callback.
func (c *Coordinator) Close() {
	c.consumer.Close()
	c.mu.Lock()
	if c.mu.closed {
		c.mu.Unlock()
		return
	}
	c.mu.closed = true
	c.mu.Unlock()
	// Calls that entered before may still create groups and timers:
	// look at the groups only once they are done.
	c.wg.Wait()
	c.mu.Lock()
	groups := make([]*group, 0, len(c.mu.groups))
	for _, g := range c.mu.groups {
		groups = append(groups, g)
	}
	c.mu.Unlock()
	for _, g := range groups {
		g.run(func(e *effects) {
			g.stopTimersLocked()
			for _, m := range g.mu.members {
				g.completeJoinLocked(m, joinError(m.id, kerr.NotCoordinator), e)
				g.completeSyncLocked(m, SyncResponse{Err: kerr.NotCoordinator}, e)
			}
		})
	}
}

// enter registers a call or timer callback with wg, or reports false once
// the coordinator is closed.
func (c *Coordinator) enter() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.mu.closed {
		return false
	}
	c.wg.Add(1)
	return true
}

// afterFunc runs f after d on a timer goroutine owned by the coordinator:
// Close waits for it, and after Close it does nothing.
func (c *Coordinator) afterFunc(d time.Duration, f func()) *time.Timer {
	return time.AfterFunc(d, func() {
		if !c.enter() {
			return
		}
		defer c.wg.Done()
		pprof.Do(context.Background(), pprof.Labels("group", "timer"), func(context.Context) { f() })
	})
}

// lockGroup returns the group with its lock held, creating an Empty one if
// create is set, or nil if there is none. A group found Dead was deleted
// (and removed from the map) while we waited for its lock: look again.
// Creating a group first takes the id from the consumer coordinator: an
// Empty consumer group is deleted for it (Kafka's
// maybeDeleteEmptyConsumerGroup), and one with members is
// consumer.ErrClassicConflict, the only error.
func (c *Coordinator) lockGroup(id string, create bool) (*group, error) {
	for {
		c.mu.Lock()
		g := c.mu.groups[id]
		c.mu.Unlock()
		if g == nil {
			if !create {
				return nil, nil
			}
			err := c.consumer.ReleaseForClassic(id, func() {
				c.mu.Lock()
				defer c.mu.Unlock()
				if c.mu.groups[id] == nil {
					c.mu.groups[id] = newGroup(c, id)
				}
			})
			if err != nil {
				return nil, err
			}
			continue
		}
		g.mu.Lock()
		if g.mu.state != Dead {
			return g, nil
		}
		g.mu.Unlock()
	}
}

// classicSide is the Coordinator as the consumer coordinator sees it: the
// classic half of the group-id namespace.
type classicSide struct{ c *Coordinator }

// TakeOver deletes an Empty classic group so that a consumer group can
// have its id (maybeDeleteEmptyClassicGroup: the committed offsets stay);
// a classic group with members keeps it, as Kafka's validateOnlineUpgrade
// refuses when online migration is off (kbroker does not migrate groups).
// The state hook (Dead) and OffsetsHooks.ClassicReplaced run in after,
// once the consumer coordinator released its lock.
func (s classicSide) TakeOver(id string) (after func(), err error) {
	c := s.c
	if !c.enter() {
		return nil, kerr.CoordinatorNotAvailable
	}
	defer c.wg.Done()
	var e effects
	c.mu.Lock()
	defer c.mu.Unlock()
	g := c.mu.groups[id]
	if g == nil {
		return nil, nil
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.mu.state != Empty {
		return nil, grouperr.New(kerr.GroupIDNotFound, fmt.Sprintf("Cannot upgrade classic group %s to consumer group because the online upgrade is not supported.", id))
	}
	g.stopTimersLocked()
	g.transitionLocked(Dead, &e)
	delete(c.mu.groups, id)
	if fn := c.replaced.Load(); fn != nil {
		e.add(func() { (*fn)(id) })
	}
	return e.run, nil
}

// Exists reports whether a classic group holds the id.
func (s classicSide) Exists(id string) bool {
	s.c.mu.Lock()
	defer s.c.mu.Unlock()
	return s.c.mu.groups[id] != nil
}

// Overview is a group as ListGroups shows it.
type Overview struct {
	Group        string
	ProtocolType string // "" until a member joined
	State        State
}

// List returns the groups, sorted by id. With states, only groups in one of
// them, compared without regard to case as Kafka does ("stable" matches
// Stable; an unknown name matches nothing). Every group here is a classic
// group: a ListGroups v5 type filter without "classic" matches none.
func (c *Coordinator) List(states []string) ([]Overview, error) {
	if !c.enter() {
		return nil, kerr.CoordinatorNotAvailable
	}
	defer c.wg.Done()
	c.mu.Lock()
	groups := make([]*group, 0, len(c.mu.groups))
	for _, g := range c.mu.groups {
		groups = append(groups, g)
	}
	c.mu.Unlock()
	var out []Overview
	for _, g := range groups {
		g.mu.Lock()
		o := Overview{Group: g.id, ProtocolType: g.mu.protocolType, State: g.mu.state}
		g.mu.Unlock()
		if o.State == Dead {
			continue // deleted meanwhile
		}
		if len(states) > 0 && !slices.ContainsFunc(states, func(s string) bool { return strings.EqualFold(s, o.State.String()) }) {
			continue
		}
		out = append(out, o)
	}
	slices.SortFunc(out, func(a, b Overview) int { return strings.Compare(a.Group, b.Group) })
	return out, nil
}

// Description is a group as DescribeGroups shows it.
type Description struct {
	Group        string
	State        State
	ProtocolType string
	// Generation is the current generation (0 before the first).
	Generation int32
	// Leader is the leader's member id, "" without members.
	Leader string
	// Protocol is the selected protocol, reported only while Stable.
	Protocol string
	Members  []MemberDescription
}

// MemberDescription is one member in a Description. Metadata is set only
// while the group is Stable; Assignment always, the one of the member's
// last SyncGroup, kept through a rebalance until the generation is
// abandoned (Kafka 4's ClassicGroupMember.describeNoMetadata; Kafka 3.x's
// summaryNoMetadata left it out). The slices are shared: do not modify
// them.
type MemberDescription struct {
	MemberID   string
	InstanceID string
	ClientID   string
	ClientHost string
	Metadata   []byte
	Assignment []byte
}

// Describe returns the group's state and members. A group that does not
// exist is described as Dead with no error, as Kafka does.
func (c *Coordinator) Describe(groupID string) (Description, error) {
	if !c.enter() {
		return Description{Group: groupID}, kerr.CoordinatorNotAvailable
	}
	defer c.wg.Done()
	g, _ := c.lockGroup(groupID, false)
	if g == nil {
		return Description{Group: groupID, State: Dead}, nil
	}
	defer g.mu.Unlock()
	d := Description{Group: groupID, State: g.mu.state, ProtocolType: g.mu.protocolType, Generation: g.mu.generation, Leader: g.mu.leader}
	stable := g.mu.state == Stable
	if stable {
		d.Protocol = g.mu.protocolName
	}
	for _, m := range g.mu.members {
		md := MemberDescription{MemberID: m.id, InstanceID: m.instanceID, ClientID: m.clientID, ClientHost: m.clientHost,
			Assignment: m.assignment}
		if stable {
			md.Metadata = m.metadata(g.mu.protocolName)
		}
		d.Members = append(d.Members, md)
	}
	return d, nil
}

// Delete deletes an Empty group: it becomes Dead, leaves the coordinator
// and the state hook hears of it. A group with members gets NON_EMPTY_GROUP,
// a missing one GROUP_ID_NOT_FOUND (GroupCoordinator.handleDeleteGroups,
// ClassicGroup.validateDeleteGroup). The empty group id is valid here, so
// that such a group can be cleaned up.
func (c *Coordinator) Delete(groupID string) error {
	if !c.enter() {
		return kerr.CoordinatorNotAvailable
	}
	defer c.wg.Done()
	var e effects
	err := func() error {
		// Lock order: Coordinator.mu, then group.mu.
		c.mu.Lock()
		defer c.mu.Unlock()
		g := c.mu.groups[groupID]
		if g == nil {
			return kerr.GroupIDNotFound
		}
		g.mu.Lock()
		defer g.mu.Unlock()
		switch g.mu.state {
		case Dead:
			return kerr.GroupIDNotFound
		case Empty:
		default:
			return kerr.NonEmptyGroup
		}
		g.stopTimersLocked()
		g.transitionLocked(Dead, &e)
		delete(c.mu.groups, groupID)
		return nil
	}()
	e.run()
	return err
}
