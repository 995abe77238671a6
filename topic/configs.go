package topic

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TimestampType says where a topic's record timestamps come from; the values
// are Kafka's TimestampType ids, which is also the batch attribute bit 3.
type TimestampType int8

const (
	// CreateTime keeps the timestamp the producer set.
	CreateTime TimestampType = 0
	// LogAppendTime makes the broker stamp each batch with its append time.
	LogAppendTime TimestampType = 1
)

// String returns Kafka's name of the type: "CreateTime" or "LogAppendTime".
func (t TimestampType) String() string {
	switch t {
	case CreateTime:
		return "CreateTime"
	case LogAppendTime:
		return "LogAppendTime"
	}
	return fmt.Sprintf("TimestampType(%d)", int8(t))
}

// ParseTimestampType parses "CreateTime" or "LogAppendTime" (case-sensitive,
// as Kafka's ValidString).
func ParseTimestampType(s string) (TimestampType, error) {
	switch s {
	case "CreateTime":
		return CreateTime, nil
	case "LogAppendTime":
		return LogAppendTime, nil
	}
	return 0, fmt.Errorf("topic: unknown timestamp type %q (want CreateTime or LogAppendTime)", s)
}

// MarshalText returns String, so a config loader can read the type from a
// property file.
func (t TimestampType) MarshalText() ([]byte, error) {
	if t != CreateTime && t != LogAppendTime {
		return nil, fmt.Errorf("topic: invalid timestamp type %d", int8(t))
	}
	return []byte(t.String()), nil
}

// UnmarshalText parses the type as ParseTimestampType does.
func (t *TimestampType) UnmarshalText(b []byte) error {
	v, err := ParseTimestampType(string(b))
	if err != nil {
		return err
	}
	*t = v
	return nil
}

// CleanupPolicy is a parsed cleanup.policy. Neither flag set (an empty list)
// means data is never deleted, whatever retention.ms and retention.bytes say,
// as in Kafka's LogConfig where neither delete nor compact is then true.
type CleanupPolicy struct {
	// Delete: retention.ms and retention.bytes remove old data.
	Delete bool
	// Compact: keep only the last record per key. Only set on topics of a
	// broker that runs its log cleaner (Defaults.AllowCompact) and on the
	// internal topics, which their coordinators compact with snapshots.
	Compact bool
}

// Configs are a topic's config overrides (what was set on the topic, as
// DYNAMIC_TOPIC_CONFIG), validated and in canonical form, together with the
// effective values of the configs kbroker applies, resolved once against the
// broker Defaults so the produce and fetch paths read plain fields.
//
// A Configs is immutable and cheap to copy. The zero value has no overrides
// and zero effective values; get real ones from NewConfigs or a Topic.
type Configs struct {
	set map[string]string // never modified after construction; shared by copies

	retentionMs          int64
	retentionBytes       int64
	maxMessageBytes      int32
	timestampType        TimestampType
	timestampBeforeMaxMs int64
	timestampAfterMaxMs  int64
	cleanupPolicy        CleanupPolicy
	minCleanableRatio    float64
	deleteRetentionMs    int64
	minCompactionLagMs   int64
	maxCompactionLagMs   int64
	segmentMs            int64
	segmentBytes         int32
}

// NewConfigs validates topic config overrides as CreateTopics does and
// resolves them against defaults. A nil value is refused as Kafka refuses it
// (INVALID_CONFIG "null value not supported"); unknown names and invalid
// values wrap kerr.InvalidConfig.
//
// "compact" in the resulting cleanup.policy is refused unless
// defaults.AllowCompact is set, as for a topic a client creates.
func NewConfigs(overrides map[string]*string, defaults Defaults) (Configs, error) {
	c, err := newConfigs(overrides, &defaults)
	if err != nil {
		return Configs{}, err
	}
	if err := refuseCompact("", c.set, &defaults); err != nil {
		return Configs{}, err
	}
	return c, nil
}

// newConfigs is NewConfigs without the compaction gate.
func newConfigs(overrides map[string]*string, defaults *Defaults) (Configs, error) {
	if err := nullValues(overrides, kerr.InvalidConfig, "null value not supported for topic configs: "); err != nil {
		return Configs{}, err
	}
	raw := make(map[string]string, len(overrides))
	for k, v := range overrides {
		raw[k] = *v
	}
	set, err := validateSet(raw, defaults)
	if err != nil {
		return Configs{}, err
	}
	return resolve(set, defaults), nil
}

