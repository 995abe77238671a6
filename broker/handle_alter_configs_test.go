package broker

import (
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap/zaptest"

	"github.com/kbroker/kbroker/partition"
)

// TestAlterConfigsWithKadm uses the legacy AlterConfigs (kadm's *State
// functions): the given configs replace all the topic's overrides.
func TestAlterConfigsWithKadm(t *testing.T) {
	srv := newTestServer(t, nil)
	adm := newAdmin(t, srv)
	ctx := testCtx(t)
	v := "1000"
	if _, err := srv.Topics().Create("a", 1, map[string]*string{"retention.ms": &v}, false); err != nil {
		t.Fatal(err)
	}
	bytes := "2048"
	resps, err := adm.AlterTopicConfigsState(ctx, []kadm.AlterConfig{{Name: "retention.bytes", Value: &bytes}}, "a", "missing")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range resps {
		want := error(nil)
		if r.Name == "missing" {
			want = kerr.UnknownTopicOrPartition
		}
		if r.Err != want {
			t.Fatalf("%s: %v", r.Name, r.Err)
		}
	}
	got, _ := srv.Topics().Get("a")
	if ov := got.Configs.Overrides(); len(ov) != 1 || ov["retention.bytes"] != "2048" {
		t.Fatalf("overrides %v", ov)
	}
	// The partitions apply the new limits.
	if p := srv.Store().Partition(partition.TopicID(got.ID), 0); p.Config().RetentionBytes != 2048 || p.Config().RetentionMs == 1000 {
		t.Fatalf("partition config %+v", p.Config())
	}
	// Validate-only changes nothing; bad values are INVALID_CONFIG.
	bad := "-7x"
	resps, err = adm.ValidateAlterTopicConfigsState(ctx, []kadm.AlterConfig{{Name: "retention.bytes", Value: &bad}}, "a")
	if err != nil || resps[0].Err != kerr.InvalidConfig || resps[0].ErrMessage == "" {
		t.Fatalf("bad value: %+v, %v", resps, err)
	}
	resps, err = adm.ValidateAlterTopicConfigsState(ctx, nil, "a")
	if err != nil || resps[0].Err != nil {
		t.Fatalf("validate: %+v, %v", resps, err)
	}
	if got, _ := srv.Topics().Get("a"); len(got.Configs.Overrides()) != 1 {
		t.Fatal("validate-only changed the topic")
	}
}

// alterConfigsReq is a legacy AlterConfigs of one resource.
func alterConfigsReq(version int16, typ kmsg.ConfigResourceType, name string, kv ...string) *kmsg.AlterConfigsRequest {
	req := kmsg.NewPtrAlterConfigsRequest()
	req.Version = version
	rr := kmsg.NewAlterConfigsRequestResource()
	rr.ResourceType, rr.ResourceName = typ, name
	for i := 0; i+1 < len(kv); i += 2 {
		cf := kmsg.NewAlterConfigsRequestResourceConfig()
		cf.Name, cf.Value = kv[i], kmsg.StringPtr(kv[i+1])
		rr.Configs = append(rr.Configs, cf)
	}
	req.Resources = append(req.Resources, rr)
	return req
}

func TestAlterConfigsBroker(t *testing.T) {
	srv := newTestServer(t, nil)
	for _, tc := range []struct {
		name string
		kv   []string
		want *kerr.Error
		msg  string
	}{
		{"0", []string{"num.partitions", "3"}, kerr.InvalidRequest, "Cannot update these configs dynamically: num.partitions"},
		{"", []string{"log.retention.ms", "x"}, kerr.InvalidConfig, "Invalid value x for configuration log.retention.ms: Not a number of type LONG"},
		{"0", []string{"max.connections", "-1"}, kerr.InvalidConfig, "Value must be at least 0"},
		{"0", []string{"message.max.bytes", "3000000000"}, kerr.InvalidConfig, "Not a number of type INT"},
		{"0", nil, nil, ""},
		{"", nil, nil, ""},
		{"5", nil, kerr.InvalidRequest, "Unexpected broker id, expected 0, but received 5"},
		{"x", nil, kerr.InvalidRequest, "Node id must be an integer"},
	} {
		res := adminRequest[*kmsg.AlterConfigsResponse](t, srv, alterConfigsReq(2, kmsg.ConfigResourceTypeBroker, tc.name, tc.kv...)).Resources[0]
		if tc.want == nil {
			if res.ErrorCode != 0 {
				t.Fatalf("%q %v: error %d %v", tc.name, tc.kv, res.ErrorCode, res.ErrorMessage)
			}
			continue
		}
		if res.ErrorCode != tc.want.Code || res.ErrorMessage == nil || !strings.Contains(*res.ErrorMessage, tc.msg) {
			t.Fatalf("%q %v: error %d %v", tc.name, tc.kv, res.ErrorCode, res.ErrorMessage)
		}
	}
	if srv.Config().DefaultPartitions != 1 {
		t.Fatal("config changed")
	}
}

