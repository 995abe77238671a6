package broker

import (
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/topic"
)

// createTopicsReq builds a CreateTopics request for one topic.
func createTopicsReq(version int16, name string, partitions int32, rf int16, configs map[string]string) *kmsg.CreateTopicsRequest {
	req := kmsg.NewPtrCreateTopicsRequest()
	req.Version = version
	req.TimeoutMillis = 5000
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = name, partitions, rf
	for k, v := range configs {
		cf := kmsg.NewCreateTopicsRequestTopicConfig()
		cf.Name, cf.Value = k, kmsg.StringPtr(v)
		rt.Configs = append(rt.Configs, cf)
	}
	req.Topics = append(req.Topics, rt)
	return req
}

func TestCreateTopicsWithKadm(t *testing.T) {
	srv := newTestServer(t, func(c *Config) { c.DefaultPartitions = 2 })
	adm := newAdmin(t, srv)
	ctx := testCtx(t)
	retention := "3600000"
	resps, err := adm.CreateTopics(ctx, 3, 1, map[string]*string{"retention.ms": &retention}, "t1", "t2")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"t1", "t2"} {
		r := resps[name]
		got, ok := srv.Topics().Get(name)
		if r.Err != nil || !ok || [16]byte(r.ID) != got.ID || r.NumPartitions != 3 || r.ReplicationFactor != 1 {
			t.Fatalf("%s: %+v", name, r)
		}
		if c := r.Configs["retention.ms"]; c.Value == nil || *c.Value != retention || c.Source != kmsg.ConfigSourceDynamicTopicConfig {
			t.Fatalf("%s: retention.ms %+v", name, c)
		}
		if c := r.Configs["max.message.bytes"]; c.Source != kmsg.ConfigSourceDefaultConfig && c.Source != kmsg.ConfigSourceStaticBrokerConfig {
			t.Fatalf("%s: max.message.bytes %+v", name, c)
		}
		if got.Configs.RetentionMs() != 3600000 {
			t.Fatalf("%s: registry retention %d", name, got.Configs.RetentionMs())
		}
	}
	// -1, -1: the broker defaults (KIP-464).
	r, err := adm.CreateTopic(ctx, -1, -1, nil, "defaults")
	if err != nil || r.NumPartitions != 2 {
		t.Fatalf("defaults: %+v, %v", r, err)
	}
	// The partitions are served at once.
	md, err := adm.Metadata(ctx, "defaults")
	if err != nil || len(md.Topics["defaults"].Partitions) != 2 || md.Topics["defaults"].Err != nil {
		t.Fatalf("metadata: %+v, %v", md.Topics["defaults"], err)
	}
	// Creating it again fails.
	r, err = adm.CreateTopic(ctx, 1, 1, nil, "defaults")
	if err == nil || r.Err != kerr.TopicAlreadyExists {
		t.Fatalf("again: %+v, %v", r, err)
	}
}

// TestCreateTopicsV0: the oldest form (no validate_only, no messages).
func TestCreateTopicsV0(t *testing.T) {
	srv := newTestServer(t, nil)
	resp := adminRequest[*kmsg.CreateTopicsResponse](t, srv, createTopicsReq(0, "old", 2, 1, map[string]string{"cleanup.policy": "delete"}))
	if len(resp.Topics) != 1 || resp.Topics[0].Topic != "old" || resp.Topics[0].ErrorCode != 0 {
		t.Fatalf("%+v", resp.Topics)
	}
	if got, ok := srv.Topics().Get("old"); !ok || got.Partitions != 2 {
		t.Fatalf("not created: %+v", got)
	}
	resp = adminRequest[*kmsg.CreateTopicsResponse](t, srv, createTopicsReq(0, "old", 2, 1, nil))
	if resp.Topics[0].ErrorCode != kerr.TopicAlreadyExists.Code || resp.Topics[0].ErrorMessage != nil {
		t.Fatalf("again: %+v", resp.Topics[0])
	}
}

