package consumer

import (
	"context"
	"errors"
	"runtime/pprof"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kbroker/kbroker/group/grouperr"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Classic is the classic-group side of the group-id namespace: a group id
// belongs to a classic group or to a consumer group, never both. The
// classic coordinator implements it; Coordinator calls it with its own map
// lock held, so it must not call back into the Coordinator.
type Classic interface {
	// TakeOver prepares groupID for a new consumer group: nil when no
	// classic group holds it, after deleting an Empty classic group
	// (Kafka's maybeDeleteEmptyClassicGroup; its committed offsets stay);
	// an error (GROUP_ID_NOT_FOUND) for a classic group with members.
	// after, if not nil, is run once the Coordinator released its lock
	// (for callbacks about the deleted group).
	TakeOver(groupID string) (after func(), err error)
	// Exists reports whether a classic group holds groupID.
	Exists(groupID string) bool
}

// ErrClassicConflict is what ReleaseForClassic returns when a consumer
// group with members holds the id.
var ErrClassicConflict = errors.New("consumer group: the group id belongs to a consumer group with members")

// Option configures a Coordinator's dependencies.
type Option func(*Coordinator)

// WithChangeHook registers fn to hear of every change of a group that its
// records in __consumer_offsets show (Kafka writes records for exactly
// those): a member joined, left, was fenced or changed its subscription,
// epochs or assignment; the group epoch or target assignment moved; the
// group was deleted. fn runs on the goroutine that made the change, with
// no lock of the Coordinator held, and should take the group's state with
// Record; the group may have changed again since, so the call is a hint
// to record the group as it is now. It must not block for long.
func WithChangeHook(fn func(groupID string)) Option { return func(c *Coordinator) { c.onChange = fn } }

// changed calls the change hook, if any.
func (c *Coordinator) changed(groupID string) {
	if c.onChange != nil {
		c.onChange(groupID)
	}
}

// WithClassic connects the classic coordinator (see Classic).
func WithClassic(cl Classic) Option { return func(c *Coordinator) { c.classic = cl } }

// Coordinator holds the consumer groups (KIP-848) of the broker, in
// memory. Every call answers at once; see doc.go.
type Coordinator struct {
	cfg     Config
	classic Classic
	// onChange is the change hook (WithChangeHook).
	onChange func(groupID string)

	// hasOffsets tells whether a group has committed offsets; an Empty
	// group without any is deleted (SetOffsetsProbe).
	hasOffsets atomic.Pointer[func(groupID string) bool]
	// groupConfig returns a group's dynamic configs (KIP-848 group
	// configs); nil means none are set (SetGroupConfigs).
	groupConfig atomic.Pointer[func(groupID string) GroupConfig]

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
	c.mu.groups = map[string]*group{}
	return c, nil
}

// SetOffsetsProbe sets the function that tells whether a group has
// committed offsets: a group that stays Empty for
// Config.EmptyGroupCheckInterval is deleted unless it has some (it then
// goes when they expire, with Delete). Without a probe no group has
// offsets.
func (c *Coordinator) SetOffsetsProbe(fn func(groupID string) bool) { c.hasOffsets.Store(&fn) }

// GroupConfig is a group's own settings (Kafka's GroupConfig, set with
// IncrementalAlterConfigs on the GROUP resource); a zero field means the
// coordinator's Config applies.
type GroupConfig struct {
	// SessionTimeout is consumer.session.timeout.ms.
	SessionTimeout time.Duration
	// HeartbeatInterval is consumer.heartbeat.interval.ms.
	HeartbeatInterval time.Duration
}

// SetGroupConfigs sets the function that returns a group's own settings.
// It is called on every heartbeat, so it must be cheap; a change applies
// from each member's next heartbeat, as in Kafka.
func (c *Coordinator) SetGroupConfigs(fn func(groupID string) GroupConfig) { c.groupConfig.Store(&fn) }

// sessionTimeout and heartbeatInterval are a group's effective settings.
func (c *Coordinator) sessionTimeout(groupID string) time.Duration {
	if fn := c.groupConfig.Load(); fn != nil {
		if d := (*fn)(groupID).SessionTimeout; d > 0 {
			return d
		}
	}
	return c.cfg.SessionTimeout
}

func (c *Coordinator) heartbeatInterval(groupID string) time.Duration {
	if fn := c.groupConfig.Load(); fn != nil {
		if d := (*fn)(groupID).HeartbeatInterval; d > 0 {
			return d
		}
	}
	return c.cfg.HeartbeatInterval
}

// Close stops every timer and waits for calls and timers in progress; later
// calls get COORDINATOR_NOT_AVAILABLE. Groups keep their state.
func (c *Coordinator) Close() {
	c.mu.Lock()
	if c.mu.closed {
		c.mu.Unlock()
		return
	}
	c.mu.closed = true
	c.mu.Unlock()
	c.wg.Wait()
	c.mu.Lock()
	groups := make([]*group, 0, len(c.mu.groups))
	for _, g := range c.mu.groups {
		groups = append(groups, g)
	}
	c.mu.Unlock()
	for _, g := range groups {
		g.mu.Lock()
		g.stopTimersLocked()
		g.mu.Unlock()
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
		pprof.Do(context.Background(), pprof.Labels("group", "consumer-timer"), func(context.Context) { f() })
	})
}

