package topic

import (
	"slices"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/internal/testenv"
)

func TestDescribeSources(t *testing.T) {
	t.Parallel()
	d := KafkaDefaults()
	d.RetentionMs = 3 * 24 * 60 * 60 * 1000
	d.Explicit = map[string]bool{"log.retention.hours": true, "log.segment.bytes": true, "log.index.interval.bytes": true}
	d.SegmentBytes = 128 << 20
	d.MinInsyncReplicas = 1
	c, err := NewConfigs(map[string]*string{"max.message.bytes": strp(" 5000"), "cleanup.policy": strp("delete")}, d)
	if err != nil {
		t.Fatal(err)
	}
	entries := c.Describe(d)
	if len(entries) != 37 {
		t.Fatalf("got %d entries, want 37", len(entries))
	}
	byName := map[string]ConfigEntry{}
	for i, e := range entries {
		if i > 0 && entries[i-1].Name >= e.Name {
			t.Fatalf("entries not sorted at %s", e.Name)
		}
		if e.ReadOnly || e.Sensitive || e.Doc == "" {
			t.Errorf("%s: read-only %t, sensitive %t, doc %q", e.Name, e.ReadOnly, e.Sensitive, e.Doc)
		}
		byName[e.Name] = e
	}
	tests := []struct {
		name, value string
		source      kmsg.ConfigSource
		typ         kmsg.ConfigType
		synonyms    []ConfigSynonym
	}{
		{"max.message.bytes", "5000", kmsg.ConfigSourceDynamicTopicConfig, kmsg.ConfigTypeInt, []ConfigSynonym{
			{"max.message.bytes", "5000", kmsg.ConfigSourceDynamicTopicConfig},
			{"message.max.bytes", "1048588", kmsg.ConfigSourceDefaultConfig},
		}},
		{"cleanup.policy", "delete", kmsg.ConfigSourceDynamicTopicConfig, kmsg.ConfigTypeList, []ConfigSynonym{
			{"cleanup.policy", "delete", kmsg.ConfigSourceDynamicTopicConfig},
			{"log.cleanup.policy", "delete", kmsg.ConfigSourceDefaultConfig},
		}},
		{"retention.ms", "259200000", kmsg.ConfigSourceStaticBrokerConfig, kmsg.ConfigTypeLong, []ConfigSynonym{
			{"log.retention.ms", "259200000", kmsg.ConfigSourceStaticBrokerConfig},
		}},
		{"segment.bytes", "134217728", kmsg.ConfigSourceStaticBrokerConfig, kmsg.ConfigTypeInt, []ConfigSynonym{
			{"log.segment.bytes", "134217728", kmsg.ConfigSourceStaticBrokerConfig},
		}},
		// log.index.interval.bytes was set, but kbroker has no such setting: Kafka's default, as a default.
		{"index.interval.bytes", "4096", kmsg.ConfigSourceDefaultConfig, kmsg.ConfigTypeInt, []ConfigSynonym{
			{"log.index.interval.bytes", "4096", kmsg.ConfigSourceDefaultConfig},
		}},
		// log.roll.ms, log.roll.jitter.ms and log.flush.interval.ms have no
		// default in Kafka: no broker synonym unless the operator set one.
		{"segment.ms", "604800000", kmsg.ConfigSourceDefaultConfig, kmsg.ConfigTypeLong, nil},
		{"segment.jitter.ms", "0", kmsg.ConfigSourceDefaultConfig, kmsg.ConfigTypeLong, nil},
		{"flush.ms", "9223372036854775807", kmsg.ConfigSourceDefaultConfig, kmsg.ConfigTypeLong, nil},
		// Kafka 4.4's broker synonyms of its newest topic configs.
		{"max.decompressed.message.bytes", "2147483639", kmsg.ConfigSourceDefaultConfig, kmsg.ConfigTypeInt, []ConfigSynonym{
			{"max.decompressed.message.bytes", "2147483639", kmsg.ConfigSourceDefaultConfig},
		}},
		{"remote.copy.lag.bytes", "-1", kmsg.ConfigSourceDefaultConfig, kmsg.ConfigTypeLong, []ConfigSynonym{
			{"log.remote.copy.lag.bytes", "-1", kmsg.ConfigSourceDefaultConfig},
		}},
		{"remote.copy.lag.ms", "0", kmsg.ConfigSourceDefaultConfig, kmsg.ConfigTypeLong, []ConfigSynonym{
			{"log.remote.copy.lag.ms", "0", kmsg.ConfigSourceDefaultConfig},
		}},
		{"delete.retention.ms", "86400000", kmsg.ConfigSourceDefaultConfig, kmsg.ConfigTypeLong, []ConfigSynonym{
			{"log.cleaner.delete.retention.ms", "86400000", kmsg.ConfigSourceDefaultConfig},
		}},
		{"max.compaction.lag.ms", "9223372036854775807", kmsg.ConfigSourceDefaultConfig, kmsg.ConfigTypeLong, []ConfigSynonym{
			{"log.cleaner.max.compaction.lag.ms", "9223372036854775807", kmsg.ConfigSourceDefaultConfig},
		}},
		{"message.timestamp.after.max.ms", "3600000", kmsg.ConfigSourceDefaultConfig, kmsg.ConfigTypeLong, []ConfigSynonym{
			{"log.message.timestamp.after.max.ms", "3600000", kmsg.ConfigSourceDefaultConfig},
		}},
		{"message.timestamp.type", "CreateTime", kmsg.ConfigSourceDefaultConfig, kmsg.ConfigTypeString, []ConfigSynonym{
			{"log.message.timestamp.type", "CreateTime", kmsg.ConfigSourceDefaultConfig},
		}},
		{"min.cleanable.dirty.ratio", "0.5", kmsg.ConfigSourceDefaultConfig, kmsg.ConfigTypeDouble, []ConfigSynonym{
			{"log.cleaner.min.cleanable.ratio", "0.5", kmsg.ConfigSourceDefaultConfig},
		}},
		{"preallocate", "false", kmsg.ConfigSourceDefaultConfig, kmsg.ConfigTypeBoolean, []ConfigSynonym{
			{"log.preallocate", "false", kmsg.ConfigSourceDefaultConfig},
		}},
		{"remote.storage.enable", "false", kmsg.ConfigSourceDefaultConfig, kmsg.ConfigTypeBoolean, nil},
		{"leader.replication.throttled.replicas", "", kmsg.ConfigSourceDefaultConfig, kmsg.ConfigTypeList, nil},
	}
	for _, tt := range tests {
		e, ok := byName[tt.name]
		if !ok {
			t.Fatalf("%s missing", tt.name)
		}
		if e.Value != tt.value || e.Source != tt.source || e.Type != tt.typ {
			t.Errorf("%s: got value %q source %v type %v, want %q %v %v", tt.name, e.Value, e.Source, e.Type, tt.value, tt.source, tt.typ)
		}
		if len(e.Synonyms) != len(tt.synonyms) {
			t.Errorf("%s: got synonyms %+v, want %+v", tt.name, e.Synonyms, tt.synonyms)
			continue
		}
		for i := range e.Synonyms {
			if e.Synonyms[i] != tt.synonyms[i] {
				t.Errorf("%s: synonym %d: got %+v, want %+v", tt.name, i, e.Synonyms[i], tt.synonyms[i])
			}
		}
	}
	if doc := byName["segment.bytes"].Doc; !strings.Contains(doc, "[kbroker: all partitions share one commit log") {
		t.Errorf("segment.bytes doc %q does not say what kbroker does with it", doc)
	}
	if doc := byName["index.interval.bytes"].Doc; !strings.Contains(doc, "[kbroker: stored and reported, not applied") {
		t.Errorf("index.interval.bytes doc %q does not say kbroker ignores it", doc)
	}
	if doc := byName["retention.ms"].Doc; strings.Contains(doc, "kbroker") {
		t.Errorf("retention.ms is applied; its doc %q should carry no note", doc)
	}
}

