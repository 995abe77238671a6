package broker

// Dynamic broker configs (KIP-226): broker properties changed at run time
// with AlterConfigs or IncrementalAlterConfigs on the BROKER resource, for
// this broker (its id as the resource name) or as the cluster-wide default
// (the empty name). As in Kafka the most specific wins: this broker's
// dynamic value (DYNAMIC_BROKER_CONFIG), then the cluster default
// (DYNAMIC_DEFAULT_BROKER_CONFIG), then the config file
// (STATIC_BROKER_CONFIG), then the built-in default (DEFAULT_CONFIG).
//
// The dynamic properties are those of Kafka's dynamic set (DynamicLogConfig
// and DynamicConnectionQuota) that kbroker applies:
//
//   - log.retention.ms, log.retention.bytes, message.max.bytes,
//     log.cleanup.policy, log.message.timestamp.type,
//     log.message.timestamp.before.max.ms and .after.max.ms,
//     log.cleaner.min.cleanable.ratio, log.cleaner.delete.retention.ms,
//     log.cleaner.min.compaction.lag.ms, log.cleaner.max.compaction.lag.ms
//     and compression.type: the broker defaults of the topic configs that
//     inherit them; every topic that does not override one takes the new
//     value at once (topic.Registry.SetDefaults) and its partitions apply
//     it (compression.type is reported, not applied, as for topics).
//     log.cleanup.policy is a LIST: IncrementalAlterConfigs' APPEND and
//     SUBTRACT edit it (editList).
//   - max.connections, max.connections.per.ip: checked at the next accept.
//
// Any other property is refused with Kafka's INVALID_REQUEST "Cannot update
// these configs dynamically". Values are checked as Kafka's ConfigDef
// parses them (INVALID_CONFIG "Invalid value ... for configuration ...")
// and against the topic defaults' rules. Changes are written to the
// cluster state file (package cluster) before the answer and applied again
// at start-up.

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/cluster"
	"github.com/kbroker/kbroker/topic"
)

// dynamicSpec is one dynamic broker config.
type dynamicSpec struct {
	typ kmsg.ConfigType
	// min is the smallest value ConfigDef accepts (INT and LONG).
	min int64
	// topicDefault, for a broker default of topic configs, sets it in d
	// from a value parseDynamic accepted; Defaults.Validate then checks it
	// by the rule of the topic config that inherits it.
	topicDefault func(d *topic.Defaults, value string, n int64) error
}

// dynamicBrokerConfigs are the broker properties that may change at run
// time.
var dynamicBrokerConfigs = map[string]dynamicSpec{
	"log.retention.ms":    {typ: kmsg.ConfigTypeLong, min: -1, topicDefault: setsLong(func(d *topic.Defaults) *int64 { return &d.RetentionMs })},
	"log.retention.bytes": {typ: kmsg.ConfigTypeLong, min: -1 << 63, topicDefault: setsLong(func(d *topic.Defaults) *int64 { return &d.RetentionBytes })},
	"message.max.bytes": {typ: kmsg.ConfigTypeInt, min: 0, topicDefault: func(d *topic.Defaults, _ string, n int64) error {
		d.MaxMessageBytes = int32(n)
		return nil
	}},
	"log.cleanup.policy": {typ: kmsg.ConfigTypeList, topicDefault: func(d *topic.Defaults, v string, _ int64) error {
		d.CleanupPolicy = v
		return nil
	}},
	"log.message.timestamp.type": {typ: kmsg.ConfigTypeString, topicDefault: func(d *topic.Defaults, v string, _ int64) error {
		tt, err := topic.ParseTimestampType(v)
		d.TimestampType = tt
		return err
	}},
	"log.message.timestamp.before.max.ms": {typ: kmsg.ConfigTypeLong, min: 0, topicDefault: setsLong(func(d *topic.Defaults) *int64 { return &d.TimestampBeforeMaxMs })},
	"log.message.timestamp.after.max.ms":  {typ: kmsg.ConfigTypeLong, min: 0, topicDefault: setsLong(func(d *topic.Defaults) *int64 { return &d.TimestampAfterMaxMs })},
	"log.cleaner.min.cleanable.ratio": {typ: kmsg.ConfigTypeDouble, topicDefault: func(d *topic.Defaults, v string, _ int64) error {
		f, err := strconv.ParseFloat(v, 64)
		d.MinCleanableRatio = f
		return err
	}},
	"log.cleaner.delete.retention.ms":   {typ: kmsg.ConfigTypeLong, min: 0, topicDefault: setsLong(func(d *topic.Defaults) *int64 { return &d.DeleteRetentionMs })},
	"log.cleaner.min.compaction.lag.ms": {typ: kmsg.ConfigTypeLong, min: 0, topicDefault: setsLong(func(d *topic.Defaults) *int64 { return &d.MinCompactionLagMs })},
	"log.cleaner.max.compaction.lag.ms": {typ: kmsg.ConfigTypeLong, min: 1, topicDefault: setsLong(func(d *topic.Defaults) *int64 { return &d.MaxCompactionLagMs })},
	"compression.type": {typ: kmsg.ConfigTypeString, topicDefault: func(d *topic.Defaults, v string, _ int64) error {
		d.CompressionType = v
		return nil
	}},
	"max.connections":        {typ: kmsg.ConfigTypeInt, min: 0},
	"max.connections.per.ip": {typ: kmsg.ConfigTypeInt, min: 0},
}

