package streams

import (
	"fmt"
	"math"
	"time"
)

// Config holds the streams-group settings. Each field's kafka tag is its
// Kafka broker property; DefaultConfig has Kafka 4's defaults
// (GroupCoordinatorConfig.java).
type Config struct {
	// SessionTimeout is how long a member may go without a heartbeat
	// before it is fenced.
	SessionTimeout    time.Duration `kafka:"group.streams.session.timeout.ms"`
	MinSessionTimeout time.Duration `kafka:"group.streams.min.session.timeout.ms"`
	MaxSessionTimeout time.Duration `kafka:"group.streams.max.session.timeout.ms"`
	// HeartbeatInterval is the interval members are told to heartbeat at.
	HeartbeatInterval    time.Duration `kafka:"group.streams.heartbeat.interval.ms"`
	MinHeartbeatInterval time.Duration `kafka:"group.streams.min.heartbeat.interval.ms"`
	MaxHeartbeatInterval time.Duration `kafka:"group.streams.max.heartbeat.interval.ms"`
	// MaxSize is the most members of one group (GROUP_MAX_SIZE_REACHED).
	MaxSize int `kafka:"group.streams.max.size"`
	// NumStandbyReplicas is how many standby replicas of each stateful
	// task the assignor places, on processes other than the active one's.
	NumStandbyReplicas int `kafka:"group.streams.num.standby.replicas"`
	MaxStandbyReplicas int `kafka:"group.streams.max.standby.replicas"`
	// InitialRebalanceDelay holds back a new group's first assignment so
	// that the instances starting together land in one rebalance;
	// members see the ASSIGNMENT_DELAYED status meanwhile.
	InitialRebalanceDelay time.Duration `kafka:"group.streams.initial.rebalance.delay.ms"`
	AcceptableRecoveryLag int64
	// TaskOffsetInterval is how often members report their changelog
	// offsets (task.offset.interval.ms in Kafka's response).
	TaskOffsetInterval time.Duration
}

// DefaultConfig returns Kafka 4's defaults: a 45 s session timeout (45 s
// to 60 s allowed), a 5 s heartbeat interval (5 s to 15 s), no practical
// size limit, no standby replicas (at most 2), a 3 s initial rebalance
// delay.
func DefaultConfig() Config {
	return Config{
		SessionTimeout:        45 * time.Second,
		MinSessionTimeout:     45 * time.Second,
		MaxSessionTimeout:     60 * time.Second,
		HeartbeatInterval:     5 * time.Second,
		MinHeartbeatInterval:  5 * time.Second,
		MaxHeartbeatInterval:  15 * time.Second,
		MaxSize:               math.MaxInt32,
		NumStandbyReplicas:    0,
		MaxStandbyReplicas:    2,
		InitialRebalanceDelay: 3 * time.Second,
		AcceptableRecoveryLag: 10000,
		TaskOffsetInterval:    60 * time.Second,
	}
}

// Validate checks the settings as Kafka's GroupCoordinatorConfig does.
func (c Config) Validate() error {
	switch {
	case c.SessionTimeout <= 0 || c.HeartbeatInterval <= 0:
		return fmt.Errorf("group.streams.session.timeout.ms and group.streams.heartbeat.interval.ms must be positive")
	case c.MinSessionTimeout > c.SessionTimeout || c.SessionTimeout > c.MaxSessionTimeout:
		return fmt.Errorf("group.streams.session.timeout.ms %v must be within [%v, %v]", c.SessionTimeout, c.MinSessionTimeout, c.MaxSessionTimeout)
	case c.MinHeartbeatInterval > c.HeartbeatInterval || c.HeartbeatInterval > c.MaxHeartbeatInterval:
		return fmt.Errorf("group.streams.heartbeat.interval.ms %v must be within [%v, %v]", c.HeartbeatInterval, c.MinHeartbeatInterval, c.MaxHeartbeatInterval)
	case c.HeartbeatInterval >= c.SessionTimeout:
		return fmt.Errorf("group.streams.heartbeat.interval.ms must be less than group.streams.session.timeout.ms")
	case c.InitialRebalanceDelay < 0:
		return fmt.Errorf("group.streams.initial.rebalance.delay.ms must not be negative")
	case c.MaxSize < 1:
		return fmt.Errorf("group.streams.max.size must be at least 1")
	case c.NumStandbyReplicas < 0 || c.NumStandbyReplicas > c.MaxStandbyReplicas:
		return fmt.Errorf("group.streams.num.standby.replicas %d must be within [0, %d]", c.NumStandbyReplicas, c.MaxStandbyReplicas)
	}
	return nil
}

// GroupConfig is one group's overrides of the broker-wide settings (the
// GROUP config resource: streams.session.timeout.ms,
// streams.heartbeat.interval.ms, streams.num.standby.replicas); a zero or
// negative field means the broker's value.
type GroupConfig struct {
	SessionTimeout     time.Duration
	HeartbeatInterval  time.Duration
	NumStandbyReplicas int // -1: the broker's
}
