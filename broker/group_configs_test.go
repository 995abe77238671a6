package broker

import (
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func groupConfigsReq(validate bool, group string, ops ...kmsg.IncrementalAlterConfigsRequestResourceConfig) *kmsg.IncrementalAlterConfigsRequest {
	req := incrementalReq(1, kmsg.ConfigResourceTypeGroupConfig, group, ops...)
	req.ValidateOnly = validate
	return req
}

func describeGroupConfig(t *testing.T, srv *InProcess, group string) map[string]kmsg.DescribeConfigsResponseResourceConfig {
	t.Helper()
	req := describeConfigsReq(4, kmsg.ConfigResourceTypeGroupConfig, group)
	req.IncludeSynonyms = true
	res := adminRequest[*kmsg.DescribeConfigsResponse](t, srv, req).Resources[0]
	if res.ErrorCode != 0 {
		t.Fatalf("describe group %q: %d %v", group, res.ErrorCode, res.ErrorMessage)
	}
	out := make(map[string]kmsg.DescribeConfigsResponseResourceConfig)
	for _, c := range res.Configs {
		want := kmsg.ConfigTypeInt
		if isStringGroupConfig(c.Name) {
			want = kmsg.ConfigTypeString
		}
		if c.ReadOnly || c.ConfigType != want || len(c.ConfigSynonyms) != 1 {
			t.Errorf("group config %+v", c)
		}
		out[c.Name] = c
	}
	return out
}

// TestGroupConfigs sets KIP-848 group configs, checks Kafka's refusals,
// that DescribeConfigs reports them, that the consumer coordinator applies
// the heartbeat interval, and that they survive a restart.
func TestGroupConfigs(t *testing.T) {
	rs := newRestartable(t, func(c *Config) {
		c.ConsumerGroupMinHeartbeatInterval, c.ConsumerGroupMinSessionTimeout = time.Second, 2*time.Second
	})
	srv := rs.running
	set := func(name, v string) kmsg.IncrementalAlterConfigsRequestResourceConfig {
		return incOp(name, kmsg.IncrementalAlterConfigOpSet, kmsg.StringPtr(v))
	}
	d := describeGroupConfig(t, srv, "g")
	if c := d[groupSessionTimeoutConfig]; *c.Value != "45000" || c.Source != kmsg.ConfigSourceDefaultConfig {
		t.Fatalf("default session timeout: %+v", c)
	}
	for _, c := range []struct {
		group string
		ops   []kmsg.IncrementalAlterConfigsRequestResourceConfig
		code  *kerr.Error
		msg   string
	}{
		{"", []kmsg.IncrementalAlterConfigsRequestResourceConfig{set(groupSessionTimeoutConfig, "30000")}, kerr.InvalidRequest, "Group name must not be empty"},
		{"g", []kmsg.IncrementalAlterConfigsRequestResourceConfig{set("share.no.such.config", "1")}, kerr.InvalidConfig, "Unknown group config name: share.no.such.config"},
		{"g", []kmsg.IncrementalAlterConfigsRequestResourceConfig{set(shareIsolationLevelConfig, "serializable")}, kerr.InvalidConfig, "String must be one of: read_committed, read_uncommitted"},
		{"g", []kmsg.IncrementalAlterConfigsRequestResourceConfig{set(shareAutoOffsetResetConfig, "middle")}, kerr.InvalidConfig, "String must be one of: latest, earliest"},
		{"g", []kmsg.IncrementalAlterConfigsRequestResourceConfig{set(shareSessionTimeoutConfig, "1000")}, kerr.InvalidConfig, "share.session.timeout.ms must be greater than share.heartbeat.interval.ms"},
		{"g", []kmsg.IncrementalAlterConfigsRequestResourceConfig{set(groupSessionTimeoutConfig, "x")}, kerr.InvalidConfig, "Not a number of type INT"},
		{"g", []kmsg.IncrementalAlterConfigsRequestResourceConfig{set(groupSessionTimeoutConfig, "1000")}, kerr.InvalidConfig, "must be greater than or equal to group.consumer.min.session.timeout.ms"},
		{"g", []kmsg.IncrementalAlterConfigsRequestResourceConfig{set(groupHeartbeatIntervalConfig, "60000")}, kerr.InvalidConfig, "must be less than or equal to group.consumer.max.heartbeat.interval.ms"},
		{"g", []kmsg.IncrementalAlterConfigsRequestResourceConfig{set(groupSessionTimeoutConfig, "3000"), set(groupHeartbeatIntervalConfig, "3000")}, kerr.InvalidConfig, "consumer.session.timeout.ms must be greater than consumer.heartbeat.interval.ms"},
		{"g", []kmsg.IncrementalAlterConfigsRequestResourceConfig{incOp(groupSessionTimeoutConfig, kmsg.IncrementalAlterConfigOpAppend, kmsg.StringPtr("1"))}, kerr.InvalidConfig, "because its type is not LIST"},
	} {
		res := adminRequest[*kmsg.IncrementalAlterConfigsResponse](t, srv, groupConfigsReq(false, c.group, c.ops...)).Resources[0]
		if res.ErrorCode != c.code.Code || res.ErrorMessage == nil || !strings.Contains(*res.ErrorMessage, c.msg) {
			t.Errorf("%q %+v: %d %v, want %v %q", c.group, c.ops, res.ErrorCode, res.ErrorMessage, c.code, c.msg)
		}
	}
	if res := adminRequest[*kmsg.IncrementalAlterConfigsResponse](t, srv, groupConfigsReq(true, "g", set(groupHeartbeatIntervalConfig, "2000"))).Resources[0]; res.ErrorCode != 0 {
		t.Fatalf("validate only: %v", res.ErrorMessage)
	}
	if c := describeGroupConfig(t, srv, "g")[groupHeartbeatIntervalConfig]; c.Source != kmsg.ConfigSourceDefaultConfig {
		t.Fatalf("validate-only set the config: %+v", c)
	}
	res := adminRequest[*kmsg.IncrementalAlterConfigsResponse](t, srv, groupConfigsReq(false, "g", set(groupHeartbeatIntervalConfig, "2000"), set(groupSessionTimeoutConfig, "20000"))).Resources[0]
	if res.ErrorCode != 0 {
		t.Fatalf("set group configs: %v", res.ErrorMessage)
	}

	heartbeatInterval := func(srv *InProcess, group string) int32 {
		t.Helper()
		if _, ok := srv.Topics().Get("t-" + group); !ok {
			createTopic(t, srv, "t-"+group, 1)
		}
		req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
		req.Group, req.MemberID, req.MemberEpoch, req.RebalanceTimeoutMillis = group, "m-"+group, 0, 5000
		req.SubscribedTopicNames, req.Topics = []string{"t-" + group}, []kmsg.ConsumerGroupHeartbeatRequestTopic{}
		resp := dialWire(t, srv).do(req).(*kmsg.ConsumerGroupHeartbeatResponse)
		if resp.ErrorCode != 0 {
			t.Fatalf("heartbeat of %s: %v", group, kerr.ErrorForCode(resp.ErrorCode))
		}
		return resp.HeartbeatIntervalMillis
	}
	if got := heartbeatInterval(srv, "g"); got != 2000 {
		t.Fatalf("heartbeat interval of g %d, want its config's 2000", got)
	}
	if got := heartbeatInterval(srv, "other"); got != 5000 {
		t.Fatalf("heartbeat interval of another group %d, want the broker's 5000", got)
	}

	// They survive a restart.
	srv = rs.restart()
	d = describeGroupConfig(t, srv, "g")
	if c := d[groupSessionTimeoutConfig]; *c.Value != "20000" || c.Source != kmsg.ConfigSourceGroupConfig {
		t.Fatalf("after a restart: %+v", c)
	}
	// DELETE returns to the broker default.
	res = adminRequest[*kmsg.IncrementalAlterConfigsResponse](t, srv, groupConfigsReq(false, "g", incOp(groupHeartbeatIntervalConfig, kmsg.IncrementalAlterConfigOpDelete, nil))).Resources[0]
	if res.ErrorCode != 0 {
		t.Fatalf("delete: %v", res.ErrorMessage)
	}
	if got := heartbeatInterval(srv, "g"); got != 5000 {
		t.Fatalf("heartbeat interval after the delete %d, want 5000", got)
	}
}
