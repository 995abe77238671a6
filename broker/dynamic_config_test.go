package broker

import (
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/topic"
)

// configOf returns a config of a described resource.
func configOf(t *testing.T, rcs kadm.ResourceConfigs, resource, key string) (kadm.Config, bool) {
	t.Helper()
	for _, rc := range rcs {
		if rc.Name != resource {
			continue
		}
		if rc.Err != nil {
			t.Fatalf("describe %s: %v %s", resource, rc.Err, rc.ErrMessage)
		}
		for _, c := range rc.Configs {
			if c.Key == key {
				return c, true
			}
		}
	}
	return kadm.Config{}, false
}

// TestDynamicBrokerConfigs sets log.retention.ms as the cluster-wide
// default and for this broker, checks that topics inherit it at once with
// the right source, that it survives a restart, and that deleting it
// restores the static value; max.connections applies to the next accept.
func TestDynamicBrokerConfigs(t *testing.T) {
	rs := newRestartable(t, nil)
	createTopic(t, rs.running, "inherits", 1)
	adm := newAdmin(t, rs.running)
	ctx := testCtx(t)
	hour, twoHours := "3600000", "7200000"

	topicRetention := func() (string, kmsg.ConfigSource, int64) {
		t.Helper()
		rcs, err := adm.DescribeTopicConfigs(ctx, "inherits")
		if err != nil {
			t.Fatal(err)
		}
		c, _ := configOf(t, rcs, "inherits", "retention.ms")
		tp, _ := rs.running.Topics().Get("inherits")
		return *c.Value, c.Source, tp.Configs.RetentionMs()
	}
	if _, err := adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "log.retention.ms", Value: &hour}}); err != nil {
		t.Fatal(err)
	}
	if v, src, applied := topicRetention(); v != hour || src != kmsg.ConfigSourceDynamicDefaultBrokerConfig || applied != 3600000 {
		t.Fatalf("after the cluster default: retention.ms %s from %v, applied %d", v, src, applied)
	}
	if _, err := adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "log.retention.ms", Value: &twoHours}}, 0); err != nil {
		t.Fatal(err)
	}
	if v, src, applied := topicRetention(); v != twoHours || src != kmsg.ConfigSourceDynamicBrokerConfig || applied != 7200000 {
		t.Fatalf("after the per-broker value: retention.ms %s from %v, applied %d", v, src, applied)
	}
	rcs, err := adm.DescribeBrokerConfigs(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	c, _ := configOf(t, rcs, "0", "log.retention.ms")
	if *c.Value != twoHours || c.Source != kmsg.ConfigSourceDynamicBrokerConfig || len(c.Synonyms) != 3 ||
		c.Synonyms[1].Source != kmsg.ConfigSourceDynamicDefaultBrokerConfig || *c.Synonyms[1].Value != hour {
		t.Fatalf("broker 0 log.retention.ms: %+v", c)
	}
	for key, want := range map[string]string{"inter.broker.protocol.version": interBrokerProtocolVersion, "delete.topic.enable": "true", "default.replication.factor": "1"} {
		if c, ok := configOf(t, rcs, "0", key); !ok || *c.Value != want {
			t.Errorf("broker config %s: %+v, want %s", key, c, want)
		}
	}
	rcs, err = adm.DescribeBrokerConfigs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if c, ok := configOf(t, rcs, "", "log.retention.ms"); !ok || *c.Value != hour || c.Source != kmsg.ConfigSourceDynamicDefaultBrokerConfig {
		t.Fatalf("cluster default log.retention.ms: %+v", c)
	}

	// Validate only changes nothing; max.connections applies at once.
	if _, err := adm.ValidateAlterBrokerConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "max.connections", Value: kmsg.StringPtr("7")}}, 0); err != nil {
		t.Fatal(err)
	}
	if got := rs.running.maxConns.Load(); got != int64(rs.running.cfg.MaxConnections) {
		t.Fatalf("validate-only changed max.connections to %d", got)
	}
	if _, err := adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "max.connections", Value: kmsg.StringPtr("7")}}, 0); err != nil {
		t.Fatal(err)
	}
	if got := rs.running.maxConns.Load(); got != 7 {
		t.Fatalf("max.connections %d, want 7", got)
	}

	// A restart keeps everything.
	adm = newAdmin(t, rs.restart())
	if v, src, applied := topicRetention(); v != twoHours || src != kmsg.ConfigSourceDynamicBrokerConfig || applied != 7200000 {
		t.Fatalf("after a restart: retention.ms %s from %v, applied %d", v, src, applied)
	}
	if got := rs.running.maxConns.Load(); got != 7 {
		t.Fatalf("after a restart: max.connections %d, want 7", got)
	}
	// AlterConfigs replaces the broker's whole dynamic set: the per-broker
	// values go, the cluster default applies again; then delete that too.
	if _, err := adm.AlterBrokerConfigsState(ctx, nil, 0); err != nil {
		t.Fatal(err)
	}
	if v, src, _ := topicRetention(); v != hour || src != kmsg.ConfigSourceDynamicDefaultBrokerConfig {
		t.Fatalf("after replacing the broker's set: %s from %v", v, src)
	}
	if _, err := adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{{Op: kadm.DeleteConfig, Name: "log.retention.ms"}}); err != nil {
		t.Fatal(err)
	}
	if v, src, applied := topicRetention(); v != "604800000" || src != kmsg.ConfigSourceDefaultConfig || applied != 604800000 {
		t.Fatalf("after deleting: retention.ms %s from %v, applied %d", v, src, applied)
	}
	if got := rs.running.maxConns.Load(); got != int64(rs.running.cfg.MaxConnections) {
		t.Fatalf("max.connections %d after replacing the set, want the static value", got)
	}
}

