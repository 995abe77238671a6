package topic

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Defaults are the broker-level settings a topic inherits for every config
// it does not set, as a Kafka broker's log.* properties (server.properties)
// are the defaults of its topics' configs. broker.Config fills it from its
// own fields; the tags name the Kafka broker property of each field.
//
// The zero value is not valid (no partitions, zero retention); start from
// KafkaDefaults and change fields.
type Defaults struct {
	// NumPartitions is used when CreateTopics asks for -1 partitions
	// (CreateTopics v4+) and for auto-created topics.
	NumPartitions int32 `kafka:"num.partitions"`
	// RetentionMs is inherited by retention.ms. Kafka derives it from
	// log.retention.ms, else log.retention.minutes, else log.retention.hours
	// (168); the broker resolves that order and passes milliseconds.
	RetentionMs int64 `kafka:"log.retention.ms"`
	// RetentionBytes is inherited by retention.bytes; -1 means no limit.
	RetentionBytes int64 `kafka:"log.retention.bytes"`
	// MaxMessageBytes is inherited by max.message.bytes.
	MaxMessageBytes int32 `kafka:"message.max.bytes"`
	// TimestampType is inherited by message.timestamp.type.
	TimestampType TimestampType `kafka:"log.message.timestamp.type"`
	// TimestampBeforeMaxMs is inherited by message.timestamp.before.max.ms.
	TimestampBeforeMaxMs int64 `kafka:"log.message.timestamp.before.max.ms"`
	// TimestampAfterMaxMs is inherited by message.timestamp.after.max.ms.
	TimestampAfterMaxMs int64 `kafka:"log.message.timestamp.after.max.ms"`
	// CleanupPolicy is inherited by cleanup.policy, in Kafka's list syntax
	// ("delete", "compact", "compact,delete"); "compact" is refused unless
	// AllowCompact is set, as it is for topics.
	CleanupPolicy string `kafka:"log.cleanup.policy"`
	// MinCleanableRatio is inherited by min.cleanable.dirty.ratio.
	MinCleanableRatio float64 `kafka:"log.cleaner.min.cleanable.ratio"`
	// DeleteRetentionMs is inherited by delete.retention.ms.
	DeleteRetentionMs int64 `kafka:"log.cleaner.delete.retention.ms"`
	// MinCompactionLagMs is inherited by min.compaction.lag.ms.
	MinCompactionLagMs int64 `kafka:"log.cleaner.min.compaction.lag.ms"`
	// MaxCompactionLagMs is inherited by max.compaction.lag.ms.
	MaxCompactionLagMs int64 `kafka:"log.cleaner.max.compaction.lag.ms"`
	// SegmentMs is inherited by segment.ms (Kafka: log.roll.ms, else
	// log.roll.hours, 168).
	SegmentMs int64 `kafka:"log.roll.ms"`
	// SegmentBytes is inherited by segment.bytes, which kbroker reports but
	// does not apply; the broker passes its commit-log file size here.
	SegmentBytes int32 `kafka:"log.segment.bytes"`
	// CompressionType is inherited by compression.type (reported, not applied).
	CompressionType string `kafka:"compression.type"`
	// MinInsyncReplicas is inherited by min.insync.replicas (reported, not applied).
	MinInsyncReplicas int32 `kafka:"min.insync.replicas"`

	// AllowCompact lets cleanup.policy (and log.cleanup.policy) contain
	// "compact". The broker sets it only when a log cleaner serves the
	// topics: accepting the policy without compacting would let a
	// compacted partition pin the shared commit log forever
	// (COMPACTION-REFERENCE.md §4.2). Internal topics are exempt: their
	// coordinators compact them with snapshots. It is not a Kafka property.
	AllowCompact bool `kafka:"-"`

	// Explicit holds the broker properties the operator set (in the config
	// file or by flag), by Kafka name, e.g. "log.retention.hours". A topic
	// inheriting one of them reports STATIC_BROKER_CONFIG as its source in
	// DescribeConfigs; otherwise DEFAULT_CONFIG, as Kafka's ConfigHelper.
	Explicit map[string]bool
	// Dynamic holds the broker properties set at run time (dynamic broker
	// configs), by Kafka name, with their source:
	// DYNAMIC_BROKER_CONFIG for this broker's, DYNAMIC_DEFAULT_BROKER_CONFIG
	// for the cluster-wide default. A topic inheriting one reports that
	// source; it wins over Explicit, as in Kafka.
	Dynamic map[string]kmsg.ConfigSource
}

