package topic

import (
	"errors"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/internal/testenv"
)

// TestConfigValues checks each config's parsing and rule: a value is either
// accepted with a canonical form or refused with INVALID_CONFIG.
func TestConfigValues(t *testing.T) {
	t.Parallel()
	const bad = "\x00bad" // marks a value that must be refused
	tests := []struct {
		name, value, want string
	}{
		// Applied configs.
		{"retention.ms", "-1", "-1"},
		{"retention.ms", "0", "0"},
		{"retention.ms", " 86400000 ", "86400000"},
		{"retention.ms", "+5", "5"},
		{"retention.ms", "-2", bad},
		{"retention.ms", "1h", bad},
		{"retention.ms", "9223372036854775807", "9223372036854775807"},
		{"retention.ms", "9223372036854775808", bad},
		{"retention.ms", "", bad},
		{"retention.bytes", "-1", "-1"},
		{"retention.bytes", "-100", "-100"}, // no range in Kafka either
		{"retention.bytes", "1073741824", "1073741824"},
		{"retention.bytes", "1.5", bad},
		{"max.message.bytes", "0", "0"},
		{"max.message.bytes", "1048588", "1048588"},
		{"max.message.bytes", "2147483647", "2147483647"},
		{"max.message.bytes", "2147483648", bad}, // an INT
		{"max.message.bytes", "-1", bad},
		{"message.timestamp.type", "CreateTime", "CreateTime"},
		{"message.timestamp.type", " LogAppendTime ", "LogAppendTime"},
		{"message.timestamp.type", "createtime", bad}, // ValidString is case-sensitive
		{"message.timestamp.type", "NoTimestampType", bad},
		{"message.timestamp.before.max.ms", "0", "0"},
		{"message.timestamp.before.max.ms", "-1", bad},
		{"message.timestamp.after.max.ms", "3600000", "3600000"},
		{"message.timestamp.after.max.ms", "-1", bad},
		{"cleanup.policy", "delete", "delete"},
		{"cleanup.policy", " delete ", "delete"},
		{"cleanup.policy", "", ""}, // empty list: never delete
		{"cleanup.policy", "Delete", bad},
		{"cleanup.policy", "delete,", bad}, // trailing empty entry
		{"cleanup.policy", "remove", bad},
		{"cleanup.policy", "compact", bad},
		{"cleanup.policy", "compact,delete", bad},
		{"cleanup.policy", "delete, compact", bad},
		// Stored configs: their Kafka rules still hold.
		{"segment.bytes", "1048576", "1048576"},
		{"segment.bytes", "1048575", bad}, // KIP-1030: at least 1 MiB since 4.0
		{"segment.bytes", "14", bad},
		{"segment.ms", "1", "1"},
		{"segment.ms", "0", bad},
		{"segment.index.bytes", "4", "4"},
		{"segment.index.bytes", "3", bad},
		{"compression.type", "zstd", "zstd"},
		{"compression.type", "uncompressed", "uncompressed"},
		{"compression.type", "GZIP", bad},
		{"compression.type", "none", bad},
		{"compression.gzip.level", "-1", "-1"},
		{"compression.gzip.level", "9", "9"},
		{"compression.gzip.level", "0", bad},
		{"compression.gzip.level", "10", bad},
		{"compression.lz4.level", "17", "17"},
		{"compression.lz4.level", "0", bad},
		{"compression.zstd.level", "-131072", "-131072"},
		{"compression.zstd.level", "23", bad},
		{"min.cleanable.dirty.ratio", "0.5", "0.5"},
		{"min.cleanable.dirty.ratio", "1", "1.0"},
		{"min.cleanable.dirty.ratio", "0", "0.0"},
		{"min.cleanable.dirty.ratio", "1e-4", "1.0E-4"},
		{"min.cleanable.dirty.ratio", "1.01", bad},
		{"min.cleanable.dirty.ratio", "NaN", bad},
		{"min.cleanable.dirty.ratio", "half", bad},
		{"preallocate", "TRUE", "true"},
		{"preallocate", "False", "false"},
		{"preallocate", "yes", bad},
		{"unclean.leader.election.enable", "true", "true"},
		{"min.insync.replicas", "1", "1"},
		{"min.insync.replicas", "0", bad},
		{"flush.messages", "1", "1"},
		{"flush.messages", "0", bad},
		{"flush.ms", "0", "0"},
		{"delete.retention.ms", "-1", bad},
		{"file.delete.delay.ms", "0", "0"},
		{"index.interval.bytes", "-1", bad},
		{"min.compaction.lag.ms", "-1", bad},
		{"max.compaction.lag.ms", "0", bad},
		{"leader.replication.throttled.replicas", "*", "*"},
		{"leader.replication.throttled.replicas", "0:1, 1:1", "0:1,1:1"},
		{"leader.replication.throttled.replicas", "", ""},
		{"leader.replication.throttled.replicas", "0:a", bad},
		{"leader.replication.throttled.replicas", "*,0:1", bad},
		{"follower.replication.throttled.replicas", "12:0", "12:0"},
		{"follower.replication.throttled.replicas", "12", bad},
		{"local.retention.ms", "-2", "-2"},
		{"local.retention.ms", "-3", bad},
		{"local.retention.bytes", "-2", "-2"},
		{"remote.storage.enable", "false", "false"},
		{"remote.storage.enable", "true", bad}, // no tiered storage
		{"remote.log.copy.disable", "true", "true"},
		{"remote.log.delete.on.disable", "true", "true"},
		{"message.downconversion.enable", "false", bad}, // refused since Kafka 4.4
		{"max.decompressed.message.bytes", "1", "1"},
		{"max.decompressed.message.bytes", "0", bad},
		{"remote.copy.lag.ms", "-1", "-1"},
		{"remote.copy.lag.ms", "-2", bad},
		{"remote.copy.lag.bytes", "-1", "-1"},
		{"remote.copy.lag.bytes", "-2", bad},
		{"errors.deadletterqueue.group.enable", "true", "true"},
	}
	for _, tt := range tests {
		c, err := NewConfigs(map[string]*string{tt.name: strp(tt.value)}, KafkaDefaults())
		what := tt.name + "=" + tt.value
		if tt.want == bad {
			testenv.WantErr(t, what, err, kerr.InvalidConfig)
			if !strings.Contains(err.Error(), tt.name) {
				t.Errorf("%s: error %q does not name the config", what, err)
			}
			continue
		}
		testenv.WantErr(t, what, err, nil)
		if got, _ := c.Override(tt.name); got != tt.want {
			t.Errorf("%s: stored %q, want %q", what, got, tt.want)
		}
	}
}

