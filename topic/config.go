package topic

import (
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Names of the topic configs kbroker applies (Kafka's TopicConfig). The full
// list, with those only stored and reported, is Definitions.
const (
	CleanupPolicyConfig          = "cleanup.policy"
	MaxMessageBytesConfig        = "max.message.bytes"
	RetentionBytesConfig         = "retention.bytes"
	RetentionMsConfig            = "retention.ms"
	SegmentBytesConfig           = "segment.bytes"
	SegmentMsConfig              = "segment.ms"
	DeleteRetentionMsConfig      = "delete.retention.ms"
	minCleanableDirtyRatioConfig = "min.cleanable.dirty.ratio"
	TimestampAfterMaxMsConfig    = "message.timestamp.after.max.ms"
	TimestampBeforeMaxMsConfig   = "message.timestamp.before.max.ms"
	TimestampTypeConfig          = "message.timestamp.type"
	CompressionTypeConfig        = "compression.type"
	MinInsyncReplicasConfig      = "min.insync.replicas"
	remoteStorageEnableConfig    = "remote.storage.enable"
	messageDownconversionConfig  = "message.downconversion.enable"
	minCompactionLagMsConfig     = "min.compaction.lag.ms"
	maxCompactionLagMsConfig     = "max.compaction.lag.ms"
	messageFormatVersionConfig   = "message.format.version"
	timestampDifferenceMaxConfig = "message.timestamp.difference.max.ms"
)

// Definition describes one topic-level config as Kafka 4.0/4.1 defines it in
// LogConfig.java (type, default, valid values) and ServerTopicConfigSynonyms
// (the broker properties a topic inherits from), plus how kbroker treats it.
type Definition struct {
	// Name is the topic config name, e.g. "retention.ms".
	Name string
	// Type is the type DescribeConfigs v3+ reports.
	Type kmsg.ConfigType
	// Default is Kafka's built-in default as DescribeConfigs prints it, used
	// when neither the topic nor the broker (Defaults) sets the config.
	Default string
	// Synonyms are the broker properties the topic inherits from, highest
	// priority first (e.g. log.retention.ms, log.retention.minutes,
	// log.retention.hours); empty for configs with no broker-level default.
	Synonyms []string
	// Valid describes the valid values as Kafka's docs print them, e.g. "[-1,...]".
	Valid string
	// Doc is a one-sentence description.
	Doc string
	// Applied reports whether kbroker acts on the config. The others are
	// validated, stored and reported by DescribeConfigs, but change nothing.
	Applied bool
	// Note says how kbroker differs from Kafka for this config, if it does.
	Note string
	// NoBrokerDefault: Synonyms[0] has no default in Kafka (log.retention.ms,
	// log.roll.ms: Kafka derives the value from a coarser synonym or another
	// property), so Kafka's DescribeConfigs lists no broker synonym for the
	// config unless the operator set one (ConfigHelper.configSynonyms keeps
	// only the synonyms from the first one of that name on).
	NoBrokerDefault bool

	// check validates a parsed value against the range or value set.
	check func(v parsed) string
	// fromDefaults returns the broker-level value from Defaults; nil when
	// Defaults has no field for this config and Default applies.
	fromDefaults func(d *Defaults) string
}

// parsed is a config value after type parsing (ConfigDef.parseType).
type parsed struct {
	text string // canonical text: what is stored and described
	i    int64
	f    float64
	b    bool
	list []string
}

// Definitions returns every topic config kbroker knows, sorted by name.
func Definitions() []Definition {
	out := make([]Definition, len(sortedDefs))
	for i, d := range sortedDefs {
		out[i] = *d
		out[i].Synonyms = slices.Clone(d.Synonyms)
	}
	return out
}

// LookupDefinition returns the definition of a topic config.
func LookupDefinition(name string) (Definition, bool) {
	d, ok := defs[name]
	if !ok {
		return Definition{}, false
	}
	out := *d
	out.Synonyms = slices.Clone(d.Synonyms)
	return out, true
}

// removedConfigs were topic configs until Kafka 4.0 removed them (KIP-724,
// KIP-937); Kafka 4 answers them as unknown names, and so does kbroker, with
// a hint.
var removedConfigs = map[string]string{
	messageFormatVersionConfig: "removed in Kafka 4.0 (KIP-724)",
	// Kept as a no-op through Kafka 4.0 and stored by kbroker until
	// 4.4, which refuses it: loading drops it from stored topics.
	messageDownconversionConfig:  "a no-op since Kafka 4.0 (KIP-896), which Kafka 4.4 no longer accepts",
	timestampDifferenceMaxConfig: "removed in Kafka 4.0, use message.timestamp.before.max.ms and message.timestamp.after.max.ms (KIP-937)",
}

const (
	maxLong       = "9223372036854775807"
	notApplied    = "stored and reported, not applied"
	noReplication = "stored and reported, not applied: kbroker is a single node without replication"
	onCompaction  = "applied by the log cleaner to topics whose cleanup.policy has compact"
	// compactRefused is why "compact" is refused when the registry is
	// opened without a log cleaner (Defaults.AllowCompact).
	compactRefused = "compaction is not enabled on this broker (cleanup.policy may only be \"delete\")"
	noSegments     = "stored and reported, not applied: all partitions share one commit log of fixed-size files"
	segmentNote    = "all partitions share one commit log of fixed-size files; for a compacted topic it bounds the newest data the cleaner leaves alone (its \"active segment\")"
	noRemote       = "stored and reported, not applied: kbroker has no tiered storage"
)

// defs holds the definitions by name; sortedDefs the same, sorted. Both are
// built once and never modified.
var defs, sortedDefs = buildDefinitions()

func buildDefinitions() (map[string]*Definition, []*Definition) {
	list := []*Definition{
		{
			Name: CleanupPolicyConfig, Type: kmsg.ConfigTypeList, Default: "delete",
			Synonyms: []string{"log.cleanup.policy"}, Valid: "[compact, delete]", check: listOf("compact", "delete"),
			Doc:     "Retention policy for old data: \"delete\" drops it by time or size, \"compact\" keeps the last record per key.",
			Applied: true,
			Note:    "\"compact\" is accepted only when the broker runs its log cleaner, else refused; internal topics report \"compact\" and are compacted by their coordinators' snapshots",
			fromDefaults: func(d *Defaults) string {
				return canonical(kmsg.ConfigTypeList, d.CleanupPolicy)
			},
		},
		{
			Name: "compression.gzip.level", Type: kmsg.ConfigTypeInt, Default: "-1",
			Synonyms: []string{"compression.gzip.level"}, Valid: "[1,...,9] or -1", check: gzipLevel,
			Doc: "Compression level used when compression.type is gzip.", Note: notApplied,
		},
		{
			Name: "compression.lz4.level", Type: kmsg.ConfigTypeInt, Default: "9",
			Synonyms: []string{"compression.lz4.level"}, Valid: "[1,...,17]", check: between(1, 17),
			Doc: "Compression level used when compression.type is lz4.", Note: notApplied,
		},
		{
			Name: CompressionTypeConfig, Type: kmsg.ConfigTypeString, Default: "producer",
			Synonyms: []string{"compression.type"}, Valid: "[uncompressed, zstd, lz4, snappy, gzip, producer]",
			check: oneOf("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer"),
			Doc:   "Final compression of the topic's batches; \"producer\" keeps what the producer sent.",
			Note:  "stored and reported, not applied: kbroker stores batches as the producer compressed them",
			fromDefaults: func(d *Defaults) string {
				return canonical(kmsg.ConfigTypeString, d.CompressionType)
			},
		},
		{
			Name: "compression.zstd.level", Type: kmsg.ConfigTypeInt, Default: "3",
			Synonyms: []string{"compression.zstd.level"}, Valid: "[-131072,...,22]", check: between(-131072, 22),
			Doc: "Compression level used when compression.type is zstd.", Note: notApplied,
		},
		{
			Name: DeleteRetentionMsConfig, Type: kmsg.ConfigTypeLong, Default: "86400000",
			Synonyms: []string{"log.cleaner.delete.retention.ms"}, Valid: "[0,...]", check: atLeast(0),
			Doc: "How long tombstones stay in a compacted topic.", Applied: true, Note: onCompaction,
			fromDefaults: func(d *Defaults) string { return strconv.FormatInt(d.DeleteRetentionMs, 10) },
		},
		{
			Name: "errors.deadletterqueue.group.enable", Type: kmsg.ConfigTypeBoolean, Default: "false",
			Doc:  "Whether share groups may use the topic as a dead-letter queue (Kafka 4.4).",
			Note: "stored and reported, not applied: kbroker's share groups have no dead-letter queue",
		},
		{
			Name: "file.delete.delay.ms", Type: kmsg.ConfigTypeLong, Default: "60000",
			Synonyms: []string{"log.segment.delete.delay.ms"}, Valid: "[0,...]", check: atLeast(0),
			Doc:  "How long to wait before removing a deleted segment file.",
			Note: "stored and reported, not applied: commit-log files are removed once no reader holds them",
		},
		{
			Name: "flush.messages", Type: kmsg.ConfigTypeLong, Default: maxLong,
			Synonyms: []string{"log.flush.interval.messages"}, Valid: "[1,...]", check: atLeast(1),
			Doc:  "Force an fsync after this many messages.",
			Note: "stored and reported, not applied: durability follows the broker's flush mode (sync or async)",
		},
		{
			Name: "flush.ms", Type: kmsg.ConfigTypeLong, Default: maxLong,
			Synonyms: []string{"log.flush.interval.ms", "log.flush.scheduler.interval.ms"}, NoBrokerDefault: true,
			Valid: "[0,...]", check: atLeast(0),
			Doc:  "Force an fsync when a message has waited this long.",
			Note: "stored and reported, not applied: durability follows the broker's flush mode (sync or async)",
		},
		{
			Name: "follower.replication.throttled.replicas", Type: kmsg.ConfigTypeList, Default: "",
			Valid: "[partitionId]:[brokerId],[partitionId]:[brokerId],...", check: throttledReplicas,
			Doc: "Replicas whose replication is throttled on the follower side, or \"*\".", Note: noReplication,
		},
		{
			Name: "index.interval.bytes", Type: kmsg.ConfigTypeInt, Default: "4096",
			Synonyms: []string{"log.index.interval.bytes"}, Valid: "[0,...]", check: atLeast(0),
			Doc:  "Bytes between entries of the sparse offset index.",
			Note: "stored and reported, not applied: the consume queue has one entry per batch",
		},
		{
			Name: "leader.replication.throttled.replicas", Type: kmsg.ConfigTypeList, Default: "",
			Valid: "[partitionId]:[brokerId],[partitionId]:[brokerId],...", check: throttledReplicas,
			Doc: "Replicas whose replication is throttled on the leader side, or \"*\".", Note: noReplication,
		},
		{
			Name: "local.retention.bytes", Type: kmsg.ConfigTypeLong, Default: "-2",
			Synonyms: []string{"log.local.retention.bytes"}, Valid: "[-2,...]", check: atLeast(-2),
			Doc: "Size limit of the local part of a tiered partition; -2 means retention.bytes.", Note: noRemote,
		},
		{
			Name: "local.retention.ms", Type: kmsg.ConfigTypeLong, Default: "-2",
			Synonyms: []string{"log.local.retention.ms"}, Valid: "[-2,...]", check: atLeast(-2),
			Doc: "Time limit of the local part of a tiered partition; -2 means retention.ms.", Note: noRemote,
		},
		{
			Name: maxCompactionLagMsConfig, Type: kmsg.ConfigTypeLong, Default: maxLong,
			Synonyms: []string{"log.cleaner.max.compaction.lag.ms"}, Valid: "[1,...]", check: atLeast(1),
			Doc: "Longest time a record stays ineligible for compaction.", Applied: true, Note: onCompaction,
			fromDefaults: func(d *Defaults) string { return strconv.FormatInt(d.MaxCompactionLagMs, 10) },
		},
		{
			Name: MaxMessageBytesConfig, Type: kmsg.ConfigTypeInt, Default: "1048588",
			Synonyms: []string{"message.max.bytes"}, Valid: "[0,...]", check: atLeast(0),
			Doc: "Largest record batch the topic accepts, after compression; larger ones get MESSAGE_TOO_LARGE.", Applied: true,
			fromDefaults: func(d *Defaults) string { return strconv.FormatInt(int64(d.MaxMessageBytes), 10) },
		},
		{
			Name: "max.decompressed.message.bytes", Type: kmsg.ConfigTypeInt, Default: "2147483639",
			Synonyms: []string{"max.decompressed.message.bytes"}, Valid: "[1,...]", check: atLeast(1),
			Doc: "Largest decompressed record the broker accepts (Kafka 4.4).",
			Note: "stored and reported, not applied: kbroker bounds what it decompresses by the batch " +
				"(64 MiB, or 16 times max.message.bytes)",
		},
		{
			Name: TimestampAfterMaxMsConfig, Type: kmsg.ConfigTypeLong, Default: "3600000",
			Synonyms: []string{"log.message.timestamp.after.max.ms"}, Valid: "[0,...]", check: atLeast(0),
			Doc:     "With CreateTime, how far a batch timestamp may be ahead of the broker's clock (Kafka 4.0 default: 1 hour, KIP-1030).",
			Applied: true,
			fromDefaults: func(d *Defaults) string {
				return strconv.FormatInt(d.TimestampAfterMaxMs, 10)
			},
		},
		{
			Name: TimestampBeforeMaxMsConfig, Type: kmsg.ConfigTypeLong, Default: maxLong,
			Synonyms: []string{"log.message.timestamp.before.max.ms"}, Valid: "[0,...]", check: atLeast(0),
			Doc:     "With CreateTime, how far a batch timestamp may be behind the broker's clock.",
			Applied: true,
			fromDefaults: func(d *Defaults) string {
				return strconv.FormatInt(d.TimestampBeforeMaxMs, 10)
			},
		},
		{
			Name: TimestampTypeConfig, Type: kmsg.ConfigTypeString, Default: "CreateTime",
			Synonyms: []string{"log.message.timestamp.type"}, Valid: "[CreateTime, LogAppendTime]",
			check:   oneOf("CreateTime", "LogAppendTime"),
			Doc:     "Whether record timestamps are the producer's (CreateTime) or the broker's at append (LogAppendTime).",
			Applied: true,
			fromDefaults: func(d *Defaults) string {
				return d.TimestampType.String()
			},
		},
		{
			Name: minCleanableDirtyRatioConfig, Type: kmsg.ConfigTypeDouble, Default: "0.5",
			Synonyms: []string{"log.cleaner.min.cleanable.ratio"}, Valid: "[0,...,1]", check: betweenFloat(0, 1),
			Doc: "Share of uncompacted data that makes a log eligible for compaction.", Applied: true, Note: onCompaction,
			fromDefaults: func(d *Defaults) string { return formatDouble(d.MinCleanableRatio) },
		},
		{
			Name: minCompactionLagMsConfig, Type: kmsg.ConfigTypeLong, Default: "0",
			Synonyms: []string{"log.cleaner.min.compaction.lag.ms"}, Valid: "[0,...]", check: atLeast(0),
			Doc: "Shortest time a record stays uncompacted.", Applied: true, Note: onCompaction,
			fromDefaults: func(d *Defaults) string { return strconv.FormatInt(d.MinCompactionLagMs, 10) },
		},
		{
			Name: MinInsyncReplicasConfig, Type: kmsg.ConfigTypeInt, Default: "1",
			Synonyms: []string{"min.insync.replicas"}, Valid: "[1,...]", check: atLeast(1),
			Doc:  "Replicas that must have a write before acks=all succeeds.",
			Note: noReplication,
			fromDefaults: func(d *Defaults) string {
				return strconv.FormatInt(int64(d.MinInsyncReplicas), 10)
			},
		},
		{
			Name: "preallocate", Type: kmsg.ConfigTypeBoolean, Default: "false",
			Synonyms: []string{"log.preallocate"},
			Doc:      "Preallocate segment files on disk.",
			Note:     "stored and reported, not applied: commit-log files are always preallocated",
		},
		{
			Name: "remote.copy.lag.bytes", Type: kmsg.ConfigTypeLong, Default: "-1",
			Synonyms: []string{"log.remote.copy.lag.bytes"}, Valid: "[-1,...]", check: atLeast(-1),
			Doc: "Newer local data after a segment that makes it eligible for copying to remote storage.", Note: noRemote,
		},
		{
			Name: "remote.copy.lag.ms", Type: kmsg.ConfigTypeLong, Default: "0",
			Synonyms: []string{"log.remote.copy.lag.ms"}, Valid: "[-1,...]", check: atLeast(-1),
			Doc: "Age of a segment's newest record that makes it eligible for copying to remote storage.", Note: noRemote,
		},
		{
			Name: "remote.log.copy.disable", Type: kmsg.ConfigTypeBoolean, Default: "false",
			Doc: "Stop copying segments of a tiered topic to remote storage.", Note: noRemote,
		},
		{
			Name: "remote.log.delete.on.disable", Type: kmsg.ConfigTypeBoolean, Default: "false",
			Doc: "Delete remote data when tiered storage is turned off for the topic.", Note: noRemote,
		},
		{
			Name: remoteStorageEnableConfig, Type: kmsg.ConfigTypeBoolean, Default: "false",
			Doc:  "Move old segments of the topic to remote (tiered) storage.",
			Note: "only false is accepted: like a Kafka broker with tiered storage off, kbroker refuses true",
		},
		{
			Name: RetentionBytesConfig, Type: kmsg.ConfigTypeLong, Default: "-1",
			Synonyms: []string{"log.retention.bytes"}, Valid: "[...]",
			Doc:     "Size a partition may grow to before old data is deleted; -1 means no limit.",
			Applied: true,
			fromDefaults: func(d *Defaults) string {
				return strconv.FormatInt(d.RetentionBytes, 10)
			},
		},
		{
			Name: RetentionMsConfig, Type: kmsg.ConfigTypeLong, Default: "604800000",
			Synonyms: []string{"log.retention.ms", "log.retention.minutes", "log.retention.hours"}, NoBrokerDefault: true,
			Valid: "[-1,...]", check: atLeast(-1),
			Doc:     "How long data is kept before it is deleted; -1 means no time limit.",
			Applied: true,
			fromDefaults: func(d *Defaults) string {
				return strconv.FormatInt(d.RetentionMs, 10)
			},
		},
		{
			Name: SegmentBytesConfig, Type: kmsg.ConfigTypeInt, Default: "1073741824",
			Synonyms: []string{"log.segment.bytes"}, Valid: "[1048576,...]", check: atLeast(1 << 20),
			Doc:  "Size of a partition's segment files (minimum 1 MiB since Kafka 4.0, KIP-1030).",
			Note: segmentNote,
			fromDefaults: func(d *Defaults) string {
				return strconv.FormatInt(int64(d.SegmentBytes), 10)
			},
		},
		{
			Name: "segment.index.bytes", Type: kmsg.ConfigTypeInt, Default: "10485760",
			Synonyms: []string{"log.index.size.max.bytes"}, Valid: "[4,...]", check: atLeast(4),
			Doc: "Size of a segment's offset index.", Note: noSegments,
		},
		{
			Name: "segment.jitter.ms", Type: kmsg.ConfigTypeLong, Default: "0",
			Synonyms: []string{"log.roll.jitter.ms", "log.roll.jitter.hours"}, NoBrokerDefault: true,
			Valid: "[0,...]", check: atLeast(0),
			Doc: "Random jitter subtracted from segment.ms.", Note: noSegments,
		},
		{
			Name: SegmentMsConfig, Type: kmsg.ConfigTypeLong, Default: "604800000",
			Synonyms: []string{"log.roll.ms", "log.roll.hours"}, NoBrokerDefault: true,
			Valid: "[1,...]", check: atLeast(1),
			Doc: "Time after which a partition rolls to a new segment.", Note: segmentNote,
			fromDefaults: func(d *Defaults) string { return strconv.FormatInt(d.SegmentMs, 10) },
		},
		{
			Name: "unclean.leader.election.enable", Type: kmsg.ConfigTypeBoolean, Default: "false",
			Synonyms: []string{"unclean.leader.election.enable"},
			Doc:      "Allow an out-of-sync replica to become leader.", Note: noReplication,
		},
	}
	byName := make(map[string]*Definition, len(list))
	for _, d := range list {
		byName[d.Name] = d
	}
	sort.Slice(list, func(i, j int) bool { return list[i].Name < list[j].Name })
	return byName, list
}

// canonical returns the canonical text of a value of type typ, or the value
// itself when it does not parse (Defaults.Validate reports that case).
func canonical(typ kmsg.ConfigType, value string) string {
	v, problem := parseType(typ, value)
	if problem != "" {
		return value
	}
	return v.text
}

// parse parses a value as ConfigDef.parseType does for the definition's
// type, then applies the definition's range or value-set rule and kbroker's
// own restrictions. The error wraps kerr.InvalidConfig.
func (d *Definition) parse(raw string) (parsed, error) {
	v, problem := parseType(d.Type, raw)
	if problem == "" && d.check != nil {
		problem = d.check(v)
	}
	if problem == "" {
		problem = d.kbrokerRule(v)
	}
	if problem != "" {
		return parsed{}, errorf(kerr.InvalidConfig, "invalid value %q for configuration %s: %s", raw, d.Name, problem)
	}
	return v, nil
}

// kbrokerRule refuses values kbroker cannot honour, which Kafka accepts.
func (d *Definition) kbrokerRule(v parsed) string {
	switch d.Name {
	case remoteStorageEnableConfig:
		if v.b {
			// Kafka's wording when remote.log.storage.system.enable is false
			// (LogConfig.validateRemoteStorageOnlyIfSystemEnabled).
			return "tiered storage functionality is disabled in the broker; topic cannot be configured with remote log storage"
		}
	}
	return ""
}

// parseType turns text into a typed value with a canonical text, following
// ConfigDef.parseType: the value is trimmed, booleans are case-insensitive,
// lists split at commas with the spaces around them removed.
func parseType(typ kmsg.ConfigType, raw string) (parsed, string) {
	s := javaTrim(raw)
	var v parsed
	switch typ {
	case kmsg.ConfigTypeBoolean:
		switch {
		case strings.EqualFold(s, "true"):
			v.b = true
		case strings.EqualFold(s, "false"):
		default:
			return v, "expected value to be either true or false"
		}
		v.text = strconv.FormatBool(v.b)
	case kmsg.ConfigTypeInt, kmsg.ConfigTypeLong:
		bits, kind := 32, "a 32-bit integer"
		if typ == kmsg.ConfigTypeLong {
			bits, kind = 64, "a 64-bit integer"
		}
		i, err := strconv.ParseInt(s, 10, bits)
		if err != nil {
			return v, "expected " + kind
		}
		v.i, v.text = i, strconv.FormatInt(i, 10)
	case kmsg.ConfigTypeDouble:
		f, err := strconv.ParseFloat(s, 64)
		if err != nil || math.IsNaN(f) {
			return v, "expected a double"
		}
		v.f, v.text = f, formatDouble(f)
	case kmsg.ConfigTypeString:
		v.text = s
	case kmsg.ConfigTypeList:
		if s != "" {
			v.list = strings.Split(s, ",")
			for i, e := range v.list {
				v.list[i] = strings.Trim(e, " \t\n\v\f\r") // Java's \s around the commas
			}
		}
		v.text = strings.Join(v.list, ",")
	default:
		return v, "unsupported config type " + typ.String()
	}
	return v, ""
}

// javaTrim removes leading and trailing bytes <= ' ', as String.trim does.
func javaTrim(s string) string {
	i, j := 0, len(s)
	for i < j && s[i] <= ' ' {
		i++
	}
	for j > i && s[j-1] <= ' ' {
		j--
	}
	return s[i:j]
}

// FormatDouble prints f as Java's Double.toString does, as Kafka shows
// DOUBLE configs ("0.5", "1.7976931348623157E308"); the broker uses it for
// its own double settings.
func FormatDouble(f float64) string { return formatDouble(f) }

// formatDouble prints f as Java's Double.toString does for the values a
// ratio can take ("0.5", "1.0", "1.0E-4"), so DescribeConfigs shows what a
// Kafka broker shows.
func formatDouble(f float64) string {
	switch {
	case math.IsInf(f, 1):
		return "Infinity"
	case math.IsInf(f, -1):
		return "-Infinity"
	case f == 0:
		if math.Signbit(f) {
			return "-0.0"
		}
		return "0.0"
	}
	if a := math.Abs(f); a >= 1e-3 && a < 1e7 {
		s := strconv.FormatFloat(f, 'f', -1, 64)
		if !strings.Contains(s, ".") {
			s += ".0"
		}
		return s
	}
	s := strconv.FormatFloat(f, 'E', -1, 64) // e.g. "1E-04"
	mant, exp, _ := strings.Cut(s, "E")
	if !strings.Contains(mant, ".") {
		mant += ".0"
	}
	e, _ := strconv.Atoi(exp)
	return mant + "E" + strconv.Itoa(e)
}

// Validators, after ConfigDef.Range, ValidString and ValidList. Each returns
// an empty string for a valid value and otherwise what is wrong.

func atLeast(min int64) func(parsed) string {
	return func(v parsed) string {
		if v.i < min {
			return "value must be at least " + strconv.FormatInt(min, 10)
		}
		return ""
	}
}

func between(min, max int64) func(parsed) string {
	return func(v parsed) string {
		if v.i < min {
			return "value must be at least " + strconv.FormatInt(min, 10)
		}
		if v.i > max {
			return "value must be no more than " + strconv.FormatInt(max, 10)
		}
		return ""
	}
}

func betweenFloat(min, max float64) func(parsed) string {
	return func(v parsed) string {
		if v.f < min {
			return "value must be at least " + formatDouble(min)
		}
		if v.f > max {
			return "value must be no more than " + formatDouble(max)
		}
		return ""
	}
}

func oneOf(valid ...string) func(parsed) string {
	return func(v parsed) string {
		if !slices.Contains(valid, v.text) {
			return "string must be one of: " + strings.Join(valid, ", ")
		}
		return ""
	}
}

func listOf(valid ...string) func(parsed) string {
	return func(v parsed) string {
		for _, e := range v.list {
			if !slices.Contains(valid, e) {
				return "string must be one of: " + strings.Join(valid, ", ")
			}
		}
		return ""
	}
}

// gzipLevel follows CompressionType.GZIP's validator: 1 to 9, or -1 for the
// library default (Deflater.DEFAULT_COMPRESSION).
func gzipLevel(v parsed) string {
	if v.i == -1 || 1 <= v.i && v.i <= 9 {
		return ""
	}
	return "value must be between 1 and 9 or equal to -1"
}

// throttledReplicas follows ThrottledReplicaListValidator: "*" alone, or a
// list of partitionId:brokerId pairs.
func throttledReplicas(v parsed) string {
	if len(v.list) == 1 && v.list[0] == "*" {
		return ""
	}
	for _, e := range v.list {
		if e == "" {
			continue // the Java pattern ([0-9]+:[0-9]+)? matches the empty string
		}
		p, b, ok := strings.Cut(e, ":")
		if !ok || !allDigits(p) || !allDigits(b) {
			return "must be the literal '*' or a list of replicas in the following format: [partitionId]:[brokerId],[partitionId]:[brokerId],..."
		}
	}
	return ""
}

func allDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