func TestAlterConfigsRequestErrors(t *testing.T) {
	srv := newTestServer(t, nil)
	mustCreate(t, srv, "a", 1)
	// A resource twice: both refused.
	req := alterConfigsReq(0, kmsg.ConfigResourceTypeTopic, "a", "retention.ms", "1")
	req.Resources = append(req.Resources, req.Resources[0])
	resp := adminRequest[*kmsg.AlterConfigsResponse](t, srv, req)
	if len(resp.Resources) != 2 || resp.Resources[0].ErrorCode != kerr.InvalidRequest.Code || resp.Resources[1].ErrorCode != kerr.InvalidRequest.Code {
		t.Fatalf("duplicate resource: %+v", resp.Resources)
	}
	for _, tc := range []struct {
		req  *kmsg.AlterConfigsRequest
		want *kerr.Error
	}{
		{alterConfigsReq(1, kmsg.ConfigResourceTypeTopic, "a", "retention.ms", "1", "retention.ms", "2"), kerr.InvalidRequest},
		{alterConfigsReq(1, kmsg.ConfigResourceTypeTopic, "a", "no.such", "1"), kerr.InvalidConfig},
		{alterConfigsReq(1, kmsg.ConfigResourceTypeTopic, "", "retention.ms", "1"), kerr.InvalidRequest},
		{alterConfigsReq(1, kmsg.ConfigResourceTypeBrokerLogger, "0", "root", "DEBUG"), kerr.InvalidRequest},
	} {
		if res := adminRequest[*kmsg.AlterConfigsResponse](t, srv, tc.req).Resources[0]; res.ErrorCode != tc.want.Code {
			t.Fatalf("%+v: error %d, want %d", tc.req.Resources[0], res.ErrorCode, tc.want.Code)
		}
	}
	// A null value.
	req = alterConfigsReq(1, kmsg.ConfigResourceTypeTopic, "a", "retention.ms", "1")
	req.Resources[0].Configs[0].Value = nil
	if res := adminRequest[*kmsg.AlterConfigsResponse](t, srv, req).Resources[0]; res.ErrorCode != kerr.InvalidRequest.Code {
		t.Fatalf("null value: error %d", res.ErrorCode)
	}
	if got, _ := srv.Topics().Get("a"); len(got.Configs.Overrides()) != 0 {
		t.Fatalf("changed: %v", got.Configs.Overrides())
	}
}

// TestAlterConfigsSurviveRestart: configs set through either alter API are
// still there after the broker restarts on the same data directory.
func TestAlterConfigsSurviveRestart(t *testing.T) {
	dir := t.TempDir()
	var running *InProcess
	t.Cleanup(func() {
		if running != nil {
			running.Close()
		}
	})
	start := func() *InProcess {
		ip, err := StartInProcess(dir, nil, WithLogger(zaptest.NewLogger(t)))
		if err != nil {
			t.Fatal(err)
		}
		running = ip
		return ip
	}
	srv := start()
	cl := newClient(t, srv)
	adm := kadm.NewClient(cl)
	ctx := testCtx(t)
	if _, err := adm.CreateTopic(ctx, 2, 1, nil, "kept"); err != nil {
		t.Fatal(err)
	}
	ms, policy := "86400000", "delete"
	if _, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "retention.ms", Value: &ms}}, "kept"); err != nil {
		t.Fatal(err)
	}
	if _, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "cleanup.policy", Value: &policy}}, "kept"); err != nil {
		t.Fatal(err)
	}
	before, _ := srv.Topics().Get("kept")
	cl.Close()
	running = nil
	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}

	srv = start()
	adm = newAdmin(t, srv)
	rcs, err := adm.DescribeTopicConfigs(ctx, "kept")
	if err != nil || rcs[0].Err != nil {
		t.Fatalf("%+v, %v", rcs, err)
	}
	for name, want := range map[string]string{"retention.ms": ms, "cleanup.policy": policy} {
		if c := findConfig(t, rcs[0], name); c.MaybeValue() != want || c.Source != kmsg.ConfigSourceDynamicTopicConfig {
			t.Fatalf("%s after restart: %+v", name, c)
		}
	}
	md, err := adm.Metadata(ctx, "kept")
	if err != nil || len(md.Topics["kept"].Partitions) != 2 || [16]byte(md.Topics["kept"].ID) != before.ID {
		t.Fatalf("metadata after restart: %+v, %v", md.Topics["kept"], err)
	}
}

func TestAlterConfigsRoundTrip(t *testing.T) {
	srv := newTestServer(t, nil)
	mustCreate(t, srv, "a", 1)
	checkRoundTrip(t, srv, func(v int16) kmsg.Request {
		req := alterConfigsReq(v, kmsg.ConfigResourceTypeTopic, "a", "retention.ms", "1000")
		for _, other := range []*kmsg.AlterConfigsRequest{
			alterConfigsReq(v, kmsg.ConfigResourceTypeTopic, "missing", "retention.ms", "1000"),
			alterConfigsReq(v, kmsg.ConfigResourceTypeBroker, "0", "num.partitions", "2"),
		} {
			req.Resources = append(req.Resources, other.Resources...)
		}
		return req
	})
}