// setsLong is the topicDefault of a LONG topic default, the field of d
// that field returns.
func setsLong(field func(d *topic.Defaults) *int64) func(*topic.Defaults, string, int64) error {
	return func(d *topic.Defaults, _ string, n int64) error {
		*field(d) = n
		return nil
	}
}

// parseDynamic checks a dynamic config's value as Kafka's ConfigDef parses
// it, with its messages, and returns it as a number for INT and LONG
// configs (0 for the others, whose values topicDefaults checks).
func parseDynamic(name, value string) (int64, error) {
	spec := dynamicBrokerConfigs[name]
	invalid := func(why string) error {
		return &topic.Error{Code: kerr.InvalidConfig, Detail: fmt.Sprintf("Invalid value %s for configuration %s: %s", value, name, why)}
	}
	bits, typName := 64, "LONG"
	switch spec.typ {
	case kmsg.ConfigTypeInt:
		bits, typName = 32, "INT"
	case kmsg.ConfigTypeLong:
	case kmsg.ConfigTypeDouble:
		if _, err := strconv.ParseFloat(value, 64); err != nil {
			return 0, invalid("Not a number of type DOUBLE")
		}
		return 0, nil
	default:
		return 0, nil
	}
	v, err := strconv.ParseInt(value, 10, bits)
	if err != nil {
		return 0, invalid("Not a number of type " + typName)
	}
	if v < spec.min {
		return 0, invalid(fmt.Sprintf("Value must be at least %d", spec.min))
	}
	return v, nil
}

// brokerResourceKey is the cluster.State.BrokerConfigs key of this
// broker's own dynamic configs.
func (b *Broker) brokerResourceKey() string { return strconv.Itoa(int(b.cfg.NodeID)) }

// dynamicLayer returns the dynamic value and source of every dynamic
// config set, this broker's over the cluster default.
func (b *Broker) dynamicLayer(st *cluster.State) (map[string]string, map[string]kmsg.ConfigSource) {
	vals := make(map[string]string)
	srcs := make(map[string]kmsg.ConfigSource)
	for k, v := range st.BrokerConfigs[""] {
		vals[k], srcs[k] = v, kmsg.ConfigSourceDynamicDefaultBrokerConfig
	}
	for k, v := range st.BrokerConfigs[b.brokerResourceKey()] {
		vals[k], srcs[k] = v, kmsg.ConfigSourceDynamicBrokerConfig
	}
	return vals, srcs
}

// topicDefaults are the broker-level values topics inherit: the config
// file's, overlaid with the dynamic ones of st.
func (b *Broker) topicDefaults(st *cluster.State) (topic.Defaults, error) {
	d := topic.KafkaDefaults()
	d.NumPartitions = b.cfg.DefaultPartitions
	d.RetentionMs = b.cfg.RetentionMs
	d.RetentionBytes = b.cfg.RetentionBytes
	d.MaxMessageBytes = int32(b.cfg.MessageMaxBytes)
	d.SegmentBytes = int32(b.cfg.SegmentBytes)
	d.CleanupPolicy = b.cfg.LogCleanupPolicy
	d.SegmentMs = b.cfg.LogRollMs
	d.MinCleanableRatio = b.cfg.LogCleanerMinCleanableRatio
	d.DeleteRetentionMs = b.cfg.LogCleanerDeleteRetentionMs
	d.MinCompactionLagMs = b.cfg.LogCleanerMinCompactionLagMs
	d.MaxCompactionLagMs = b.cfg.LogCleanerMaxCompactionLagMs
	// The store has a log cleaner (partition/cleaner.go), so compacted
	// topics are accepted; with log.cleaner.enable=false they are
	// accepted and not cleaned, as in Kafka.
	d.AllowCompact = true
	d.Explicit = b.cfg.changedProperties()
	vals, srcs := b.dynamicLayer(st)
	d.Dynamic = make(map[string]kmsg.ConfigSource)
	for name, s := range vals {
		spec := dynamicBrokerConfigs[name]
		if spec.topicDefault == nil {
			continue
		}
		n, err := parseDynamic(name, s)
		if err != nil {
			return topic.Defaults{}, err
		}
		if err := spec.topicDefault(&d, strings.TrimSpace(s), n); err != nil {
			return topic.Defaults{}, &topic.Error{Code: kerr.InvalidConfig, Detail: fmt.Sprintf("Invalid value %s for configuration %s: %v", s, name, err)}
		}
		d.Dynamic[name] = srcs[name]
	}
	if err := d.Validate(); err != nil {
		return topic.Defaults{}, &topic.Error{Code: kerr.InvalidConfig, Detail: err.Error()}
	}
	return d, nil
}

