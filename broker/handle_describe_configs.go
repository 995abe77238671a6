package broker

// DescribeConfigs v0–v4, as Kafka 4's ConfigHelper.describeConfigs.
//
// TOPIC resources: every topic config (topic.Registry.DescribeConfigs) with
// its effective value and source; an invalid name is
// INVALID_TOPIC_EXCEPTION, a missing topic UNKNOWN_TOPIC_OR_PARTITION.
// BROKER resources: named by this broker's id, every setting of Config
// (Config.Properties, by Kafka property name) and the Kafka properties
// admin tools read that describe kbroker (reportedBrokerConfigs:
// inter.broker.protocol.version, delete.topic.enable,
// default.replication.factor, ...). The dynamic ones (dynamic_config.go)
// are writable and report DYNAMIC_BROKER_CONFIG or
// DYNAMIC_DEFAULT_BROKER_CONFIG when set at run time; the rest are
// read-only, STATIC_BROKER_CONFIG when differing from kbroker's built-in
// default (DefaultConfig), else DEFAULT_CONFIG. Synonyms list the sources
// most specific first, as Kafka. The empty name asks, as in Kafka, for the
// cluster-wide dynamic defaults that are set.
// Another id, or a name that is not a number, is INVALID_REQUEST with
// Kafka's message. GROUP resources: the group's configs (group_configs.go).
// Other resource types (BROKER_LOGGER, CLIENT_METRICS) are INVALID_REQUEST
// per resource. ConfigNames, when neither null
// nor empty, keeps only the configs named (as Kafka, an empty list means
// all).
//
// Deviations from Apache Kafka:
//   - Broker configs are kbroker's Config settings, some of them named
//     kbroker.*, and a few reported Kafka properties, not Kafka's ~400;
//     they have no documentation and their only synonyms are themselves.
//   - A topic config's broker synonym is named by its first name
//     (log.retention.ms), see topic.Configs.Describe.
//   - v0's is_default is set (source is DEFAULT_CONFIG, or for a topic,
//     not set on the topic); Kafka leaves it false.
//
// Versions: v1 include_synonyms, config source and synonyms (KIP-226); v2
// throttle; v3 include_documentation, config type and documentation
// (KIP-569); v4 flexible.

import (
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/topic"
)

func (b *Broker) handleDescribeConfigs(c *conn, req *kmsg.DescribeConfigsRequest) (result, error) {
	resp := req.ResponseKind().(*kmsg.DescribeConfigsResponse)
	for i := range req.Resources {
		rr := &req.Resources[i]
		res := kmsg.NewDescribeConfigsResponseResource()
		res.ResourceType, res.ResourceName = rr.ResourceType, rr.ResourceName
		var err error
		if aerr := b.configsAllowed(c, opDescribeConfigs, rr.ResourceType, rr.ResourceName); aerr != nil {
			res.ErrorCode, res.ErrorMessage = aerr.Code, kmsg.StringPtr(aerr.Description)
			resp.Resources = append(resp.Resources, res)
			continue
		}
		switch rr.ResourceType {
		case kmsg.ConfigResourceTypeTopic:
			res.Configs, err = b.describeTopicConfigs(req, rr)
		case kmsg.ConfigResourceTypeBroker:
			res.Configs, err = b.describeBrokerConfigs(req, rr)
		case kmsg.ConfigResourceTypeGroupConfig:
			res.Configs, err = b.describeGroupConfigs(req, rr)
		default:
			err = &topic.Error{Code: kerr.InvalidRequest, Detail: fmt.Sprintf("Unsupported resource type: %s", rr.ResourceType)}
		}
		if err != nil {
			res.ErrorCode, res.ErrorMessage = adminError(c, "describe configs of "+rr.ResourceName, err)
			res.Configs = nil
		}
		resp.Resources = append(resp.Resources, res)
	}
	return respond(resp)
}

// wanted reports whether a config is asked for: all are when the request
// names none.
func wanted(rr *kmsg.DescribeConfigsRequestResource, name string) bool {
	return len(rr.ConfigNames) == 0 || slices.Contains(rr.ConfigNames, name)
}