// TestDynamicTopicDefaults: the broker defaults of topic configs that
// Kafka lets change at run time (log.cleanup.policy, the timestamp and
// cleaner settings, compression.type) change as dynamic broker configs:
// topics that do not override them take the new value at once with the
// dynamic source, bad values are INVALID_CONFIG, a delete restores the
// static value, and DescribeConfigs reports them as not read-only.
func TestDynamicTopicDefaults(t *testing.T) {
	srv := newTestServer(t, nil)
	createTopic(t, srv, "inherits", 1)
	adm := newAdmin(t, srv)
	ctx := testCtx(t)
	topicConfig := func(name string) (string, kmsg.ConfigSource) {
		t.Helper()
		rcs, err := adm.DescribeTopicConfigs(ctx, "inherits")
		if err != nil {
			t.Fatal(err)
		}
		c, _ := configOf(t, rcs, "inherits", name)
		return *c.Value, c.Source
	}
	for _, tc := range []struct{ broker, value, topicConfig string }{
		{"log.cleanup.policy", "compact,delete", "cleanup.policy"},
		{"log.message.timestamp.type", "LogAppendTime", "message.timestamp.type"},
		{"log.message.timestamp.before.max.ms", "5000", "message.timestamp.before.max.ms"},
		{"log.message.timestamp.after.max.ms", "6000", "message.timestamp.after.max.ms"},
		{"log.cleaner.min.cleanable.ratio", "0.25", "min.cleanable.dirty.ratio"},
		{"log.cleaner.delete.retention.ms", "1000", "delete.retention.ms"},
		{"log.cleaner.min.compaction.lag.ms", "10", "min.compaction.lag.ms"},
		{"log.cleaner.max.compaction.lag.ms", "20000", "max.compaction.lag.ms"},
		{"compression.type", "zstd", "compression.type"},
	} {
		v := tc.value
		resps, err := adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: tc.broker, Value: &v}})
		if err == nil && len(resps) == 1 {
			err = resps[0].Err
		}
		if err != nil {
			t.Fatalf("%s: %v", tc.broker, err)
		}
		if got, src := topicConfig(tc.topicConfig); got != tc.value || src != kmsg.ConfigSourceDynamicDefaultBrokerConfig {
			t.Errorf("%s=%s: topic %s is %s from %v", tc.broker, tc.value, tc.topicConfig, got, src)
		}
	}
	if tp, _ := srv.Topics().Get("inherits"); !tp.Configs.CleanupPolicy().Compact || tp.Configs.TimestampType() != topic.LogAppendTime {
		t.Fatalf("applied: %+v", tp.Configs)
	}
	res := adminRequest[*kmsg.DescribeConfigsResponse](t, srv, describeConfigsReq(4, kmsg.ConfigResourceTypeBroker, "0", "log.cleanup.policy")).Resources[0]
	if len(res.Configs) != 1 || res.Configs[0].ReadOnly || res.Configs[0].ConfigType != kmsg.ConfigTypeList {
		t.Fatalf("log.cleanup.policy: %+v, want a writable LIST", res)
	}
	for _, bad := range []struct{ name, value string }{
		{"log.cleanup.policy", "shred"},
		{"log.message.timestamp.type", "Bogus"},
		{"log.cleaner.min.cleanable.ratio", "2"},
		{"log.cleaner.min.cleanable.ratio", "half"},
		{"log.cleaner.max.compaction.lag.ms", "0"},
		{"log.cleaner.min.compaction.lag.ms", "30000"}, // above the max of 20000
		{"compression.type", "rot13"},
	} {
		v := bad.value
		resps, err := adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: bad.name, Value: &v}})
		if err == nil && len(resps) == 1 {
			err = resps[0].Err
		}
		if !errors.Is(err, kerr.InvalidConfig) {
			t.Errorf("%s=%s: %v, want INVALID_CONFIG", bad.name, bad.value, err)
		}
	}
	if _, err := adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{{Op: kadm.DeleteConfig, Name: "log.cleanup.policy"}}); err != nil {
		t.Fatal(err)
	}
	if got, src := topicConfig("cleanup.policy"); got != "delete" || src != kmsg.ConfigSourceDefaultConfig {
		t.Fatalf("after the delete: cleanup.policy %s from %v", got, src)
	}
}

