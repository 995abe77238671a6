package broker

// Share groups (KIP-932): the broker settings (group.share.*), the
// share.version feature that turns them on, the group configs of share
// groups, and the opening of their durable state (__share_group_state).

import (
	"fmt"
	"path/filepath"
	"strconv"
	"time"

	"github.com/kbroker/kbroker/group/share"
	"github.com/kbroker/kbroker/topic"
)

// shareConfig is what the share coordinator takes of the settings.
func (c *Config) shareConfig() share.Config {
	sc := share.DefaultConfig()
	sc.SessionTimeout = c.GroupShareSessionTimeout
	sc.HeartbeatInterval = c.GroupShareHeartbeatInterval
	sc.RecordLockDuration = c.GroupShareRecordLockDuration
	sc.DeliveryCountLimit = int16(min(max(c.GroupShareDeliveryCountLimit, -1), 1000))
	sc.PartitionMaxRecordLocks = c.GroupSharePartitionMaxRecordLocks
	sc.MaxSize = c.GroupShareMaxSize
	sc.MaxSessions = c.GroupShareMaxShareSessions
	return sc
}

// validateShare checks the share-group settings.
func (c *Config) validateShare() error {
	if err := c.shareConfig().Validate(); err != nil {
		return err
	}
	if c.ShareStateTopicPartitions < 1 || c.ShareStateTopicPartitions > 1000 {
		return fmt.Errorf("share.coordinator.state.topic.num.partitions %d must be between 1 and 1000", c.ShareStateTopicPartitions)
	}
	return nil
}

// shareGroups reports whether share groups are served: the share.version
// feature is finalized at 1 or above (Kafka 4.2 turns share groups on
// with it). At 0 their API keys leave ApiVersions and answer
// UNSUPPORTED_VERSION.
func (b *Broker) shareGroups() bool { return b.featureLevel(featureShareVersion) >= 1 }

// shareTopics adapts the topic registry for the share coordinator.
type shareTopics struct{ reg *topic.Registry }

func (s shareTopics) TopicByName(name string) (share.Topic, bool) {
	t, ok := s.reg.Get(name)
	if !ok {
		return share.Topic{}, false
	}
	return share.Topic{Name: t.Name, ID: share.TopicID(t.ID), Partitions: t.Partitions}, true
}

func (s shareTopics) TopicByID(id share.TopicID) (share.Topic, bool) {
	t, ok := s.reg.ByID(id)
	if !ok {
		return share.Topic{}, false
	}
	return share.Topic{Name: t.Name, ID: share.TopicID(t.ID), Partitions: t.Partitions}, true
}

// shareState returns the share coordinator with its durable store
// attached, opening __share_group_state (and creating it when create is
// set) the first time; false when the topic does not exist and create is
// not set, or it cannot be opened (the error is returned).
func (b *Broker) shareState(create bool) (bool, error) {
	if b.shares.Store() != nil {
		return true, nil
	}
	b.sharesMu.Lock()
	defer b.sharesMu.Unlock()
	if b.shares.Store() != nil {
		return true, nil
	}
	parts, err := b.stateTopic(topic.ShareGroupStateTopic, b.cfg.ShareStateTopicPartitions, create)
	if parts == nil || err != nil {
		return false, err
	}
	s, err := share.OpenStore(filepath.Join(b.cfg.DataDir, "metadata"), b.store, parts, b.cfg.OffsetsSnapshotInterval, b.lg)
	if err != nil {
		return false, err
	}
	b.shares.SetStore(s)
	return true, nil
}

// Share group configs (Kafka 4's GroupConfig share.*).
const (
	shareAutoOffsetResetConfig    = "share.auto.offset.reset"
	shareIsolationLevelConfig     = "share.isolation.level"
	shareRecordLockDurationConfig = "share.record.lock.duration.ms"
	shareSessionTimeoutConfig     = "share.session.timeout.ms"
	shareHeartbeatIntervalConfig  = "share.heartbeat.interval.ms"
)

// shareGroupConfigFor is the share coordinator's view of a group's
// configs.
func (b *Broker) shareGroupConfigFor(groupID string) share.GroupConfig {
	set := b.cluster.Load().GroupConfigs[groupID]
	if set == nil {
		return share.GroupConfig{}
	}
	ms := func(name string) time.Duration {
		v, err := strconv.ParseInt(set[name], 10, 32)
		if err != nil {
			return 0 // validated when set; absent means the default
		}
		return time.Duration(v) * time.Millisecond
	}
	return share.GroupConfig{
		SessionTimeout:     ms(shareSessionTimeoutConfig),
		HeartbeatInterval:  ms(shareHeartbeatIntervalConfig),
		RecordLockDuration: ms(shareRecordLockDurationConfig),
		AutoOffsetReset:    set[shareAutoOffsetResetConfig],
		ReadCommitted:      set[shareIsolationLevelConfig] == "read_committed",
	}
}
