package broker

import (
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"go.uber.org/zap"

	"github.com/kbroker/kbroker/group/streams"
)

// streamsGroups reports whether streams groups (KIP-1071) are served: the
// finalized feature streams.version at 1 or above, as Kafka 4.2+.
func (b *Broker) streamsGroups() bool { return b.featureLevel(featureStreamsVersion) >= 1 }

// streamsConfig is what the streams-group coordinator takes of the
// settings.
func (c *Config) streamsConfig() streams.Config {
	sc := streams.DefaultConfig()
	sc.SessionTimeout = c.GroupStreamsSessionTimeout
	sc.MinSessionTimeout = c.GroupStreamsMinSessionTimeout
	sc.MaxSessionTimeout = c.GroupStreamsMaxSessionTimeout
	sc.HeartbeatInterval = c.GroupStreamsHeartbeatInterval
	sc.MinHeartbeatInterval = c.GroupStreamsMinHeartbeatInterval
	sc.MaxHeartbeatInterval = c.GroupStreamsMaxHeartbeatInterval
	sc.MaxSize = c.GroupStreamsMaxSize
	sc.NumStandbyReplicas = c.GroupStreamsNumStandbyReplicas
	sc.MaxStandbyReplicas = c.GroupStreamsMaxStandbyReplicas
	sc.InitialRebalanceDelay = c.GroupStreamsInitialRebalanceDelay
	return sc
}

// streamsMetadata is the streams coordinator's view of the topics.
type streamsMetadata struct{ b *Broker }

func (m streamsMetadata) Partitions(name string) (int32, bool) {
	t, ok := m.b.topics.Get(name)
	return t.Partitions, ok
}

// createStreamsTopics creates a streams application's missing internal
// topics (repartition and changelog topics) with the partition counts
// and configs the coordinator decided, as Kafka 4's broker does from the
// heartbeat (AutoTopicCreationManager.createStreamsInternalTopics).
// A topic created meanwhile by someone else is fine.
func (b *Broker) createStreamsTopics(ts []streams.TopicInfo) error {
	var errs []error
	for _, ti := range ts {
		configs := make(map[string]*string, len(ti.Configs))
		for _, c := range ti.Configs {
			v := c.Value
			configs[c.Key] = &v
		}
		t, err := b.topics.Create(ti.Name, ti.Partitions, configs, false)
		if errors.Is(err, kerr.TopicAlreadyExists) {
			continue
		}
		if err != nil {
			b.lg.Warn("cannot create streams internal topic", zap.String("topic", ti.Name), zap.Error(err))
			errs = append(errs, fmt.Errorf("create %s: %w", ti.Name, err))
			continue
		}
		b.lg.Info("created streams internal topic", zap.String("topic", t.Name), zap.Int32("partitions", t.Partitions), zap.Stringer("id", t.ID))
	}
	return errors.Join(errs...)
}

// Group configs of streams groups (the GROUP config resource).
const (
	streamsSessionTimeoutConfig     = "streams.session.timeout.ms"
	streamsHeartbeatIntervalConfig  = "streams.heartbeat.interval.ms"
	streamsNumStandbyReplicasConfig = "streams.num.standby.replicas"
)

// streamsGroupConfigFor is the streams coordinator's view of a group's
// configs.
func (b *Broker) streamsGroupConfigFor(groupID string) streams.GroupConfig {
	gc := streams.GroupConfig{NumStandbyReplicas: -1}
	set := b.cluster.Load().GroupConfigs[groupID]
	if set == nil {
		return gc
	}
	num := func(name string) (int64, bool) {
		v, err := strconv.ParseInt(set[name], 10, 32)
		return v, err == nil
	}
	if v, ok := num(streamsSessionTimeoutConfig); ok {
		gc.SessionTimeout = time.Duration(v) * time.Millisecond
	}
	if v, ok := num(streamsHeartbeatIntervalConfig); ok {
		gc.HeartbeatInterval = time.Duration(v) * time.Millisecond
	}
	if v, ok := num(streamsNumStandbyReplicasConfig); ok {
		gc.NumStandbyReplicas = int(v)
	}
	return gc
}