// refuseCompact refuses a cleanup.policy with "compact" (set on the topic
// or inherited from log.cleanup.policy) while the broker has no log
// cleaner (Defaults.AllowCompact). Internal topics are exempt: their
// coordinators compact them with snapshots, and Kafka reports them as
// compacted. Loading the persisted registry does not check it, so a topic
// accepted once is never refused at start-up.
func refuseCompact(name string, set map[string]string, d *Defaults) error {
	if d.AllowCompact || IsInternal(name) {
		return nil
	}
	def := defs[CleanupPolicyConfig]
	raw, ok := set[CleanupPolicyConfig]
	if !ok {
		raw = def.inherited(d)
	}
	v, err := def.parse(raw)
	if err != nil {
		return err
	}
	if slices.Contains(v.list, "compact") {
		return errorf(kerr.InvalidConfig, "invalid value %q for configuration %s: %s", raw, CleanupPolicyConfig, compactRefused)
	}
	return nil
}

// nullValues refuses nil values, naming them in sorted order.
func nullValues(m map[string]*string, code *kerr.Error, prefix string) error {
	var names []string
	for k, v := range m {
		if v == nil {
			names = append(names, k)
		}
	}
	if names == nil {
		return nil
	}
	sort.Strings(names)
	return errorf(code, "%s%s", prefix, strings.Join(names, ","))
}

// validateSet checks a complete set of overrides as LogConfig.validate does:
// every name known, every value valid, then the cross-config rules on the
// effective values (overrides over the broker defaults d, as Kafka merges
// them). It returns the canonical values. Names are checked in sorted order
// so the reported problem does not depend on map order.
func validateSet(raw map[string]string, d *Defaults) (map[string]string, error) {
	names := slices.Sorted(maps.Keys(raw))
	for _, name := range names {
		if _, ok := defs[name]; !ok {
			if why, removed := removedConfigs[name]; removed {
				return nil, errorf(kerr.InvalidConfig, "unknown topic config name: %s (%s)", name, why)
			}
			return nil, errorf(kerr.InvalidConfig, "unknown topic config name: %s", name)
		}
	}
	set := make(map[string]string, len(raw))
	for _, name := range names {
		v, err := defs[name].parse(raw[name])
		if err != nil {
			return nil, err
		}
		set[name] = v.text
	}
	// LogConfig.validateValues: the only rule that spans two configs.
	minLag := effectiveLong(set, minCompactionLagMsConfig, d)
	maxLag := effectiveLong(set, maxCompactionLagMsConfig, d)
	if minLag > maxLag {
		return nil, errorf(kerr.InvalidConfig, "conflict topic config setting %s (%d) > %s (%d)",
			minCompactionLagMsConfig, minLag, maxCompactionLagMsConfig, maxLag)
	}
	return set, nil
}

// effectiveLong returns a LONG config from set or, when the topic does not
// set it, as inherited from the broker defaults d.
func effectiveLong(set map[string]string, name string, d *Defaults) int64 {
	def := defs[name]
	s, ok := set[name]
	if !ok {
		s = def.inherited(d)
	}
	v, _ := def.parse(s)
	return v.i
}

// resolve builds a Configs from canonical, valid overrides.
func resolve(set map[string]string, d *Defaults) Configs {
	get := func(name string) parsed {
		def := defs[name]
		s, ok := set[name]
		if !ok {
			s = def.inherited(d)
		}
		v, _ := def.parse(s) // valid: overrides by validateSet, defaults by Defaults.Validate
		return v
	}
	c := Configs{set: set}
	c.retentionMs = get(RetentionMsConfig).i
	c.retentionBytes = get(RetentionBytesConfig).i
	c.maxMessageBytes = int32(get(MaxMessageBytesConfig).i)
	if get(TimestampTypeConfig).text == "LogAppendTime" {
		c.timestampType = LogAppendTime
	}
	c.timestampBeforeMaxMs = get(TimestampBeforeMaxMsConfig).i
	c.timestampAfterMaxMs = get(TimestampAfterMaxMsConfig).i
	c.minCleanableRatio = get(minCleanableDirtyRatioConfig).f
	c.deleteRetentionMs = get(DeleteRetentionMsConfig).i
	c.minCompactionLagMs = get(minCompactionLagMsConfig).i
	c.maxCompactionLagMs = get(maxCompactionLagMsConfig).i
	c.segmentMs = get(SegmentMsConfig).i
	c.segmentBytes = int32(get(SegmentBytesConfig).i)
	for _, p := range get(CleanupPolicyConfig).list {
		switch p {
		case "delete":
			c.cleanupPolicy.Delete = true
		case "compact":
			c.cleanupPolicy.Compact = true
		}
	}
	return c
}

