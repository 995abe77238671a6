package broker

// Group configs (KIP-848): settings of one consumer group, set with
// IncrementalAlterConfigs on the GROUP resource and described with
// DescribeConfigs, as Kafka 4's GroupConfig. kbroker has the two that
// apply to consumer groups:
//
//   - consumer.session.timeout.ms: how long a member may go without a
//     heartbeat before it is fenced (default group.consumer.session.timeout.ms);
//   - consumer.heartbeat.interval.ms: the interval members are told to
//     heartbeat at (default group.consumer.heartbeat.interval.ms).
//
// Values are checked as GroupConfig.validate does: integers of at least 1,
// within the broker's group.consumer.min/max bounds, the session timeout
// above the heartbeat interval, with Kafka's messages (INVALID_CONFIG). They
// are written to the cluster state file before the answer and applied by
// the consumer group coordinator from each member's next heartbeat.
//
// and the share-group configs (KIP-932), applied by the share coordinator:
//
//   - share.auto.offset.reset: where a share-partition without state
//     starts, "latest" (the default) or "earliest";
//   - share.record.lock.duration.ms: the acquisition lock duration
//     (default group.share.record.lock.duration.ms);
//   - share.session.timeout.ms and share.heartbeat.interval.ms (defaults
//     group.share.session.timeout.ms and group.share.heartbeat.interval.ms),
//     the session timeout above the interval;
//   - share.isolation.level: "read_uncommitted" (the default) or
//     "read_committed", with which share fetches stop at the last stable
//     offset and archive the records of aborted transactions.
//
// and the streams-group configs (KIP-1071), applied by the streams
// coordinator from each member's next heartbeat (the standby count from
// the next target assignment):
//
//   - streams.session.timeout.ms and streams.heartbeat.interval.ms
//     (defaults group.streams.session.timeout.ms and
//     group.streams.heartbeat.interval.ms, within their min/max bounds,
//     the session timeout above the interval);
//   - streams.num.standby.replicas: standby replicas per stateful task,
//     0 to group.streams.max.standby.replicas (default
//     group.streams.num.standby.replicas).

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/cluster"
	"github.com/kbroker/kbroker/group/consumer"
	"github.com/kbroker/kbroker/topic"
)

const (
	groupSessionTimeoutConfig    = "consumer.session.timeout.ms"
	groupHeartbeatIntervalConfig = "consumer.heartbeat.interval.ms"
)

// groupConfigNames are the group configs, sorted.
var groupConfigNames = []string{groupHeartbeatIntervalConfig, groupSessionTimeoutConfig,
	shareAutoOffsetResetConfig, shareHeartbeatIntervalConfig, shareIsolationLevelConfig, shareRecordLockDurationConfig, shareSessionTimeoutConfig,
	streamsHeartbeatIntervalConfig, streamsNumStandbyReplicasConfig, streamsSessionTimeoutConfig}

// isStringGroupConfig reports whether a group config is a string, not a
// number of milliseconds.
func isStringGroupConfig(name string) bool {
	return name == shareAutoOffsetResetConfig || name == shareIsolationLevelConfig
}

// groupConfigDefault is the broker value a group config defaults to.
func (b *Broker) groupConfigDefault(name string) time.Duration {
	switch name {
	case groupSessionTimeoutConfig:
		return b.cfg.ConsumerGroupSessionTimeout
	case shareSessionTimeoutConfig:
		return b.cfg.GroupShareSessionTimeout
	case shareHeartbeatIntervalConfig:
		return b.cfg.GroupShareHeartbeatInterval
	case shareRecordLockDurationConfig:
		return b.cfg.GroupShareRecordLockDuration
	case streamsSessionTimeoutConfig:
		return b.cfg.GroupStreamsSessionTimeout
	case streamsHeartbeatIntervalConfig:
		return b.cfg.GroupStreamsHeartbeatInterval
	}
	return b.cfg.ConsumerGroupHeartbeatInterval
}

// groupConfigDefaultValue is a group config's default as DescribeConfigs
// shows it.
func (b *Broker) groupConfigDefaultValue(name string) string {
	switch name {
	case shareAutoOffsetResetConfig:
		return "latest"
	case shareIsolationLevelConfig:
		return "read_uncommitted"
	}
	if name == streamsNumStandbyReplicasConfig {
		return strconv.Itoa(b.cfg.GroupStreamsNumStandbyReplicas)
	}
	return strconv.FormatInt(b.groupConfigDefault(name).Milliseconds(), 10)
}

