package broker

import (
	"fmt"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func listConfigResourcesAt(t *testing.T, srv *InProcess, version int16, types ...int8) *kmsg.ListConfigResourcesResponse {
	t.Helper()
	req := kmsg.NewPtrListConfigResourcesRequest()
	req.Version, req.ResourceTypes = version, types
	return adminRequest[*kmsg.ListConfigResourcesResponse](t, srv, req)
}

// listed renders the resources as "type:name" in the order answered.
func listed(resp *kmsg.ListConfigResourcesResponse) string {
	var out []string
	for _, r := range resp.ConfigResources {
		out = append(out, fmt.Sprintf("%d:%s", r.Type, r.Name))
	}
	return strings.Join(out, " ")
}

func TestListConfigResources(t *testing.T) {
	srv := newTestServer(t, func(c *Config) { c.NodeID = 3 })
	ctx := testCtx(t)
	adm := newAdmin(t, srv)
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "b-topic"); err != nil {
		t.Fatal(err)
	}
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "a-topic"); err != nil {
		t.Fatal(err)
	}
	// A group with offsets but no configs is not a config resource; its
	// commit creates the internal __consumer_offsets, which is one.
	offsets := kadm.Offsets{}
	offsets.Add(kadm.Offset{Topic: "a-topic", Partition: 0, At: 0, LeaderEpoch: -1})
	if _, err := adm.CommitOffsets(ctx, "plain", offsets); err != nil {
		t.Fatal(err)
	}
	alter := func(typ kmsg.ConfigResourceType, name, config string, op kmsg.IncrementalAlterConfigOp, value *string) {
		t.Helper()
		resp := adminRequest[*kmsg.IncrementalAlterConfigsResponse](t, srv, incrementalReq(1, typ, name, incOp(config, op, value)))
		if code := resp.Resources[0].ErrorCode; code != 0 {
			t.Fatalf("alter %s %q: %v", config, name, kerr.ErrorForCode(code))
		}
	}
	alter(kmsg.ConfigResourceTypeGroupConfig, "g2", groupSessionTimeoutConfig, kmsg.IncrementalAlterConfigOpSet, kmsg.StringPtr("50000"))
	alter(kmsg.ConfigResourceTypeGroupConfig, "g1", groupSessionTimeoutConfig, kmsg.IncrementalAlterConfigOpSet, kmsg.StringPtr("50000"))
	// The cluster-wide default is not a broker Kafka lists.
	alter(kmsg.ConfigResourceTypeBroker, "", "log.retention.ms", kmsg.IncrementalAlterConfigOpSet, kmsg.StringPtr("100000"))

	all := "32:g1 32:g2 8:3 4:3 2:__consumer_offsets 2:a-topic 2:b-topic"
	for _, tc := range []struct {
		version int16
		types   []int8
		code    int16
		want    string
	}{
		{1, nil, 0, all},
		{1, []int8{2, 4, 8, 16, 32}, 0, all},
		// Kafka's order of types, whatever the order asked; once each.
		{1, []int8{2, 32, 2}, 0, "32:g1 32:g2 2:__consumer_offsets 2:a-topic 2:b-topic"},
		{1, []int8{4}, 0, "4:3"},
		{1, []int8{16}, 0, ""},
		// One unsupported type fails the whole request.
		{1, []int8{4, 99}, kerr.UnsupportedVersion.Code, ""},
		{1, []int8{0}, kerr.UnsupportedVersion.Code, ""},
		{1, []int8{1}, kerr.UnsupportedVersion.Code, ""},
		{1, []int8{-1}, kerr.UnsupportedVersion.Code, ""},
		// v0 lists client-metrics resources only, and kbroker has none.
		{0, nil, 0, ""},
	} {
		resp := listConfigResourcesAt(t, srv, tc.version, tc.types...)
		if resp.ErrorCode != tc.code || listed(resp) != tc.want {
			t.Errorf("v%d %v: error %v, %q; want %v, %q", tc.version, tc.types,
				kerr.ErrorForCode(resp.ErrorCode), listed(resp), kerr.ErrorForCode(tc.code), tc.want)
		}
	}

	// A group whose last config is deleted is no longer listed.
	alter(kmsg.ConfigResourceTypeGroupConfig, "g2", groupSessionTimeoutConfig, kmsg.IncrementalAlterConfigOpDelete, nil)
	if got := listed(listConfigResourcesAt(t, srv, 1, 32)); got != "32:g1" {
		t.Fatalf("after deleting g2's config: %q", got)
	}

	// What a client sees.
	res, err := adm.ListConfigResources(ctx, kadm.ConfigResourceType(kmsg.ConfigResourceTypeTopic))
	if err != nil || res.Err != nil {
		t.Fatal(err, res.Err)
	}
	if got := res.Names(); strings.Join(got, " ") != "__consumer_offsets a-topic b-topic" {
		t.Fatalf("kadm topics: %v", got)
	}
}

// TestListConfigResourcesNodes: each live node of a simulated cluster is a
// broker and a broker logger.
func TestListConfigResourcesNodes(t *testing.T) {
	srv := newTestServer(t, func(c *Config) { c.NodeID = 5; c.Nodes = 3 })
	if got := listed(listConfigResourcesAt(t, srv, 1, 4, 8)); got != "8:5 8:6 8:7 4:5 4:6 4:7" {
		t.Fatalf("brokers: %q", got)
	}
}

// TestListConfigResourcesACL: Kafka asks for DESCRIBE_CONFIGS on the
// cluster.
func TestListConfigResourcesACL(t *testing.T) {
	srv := aclServer(t, "")
	ctx := testCtx(t)
	for _, tc := range []struct {
		user string
		code int16
	}{
		{"admin", 0},
		{"bob", kerr.ClusterAuthorizationFailed.Code},
	} {
		req := kmsg.NewPtrListConfigResourcesRequest()
		resp, err := req.RequestWith(ctx, userClient(t, srv, tc.user))
		if err != nil {
			t.Fatal(err)
		}
		if resp.ErrorCode != tc.code || (tc.code == 0) != (len(resp.ConfigResources) == 2) {
			t.Fatalf("%s: error %v, %s", tc.user, kerr.ErrorForCode(resp.ErrorCode), listed(resp))
		}
	}
}

func TestListConfigResourcesRoundTrip(t *testing.T) {
	srv := newTestServer(t, func(c *Config) { c.SeedTopics = "seeded:1" })
	checkRoundTrip(t, srv, func(int16) kmsg.Request { return kmsg.NewPtrListConfigResourcesRequest() })
}