// inherited returns the value a topic gets when it does not set the config:
// the broker's (Defaults) where kbroker has that setting, else Kafka's default.
func (d *Definition) inherited(defaults *Defaults) string {
	if d.fromDefaults != nil && defaults != nil {
		return d.fromDefaults(defaults)
	}
	return d.Default
}

// RetentionMs is retention.ms: how long a partition keeps data; -1 means no
// time limit. The partition layer applies it per batch (ARCHITECTURE.md,
// Retention) only when CleanupPolicy().Delete is set.
func (c Configs) RetentionMs() int64 { return c.retentionMs }

// RetentionBytes is retention.bytes: the size a partition may keep; a
// negative value means no limit.
func (c Configs) RetentionBytes() int64 { return c.retentionBytes }

// MaxMessageBytes is max.message.bytes: the largest batch a produce may
// append, checked before anything is written (MESSAGE_TOO_LARGE).
func (c Configs) MaxMessageBytes() int32 { return c.maxMessageBytes }

// TimestampType is message.timestamp.type: with LogAppendTime the partition
// stamps each batch's max timestamp with the append time.
func (c Configs) TimestampType() TimestampType { return c.timestampType }

// TimestampBeforeMaxMs is message.timestamp.before.max.ms: with CreateTime,
// a batch whose timestamp is more than this behind the broker's clock is
// refused (INVALID_TIMESTAMP, Kafka's LogValidator).
func (c Configs) TimestampBeforeMaxMs() int64 { return c.timestampBeforeMaxMs }

// TimestampAfterMaxMs is message.timestamp.after.max.ms: with CreateTime, a
// batch whose timestamp is more than this ahead of the broker's clock is
// refused (INVALID_TIMESTAMP).
func (c Configs) TimestampAfterMaxMs() int64 { return c.timestampAfterMaxMs }

// CleanupPolicy is cleanup.policy.
func (c Configs) CleanupPolicy() CleanupPolicy { return c.cleanupPolicy }

// MinCleanableDirtyRatio is min.cleanable.dirty.ratio: the share of dirty
// (not yet cleaned) bytes above which the cleaner takes the partition.
func (c Configs) MinCleanableDirtyRatio() float64 { return c.minCleanableRatio }

// DeleteRetentionMs is delete.retention.ms: how long a tombstone stays
// after the cleaner first kept it (its KIP-534 delete horizon).
func (c Configs) DeleteRetentionMs() int64 { return c.deleteRetentionMs }

// MinCompactionLagMs is min.compaction.lag.ms: a batch younger than this
// is never cleaned.
func (c Configs) MinCompactionLagMs() int64 { return c.minCompactionLagMs }

// MaxCompactionLagMs is max.compaction.lag.ms: a dirty batch older than
// this makes the partition eligible whatever its dirty ratio (KIP-354).
func (c Configs) MaxCompactionLagMs() int64 { return c.maxCompactionLagMs }

// SegmentMs is segment.ms. On the shared commit log a partition has no
// segment files; for a compacted topic it bounds how long the newest data
// stays the uncleanable "active segment" (with max.compaction.lag.ms, as
// Kafka's LogConfig.maxSegmentMs).
func (c Configs) SegmentMs() int64 { return c.segmentMs }

// SegmentBytes is segment.bytes: for a compacted topic, how many bytes of
// the newest data form the uncleanable "active segment".
func (c Configs) SegmentBytes() int32 { return c.segmentBytes }

// Override returns the value set on the topic for name, if any.
func (c Configs) Override(name string) (string, bool) {
	v, ok := c.set[name]
	return v, ok
}

// Overrides returns a copy of the values set on the topic.
func (c Configs) Overrides() map[string]string {
	return maps.Clone(c.set)
}

// Equal reports whether both have the same overrides (and hence, resolved
// against the same Defaults, the same effective values).
func (c Configs) Equal(o Configs) bool {
	return maps.Equal(c.set, o.set)
}

