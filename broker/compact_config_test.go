package broker

import (
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/topic"
)

// TestCleanerSettings checks the log cleaner's broker settings: loaded by
// name, validated, reported by DescribeConfigs with Kafka's types and
// defaults, and inherited by topics with the right source.
func TestCleanerSettings(t *testing.T) {
	t.Parallel()
	cfg := DefaultConfig()
	err := cfg.LoadProperties(strings.NewReader(`
log.cleaner.backoff.ms=1000
log.cleaner.min.cleanable.ratio=0.01
log.cleaner.delete.retention.ms=2000
log.cleaner.dedupe.buffer.size=1048576
log.cleaner.threads=2
log.roll.ms=100
`))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.LogCleanerBackoff.Milliseconds() != 1000 || cfg.LogCleanerMinCleanableRatio != 0.01 || cfg.LogCleanerDeleteRetentionMs != 2000 ||
		cfg.LogCleanerDedupeBufferSize != 1<<20 || cfg.LogCleanerThreads != 2 || cfg.LogRollMs != 100 {
		t.Fatalf("loaded %+v", cfg)
	}
	if err := cfg.Set("log.cleaner.io.max.bytes.per.second", "fast"); err == nil {
		t.Error("a non-number io rate was accepted")
	}

	bad := DefaultConfig()
	bad.LogCleanerThreads = 0
	bad.LogCleanerMinCleanableRatio = 2
	bad.LogCleanerIOMaxBytesPerSecond = 0
	bad.LogCleanerMaxCompactionLagMs = 0
	err = bad.Validate()
	for _, want := range []string{"log.cleaner.threads", "log.cleaner.min.cleanable.ratio", "log.cleaner.io.max.bytes.per.second", "log.cleaner.max.compaction.lag.ms"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate: got %v, want a complaint about %s", err, want)
		}
	}
	bad = DefaultConfig()
	bad.LogCleanerThreads = 4
	bad.LogCleanerDedupeBufferSize = 4 * minDedupeBufferPerThread / 2
	if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), "per cleaner thread") {
		t.Errorf("Validate of a tiny dedupe buffer: got %v", err)
	}

	srv := newTestServer(t, func(c *Config) {
		c.LogCleanerMinCleanableRatio = 0.25
		c.LogCleanerDeleteRetentionMs = 2000
	})
	adm := newAdmin(t, srv)
	ctx := testCtx(t)
	rcs, err := adm.DescribeBrokerConfigs(ctx, 0)
	if err != nil || len(rcs) != 1 || rcs[0].Err != nil {
		t.Fatalf("describe broker: %+v, %v", rcs, err)
	}
	for _, tt := range []struct {
		name, value string
		source      kmsg.ConfigSource
	}{
		{"log.cleaner.io.max.bytes.per.second", "1.7976931348623157E308", kmsg.ConfigSourceDefaultConfig},
		{"log.cleaner.min.cleanable.ratio", "0.25", kmsg.ConfigSourceStaticBrokerConfig},
		{"log.cleaner.backoff.ms", "15000", kmsg.ConfigSourceDefaultConfig},
		{"log.cleaner.dedupe.buffer.size", "134217728", kmsg.ConfigSourceDefaultConfig},
		{"log.cleaner.enable", "true", kmsg.ConfigSourceDefaultConfig},
		{"log.cleaner.threads", "1", kmsg.ConfigSourceDefaultConfig},
		{"log.cleanup.policy", "delete", kmsg.ConfigSourceDefaultConfig},
		{"log.cleaner.max.compaction.lag.ms", "9223372036854775807", kmsg.ConfigSourceDefaultConfig},
	} {
		c := findConfig(t, rcs[0], tt.name)
		if c.MaybeValue() != tt.value || c.Source != tt.source {
			t.Errorf("broker %s: got %q %v, want %q %v", tt.name, c.MaybeValue(), c.Source, tt.value, tt.source)
		}
	}
	if typ := brokerConfigTypes()["log.cleaner.min.cleanable.ratio"]; typ != kmsg.ConfigTypeDouble {
		t.Errorf("log.cleaner.min.cleanable.ratio type %v, want DOUBLE", typ)
	}

	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "t"); err != nil {
		t.Fatal(err)
	}
	trc, err := adm.DescribeTopicConfigs(ctx, "t")
	if err != nil || len(trc) != 1 || trc[0].Err != nil {
		t.Fatalf("describe topic: %+v, %v", trc, err)
	}
	for _, tt := range []struct {
		name, value string
		source      kmsg.ConfigSource
	}{
		{"min.cleanable.dirty.ratio", "0.25", kmsg.ConfigSourceStaticBrokerConfig},
		{"delete.retention.ms", "2000", kmsg.ConfigSourceStaticBrokerConfig},
		{"min.compaction.lag.ms", "0", kmsg.ConfigSourceDefaultConfig},
		{"segment.ms", "604800000", kmsg.ConfigSourceDefaultConfig},
	} {
		c := findConfig(t, trc[0], tt.name)
		if c.MaybeValue() != tt.value || c.Source != tt.source {
			t.Errorf("topic %s: got %q %v, want %q %v", tt.name, c.MaybeValue(), c.Source, tt.value, tt.source)
		}
	}
}

