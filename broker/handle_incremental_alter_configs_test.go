package broker

import (
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestIncrementalAlterConfigsWithKadm(t *testing.T) {
	srv := newTestServer(t, nil)
	adm := newAdmin(t, srv)
	ctx := testCtx(t)
	v := "1000"
	if _, err := srv.Topics().Create("a", 1, map[string]*string{"retention.ms": &v}, false); err != nil {
		t.Fatal(err)
	}
	bytes, compact := "4096", "compact"
	resps, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{
		{Op: kadm.SetConfig, Name: "retention.bytes", Value: &bytes},
		{Op: kadm.DeleteConfig, Name: "retention.ms"},
	}, "a")
	if err != nil || resps[0].Err != nil {
		t.Fatalf("%+v, %v", resps, err)
	}
	got, _ := srv.Topics().Get("a")
	if ov := got.Configs.Overrides(); len(ov) != 1 || ov["retention.bytes"] != "4096" {
		t.Fatalf("overrides %v", ov)
	}
	rcs, err := adm.DescribeTopicConfigs(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	if c := findConfig(t, rcs[0], "retention.ms"); c.Source == kmsg.ConfigSourceDynamicTopicConfig {
		t.Fatalf("retention.ms still set: %+v", c)
	}
	// APPEND to a list: a live switch to compact,delete.
	resps, err = adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.AppendConfig, Name: "cleanup.policy", Value: &compact}}, "a")
	if err != nil || resps[0].Err != nil {
		t.Fatalf("append compact: %+v, %v", resps, err)
	}
	got, _ = srv.Topics().Get("a")
	if v, _ := got.Configs.Override("cleanup.policy"); v != "delete,compact" {
		t.Fatalf("cleanup.policy after APPEND compact: %q", v)
	}
	// APPEND to a non-list.
	resps, err = adm.ValidateAlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.AppendConfig, Name: "retention.ms", Value: &v}}, "a")
	if err != nil || resps[0].Err != kerr.InvalidConfig {
		t.Fatalf("append to long: %+v, %v", resps, err)
	}
}

// incrementalReq is an IncrementalAlterConfigs of one resource.
func incrementalReq(version int16, typ kmsg.ConfigResourceType, name string, ops ...kmsg.IncrementalAlterConfigsRequestResourceConfig) *kmsg.IncrementalAlterConfigsRequest {
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	req.Version = version
	rr := kmsg.NewIncrementalAlterConfigsRequestResource()
	rr.ResourceType, rr.ResourceName, rr.Configs = typ, name, ops
	req.Resources = append(req.Resources, rr)
	return req
}

func incOp(name string, op kmsg.IncrementalAlterConfigOp, value *string) kmsg.IncrementalAlterConfigsRequestResourceConfig {
	cf := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	cf.Name, cf.Op, cf.Value = name, op, value
	return cf
}

func TestIncrementalAlterConfigsBroker(t *testing.T) {
	srv := newTestServer(t, nil)
	three := kmsg.StringPtr("3")
	for _, tc := range []struct {
		name string
		ops  []kmsg.IncrementalAlterConfigsRequestResourceConfig
		want *kerr.Error
		msg  string
	}{
		{"0", []kmsg.IncrementalAlterConfigsRequestResourceConfig{incOp("num.partitions", kmsg.IncrementalAlterConfigOpSet, three)}, kerr.InvalidRequest, "Cannot update these configs dynamically: num.partitions"},
		{"", []kmsg.IncrementalAlterConfigsRequestResourceConfig{incOp("num.partitions", kmsg.IncrementalAlterConfigOpDelete, nil)}, nil, ""},
		{"0", []kmsg.IncrementalAlterConfigsRequestResourceConfig{incOp("num.partitions", kmsg.IncrementalAlterConfigOpSet, nil)}, kerr.InvalidRequest, "Null value not supported"},
		{"0", []kmsg.IncrementalAlterConfigsRequestResourceConfig{incOp("num.partitions", 9, three)}, kerr.InvalidRequest, "Unknown operations type 9"},
		{"0", []kmsg.IncrementalAlterConfigsRequestResourceConfig{
			incOp("num.partitions", kmsg.IncrementalAlterConfigOpDelete, nil), incOp("num.partitions", kmsg.IncrementalAlterConfigOpDelete, nil),
		}, kerr.InvalidRequest, "duplicate config keys"},
		{"2", nil, kerr.InvalidRequest, "Unexpected broker id"},
	} {
		res := adminRequest[*kmsg.IncrementalAlterConfigsResponse](t, srv, incrementalReq(1, kmsg.ConfigResourceTypeBroker, tc.name, tc.ops...)).Resources[0]
		if tc.want == nil {
			if res.ErrorCode != 0 {
				t.Fatalf("%q: error %d %v", tc.name, res.ErrorCode, res.ErrorMessage)
			}
			continue
		}
		if res.ErrorCode != tc.want.Code || res.ErrorMessage == nil || !strings.Contains(*res.ErrorMessage, tc.msg) {
			t.Fatalf("%q %+v: error %d %v", tc.name, tc.ops, res.ErrorCode, res.ErrorMessage)
		}
	}
}

