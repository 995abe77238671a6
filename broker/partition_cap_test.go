package broker

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestCreateTopicsPartitionCap: a CreateTopics request that would create
// more than 10,000 partitions in all (Kafka's MAX_PARTITIONS_PER_BATCH) is
// refused as a whole with POLICY_VIOLATION and creates nothing; 10,000 is
// allowed. A count with a high bit set (a billion partitions) never
// reaches the registry.
func TestCreateTopicsPartitionCap(t *testing.T) {
	srv := newTestServer(t, nil)
	req := createTopicsReq(7, "small", 1, 1, nil)
	req.Topics = append(req.Topics, createTopicsReq(7, "huge", 1<<30, 1, nil).Topics[0])
	resp := adminRequest[*kmsg.CreateTopicsResponse](t, srv, req)
	if len(resp.Topics) != 2 {
		t.Fatalf("%d answers", len(resp.Topics))
	}
	for _, st := range resp.Topics {
		if st.ErrorCode != kerr.PolicyViolation.Code || st.ErrorMessage == nil || *st.ErrorMessage != "Excessively large number of partitions per request." {
			t.Fatalf("%s: error %d %v, want POLICY_VIOLATION", st.Topic, st.ErrorCode, st.ErrorMessage)
		}
		if _, ok := srv.Topics().Get(st.Topic); ok {
			t.Fatalf("%s was created", st.Topic)
		}
	}
	// 5,000 + 5,001 is over the cap too; 10,000 in all is not.
	req = createTopicsReq(7, "a", 5000, 1, nil)
	req.Topics = append(req.Topics, createTopicsReq(7, "b", 5001, 1, nil).Topics[0])
	if st := adminRequest[*kmsg.CreateTopicsResponse](t, srv, req).Topics[0]; st.ErrorCode != kerr.PolicyViolation.Code {
		t.Fatalf("10,001 partitions: error %d", st.ErrorCode)
	}
	req = createTopicsReq(7, "a", 4000, 1, nil)
	req.Topics = append(req.Topics, createTopicsReq(7, "b", 6000, 1, nil).Topics[0])
	req.ValidateOnly = true
	for _, st := range adminRequest[*kmsg.CreateTopicsResponse](t, srv, req).Topics {
		if st.ErrorCode != 0 {
			t.Fatalf("10,000 partitions: %s error %d", st.Topic, st.ErrorCode)
		}
	}
}

// TestCreatePartitionsCap: a CreatePartitions request that would add more
// than 10,000 partitions in all is refused as a whole with
// POLICY_VIOLATION; the topics keep their partitions.
func TestCreatePartitionsCap(t *testing.T) {
	srv := newTestServer(t, nil)
	mustCreate(t, srv, "a", 2)
	mustCreate(t, srv, "b", 1)
	req := createPartitionsReq(3, "a", 1<<30, false)
	req.Topics = append(req.Topics, createPartitionsReq(3, "b", 2, false).Topics[0])
	for _, st := range adminRequest[*kmsg.CreatePartitionsResponse](t, srv, req).Topics {
		if st.ErrorCode != kerr.PolicyViolation.Code {
			t.Fatalf("%s: error %d, want POLICY_VIOLATION", st.Topic, st.ErrorCode)
		}
	}
	if a, _ := srv.Topics().Get("a"); a.Partitions != 2 {
		t.Fatalf("a has %d partitions", a.Partitions)
	}
	if b, _ := srv.Topics().Get("b"); b.Partitions != 1 {
		t.Fatalf("b has %d partitions", b.Partitions)
	}
	// Growing by 10,000 exactly is allowed (validate only: creating them
	// would take a while).
	if st := adminRequest[*kmsg.CreatePartitionsResponse](t, srv, createPartitionsReq(3, "a", 10_002, true)).Topics[0]; st.ErrorCode != 0 {
		t.Fatalf("adding 10,000: error %d", st.ErrorCode)
	}
}