func TestConfigErrorMessages(t *testing.T) {
	t.Parallel()
	tests := []struct {
		configs map[string]*string
		want    string
	}{
		{map[string]*string{"retention.ms": strp("-5")}, `invalid value "-5" for configuration retention.ms: value must be at least -1`},
		{map[string]*string{"cleanup.policy": strp("compact")}, "compaction is not enabled on this broker"},
		{map[string]*string{"compression.type": strp("brotli")}, "string must be one of: uncompressed, zstd, lz4, snappy, gzip, producer"},
		{map[string]*string{"no.such.config": strp("1")}, "unknown topic config name: no.such.config"},
		{map[string]*string{"message.format.version": strp("3.0")}, "unknown topic config name: message.format.version (removed in Kafka 4.0"},
		{map[string]*string{"message.timestamp.difference.max.ms": strp("1")}, "unknown topic config name: message.timestamp.difference.max.ms (removed in Kafka 4.0"},
		{map[string]*string{"b": nil, "a": nil, "retention.ms": strp("1")}, "null value not supported for topic configs: a,b"},
		{map[string]*string{"min.compaction.lag.ms": strp("10"), "max.compaction.lag.ms": strp("5")},
			"conflict topic config setting min.compaction.lag.ms (10) > max.compaction.lag.ms (5)"},
		// Unknown names are reported before bad values, in sorted order.
		{map[string]*string{"zzz": strp("1"), "retention.ms": strp("x"), "aaa": strp("1")}, "unknown topic config name: aaa"},
	}
	for _, tt := range tests {
		_, err := NewConfigs(tt.configs, KafkaDefaults())
		testenv.WantErr(t, tt.want, err, kerr.InvalidConfig)
		var te *Error
		if !errors.As(err, &te) || !strings.Contains(te.Detail, tt.want) {
			t.Errorf("got %v, want a detail containing %q", err, tt.want)
		}
	}
}

func TestConfigsAccessors(t *testing.T) {
	t.Parallel()
	d := KafkaDefaults()
	d.RetentionMs = 1000
	d.MaxMessageBytes = 2000
	d.TimestampType = LogAppendTime
	d.TimestampAfterMaxMs = 7
	c, err := NewConfigs(nil, d)
	if err != nil {
		t.Fatal(err)
	}
	if c.RetentionMs() != 1000 || c.RetentionBytes() != -1 || c.MaxMessageBytes() != 2000 ||
		c.TimestampType() != LogAppendTime || c.TimestampBeforeMaxMs() != math.MaxInt64 ||
		c.TimestampAfterMaxMs() != 7 || c.CleanupPolicy() != (CleanupPolicy{Delete: true}) {
		t.Fatalf("inherited values wrong: %+v", c)
	}
	if len(c.Overrides()) != 0 {
		t.Fatalf("got overrides %v, want none", c.Overrides())
	}
	c, err = NewConfigs(map[string]*string{
		"retention.ms": strp("-1"), "retention.bytes": strp("4096"), "max.message.bytes": strp("100"),
		"message.timestamp.type": strp("CreateTime"), "message.timestamp.before.max.ms": strp("5"),
		"message.timestamp.after.max.ms": strp("6"), "cleanup.policy": strp(""),
	}, d)
	if err != nil {
		t.Fatal(err)
	}
	if c.RetentionMs() != -1 || c.RetentionBytes() != 4096 || c.MaxMessageBytes() != 100 ||
		c.TimestampType() != CreateTime || c.TimestampBeforeMaxMs() != 5 || c.TimestampAfterMaxMs() != 6 ||
		c.CleanupPolicy() != (CleanupPolicy{}) {
		t.Fatalf("override values wrong: %+v", c)
	}
	o := c.Overrides()
	o["retention.ms"] = "1" // a copy: must not change c
	if v, _ := c.Override("retention.ms"); v != "-1" {
		t.Fatalf("Overrides returned the internal map")
	}
}