func TestIncrementalAlterConfigsTopicErrors(t *testing.T) {
	srv := newTestServer(t, nil)
	mustCreate(t, srv, "a", 1)
	one := kmsg.StringPtr("1")
	for _, tc := range []struct {
		req  *kmsg.IncrementalAlterConfigsRequest
		want *kerr.Error
	}{
		{incrementalReq(0, kmsg.ConfigResourceTypeTopic, "missing", incOp("retention.ms", 0, one)), kerr.UnknownTopicOrPartition},
		{incrementalReq(0, kmsg.ConfigResourceTypeTopic, "a", incOp("retention.ms", 0, nil)), kerr.InvalidRequest},
		{incrementalReq(0, kmsg.ConfigResourceTypeTopic, "a", incOp("retention.ms", 7, one)), kerr.InvalidRequest},
		{incrementalReq(0, kmsg.ConfigResourceTypeTopic, "a", incOp("no.such", 0, one)), kerr.InvalidConfig},
		{incrementalReq(0, kmsg.ConfigResourceTypeClientMetrics, "m", incOp("interval.ms", 0, one)), kerr.InvalidRequest},
	} {
		if res := adminRequest[*kmsg.IncrementalAlterConfigsResponse](t, srv, tc.req).Resources[0]; res.ErrorCode != tc.want.Code {
			t.Fatalf("%+v: error %d, want %d", tc.req.Resources[0], res.ErrorCode, tc.want.Code)
		}
	}
	// A resource twice: both refused, nothing applied.
	req := incrementalReq(1, kmsg.ConfigResourceTypeTopic, "a", incOp("retention.ms", 0, one))
	req.Resources = append(req.Resources, req.Resources[0])
	resp := adminRequest[*kmsg.IncrementalAlterConfigsResponse](t, srv, req)
	if len(resp.Resources) != 2 || resp.Resources[0].ErrorCode != kerr.InvalidRequest.Code || resp.Resources[1].ErrorCode != kerr.InvalidRequest.Code {
		t.Fatalf("duplicate resource: %+v", resp.Resources)
	}
	// Validate-only changes nothing.
	req = incrementalReq(1, kmsg.ConfigResourceTypeTopic, "a", incOp("retention.ms", 0, one))
	req.ValidateOnly = true
	if res := adminRequest[*kmsg.IncrementalAlterConfigsResponse](t, srv, req).Resources[0]; res.ErrorCode != 0 {
		t.Fatalf("validate-only: error %d", res.ErrorCode)
	}
	if got, _ := srv.Topics().Get("a"); len(got.Configs.Overrides()) != 0 {
		t.Fatalf("changed: %v", got.Configs.Overrides())
	}
}

func TestIncrementalAlterConfigsRoundTrip(t *testing.T) {
	srv := newTestServer(t, nil)
	mustCreate(t, srv, "a", 1)
	checkRoundTrip(t, srv, func(v int16) kmsg.Request {
		req := incrementalReq(v, kmsg.ConfigResourceTypeTopic, "a", incOp("retention.ms", 0, kmsg.StringPtr("5000")))
		other := incrementalReq(v, kmsg.ConfigResourceTypeBroker, "0", incOp("num.partitions", 0, kmsg.StringPtr("2")))
		req.Resources = append(req.Resources, other.Resources...)
		return req
	})
}