func TestCreateTopicsReplicationFactor(t *testing.T) {
	srv := newTestServer(t, nil)
	for _, tc := range []struct {
		rf         int16
		partitions int32
		want       *kerr.Error
		msg        string
	}{
		{3, 1, kerr.InvalidReplicationFactor, "The target replication factor of 3 cannot be reached because only 1 broker(s) are registered."},
		{0, 1, kerr.InvalidReplicationFactor, "Replication factor must be larger than 0"},
		{-2, 1, kerr.InvalidReplicationFactor, "Replication factor must be larger than 0"},
		{1, 0, kerr.InvalidPartitions, "invalid non-positive value"},
		{-1, -5, kerr.InvalidPartitions, "invalid non-positive value"},
	} {
		resp := adminRequest[*kmsg.CreateTopicsResponse](t, srv, createTopicsReq(7, "rf", tc.partitions, tc.rf, nil))
		st := resp.Topics[0]
		if st.ErrorCode != tc.want.Code || st.ErrorMessage == nil || !strings.Contains(*st.ErrorMessage, tc.msg) {
			t.Fatalf("rf %d partitions %d: error %d %v", tc.rf, tc.partitions, st.ErrorCode, st.ErrorMessage)
		}
		if st.NumPartitions != -1 || st.ReplicationFactor != -1 || st.TopicID != [16]byte{} {
			t.Fatalf("failed topic has details: %+v", st)
		}
	}
	if len(srv.Topics().List()) != 0 {
		t.Fatal("a topic was created")
	}
	// Kafka checks existence before the replication factor.
	mustCreate(t, srv, "exists", 1)
	resp := adminRequest[*kmsg.CreateTopicsResponse](t, srv, createTopicsReq(7, "exists", 1, 3, nil))
	if resp.Topics[0].ErrorCode != kerr.TopicAlreadyExists.Code {
		t.Fatalf("exists with rf 3: error %d", resp.Topics[0].ErrorCode)
	}
}

func TestCreateTopicsManualAssignment(t *testing.T) {
	srv := newTestServer(t, nil)
	assign := func(name string, partitions int32, rf int16, replicas map[int32][]int32) kmsg.CreateTopicsResponseTopic {
		req := createTopicsReq(7, name, partitions, rf, nil)
		for p, rs := range replicas {
			a := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
			a.Partition, a.Replicas = p, rs
			req.Topics[0].ReplicaAssignment = append(req.Topics[0].ReplicaAssignment, a)
		}
		return adminRequest[*kmsg.CreateTopicsResponse](t, srv, req).Topics[0]
	}
	if st := assign("manual", -1, -1, map[int32][]int32{0: {0}, 1: {0}, 2: {0}}); st.ErrorCode != 0 || st.NumPartitions != 3 {
		t.Fatalf("valid assignment: %+v", st)
	}
	for _, tc := range []struct {
		name       string
		partitions int32
		rf         int16
		replicas   map[int32][]int32
		want       *kerr.Error
	}{
		{"rf-set", -1, 1, map[int32][]int32{0: {0}}, kerr.InvalidRequest},
		{"partitions-set", 1, -1, map[int32][]int32{0: {0}}, kerr.InvalidRequest},
		{"other-broker", -1, -1, map[int32][]int32{0: {1}}, kerr.InvalidReplicaAssignment},
		{"twice", -1, -1, map[int32][]int32{0: {0, 0}}, kerr.InvalidReplicaAssignment},
		{"empty", -1, -1, map[int32][]int32{0: {}}, kerr.InvalidReplicaAssignment},
		{"gap", -1, -1, map[int32][]int32{0: {0}, 2: {0}}, kerr.InvalidReplicaAssignment},
	} {
		if st := assign(tc.name, tc.partitions, tc.rf, tc.replicas); st.ErrorCode != tc.want.Code || st.ErrorMessage == nil {
			t.Fatalf("%s: error %d %v", tc.name, st.ErrorCode, st.ErrorMessage)
		}
		if _, ok := srv.Topics().Get(tc.name); ok {
			t.Fatalf("%s created", tc.name)
		}
	}
}

func TestCreateTopicsDuplicateNames(t *testing.T) {
	srv := newTestServer(t, nil)
	req := createTopicsReq(7, "d", 1, 1, nil)
	req.Topics = append(req.Topics, createTopicsReq(7, "e", 1, 1, nil).Topics[0], req.Topics[0])
	resp := adminRequest[*kmsg.CreateTopicsResponse](t, srv, req)
	if len(resp.Topics) != 2 {
		t.Fatalf("%d answers, want one per name", len(resp.Topics))
	}
	if d := resp.Topics[0]; d.Topic != "d" || d.ErrorCode != kerr.InvalidRequest.Code {
		t.Fatalf("d: %+v", d)
	}
	if e := resp.Topics[1]; e.Topic != "e" || e.ErrorCode != 0 {
		t.Fatalf("e: %+v", e)
	}
	if _, ok := srv.Topics().Get("d"); ok {
		t.Fatal("duplicated topic created")
	}
}