// TestDynamicListEdits: APPEND and SUBTRACT on log.cleanup.policy, a LIST,
// edit the resource's dynamic list, else the setting's default, as
// Kafka's ConfigAdminManager does; on a config that is not a list they
// are INVALID_CONFIG.
func TestDynamicListEdits(t *testing.T) {
	srv := newTestServer(t, nil)
	createTopic(t, srv, "inherits", 1)
	edit := func(op kmsg.IncrementalAlterConfigOp, name, value string) *kmsg.IncrementalAlterConfigsResponseResource {
		t.Helper()
		req := incrementalReq(1, kmsg.ConfigResourceTypeBroker, "", incOp(name, op, kmsg.StringPtr(value)))
		return &adminRequest[*kmsg.IncrementalAlterConfigsResponse](t, srv, req).Resources[0]
	}
	policy := func() string { return srv.cluster.Load().BrokerConfigs[""]["log.cleanup.policy"] }
	for _, step := range []struct {
		op          kmsg.IncrementalAlterConfigOp
		items, want string
	}{
		{kmsg.IncrementalAlterConfigOpAppend, "compact", "delete,compact"}, // onto the default
		{kmsg.IncrementalAlterConfigOpAppend, "compact, delete", "delete,compact"},
		{kmsg.IncrementalAlterConfigOpSubtract, "delete", "compact"},
	} {
		if res := edit(step.op, "log.cleanup.policy", step.items); res.ErrorCode != 0 {
			t.Fatalf("%v %s: %v %v", step.op, step.items, kerr.ErrorForCode(res.ErrorCode), res.ErrorMessage)
		}
		if got := policy(); got != step.want {
			t.Fatalf("after %v %s: cleanup.policy %s, want %s", step.op, step.items, got, step.want)
		}
	}
	tp, _ := srv.Topics().Get("inherits")
	if cp := tp.Configs.CleanupPolicy(); !cp.Compact || cp.Delete {
		t.Fatalf("the topic's cleanup.policy: %+v, want compact only", cp)
	}
	if res := edit(kmsg.IncrementalAlterConfigOpAppend, "log.retention.ms", "5"); res.ErrorCode != kerr.InvalidConfig.Code {
		t.Fatalf("append to a LONG: %v", kerr.ErrorForCode(res.ErrorCode))
	}
}