// sameEffective reports whether c and o resolve to the same values, which
// differs from Equal when the broker defaults changed (SetDefaults).
func (c Configs) sameEffective(o Configs) bool {
	return c.retentionMs == o.retentionMs && c.retentionBytes == o.retentionBytes &&
		c.maxMessageBytes == o.maxMessageBytes && c.timestampType == o.timestampType &&
		c.timestampBeforeMaxMs == o.timestampBeforeMaxMs && c.timestampAfterMaxMs == o.timestampAfterMaxMs &&
		c.cleanupPolicy == o.cleanupPolicy
}

// OpType is an IncrementalAlterConfigs operation; the values are the wire's
// (kmsg.IncrementalAlterConfigOp), so a handler converts with a cast.
type OpType int8

const (
	// OpSet sets the config on the topic.
	OpSet OpType = 0
	// OpDelete removes the topic's value; the broker default applies again.
	OpDelete OpType = 1
	// OpAppend adds entries to a LIST config (skipping those present).
	OpAppend OpType = 2
	// OpSubtract removes entries from a LIST config.
	OpSubtract OpType = 3
)

// String returns Kafka's name of the operation (AlterConfigOp.OpType).
func (o OpType) String() string {
	switch o {
	case OpSet:
		return "SET"
	case OpDelete:
		return "DELETE"
	case OpAppend:
		return "APPEND"
	case OpSubtract:
		return "SUBTRACT"
	}
	return fmt.Sprintf("OpType(%d)", int8(o))
}

// AlterOp is one entry of an IncrementalAlterConfigs resource.
type AlterOp struct {
	// Name is the config name.
	Name string
	// Op is what to do.
	Op OpType
	// Value is the operand; nil is only allowed with OpDelete.
	Value *string
}

// incremental applies ops to the current overrides as Kafka's
// ConfigurationControlManager.incrementalAlterConfigResource does and returns
// the raw (not yet validated) result. Request-shape errors (duplicate names,
// null values, unknown operations) are INVALID_REQUEST, as in
// ConfigAdminManager.preprocess; APPEND and SUBTRACT on a config that is not
// a LIST are INVALID_CONFIG.
func incremental(cur Configs, ops []AlterOp, d *Defaults) (map[string]string, error) {
	seen := make(map[string]bool, len(ops))
	var nulls []string
	for _, op := range ops {
		if seen[op.Name] {
			return nil, errorf(kerr.InvalidRequest, "error due to duplicate config keys")
		}
		seen[op.Name] = true
		if op.Op < OpSet || op.Op > OpSubtract {
			return nil, errorf(kerr.InvalidRequest, "unknown alter config operation %d for %s", int8(op.Op), op.Name)
		}
		if op.Op != OpDelete && op.Value == nil {
			nulls = append(nulls, op.Name)
		}
	}
	if nulls != nil {
		return nil, errorf(kerr.InvalidRequest, "null value not supported for : %s", strings.Join(nulls, ", "))
	}
	raw := maps.Clone(cur.set)
	if raw == nil {
		raw = make(map[string]string)
	}
	for _, op := range ops {
		switch op.Op {
		case OpSet:
			raw[op.Name] = *op.Value
		case OpDelete:
			// Deleting an unset or unknown name changes nothing and is not an
			// error, as in Kafka: only the resulting set is validated.
			delete(raw, op.Name)
		case OpAppend, OpSubtract:
			def, ok := defs[op.Name]
			if !ok || def.Type != kmsg.ConfigTypeList {
				return nil, errorf(kerr.InvalidConfig, "can't %s to key %s because its type is not LIST", op.Op, op.Name)
			}
			cur, ok := raw[op.Name]
			if !ok {
				cur = def.inherited(d)
			}
			parts := splitParts(cur)
			for _, e := range strings.Split(*op.Value, ",") {
				if op.Op == OpAppend {
					if !slices.Contains(parts, e) {
						parts = append(parts, e)
					}
				} else if i := slices.Index(parts, e); i >= 0 {
					parts = slices.Delete(parts, i, i+1) // the first one, as List.remove
				}
			}
			raw[op.Name] = strings.Join(parts, ",")
		}
	}
	return raw, nil
}

// splitParts splits a stored list value into its non-empty entries, as
// ConfigurationControlManager.getParts.
func splitParts(s string) []string {
	var parts []string
	for _, p := range strings.Split(s, ",") {
		if p != "" {
			parts = append(parts, p)
		}
	}
	return parts
}