// groupConfigFor is the consumer coordinator's view of a group's configs.
// It runs on every heartbeat: a map lookup and at most two integer parses.
func (b *Broker) groupConfigFor(groupID string) consumer.GroupConfig {
	set := b.cluster.Load().GroupConfigs[groupID]
	if set == nil {
		return consumer.GroupConfig{}
	}
	ms := func(name string) time.Duration {
		v, err := strconv.ParseInt(set[name], 10, 32)
		if err != nil {
			return 0 // validated when set; absent means the default
		}
		return time.Duration(v) * time.Millisecond
	}
	return consumer.GroupConfig{SessionTimeout: ms(groupSessionTimeoutConfig), HeartbeatInterval: ms(groupHeartbeatIntervalConfig)}
}

// describeGroupConfigs lists a group's configs: its own value (GROUP_CONFIG)
// or the broker default (DEFAULT_CONFIG), never read-only, as Kafka's
// ConfigHelper.createGroupConfigEntry.
func (b *Broker) describeGroupConfigs(req *kmsg.DescribeConfigsRequest, rr *kmsg.DescribeConfigsRequestResource) ([]kmsg.DescribeConfigsResponseResourceConfig, error) {
	if rr.ResourceName == "" {
		return nil, &topic.Error{Code: kerr.InvalidRequest, Detail: "Group name must not be empty"}
	}
	set := b.cluster.Load().GroupConfigs[rr.ResourceName]
	out := []kmsg.DescribeConfigsResponseResourceConfig{}
	for _, name := range groupConfigNames {
		if !wanted(rr, name) {
			continue
		}
		rc := kmsg.NewDescribeConfigsResponseResourceConfig()
		rc.Name, rc.ConfigType = name, kmsg.ConfigTypeInt
		if isStringGroupConfig(name) {
			rc.ConfigType = kmsg.ConfigTypeString
		}
		v, ok := set[name]
		rc.Source = kmsg.ConfigSourceGroupConfig
		if !ok {
			v, rc.Source = b.groupConfigDefaultValue(name), kmsg.ConfigSourceDefaultConfig
		}
		rc.Value, rc.IsDefault = kmsg.StringPtr(v), !ok
		if req.IncludeSynonyms {
			rc.ConfigSynonyms = append(rc.ConfigSynonyms, configSynonym(name, v, rc.Source, false))
		}
		out = append(out, rc)
	}
	return out, nil
}

// alterGroupConfigs applies IncrementalAlterConfigs operations to a
// group's configs.
func (b *Broker) alterGroupConfigs(group string, configs []kmsg.IncrementalAlterConfigsRequestResourceConfig, validateOnly bool) error {
	if group == "" {
		return &topic.Error{Code: kerr.InvalidRequest, Detail: "Group name must not be empty"}
	}
	seen := make(map[string]bool, len(configs))
	for _, cf := range configs {
		if seen[cf.Name] {
			return errDuplicateConfig
		}
		seen[cf.Name] = true
		if !slices.Contains(groupConfigNames, cf.Name) {
			return &topic.Error{Code: kerr.InvalidConfig, Detail: "Unknown group config name: " + cf.Name}
		}
		switch cf.Op {
		case kmsg.IncrementalAlterConfigOpSet:
			if cf.Value == nil {
				return &topic.Error{Code: kerr.InvalidRequest, Detail: "Null value not supported for : " + cf.Name}
			}
		case kmsg.IncrementalAlterConfigOpDelete:
		case kmsg.IncrementalAlterConfigOpAppend, kmsg.IncrementalAlterConfigOpSubtract:
			return &topic.Error{Code: kerr.InvalidConfig, Detail: fmt.Sprintf("Can't %s to key %s because its type is not LIST.", cf.Op, cf.Name)}
		default:
			return &topic.Error{Code: kerr.InvalidRequest, Detail: fmt.Sprintf("Unknown operations type %d", int8(cf.Op))}
		}
	}
	err := b.cluster.Update(func(st *cluster.State) error {
		cur := maps.Clone(st.GroupConfigs[group])
		if cur == nil {
			cur = make(map[string]string)
		}
		for _, cf := range configs {
			if cf.Op == kmsg.IncrementalAlterConfigOpDelete {
				delete(cur, cf.Name)
			} else {
				cur[cf.Name] = *cf.Value
			}
		}
		if err := b.validateGroupConfigs(cur); err != nil {
			return err
		}
		if validateOnly {
			return errValidateOnly
		}
		if st.GroupConfigs == nil {
			st.GroupConfigs = make(map[string]map[string]string)
		}
		st.GroupConfigs[group] = cur
		return nil
	})
	if err == errValidateOnly {
		return nil
	}
	return err
}