// describeTopicConfigs lists one topic's configs.
func (b *Broker) describeTopicConfigs(req *kmsg.DescribeConfigsRequest, rr *kmsg.DescribeConfigsRequestResource) ([]kmsg.DescribeConfigsResponseResourceConfig, error) {
	entries, err := b.topics.DescribeConfigs(rr.ResourceName)
	if err != nil {
		return nil, err
	}
	out := make([]kmsg.DescribeConfigsResponseResourceConfig, 0, len(entries))
	for _, e := range entries {
		if !wanted(rr, e.Name) {
			continue
		}
		rc := kmsg.NewDescribeConfigsResponseResourceConfig()
		rc.Name = e.Name
		if !e.Sensitive {
			rc.Value = kmsg.StringPtr(e.Value)
		}
		rc.ReadOnly = e.ReadOnly
		rc.IsDefault = e.Source != kmsg.ConfigSourceDynamicTopicConfig
		rc.Source = e.Source
		rc.IsSensitive = e.Sensitive
		rc.ConfigType = e.Type
		if req.IncludeSynonyms {
			for _, s := range e.Synonyms {
				rc.ConfigSynonyms = append(rc.ConfigSynonyms, configSynonym(s.Name, s.Value, s.Source, e.Sensitive))
			}
		}
		if req.IncludeDocumentation {
			rc.Documentation = kmsg.StringPtr(e.Doc)
		}
		out = append(out, rc)
	}
	return out, nil
}

func configSynonym(name, value string, src kmsg.ConfigSource, sensitive bool) kmsg.DescribeConfigsResponseResourceConfigConfigSynonym {
	s := kmsg.NewDescribeConfigsResponseResourceConfigConfigSynonym()
	s.Name, s.Source = name, src
	if !sensitive {
		s.Value = kmsg.StringPtr(value)
	}
	return s
}

// describeBrokerConfigs lists the broker's settings, or for the empty
// name the cluster-wide dynamic defaults set (dynamic_config.go).
func (b *Broker) describeBrokerConfigs(req *kmsg.DescribeConfigsRequest, rr *kmsg.DescribeConfigsRequestResource) ([]kmsg.DescribeConfigsResponseResourceConfig, error) {
	st := b.cluster.Load()
	if rr.ResourceName == "" {
		defaults := st.BrokerConfigs[""]
		out := []kmsg.DescribeConfigsResponseResourceConfig{}
		for _, name := range slices.Sorted(maps.Keys(defaults)) {
			if !wanted(rr, name) {
				continue
			}
			rc := kmsg.NewDescribeConfigsResponseResourceConfig()
			rc.Name, rc.Value = name, kmsg.StringPtr(defaults[name])
			rc.Source, rc.ConfigType = kmsg.ConfigSourceDynamicDefaultBrokerConfig, dynamicBrokerConfigs[name].typ
			if req.IncludeSynonyms {
				rc.ConfigSynonyms = append(rc.ConfigSynonyms, configSynonym(name, defaults[name], rc.Source, false))
			}
			out = append(out, rc)
		}
		return out, nil
	}
	id, err := strconv.ParseInt(rr.ResourceName, 10, 32)
	if err != nil {
		return nil, &topic.Error{Code: kerr.InvalidRequest, Detail: "Broker id must be an integer, but it is: " + rr.ResourceName}
	}
	if int32(id) != b.cfg.NodeID {
		return nil, &topic.Error{Code: kerr.InvalidRequest, Detail: fmt.Sprintf(
			"Unexpected broker id, expected %d or empty string, but received %s", b.cfg.NodeID, rr.ResourceName)}
	}
	perBroker, clusterWide := st.BrokerConfigs[b.brokerResourceKey()], st.BrokerConfigs[""]
	var out []kmsg.DescribeConfigsResponseResourceConfig
	for _, bc := range b.brokerConfigs() {
		if !wanted(rr, bc.name) {
			continue
		}
		rc := kmsg.NewDescribeConfigsResponseResourceConfig()
		rc.Name = bc.name
		sensitive := sensitiveProperty(bc.name)
		_, dynamic := dynamicBrokerConfigs[bc.name]
		rc.ReadOnly = !dynamic
		static := kmsg.ConfigSourceDefaultConfig
		if bc.value != bc.def {
			static = kmsg.ConfigSourceStaticBrokerConfig
		}
		// Kafka's synonyms, most specific first; the first is the value.
		var syns []kmsg.DescribeConfigsResponseResourceConfigConfigSynonym
		if v, ok := perBroker[bc.name]; ok {
			syns = append(syns, configSynonym(bc.name, v, kmsg.ConfigSourceDynamicBrokerConfig, sensitive))
		}
		if v, ok := clusterWide[bc.name]; ok {
			syns = append(syns, configSynonym(bc.name, v, kmsg.ConfigSourceDynamicDefaultBrokerConfig, sensitive))
		}
		if static == kmsg.ConfigSourceStaticBrokerConfig {
			syns = append(syns, configSynonym(bc.name, bc.value, static, sensitive))
		}
		syns = append(syns, configSynonym(bc.name, bc.def, kmsg.ConfigSourceDefaultConfig, sensitive))
		rc.Value, rc.Source = syns[0].Value, syns[0].Source
		rc.IsSensitive = sensitive // configSynonym left the values out
		rc.IsDefault = rc.Source == kmsg.ConfigSourceDefaultConfig
		rc.ConfigType = bc.typ
		if req.IncludeSynonyms {
			rc.ConfigSynonyms = syns
		}
		out = append(out, rc)
	}
	return out, nil
}