// lockGroup returns the consumer group with its lock held. A missing group
// is created when create is set, after the classic coordinator gave up
// the id (getOrMaybeCreateConsumerGroup); otherwise it is
// GROUP_ID_NOT_FOUND. created reports a group made by this call.
func (c *Coordinator) lockGroup(id string, create bool) (g *group, created bool, err error) {
	for {
		var after func() // the classic side's callbacks, run without c.mu
		c.mu.Lock()
		g = c.mu.groups[id]
		if g == nil {
			if !create {
				classic := c.classic != nil && c.classic.Exists(id)
				c.mu.Unlock()
				if classic {
					return nil, false, grouperr.Errorf(kerr.GroupIDNotFound, "Group %s is not a consumer group.", id)
				}
				return nil, false, grouperr.Errorf(kerr.GroupIDNotFound, "Consumer group %s not found.", id)
			}
			if c.classic != nil {
				var err error
				if after, err = c.classic.TakeOver(id); err != nil {
					c.mu.Unlock()
					return nil, false, err
				}
			}
			g = newGroup(c, id)
			c.mu.groups[id] = g
			created = true
		}
		c.mu.Unlock()
		if after != nil {
			after()
		}
		g.mu.Lock()
		if !g.mu.deleted {
			return g, created, nil
		}
		g.mu.Unlock()
	}
}

// findGroup returns the group with its lock held, or nil.
func (c *Coordinator) findGroup(id string) *group {
	g, _, err := c.lockGroup(id, false)
	if err != nil {
		return nil
	}
	return g
}

// dropIfUnused deletes a group a failed heartbeat created: Kafka creates a
// group only with the records of a successful heartbeat.
func (c *Coordinator) dropIfUnused(g *group) {
	c.mu.Lock()
	defer c.mu.Unlock()
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.mu.deleted && len(g.mu.members) == 0 && g.mu.epoch == initialGroupEpoch && c.mu.groups[g.id] == g {
		g.deleteLocked()
	}
}

// deleteLocked marks the group deleted and takes it out of the map; the
// caller holds c.mu and g.mu.
func (g *group) deleteLocked() {
	g.stopTimersLocked()
	g.mu.deleted = true
	g.mu.state = Dead
	delete(g.c.mu.groups, g.id)
}

// ReleaseForClassic is the classic coordinator's side of the namespace: it
// is called before a classic group named groupID is created, and calls
// create (which must create it) unless a consumer group with members holds
// the id (ErrClassicConflict). An Empty consumer group is deleted first,
// as Kafka's maybeDeleteEmptyConsumerGroup does. create runs with the
// Coordinator's map lock held, so that no consumer group can take the id
// meanwhile; it must not call the Coordinator.
func (c *Coordinator) ReleaseForClassic(groupID string, create func()) error {
	c.mu.Lock()
	deleted := false
	if g := c.mu.groups[groupID]; g != nil {
		g.mu.Lock()
		empty := len(g.mu.members) == 0
		if empty {
			g.deleteLocked()
			deleted = true
		}
		g.mu.Unlock()
		if !empty {
			c.mu.Unlock()
			return ErrClassicConflict
		}
	}
	create()
	c.mu.Unlock()
	if deleted {
		c.changed(groupID)
	}
	return nil
}