// validateGroupConfigs checks a group's configs, defaults filled in, as
// Kafka's GroupConfig.validate.
func (b *Broker) validateGroupConfigs(set map[string]string) error {
	val := make(map[string]int64, len(groupConfigNames))
	if v, ok := set[shareAutoOffsetResetConfig]; ok && v != "latest" && v != "earliest" {
		return &topic.Error{Code: kerr.InvalidConfig, Detail: fmt.Sprintf("Invalid value %s for configuration %s: String must be one of: latest, earliest", v, shareAutoOffsetResetConfig)}
	}
	if v, ok := set[shareIsolationLevelConfig]; ok && v != "read_uncommitted" && v != "read_committed" {
		return &topic.Error{Code: kerr.InvalidConfig, Detail: fmt.Sprintf("Invalid value %s for configuration %s: String must be one of: read_committed, read_uncommitted", v, shareIsolationLevelConfig)}
	}
	for _, name := range groupConfigNames {
		if isStringGroupConfig(name) {
			continue
		}
		s, ok := set[name]
		if !ok {
			val[name] = b.groupConfigDefault(name).Milliseconds()
			if name == streamsNumStandbyReplicasConfig {
				val[name] = int64(b.cfg.GroupStreamsNumStandbyReplicas)
			}
			continue
		}
		v, err := strconv.ParseInt(s, 10, 32)
		if err != nil {
			return &topic.Error{Code: kerr.InvalidConfig, Detail: fmt.Sprintf("Invalid value %s for configuration %s: Not a number of type INT", s, name)}
		}
		if v < 1 && name != streamsNumStandbyReplicasConfig {
			return &topic.Error{Code: kerr.InvalidConfig, Detail: fmt.Sprintf("Invalid value %s for configuration %s: Value must be at least 1", s, name)}
		}
		val[name] = v
	}
	hb, session := val[groupHeartbeatIntervalConfig], val[groupSessionTimeoutConfig]
	for _, c := range []struct {
		bad  bool
		name string
		what string
	}{
		{hb < b.cfg.ConsumerGroupMinHeartbeatInterval.Milliseconds(), groupHeartbeatIntervalConfig, "greater than or equal to group.consumer.min.heartbeat.interval.ms"},
		{hb > b.cfg.ConsumerGroupMaxHeartbeatInterval.Milliseconds(), groupHeartbeatIntervalConfig, "less than or equal to group.consumer.max.heartbeat.interval.ms"},
		{session < b.cfg.ConsumerGroupMinSessionTimeout.Milliseconds(), groupSessionTimeoutConfig, "greater than or equal to group.consumer.min.session.timeout.ms"},
		{session > b.cfg.ConsumerGroupMaxSessionTimeout.Milliseconds(), groupSessionTimeoutConfig, "less than or equal to group.consumer.max.session.timeout.ms"},
		{session <= hb, groupSessionTimeoutConfig, "greater than " + groupHeartbeatIntervalConfig},
		{val[shareSessionTimeoutConfig] <= val[shareHeartbeatIntervalConfig], shareSessionTimeoutConfig, "greater than " + shareHeartbeatIntervalConfig},
		{val[streamsHeartbeatIntervalConfig] < b.cfg.GroupStreamsMinHeartbeatInterval.Milliseconds(), streamsHeartbeatIntervalConfig, "greater than or equal to group.streams.min.heartbeat.interval.ms"},
		{val[streamsHeartbeatIntervalConfig] > b.cfg.GroupStreamsMaxHeartbeatInterval.Milliseconds(), streamsHeartbeatIntervalConfig, "less than or equal to group.streams.max.heartbeat.interval.ms"},
		{val[streamsSessionTimeoutConfig] < b.cfg.GroupStreamsMinSessionTimeout.Milliseconds(), streamsSessionTimeoutConfig, "greater than or equal to group.streams.min.session.timeout.ms"},
		{val[streamsSessionTimeoutConfig] > b.cfg.GroupStreamsMaxSessionTimeout.Milliseconds(), streamsSessionTimeoutConfig, "less than or equal to group.streams.max.session.timeout.ms"},
		{val[streamsSessionTimeoutConfig] <= val[streamsHeartbeatIntervalConfig], streamsSessionTimeoutConfig, "greater than " + streamsHeartbeatIntervalConfig},
		{val[streamsNumStandbyReplicasConfig] < 0, streamsNumStandbyReplicasConfig, "greater than or equal to 0"},
		{val[streamsNumStandbyReplicasConfig] > int64(b.cfg.GroupStreamsMaxStandbyReplicas), streamsNumStandbyReplicasConfig, "less than or equal to group.streams.max.standby.replicas"},
	} {
		if c.bad {
			return &topic.Error{Code: kerr.InvalidConfig, Detail: c.name + " must be " + c.what}
		}
	}
	return nil
}