func TestDefinitions(t *testing.T) {
	t.Parallel()
	defs := Definitions()
	if len(defs) != 37 {
		t.Fatalf("got %d definitions, want Kafka 4.4's 37 topic configs", len(defs))
	}
	applied := []string{"cleanup.policy", "delete.retention.ms", "max.compaction.lag.ms", "max.message.bytes",
		"message.timestamp.after.max.ms", "message.timestamp.before.max.ms", "message.timestamp.type",
		"min.cleanable.dirty.ratio", "min.compaction.lag.ms", "retention.bytes", "retention.ms"}
	var gotApplied []string
	for i, d := range defs {
		if i > 0 && defs[i-1].Name >= d.Name {
			t.Fatalf("definitions not sorted at %s", d.Name)
		}
		if d.Doc == "" || d.Type == kmsg.ConfigTypeUnknown {
			t.Errorf("%s: no doc or type", d.Name)
		}
		if !d.Applied && d.Note == "" {
			t.Errorf("%s: not applied, but no note says so", d.Name)
		}
		if d.Applied {
			gotApplied = append(gotApplied, d.Name)
		}
		// Kafka's own default must pass the config's rule.
		if _, err := NewConfigs(map[string]*string{d.Name: strp(d.Default)}, KafkaDefaults()); err != nil {
			t.Errorf("%s: default %q refused: %v", d.Name, d.Default, err)
		}
	}
	if !slices.Equal(gotApplied, applied) {
		t.Errorf("applied configs: got %v, want %v", gotApplied, applied)
	}
	d, ok := LookupDefinition("retention.ms")
	if !ok || d.Synonyms[2] != "log.retention.hours" {
		t.Fatalf("LookupDefinition(retention.ms) = %+v, %t", d, ok)
	}
	d.Synonyms[0] = "changed" // a copy
	if d2, _ := LookupDefinition("retention.ms"); d2.Synonyms[0] != "log.retention.ms" {
		t.Fatal("LookupDefinition returned shared synonyms")
	}
	if _, ok := LookupDefinition("message.format.version"); ok {
		t.Fatal("message.format.version was removed in Kafka 4.0")
	}
}

func TestDefaultsValidate(t *testing.T) {
	t.Parallel()
	if err := KafkaDefaults().Validate(); err != nil {
		t.Fatalf("KafkaDefaults().Validate() = %v", err)
	}
	err := Defaults{}.Validate()
	for _, want := range []string{"num.partitions", "log.segment.bytes", "compression.type", "min.insync.replicas"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("zero Defaults: error %v does not mention %s", err, want)
		}
	}
	d := KafkaDefaults()
	d.CleanupPolicy = "compact"
	if err := d.Validate(); err == nil || !strings.Contains(err.Error(), "compaction is not enabled") {
		t.Errorf("log.cleanup.policy=compact: got %v, want compaction refused", err)
	}
	d = KafkaDefaults()
	d.TimestampType = 5
	if err := d.Validate(); err == nil {
		t.Error("invalid timestamp type accepted")
	}
	if _, err := Open(t.TempDir(), Defaults{}); err == nil {
		t.Error("Open accepted zero Defaults")
	}
}

func TestTimestampType(t *testing.T) {
	t.Parallel()
	for _, tt := range []TimestampType{CreateTime, LogAppendTime} {
		b, err := tt.MarshalText()
		if err != nil {
			t.Fatal(err)
		}
		var back TimestampType
		if err := back.UnmarshalText(b); err != nil || back != tt {
			t.Fatalf("text round trip of %v: %v, %v", tt, back, err)
		}
	}
	if _, err := ParseTimestampType("logappendtime"); err == nil {
		t.Error("ParseTimestampType is case-sensitive, as Kafka's ValidString")
	}
	if _, err := TimestampType(9).MarshalText(); err == nil {
		t.Error("MarshalText of an invalid type succeeded")
	}
}

func TestFormatDouble(t *testing.T) {
	t.Parallel()
	for f, want := range map[float64]string{
		0: "0.0", 0.5: "0.5", 1: "1.0", 0.001: "0.001", 0.0001: "1.0E-4", 1.5e-5: "1.5E-5",
		1e7: "1.0E7", 123.25: "123.25", math.Inf(1): "Infinity", -2: "-2.0",
	} {
		if got := formatDouble(f); got != want {
			t.Errorf("formatDouble(%v) = %q, want %q (Java's Double.toString)", f, got, want)
		}
	}
}
