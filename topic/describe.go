package topic

import (
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ConfigEntry is one config of a DescribeConfigs answer for a topic, with
// the fields of DescribeConfigsResponse v3+.
type ConfigEntry struct {
	// Name is the config name.
	Name string
	// Value is the effective value: the topic's own, else the broker's.
	Value string
	// Source is DYNAMIC_TOPIC_CONFIG for a value set on the topic,
	// STATIC_BROKER_CONFIG for one inherited from a broker property the
	// operator set, DEFAULT_CONFIG otherwise.
	Source kmsg.ConfigSource
	// Type is the config's type.
	Type kmsg.ConfigType
	// ReadOnly is always false: every topic config can be altered (Kafka's
	// ConfigHelper.createTopicConfigEntry).
	ReadOnly bool
	// Sensitive is always false: no topic config is a PASSWORD.
	Sensitive bool
	// Doc is the config's documentation, with kbroker's note when kbroker
	// does not apply it or differs from Kafka.
	Doc string
	// Synonyms are where the value could come from, highest priority first,
	// for DescribeConfigs with include_synonyms.
	Synonyms []ConfigSynonym
}

// ConfigSynonym is one source of a config's value.
type ConfigSynonym struct {
	// Name is the topic config or the broker property.
	Name string
	// Value is its value there.
	Value string
	// Source says which level it is.
	Source kmsg.ConfigSource
}

// Describe lists every topic config, sorted by name, with its effective
// value and source, as Kafka's ConfigHelper.createTopicConfigEntry: the
// topic's own value (DYNAMIC_TOPIC_CONFIG) comes first, then the broker
// property it inherits from (STATIC_BROKER_CONFIG when the operator set it,
// DEFAULT_CONFIG otherwise; none when that property has no default in
// Kafka and nobody set it, see Definition.NoBrokerDefault); the source is
// that of the first synonym, DEFAULT_CONFIG without one.
//
// Unlike Kafka, the broker synonym is always reported under its first name
// (log.retention.ms, not log.retention.hours) with the value in that name's
// unit.
func (c Configs) Describe(defaults Defaults) []ConfigEntry {
	out := make([]ConfigEntry, 0, len(sortedDefs))
	for _, def := range sortedDefs {
		e := ConfigEntry{Name: def.Name, Type: def.Type, Doc: def.doc()}
		if v, ok := c.set[def.Name]; ok {
			e.Synonyms = append(e.Synonyms, ConfigSynonym{Name: def.Name, Value: v, Source: kmsg.ConfigSourceDynamicTopicConfig})
		}
		if len(def.Synonyms) > 0 {
			src := kmsg.ConfigSourceDefaultConfig
			if dyn, ok := defaults.dynamic(def); ok {
				src = dyn
			} else if defaults.explicit(def) {
				src = kmsg.ConfigSourceStaticBrokerConfig
			}
			if src != kmsg.ConfigSourceDefaultConfig || !def.NoBrokerDefault {
				e.Synonyms = append(e.Synonyms, ConfigSynonym{Name: def.Synonyms[0], Value: def.inherited(&defaults), Source: src})
			}
		}
		if len(e.Synonyms) > 0 {
			e.Value, e.Source = e.Synonyms[0].Value, e.Synonyms[0].Source
		} else {
			e.Value, e.Source = def.inherited(&defaults), kmsg.ConfigSourceDefaultConfig
		}
		out = append(out, e)
	}
	return out
}

// doc is the documentation DescribeConfigs returns: Kafka's meaning, then
// what kbroker does with it.
func (d *Definition) doc() string {
	if d.Note == "" {
		return d.Doc
	}
	return d.Doc + " [kbroker: " + d.Note + "]"
}