func TestCreateTopicsValidateOnly(t *testing.T) {
	srv := newTestServer(t, nil)
	req := createTopicsReq(7, "dry", 4, -1, map[string]string{"retention.bytes": "1024"})
	req.ValidateOnly = true
	st := adminRequest[*kmsg.CreateTopicsResponse](t, srv, req).Topics[0]
	if st.ErrorCode != 0 || st.NumPartitions != 4 || st.ReplicationFactor != 1 || st.TopicID != [16]byte{} || len(st.Configs) == 0 {
		t.Fatalf("%+v", st)
	}
	if _, ok := srv.Topics().Get("dry"); ok {
		t.Fatal("validate-only created the topic")
	}
	req = createTopicsReq(7, "dry", 4, -1, map[string]string{"retention.bytes": "lots"})
	req.ValidateOnly = true
	if st := adminRequest[*kmsg.CreateTopicsResponse](t, srv, req).Topics[0]; st.ErrorCode != kerr.InvalidConfig.Code {
		t.Fatalf("bad config: error %d", st.ErrorCode)
	}
}

// TestCreateTopicsConfigsAsGiven: v5+ answers the configs set as the
// request spelled them, as Kafka 4.4 does (TestDiffKafka); the topic
// stores and DescribeConfigs reports the canonical form.
func TestCreateTopicsConfigsAsGiven(t *testing.T) {
	srv := newTestServer(t, nil)
	for _, validateOnly := range []bool{true, false} {
		req := createTopicsReq(7, "spelled", 1, 1, map[string]string{"retention.ms": " 1000 ", "cleanup.policy": "delete, compact"})
		req.ValidateOnly = validateOnly
		st := adminRequest[*kmsg.CreateTopicsResponse](t, srv, req).Topics[0]
		if st.ErrorCode != 0 {
			t.Fatalf("validate only %t: error %d", validateOnly, st.ErrorCode)
		}
		got := map[string]string{}
		for _, c := range st.Configs {
			if c.Value != nil {
				got[c.Name] = *c.Value
			}
		}
		if got["retention.ms"] != " 1000 " || got["cleanup.policy"] != "delete, compact" || got["max.message.bytes"] != "1048588" {
			t.Fatalf("validate only %t: configs %v", validateOnly, got)
		}
	}
	tp, _ := srv.Topics().Get("spelled")
	if v, _ := tp.Configs.Override("retention.ms"); v != "1000" {
		t.Fatalf("stored retention.ms %q", v)
	}
}

func TestCreateTopicsRegistryErrors(t *testing.T) {
	srv := newTestServer(t, nil)
	mustCreate(t, srv, "a.b", 1)
	for _, tc := range []struct {
		name    string
		configs map[string]string
		want    *kerr.Error
	}{
		{"bad name", nil, kerr.InvalidTopicException},
		{"a_b", nil, kerr.InvalidTopicException}, // collides with a.b
		{"a.b", nil, kerr.TopicAlreadyExists},
		{topic.GroupMetadataTopic, nil, kerr.InvalidRequest},
		{"cfg", map[string]string{"no.such.config": "1"}, kerr.InvalidConfig},
		{"lags", map[string]string{"min.compaction.lag.ms": "10", "max.compaction.lag.ms": "5"}, kerr.InvalidConfig},
	} {
		st := adminRequest[*kmsg.CreateTopicsResponse](t, srv, createTopicsReq(4, tc.name, 1, 1, tc.configs)).Topics[0]
		if st.ErrorCode != tc.want.Code || st.ErrorMessage == nil || *st.ErrorMessage == "" {
			t.Fatalf("%s: error %d %v, want %s", tc.name, st.ErrorCode, st.ErrorMessage, tc.want.Message)
		}
	}
}

func TestCreateTopicsRoundTrip(t *testing.T) {
	srv := newTestServer(t, nil)
	mustCreate(t, srv, "exists", 1)
	n := 0
	checkRoundTrip(t, srv, func(v int16) kmsg.Request {
		n++
		req := createTopicsReq(v, "rt-"+string(rune('a'+n)), 2, 1, map[string]string{"retention.ms": "1000"})
		req.Topics = append(req.Topics, createTopicsReq(v, "exists", 1, 1, nil).Topics[0], createTopicsReq(v, "rf3", 1, 3, nil).Topics[0])
		return req
	})
}