// reportedBrokerConfigs are Kafka broker properties that kbroker has no
// setting for but admin tools read to decide what they may do; they are
// reported with the value that describes kbroker (read-only, as their
// built-in default).
var reportedBrokerConfigs = []brokerConfig{
	{name: "inter.broker.protocol.version", value: interBrokerProtocolVersion, typ: kmsg.ConfigTypeString},
	{name: "delete.topic.enable", value: "true", typ: kmsg.ConfigTypeBoolean},
	{name: "default.replication.factor", value: "1", typ: kmsg.ConfigTypeInt},
	{name: "min.insync.replicas", value: "1", typ: kmsg.ConfigTypeInt},
	{name: "offsets.topic.replication.factor", value: "1", typ: kmsg.ConfigTypeShort},
	{name: "transaction.state.log.replication.factor", value: "1", typ: kmsg.ConfigTypeShort},
	{name: "transaction.state.log.min.isr", value: "1", typ: kmsg.ConfigTypeInt},
	{name: "unclean.leader.election.enable", value: "false", typ: kmsg.ConfigTypeBoolean},
	{name: "auto.leader.rebalance.enable", value: "false", typ: kmsg.ConfigTypeBoolean},
	{name: "process.roles", value: "broker,controller", typ: kmsg.ConfigTypeList},
	{name: "compression.type", value: "producer", typ: kmsg.ConfigTypeString},
	{name: "log.message.timestamp.type", value: "CreateTime", typ: kmsg.ConfigTypeString},
}

// brokerConfig is one broker setting as DescribeConfigs shows it.
type brokerConfig struct {
	name, value, def string
	typ              kmsg.ConfigType
}

// brokerConfigs lists the broker's settings sorted by name, each with its
// value, kbroker's default and its type.
func (b *Broker) brokerConfigs() []brokerConfig {
	def := defaultProperties()
	types := brokerConfigTypes()
	var out []brokerConfig
	for _, p := range b.cfg.Properties() {
		typ := types[p[0]]
		if _, prop, err := splitListenerProperty(p[0]); err == nil {
			typ = types[unprefixedProperty(prop)] // a listener.name.* override has its setting's type
		}
		out = append(out, brokerConfig{name: p[0], value: p[1], def: def[p[0]], typ: typ})
	}
	for _, rc := range reportedBrokerConfigs {
		if _, ok := def[rc.name]; ok {
			continue // a real setting now: Config reports it
		}
		rc.def = rc.value
		out = append(out, rc)
	}
	slices.SortFunc(out, func(x, y brokerConfig) int { return strings.Compare(x.name, y.name) })
	return out
}

