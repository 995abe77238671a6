package consumer

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"time"
)

// Config holds the consumer-group (KIP-848) settings. Each field's kafka
// tag is its Kafka broker property; DefaultConfig has Kafka 4's defaults
// (GroupCoordinatorConfig.java). Kafka's per-group overrides (the GROUP
// config resource: consumer.session.timeout.ms,
// consumer.heartbeat.interval.ms) are not supported, so the minimum and
// maximum only bound the broker-wide values, as Kafka's validation does.
type Config struct {
	// SessionTimeout is how long a member may go without a heartbeat
	// before it is fenced.
	SessionTimeout    time.Duration `kafka:"group.consumer.session.timeout.ms"`
	MinSessionTimeout time.Duration `kafka:"group.consumer.min.session.timeout.ms"`
	MaxSessionTimeout time.Duration `kafka:"group.consumer.max.session.timeout.ms"`
	// HeartbeatInterval is the interval members are told to heartbeat at.
	HeartbeatInterval    time.Duration `kafka:"group.consumer.heartbeat.interval.ms"`
	MinHeartbeatInterval time.Duration `kafka:"group.consumer.min.heartbeat.interval.ms"`
	MaxHeartbeatInterval time.Duration `kafka:"group.consumer.max.heartbeat.interval.ms"`
	// MaxSize is the most members of one group (GROUP_MAX_SIZE_REACHED).
	MaxSize int `kafka:"group.consumer.max.size"`
	// Assignors are the server-side assignors members may name, the first
	// being the default: "uniform" and "range" (Kafka's built-ins; custom
	// assignor classes do not exist here).
	Assignors []string `kafka:"group.consumer.assignors"`
	// EmptyGroupCheckInterval is how long a group without members and
	// without committed offsets lingers before it is deleted: Kafka
	// deletes such groups in its periodic cleanup, every
	// offsets.retention.check.interval.ms. Groups with offsets go when
	// their offsets expire (the offsets layer calls Delete).
	EmptyGroupCheckInterval time.Duration `kafka:"offsets.retention.check.interval.ms"`
}

// Assignor names (UniformAssignor.NAME, RangeAssignor.NAME).
const (
	UniformAssignorName = "uniform"
	RangeAssignorName   = "range"
)

// DefaultConfig returns Kafka 4's defaults: a 45 s session timeout (45 s
// to 60 s allowed), a 5 s heartbeat interval (5 s to 15 s), no practical
// size limit, the uniform assignor by default and range.
func DefaultConfig() Config {
	return Config{
		SessionTimeout:          45 * time.Second,
		MinSessionTimeout:       45 * time.Second,
		MaxSessionTimeout:       60 * time.Second,
		HeartbeatInterval:       5 * time.Second,
		MinHeartbeatInterval:    5 * time.Second,
		MaxHeartbeatInterval:    15 * time.Second,
		MaxSize:                 math.MaxInt32,
		Assignors:               []string{UniformAssignorName, RangeAssignorName},
		EmptyGroupCheckInterval: 10 * time.Minute,
	}
}

// Validate reports every invalid setting at once, with Kafka's rules
// (GroupCoordinatorConfig's requirements).
func (c *Config) Validate() error {
	var errs []error
	if c.MinHeartbeatInterval <= 0 || c.HeartbeatInterval <= 0 || c.MaxHeartbeatInterval <= 0 ||
		c.MinSessionTimeout <= 0 || c.SessionTimeout <= 0 || c.MaxSessionTimeout <= 0 {
		errs = append(errs, errors.New("consumer group: group.consumer.*session.timeout.ms and *heartbeat.interval.ms must be positive"))
	}
	if c.MaxHeartbeatInterval < c.MinHeartbeatInterval {
		errs = append(errs, errors.New("consumer group: group.consumer.max.heartbeat.interval.ms must be greater than or equal to group.consumer.min.heartbeat.interval.ms"))
	}
	if c.HeartbeatInterval < c.MinHeartbeatInterval || c.HeartbeatInterval > c.MaxHeartbeatInterval {
		errs = append(errs, errors.New("consumer group: group.consumer.heartbeat.interval.ms must be between group.consumer.min.heartbeat.interval.ms and group.consumer.max.heartbeat.interval.ms"))
	}
	if c.MaxSessionTimeout < c.MinSessionTimeout {
		errs = append(errs, errors.New("consumer group: group.consumer.max.session.timeout.ms must be greater than or equal to group.consumer.min.session.timeout.ms"))
	}
	if c.SessionTimeout < c.MinSessionTimeout || c.SessionTimeout > c.MaxSessionTimeout {
		errs = append(errs, errors.New("consumer group: group.consumer.session.timeout.ms must be between group.consumer.min.session.timeout.ms and group.consumer.max.session.timeout.ms"))
	}
	if c.HeartbeatInterval >= c.SessionTimeout {
		errs = append(errs, errors.New("consumer group: group.consumer.heartbeat.interval.ms must be less than group.consumer.session.timeout.ms"))
	}
	if c.MaxSize < 1 {
		errs = append(errs, fmt.Errorf("consumer group: group.consumer.max.size %d must be at least 1", c.MaxSize))
	}
	if len(c.Assignors) == 0 {
		errs = append(errs, errors.New("consumer group: group.consumer.assignors is empty"))
	}
	for i, name := range c.Assignors {
		if builtinAssignor(name) == nil {
			errs = append(errs, fmt.Errorf("consumer group: assignor %q in group.consumer.assignors is not uniform or range", name))
		}
		if slices.Contains(c.Assignors[:i], name) {
			errs = append(errs, fmt.Errorf("consumer group: assignor %q is listed twice in group.consumer.assignors", name))
		}
	}
	if c.EmptyGroupCheckInterval <= 0 {
		errs = append(errs, errors.New("consumer group: the empty group check interval must be positive"))
	}
	return errors.Join(errs...)
}
