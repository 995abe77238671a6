package broker

import (
	"strconv"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// findConfig returns the named config of a kadm resource.
func findConfig(t *testing.T, rc kadm.ResourceConfig, name string) kadm.Config {
	t.Helper()
	for _, c := range rc.Configs {
		if c.Key == name {
			return c
		}
	}
	t.Fatalf("%s: no config %s", rc.Name, name)
	return kadm.Config{}
}

func TestDescribeConfigsTopicWithKadm(t *testing.T) {
	srv := newTestServer(t, nil)
	adm := newAdmin(t, srv)
	ctx := testCtx(t)
	v := "60000"
	if _, err := adm.CreateTopic(ctx, 1, 1, map[string]*string{"retention.ms": &v}, "a"); err != nil {
		t.Fatal(err)
	}
	rcs, err := adm.DescribeTopicConfigs(ctx, "a", "missing")
	if err != nil {
		t.Fatal(err)
	}
	if len(rcs) != 2 || rcs[0].Err != nil || rcs[1].Err != kerr.UnknownTopicOrPartition {
		t.Fatalf("%+v", rcs)
	}
	c := findConfig(t, rcs[0], "retention.ms")
	if c.MaybeValue() != v || c.Source != kmsg.ConfigSourceDynamicTopicConfig {
		t.Fatalf("retention.ms %+v", c)
	}
	// Synonyms: the topic's value only, as Kafka: log.retention.ms has no
	// default there (log.retention.hours has) and nobody set it.
	if len(c.Synonyms) != 1 || c.Synonyms[0].Key != "retention.ms" {
		t.Fatalf("synonyms %+v", c.Synonyms)
	}
	// Without a value of its own: the broker's, as its only synonym.
	c = findConfig(t, rcs[0], "cleanup.policy")
	if c.MaybeValue() != "delete" || c.Source != kmsg.ConfigSourceDefaultConfig || len(c.Synonyms) != 1 ||
		c.Synonyms[0].Key != "log.cleanup.policy" || c.Synonyms[0].Value == nil || *c.Synonyms[0].Value != "delete" {
		t.Fatalf("cleanup.policy %+v", c)
	}
	if c := findConfig(t, rcs[0], "segment.ms"); c.MaybeValue() != strconv.FormatInt(srv.Config().LogRollMs, 10) ||
		c.Source != kmsg.ConfigSourceDefaultConfig || len(c.Synonyms) != 0 {
		t.Fatalf("segment.ms %+v", c)
	}
}

func TestDescribeConfigsBrokerWithKadm(t *testing.T) {
	srv := newTestServer(t, func(c *Config) { c.DefaultPartitions = 3 })
	adm := newAdmin(t, srv)
	rcs, err := adm.DescribeBrokerConfigs(testCtx(t), 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(rcs) != 1 || rcs[0].Err != nil || rcs[0].Name != "0" {
		t.Fatalf("%+v", rcs)
	}
	if c := findConfig(t, rcs[0], "num.partitions"); c.MaybeValue() != "3" || c.Source != kmsg.ConfigSourceStaticBrokerConfig ||
		len(c.Synonyms) != 2 || c.Synonyms[1].Value == nil || *c.Synonyms[1].Value != "1" || c.Synonyms[1].Source != kmsg.ConfigSourceDefaultConfig {
		t.Fatalf("num.partitions %+v", c)
	}
	if c := findConfig(t, rcs[0], "log.dirs"); c.MaybeValue() != srv.Config().DataDir {
		t.Fatalf("log.dirs %+v", c)
	}
	if c := findConfig(t, rcs[0], "cluster.id"); c.MaybeValue() != "kbroker-cluster" || c.Source != kmsg.ConfigSourceDefaultConfig {
		t.Fatalf("cluster.id %+v", c)
	}
	// The cluster-wide defaults are the dynamic ones: there are none.
	rcs, err = adm.DescribeBrokerConfigs(testCtx(t))
	if err != nil || len(rcs) != 1 || rcs[0].Err != nil || len(rcs[0].Configs) != 0 {
		t.Fatalf("cluster defaults: %+v, %v", rcs, err)
	}
}

// describeConfigsReq asks for one resource's configs.
func describeConfigsReq(version int16, typ kmsg.ConfigResourceType, name string, configs ...string) *kmsg.DescribeConfigsRequest {
	req := kmsg.NewPtrDescribeConfigsRequest()
	req.Version = version
	rr := kmsg.NewDescribeConfigsRequestResource()
	rr.ResourceType, rr.ResourceName, rr.ConfigNames = typ, name, configs
	req.Resources = append(req.Resources, rr)
	return req
}

func TestDescribeConfigsBrokerDetails(t *testing.T) {
	srv := newTestServer(t, nil)
	req := describeConfigsReq(4, kmsg.ConfigResourceTypeBroker, "0", "message.max.bytes", "auto.create.topics.enable", "connections.max.idle.ms", "listeners")
	req.IncludeSynonyms = true
	res := adminRequest[*kmsg.DescribeConfigsResponse](t, srv, req).Resources[0]
	if res.ErrorCode != 0 || len(res.Configs) != 4 {
		t.Fatalf("%+v", res)
	}
	types := map[string]kmsg.ConfigType{
		"message.max.bytes":         kmsg.ConfigTypeInt,
		"auto.create.topics.enable": kmsg.ConfigTypeBoolean,
		"connections.max.idle.ms":   kmsg.ConfigTypeLong,
		"listeners":                 kmsg.ConfigTypeList, // Kafka 4.4's type, not the Go field's
	}
	for _, c := range res.Configs {
		_, dynamic := dynamicBrokerConfigs[c.Name]
		if c.ReadOnly == dynamic || c.IsSensitive || c.ConfigType != types[c.Name] || c.Value == nil {
			t.Fatalf("%+v", c)
		}
	}
	if c := res.Configs[1]; c.Name != "connections.max.idle.ms" || *c.Value != "600000" {
		t.Fatalf("sorted by name, durations in ms: %+v", c)
	}

	for _, name := range []string{"1", "x"} {
		res := adminRequest[*kmsg.DescribeConfigsResponse](t, srv, describeConfigsReq(4, kmsg.ConfigResourceTypeBroker, name)).Resources[0]
		if res.ErrorCode != kerr.InvalidRequest.Code || res.ErrorMessage == nil || len(res.Configs) != 0 {
			t.Fatalf("broker %q: %+v", name, res)
		}
	}
}

// TestDescribeConfigsV0 is the form kafka-python sends: no source, but
// is_default.
func TestDescribeConfigsV0(t *testing.T) {
	srv := newTestServer(t, nil)
	v := "1000"
	if _, err := srv.Topics().Create("a", 1, map[string]*string{"retention.ms": &v}, false); err != nil {
		t.Fatal(err)
	}
	res := adminRequest[*kmsg.DescribeConfigsResponse](t, srv, describeConfigsReq(0, kmsg.ConfigResourceTypeTopic, "a")).Resources[0]
	if res.ErrorCode != 0 || len(res.Configs) < 30 {
		t.Fatalf("error %d, %d configs", res.ErrorCode, len(res.Configs))
	}
	for _, c := range res.Configs {
		if c.IsDefault != (c.Name != "retention.ms") || c.ReadOnly {
			t.Fatalf("%+v", c)
		}
	}
}

func TestDescribeConfigsFilterAndDocumentation(t *testing.T) {
	srv := newTestServer(t, nil)
	mustCreate(t, srv, "a", 1)
	req := describeConfigsReq(3, kmsg.ConfigResourceTypeTopic, "a", "max.message.bytes", "segment.bytes", "no.such")
	req.IncludeDocumentation = true
	res := adminRequest[*kmsg.DescribeConfigsResponse](t, srv, req).Resources[0]
	if res.ErrorCode != 0 || len(res.Configs) != 2 {
		t.Fatalf("%+v", res)
	}
	for _, c := range res.Configs {
		if c.Documentation == nil || *c.Documentation == "" || c.ConfigType != kmsg.ConfigTypeInt || len(c.ConfigSynonyms) != 0 {
			t.Fatalf("%+v", c)
		}
	}
	req.IncludeDocumentation = false
	for _, c := range adminRequest[*kmsg.DescribeConfigsResponse](t, srv, req).Resources[0].Configs {
		if c.Documentation != nil {
			t.Fatalf("documentation not asked for: %+v", c)
		}
	}
}

func TestDescribeConfigsErrors(t *testing.T) {
	srv := newTestServer(t, nil)
	for _, tc := range []struct {
		typ  kmsg.ConfigResourceType
		name string
		want *kerr.Error
	}{
		{kmsg.ConfigResourceTypeTopic, "missing", kerr.UnknownTopicOrPartition},
		{kmsg.ConfigResourceTypeTopic, "bad name", kerr.InvalidTopicException},
		{kmsg.ConfigResourceTypeBrokerLogger, "0", kerr.InvalidRequest},
		{kmsg.ConfigResourceTypeGroupConfig, "", kerr.InvalidRequest},
		{kmsg.ConfigResourceType(99), "?", kerr.InvalidRequest},
	} {
		res := adminRequest[*kmsg.DescribeConfigsResponse](t, srv, describeConfigsReq(2, tc.typ, tc.name)).Resources[0]
		if res.ErrorCode != tc.want.Code || res.ResourceType != tc.typ || res.ResourceName != tc.name {
			t.Fatalf("%v %q: %+v", tc.typ, tc.name, res)
		}
	}
}

func TestDescribeConfigsRoundTrip(t *testing.T) {
	srv := newTestServer(t, nil)
	v := "1000"
	if _, err := srv.Topics().Create("a", 1, map[string]*string{"retention.ms": &v}, false); err != nil {
		t.Fatal(err)
	}
	checkRoundTrip(t, srv, func(int16) kmsg.Request {
		req := describeConfigsReq(0, kmsg.ConfigResourceTypeTopic, "a")
		req.IncludeSynonyms, req.IncludeDocumentation = true, true
		for _, rr := range []*kmsg.DescribeConfigsRequest{
			describeConfigsReq(0, kmsg.ConfigResourceTypeBroker, "0"),
			describeConfigsReq(0, kmsg.ConfigResourceTypeBroker, ""),
			describeConfigsReq(0, kmsg.ConfigResourceTypeTopic, "missing"),
		} {
			req.Resources = append(req.Resources, rr.Resources...)
		}
		return req
	})
}