// brokerConfigTypes maps each Config property name to the type Kafka
// would report for it (durations are in milliseconds, so LONG).
var brokerConfigTypes = sync.OnceValue(func() map[string]kmsg.ConfigType {
	t := reflect.TypeFor[Config]()
	out := make(map[string]kmsg.ConfigType, t.NumField())
	for i := range t.NumField() {
		f := t.Field(i)
		ct := kmsg.ConfigTypeUnknown
		switch {
		case f.Type == reflect.TypeFor[time.Duration]():
			ct = kmsg.ConfigTypeLong
		case f.Type.Kind() == reflect.String:
			ct = kmsg.ConfigTypeString
		case f.Type.Kind() == reflect.Bool:
			ct = kmsg.ConfigTypeBoolean
		case f.Type.Kind() == reflect.Int32, f.Type.Kind() == reflect.Int:
			ct = kmsg.ConfigTypeInt
		case f.Type.Kind() == reflect.Int64:
			ct = kmsg.ConfigTypeLong
		case f.Type.Kind() == reflect.Float64:
			ct = kmsg.ConfigTypeDouble
		}
		if f.Tag.Get("sensitive") == "true" {
			ct = kmsg.ConfigTypePassword
		}
		name := f.Tag.Get("kafka")
		if kt, ok := kafkaConfigTypes[name]; ok {
			ct = kt
		}
		out[name] = ct
	}
	return out
})

// kafkaConfigTypes are the settings whose Kafka type the Go field's does
// not tell: durations Kafka keeps in an int, sizes it caps at an int, and
// lists kbroker parses from a string (Kafka 4.4's DescribeConfigs,
// TestDiffKafka).
var kafkaConfigTypes = map[string]kmsg.ConfigType{
	"advertised.listeners":                                        kmsg.ConfigTypeList,
	"listeners":                                                   kmsg.ConfigTypeList,
	"log.dirs":                                                    kmsg.ConfigTypeList,
	"log.cleanup.policy":                                          kmsg.ConfigTypeList,
	"sasl.enabled.mechanisms":                                     kmsg.ConfigTypeList,
	"group.consumer.assignors":                                    kmsg.ConfigTypeList,
	"group.coordinator.rebalance.protocols":                       kmsg.ConfigTypeList,
	"log.segment.bytes":                                           kmsg.ConfigTypeInt,
	"offsets.retention.minutes":                                   kmsg.ConfigTypeInt,
	"connection.failed.authentication.delay.ms":                   kmsg.ConfigTypeInt,
	"group.initial.rebalance.delay.ms":                            kmsg.ConfigTypeInt,
	"group.min.session.timeout.ms":                                kmsg.ConfigTypeInt,
	"group.max.session.timeout.ms":                                kmsg.ConfigTypeInt,
	"group.consumer.session.timeout.ms":                           kmsg.ConfigTypeInt,
	"group.consumer.min.session.timeout.ms":                       kmsg.ConfigTypeInt,
	"group.consumer.max.session.timeout.ms":                       kmsg.ConfigTypeInt,
	"group.consumer.heartbeat.interval.ms":                        kmsg.ConfigTypeInt,
	"group.consumer.min.heartbeat.interval.ms":                    kmsg.ConfigTypeInt,
	"group.consumer.max.heartbeat.interval.ms":                    kmsg.ConfigTypeInt,
	"group.share.session.timeout.ms":                              kmsg.ConfigTypeInt,
	"group.share.heartbeat.interval.ms":                           kmsg.ConfigTypeInt,
	"group.share.record.lock.duration.ms":                         kmsg.ConfigTypeInt,
	"group.streams.session.timeout.ms":                            kmsg.ConfigTypeInt,
	"group.streams.min.session.timeout.ms":                        kmsg.ConfigTypeInt,
	"group.streams.max.session.timeout.ms":                        kmsg.ConfigTypeInt,
	"group.streams.heartbeat.interval.ms":                         kmsg.ConfigTypeInt,
	"group.streams.min.heartbeat.interval.ms":                     kmsg.ConfigTypeInt,
	"group.streams.max.heartbeat.interval.ms":                     kmsg.ConfigTypeInt,
	"group.streams.initial.rebalance.delay.ms":                    kmsg.ConfigTypeInt,
	"transaction.max.timeout.ms":                                  kmsg.ConfigTypeInt,
	"transactional.id.expiration.ms":                              kmsg.ConfigTypeInt,
	"transaction.abort.timed.out.transaction.cleanup.interval.ms": kmsg.ConfigTypeInt,
}
