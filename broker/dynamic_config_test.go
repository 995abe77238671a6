package broker

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kmsg"
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
