package share

import (
	"errors"
	"fmt"
	"time"
)

// Config holds the broker's share-group settings (group.share.*), with
// Kafka 4.2's defaults from DefaultConfig.
type Config struct {
	// SessionTimeout is group.share.session.timeout.ms: a member that does
	// not heartbeat for this long is removed and its records released.
	SessionTimeout time.Duration
	// HeartbeatInterval is group.share.heartbeat.interval.ms.
	HeartbeatInterval time.Duration
	// RecordLockDuration is group.share.record.lock.duration.ms: how long
	// an acquired record stays locked to its member.
	RecordLockDuration time.Duration
	// DeliveryCountLimit is group.share.delivery.count.limit: a record
	// delivered this many times is archived instead of made available
	// again.
	DeliveryCountLimit int16
	// PartitionMaxRecordLocks is group.share.partition.max.record.locks:
	// the most records in flight (between SPSO and SPEO) per
	// share-partition.
	PartitionMaxRecordLocks int
	// MaxSize is group.share.max.size: the most members of a group.
	MaxSize int
	// MaxSessions is group.share.max.share.sessions: the most share
	// sessions open at once (SHARE_SESSION_LIMIT_REACHED beyond).
	MaxSessions int
	// CheckInterval is how often member sessions are checked for expiry.
	CheckInterval time.Duration
}

// DefaultConfig is Kafka 4.2's defaults.
func DefaultConfig() Config {
	return Config{
		SessionTimeout:          45 * time.Second,
		HeartbeatInterval:       5 * time.Second,
		RecordLockDuration:      30 * time.Second,
		DeliveryCountLimit:      5,
		PartitionMaxRecordLocks: 2000,
		MaxSize:                 200,
		MaxSessions:             2000,
		CheckInterval:           250 * time.Millisecond,
	}
}

// Validate reports every bad setting, with Kafka's bounds where it has
// them (delivery count limit 2–10, record locks 100–10000).
func (c Config) Validate() error {
	var errs []error
	if c.SessionTimeout <= 0 || c.HeartbeatInterval <= 0 || c.HeartbeatInterval >= c.SessionTimeout {
		errs = append(errs, fmt.Errorf("group.share.heartbeat.interval.ms %d must be positive and below group.share.session.timeout.ms %d",
			c.HeartbeatInterval.Milliseconds(), c.SessionTimeout.Milliseconds()))
	}
	if c.RecordLockDuration < time.Millisecond {
		errs = append(errs, errors.New("group.share.record.lock.duration.ms must be at least 1"))
	}
	if c.DeliveryCountLimit < 2 || c.DeliveryCountLimit > 10 {
		errs = append(errs, fmt.Errorf("group.share.delivery.count.limit %d must be between 2 and 10", c.DeliveryCountLimit))
	}
	if c.PartitionMaxRecordLocks < 100 || c.PartitionMaxRecordLocks > 10000 {
		errs = append(errs, fmt.Errorf("group.share.partition.max.record.locks %d must be between 100 and 10000", c.PartitionMaxRecordLocks))
	}
	if c.MaxSize < 1 || c.MaxSessions < 1 {
		errs = append(errs, errors.New("group.share.max.size and group.share.max.share.sessions must be at least 1"))
	}
	if c.CheckInterval <= 0 {
		errs = append(errs, errors.New("share: check interval must be positive"))
	}
	return errors.Join(errs...)
}

// GroupConfig is one group's overrides (the GROUP config resource); zero
// fields take the broker's value.
type GroupConfig struct {
	SessionTimeout     time.Duration
	HeartbeatInterval  time.Duration
	RecordLockDuration time.Duration
	// AutoOffsetReset is share.auto.offset.reset: "latest" (the default)
	// or "earliest", where a share-partition without state starts.
	AutoOffsetReset string
	// ReadCommitted is share.isolation.level=read_committed: records
	// are acquired only below the last stable offset, and those of
	// aborted transactions are archived, never delivered.
	ReadCommitted bool
}

// ReadCommitted reports whether the group reads committed records only.
func (c *Coordinator) ReadCommitted(groupID string) bool { return c.groupConfig(groupID).ReadCommitted }