// applyDynamicConfigs makes st's dynamic configs take effect.
func (b *Broker) applyDynamicConfigs(st *cluster.State) error {
	d, err := b.topicDefaults(st)
	if err != nil {
		return err
	}
	if err := b.topics.SetDefaults(d); err != nil {
		return err
	}
	vals, _ := b.dynamicLayer(st)
	limit := func(name string, static int) int64 {
		if s, ok := vals[name]; ok {
			if v, err := parseDynamic(name, s); err == nil {
				return v
			}
		}
		return int64(static)
	}
	b.maxConns.Store(limit("max.connections", b.cfg.MaxConnections))
	b.maxConnsPerIP.Store(limit("max.connections.per.ip", b.cfg.MaxConnectionsPerIP))
	return nil
}

// brokerConfigOp is one change to a broker resource's dynamic configs: a
// nil value deletes.
type brokerConfigOp struct {
	name  string
	value *string
	// edit, APPEND or SUBTRACT, makes value the items to add to or take
	// from a LIST config's current list (editList); SET otherwise.
	edit kmsg.IncrementalAlterConfigOp
}

// editList applies an APPEND or SUBTRACT of the comma-separated items to
// the list cur, as ConfigAdminManager does: APPEND adds the items it does
// not hold yet, in order, SUBTRACT removes every one of them.
func editList(cur, items string, edit kmsg.IncrementalAlterConfigOp) string {
	split := func(s string) []string {
		var out []string
		for _, p := range strings.Split(s, ",") {
			if p = strings.TrimSpace(p); p != "" {
				out = append(out, p)
			}
		}
		return out
	}
	list, given := split(cur), split(items)
	if edit == kmsg.IncrementalAlterConfigOpSubtract {
		list = slices.DeleteFunc(list, func(x string) bool { return slices.Contains(given, x) })
	} else {
		for _, x := range given {
			if !slices.Contains(list, x) {
				list = append(list, x)
			}
		}
	}
	return strings.Join(list, ",")
}

// alterDynamicBrokerConfigs applies ops to the dynamic configs of the
// broker resource (validated by the caller: "" or this broker's id);
// replace first drops every config the resource has (AlterConfigs). A
// non-dynamic name is INVALID_REQUEST, listed all at once as Kafka does.
func (b *Broker) alterDynamicBrokerConfigs(resource string, ops []brokerConfigOp, replace, validateOnly bool) error {
	var static []string
	for _, op := range ops {
		if _, ok := dynamicBrokerConfigs[op.name]; !ok && op.value != nil {
			static = append(static, op.name)
		}
	}
	if static != nil {
		return &topic.Error{Code: kerr.InvalidRequest, Detail: fmt.Sprintf(
			"Cannot update these configs dynamically: %s (set them in the config file and restart)", strings.Join(static, ", "))}
	}
	key := resource
	if key != "" {
		key = b.brokerResourceKey()
	}
	err := b.cluster.Update(func(st *cluster.State) error {
		cur := st.BrokerConfigs[key]
		if replace || cur == nil {
			cur = make(map[string]string)
		}
		for _, op := range ops {
			if op.value == nil {
				delete(cur, op.name)
				continue
			}
			v := *op.value
			if op.edit == kmsg.IncrementalAlterConfigOpAppend || op.edit == kmsg.IncrementalAlterConfigOpSubtract {
				// Kafka edits the resource's dynamic value, else the
				// setting's default (not the config file's value).
				base, ok := cur[op.name]
				if !ok {
					base = defaultProperties()[op.name]
				}
				v = editList(base, v, op.edit)
			}
			if _, err := parseDynamic(op.name, v); err != nil {
				return err
			}
			cur[op.name] = v
		}
		if st.BrokerConfigs == nil {
			st.BrokerConfigs = make(map[string]map[string]string)
		}
		st.BrokerConfigs[key] = cur
		if _, err := b.topicDefaults(st); err != nil {
			return err
		}
		if validateOnly {
			return errValidateOnly
		}
		return nil
	})
	switch {
	case errors.Is(err, errValidateOnly):
		return nil
	case err != nil:
		return err
	}
	return b.applyDynamicConfigs(b.cluster.Load())
}