// KafkaDefaults returns Kafka 4.x's built-in broker defaults (LogConfig,
// ServerLogConfigs): 1 partition, 7 days and unlimited bytes of retention,
// 1048588-byte batches, CreateTime with timestamps at most 1 hour ahead
// (KIP-1030), cleanup by deletion and 1 GiB segments rolled weekly, and
// the log cleaner's defaults (ratio 0.5, tombstones kept a day, no lag
// bounds).
func KafkaDefaults() Defaults {
	return Defaults{
		NumPartitions:        1,
		RetentionMs:          7 * 24 * 60 * 60 * 1000,
		RetentionBytes:       -1,
		MaxMessageBytes:      1024*1024 + 12, // 1 MiB plus Records.LOG_OVERHEAD
		TimestampType:        CreateTime,
		TimestampBeforeMaxMs: math.MaxInt64,
		TimestampAfterMaxMs:  60 * 60 * 1000,
		CleanupPolicy:        "delete",
		MinCleanableRatio:    0.5,
		DeleteRetentionMs:    24 * 60 * 60 * 1000,
		MinCompactionLagMs:   0,
		MaxCompactionLagMs:   math.MaxInt64,
		SegmentMs:            7 * 24 * 60 * 60 * 1000,
		SegmentBytes:         1 << 30,
		CompressionType:      "producer",
		MinInsyncReplicas:    1,
	}
}

// Validate reports every invalid field at once, each checked by the rule of
// the topic config that inherits it.
func (d Defaults) Validate() error {
	var errs []error
	if d.NumPartitions < 1 {
		errs = append(errs, fmt.Errorf("topic: broker default num.partitions: invalid value %d: value must be at least 1", d.NumPartitions))
	}
	if d.TimestampType != CreateTime && d.TimestampType != LogAppendTime {
		errs = append(errs, fmt.Errorf("topic: broker default log.message.timestamp.type: invalid value %s", d.TimestampType))
	}
	for _, def := range sortedDefs {
		if def.fromDefaults == nil || def.Name == TimestampTypeConfig {
			continue
		}
		raw := def.fromDefaults(&d)
		if def.Name == CleanupPolicyConfig {
			raw = d.CleanupPolicy // not canonicalised, so the error shows what was given
		}
		v, err := def.parse(raw)
		if err == nil && def.Name == CleanupPolicyConfig && !d.AllowCompact && slices.Contains(v.list, "compact") {
			err = errorf(kerr.InvalidConfig, "invalid value %q for configuration %s: %s", raw, def.Name, compactRefused)
		}
		if err != nil {
			var te *Error
			if errors.As(err, &te) {
				err = errors.New("topic: broker default " + def.Synonyms[0] + ": " + te.Detail)
			}
			errs = append(errs, err)
		}
	}
	if d.MinCompactionLagMs > d.MaxCompactionLagMs {
		errs = append(errs, fmt.Errorf("topic: broker defaults log.cleaner.min.compaction.lag.ms (%d) > log.cleaner.max.compaction.lag.ms (%d)",
			d.MinCompactionLagMs, d.MaxCompactionLagMs))
	}
	return errors.Join(errs...)
}

// dynamic returns the source of a dynamic broker config the config
// inherits from, if there is one.
func (d *Defaults) dynamic(def *Definition) (kmsg.ConfigSource, bool) {
	if def.fromDefaults == nil {
		return 0, false
	}
	for _, s := range def.Synonyms {
		if src, ok := d.Dynamic[s]; ok {
			return src, true
		}
	}
	return 0, false
}

// explicit reports whether the operator set a broker property the config
// inherits from, and kbroker has that setting.
func (d *Defaults) explicit(def *Definition) bool {
	if def.fromDefaults == nil {
		return false // kbroker has no such setting, so Kafka's default applies
	}
	for _, s := range def.Synonyms {
		if d.Explicit[s] {
			return true
		}
	}
	return false
}