// TestStateTopicsReportCompact checks that __consumer_offsets reports what
// Kafka reports for it (compacted, 100 MiB segments), set on the topic.
func TestStateTopicsReportCompact(t *testing.T) {
	t.Parallel()
	srv := newTestServer(t, nil)
	adm := newAdmin(t, srv)
	ctx := testCtx(t)
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "t"); err != nil {
		t.Fatal(err)
	}
	var os kadm.Offsets
	os.Add(kadm.Offset{Topic: "t", Partition: 0, At: 0, LeaderEpoch: -1})
	if resp, err := adm.CommitOffsets(ctx, "g", os); err != nil || resp.Error() != nil {
		t.Fatalf("commit: %v, %v", err, resp.Error())
	}
	rcs, err := adm.DescribeTopicConfigs(ctx, topic.GroupMetadataTopic)
	if err != nil || len(rcs) != 1 || rcs[0].Err != nil {
		t.Fatalf("describe %s: %+v, %v", topic.GroupMetadataTopic, rcs, err)
	}
	for name, want := range map[string]string{"cleanup.policy": "compact", "segment.bytes": "104857600", "compression.type": "producer"} {
		c := findConfig(t, rcs[0], name)
		if c.MaybeValue() != want || c.Source != kmsg.ConfigSourceDynamicTopicConfig {
			t.Errorf("%s: got %q %v, want %q DYNAMIC_TOPIC_CONFIG", name, c.MaybeValue(), c.Source, want)
		}
	}
	if c := findConfig(t, rcs[0], "retention.ms"); c.Source == kmsg.ConfigSourceDynamicTopicConfig {
		t.Errorf("retention.ms is still overridden: %+v", c)
	}
}

// TestStateTopicUpgrade checks that an internal topic created by an older
// kbroker (retention.ms=-1, no cleanup.policy) gets Kafka's configs.
func TestStateTopicUpgrade(t *testing.T) {
	t.Parallel()
	b := &Broker{cfg: DefaultConfig()}
	want := b.stateTopicConfigs(topic.TransactionTopic)
	forever := "-1"
	old, err := topic.NewConfigs(map[string]*string{"retention.ms": &forever, "retention.bytes": &forever}, topic.KafkaDefaults())
	if err != nil {
		t.Fatal(err)
	}
	ops := stateTopicUpgrade(old, want)
	got := map[string]topic.OpType{}
	for _, op := range ops {
		got[op.Name] = op.Op
	}
	for name := range want {
		if got[name] != topic.OpSet {
			t.Errorf("%s: op %v, want SET", name, got[name])
		}
	}
	if got["retention.ms"] != topic.OpDelete || got["retention.bytes"] != topic.OpDelete {
		t.Errorf("retention overrides not deleted: %+v", ops)
	}
	d := topic.KafkaDefaults()
	cur, err := topic.NewConfigs(map[string]*string{"cleanup.policy": want["cleanup.policy"]}, func() topic.Defaults { d.AllowCompact = true; return d }())
	if err != nil {
		t.Fatal(err)
	}
	if ops := stateTopicUpgrade(cur, want); ops != nil {
		t.Errorf("an up-to-date topic got %+v", ops)
	}
}

// TestPartitionConfigPolicy checks which cleanup policies let retention
// apply and make keys required.
func TestPartitionConfigPolicy(t *testing.T) {
	t.Parallel()
	d := topic.KafkaDefaults()
	d.AllowCompact = true
	for _, tt := range []struct {
		policy      string
		internal    bool
		retention   bool
		requireKeys bool
	}{
		{"delete", false, true, false},
		{"", false, false, false},
		{"compact", false, false, true},
		{"compact,delete", false, true, true},
		{"compact", true, false, false},
	} {
		zero := "0"
		c, err := topic.NewConfigs(map[string]*string{"cleanup.policy": &tt.policy, "retention.ms": &zero}, d)
		if err != nil {
			t.Fatal(err)
		}
		pc := partitionConfig(&topic.Topic{Name: "x", Configs: c, Internal: tt.internal})
		if (pc.RetentionMs == 0) != tt.retention || pc.RetentionBytes != -1 || pc.Compact != tt.requireKeys {
			t.Errorf("policy %q internal %t: retention.ms %d, bytes %d, keys %t", tt.policy, tt.internal, pc.RetentionMs, pc.RetentionBytes, pc.Compact)
		}
	}
}