// TestDescribeNoBrokerDefault: retention.ms inherits from log.retention.ms,
// which has no default in Kafka (the value comes from log.retention.hours):
// Kafka 4.4 lists no broker synonym for it unless the operator set one, and
// neither does kbroker, also after the topic's own value (TestDiffKafka).
func TestDescribeNoBrokerDefault(t *testing.T) {
	t.Parallel()
	d := KafkaDefaults()
	c, err := NewConfigs(map[string]*string{"retention.ms": strp("3600000")}, d)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]ConfigSynonym{
		"retention.ms": {{"retention.ms", "3600000", kmsg.ConfigSourceDynamicTopicConfig}},
	}
	check := func(what string, entries []ConfigEntry, value string, src kmsg.ConfigSource) {
		t.Helper()
		for _, e := range entries {
			if e.Name != "retention.ms" {
				continue
			}
			if e.Value != value || e.Source != src || !slices.Equal(e.Synonyms, want[what]) {
				t.Errorf("%s: retention.ms %q from %v, synonyms %+v; want %q from %v, %+v", what, e.Value, e.Source, e.Synonyms, value, src, want[what])
			}
		}
	}
	check("retention.ms", c.Describe(d), "3600000", kmsg.ConfigSourceDynamicTopicConfig)
	check("unset", Configs{}.Describe(d), "604800000", kmsg.ConfigSourceDefaultConfig)
	// Set by the operator (under any of its names), it is listed, by
	// kbroker under its first name.
	d.RetentionMs, d.Explicit = 7200000, map[string]bool{"log.retention.hours": true}
	want["explicit"] = []ConfigSynonym{{"log.retention.ms", "7200000", kmsg.ConfigSourceStaticBrokerConfig}}
	check("explicit", Configs{}.Describe(d), "7200000", kmsg.ConfigSourceStaticBrokerConfig)
}

func TestRegistryDescribeConfigs(t *testing.T) {
	t.Parallel()
	r, _ := newTestRegistry(t)
	mustCreate(t, r, "orders", 1, map[string]*string{"retention.ms": strp("1000")})
	entries, err := r.DescribeConfigs("orders")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.Name == "retention.ms" && (e.Value != "1000" || e.Source != kmsg.ConfigSourceDynamicTopicConfig) {
			t.Fatalf("retention.ms: got %+v", e)
		}
	}
	_, err = r.DescribeConfigs("missing")
	testenv.WantErr(t, "DescribeConfigs(missing)", err, kerr.UnknownTopicOrPartition)
	_, err = r.DescribeConfigs("bad name")
	testenv.WantErr(t, "DescribeConfigs(bad name)", err, kerr.InvalidTopicException)
}
