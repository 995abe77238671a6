package broker

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/partition"
	"github.com/kbroker/kbroker/topic"
)

func TestCreatePartitionsWithKadm(t *testing.T) {
	srv := newTestServer(t, nil)
	adm := newAdmin(t, srv)
	ctx := testCtx(t)
	a := mustCreate(t, srv, "a", 1)
	resps, err := adm.CreatePartitions(ctx, 2, "a")
	if err != nil || resps["a"].Err != nil {
		t.Fatalf("%+v, %v", resps, err)
	}
	if got, _ := srv.Topics().Get("a"); got.Partitions != 3 {
		t.Fatalf("%d partitions", got.Partitions)
	}
	if ps := srv.Store().Partitions(partition.TopicID(a.ID)); len(ps) != 3 {
		t.Fatalf("store serves %d partitions", len(ps))
	}
	md, err := adm.Metadata(ctx, "a")
	if err != nil || len(md.Topics["a"].Partitions) != 3 {
		t.Fatalf("metadata %+v, %v", md.Topics["a"], err)
	}
	// Shrinking is refused.
	resps, err = adm.UpdatePartitions(ctx, 2, "a")
	if err != nil || resps["a"].Err != kerr.InvalidPartitions || resps["a"].ErrMessage == "" {
		t.Fatalf("shrink: %+v, %v", resps, err)
	}
}

// createPartitionsReq grows one topic to count partitions.
func createPartitionsReq(version int16, name string, count int32, validateOnly bool) *kmsg.CreatePartitionsRequest {
	req := kmsg.NewPtrCreatePartitionsRequest()
	req.Version = version
	req.TimeoutMillis = 5000
	req.ValidateOnly = validateOnly
	rt := kmsg.NewCreatePartitionsRequestTopic()
	rt.Topic, rt.Count = name, count
	req.Topics = append(req.Topics, rt)
	return req
}

func TestCreatePartitionsErrors(t *testing.T) {
	srv := newTestServer(t, nil)
	mustCreate(t, srv, "a", 2)
	if _, err := srv.Topics().CreateInternal(topic.TransactionTopic, 1, nil); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		count int32
		want  *kerr.Error
	}{
		{"a", 2, kerr.InvalidPartitions},
		{"a", 1, kerr.InvalidPartitions},
		{"missing", 3, kerr.UnknownTopicOrPartition},
		{topic.TransactionTopic, 5, kerr.InvalidRequest},
	} {
		st := adminRequest[*kmsg.CreatePartitionsResponse](t, srv, createPartitionsReq(0, tc.name, tc.count, false)).Topics[0]
		if st.ErrorCode != tc.want.Code {
			t.Fatalf("%s to %d: error %d, want %d", tc.name, tc.count, st.ErrorCode, tc.want.Code)
		}
	}
	// Duplicates are refused once.
	req := createPartitionsReq(3, "a", 4, false)
	req.Topics = append(req.Topics, req.Topics[0])
	resp := adminRequest[*kmsg.CreatePartitionsResponse](t, srv, req)
	if len(resp.Topics) != 1 || resp.Topics[0].ErrorCode != kerr.InvalidRequest.Code {
		t.Fatalf("duplicates: %+v", resp.Topics)
	}
	if got, _ := srv.Topics().Get("a"); got.Partitions != 2 {
		t.Fatalf("a has %d partitions", got.Partitions)
	}
}

func TestCreatePartitionsValidateOnly(t *testing.T) {
	srv := newTestServer(t, nil)
	mustCreate(t, srv, "a", 1)
	st := adminRequest[*kmsg.CreatePartitionsResponse](t, srv, createPartitionsReq(1, "a", 5, true)).Topics[0]
	if st.ErrorCode != 0 {
		t.Fatalf("error %d", st.ErrorCode)
	}
	if got, _ := srv.Topics().Get("a"); got.Partitions != 1 {
		t.Fatalf("validate-only changed the topic: %d partitions", got.Partitions)
	}
}

func TestCreatePartitionsManualAssignment(t *testing.T) {
	srv := newTestServer(t, nil)
	mustCreate(t, srv, "a", 1)
	grow := func(count int32, replicas ...[]int32) kmsg.CreatePartitionsResponseTopic {
		req := createPartitionsReq(3, "a", count, false)
		for _, rs := range replicas {
			a := kmsg.NewCreatePartitionsRequestTopicAssignment()
			a.Replicas = rs
			req.Topics[0].Assignment = append(req.Topics[0].Assignment, a)
		}
		return adminRequest[*kmsg.CreatePartitionsResponse](t, srv, req).Topics[0]
	}
	for _, tc := range []struct {
		count    int32
		replicas [][]int32
	}{
		{3, [][]int32{{0}}},    // one assignment for two partitions
		{2, [][]int32{{1}}},    // unknown broker
		{2, [][]int32{{0, 0}}}, // broker twice
		{2, [][]int32{{}}},     // no replica
	} {
		if st := grow(tc.count, tc.replicas...); st.ErrorCode != kerr.InvalidReplicaAssignment.Code || st.ErrorMessage == nil {
			t.Fatalf("%+v: error %d", tc, st.ErrorCode)
		}
	}
	if st := grow(3, []int32{0}, []int32{0}); st.ErrorCode != 0 {
		t.Fatalf("valid assignment: error %d %v", st.ErrorCode, st.ErrorMessage)
	}
	if got, _ := srv.Topics().Get("a"); got.Partitions != 3 {
		t.Fatalf("%d partitions", got.Partitions)
	}
}

func TestCreatePartitionsRoundTrip(t *testing.T) {
	srv := newTestServer(t, nil)
	mustCreate(t, srv, "a", 1)
	count := int32(1)
	checkRoundTrip(t, srv, func(v int16) kmsg.Request {
		count++
		req := createPartitionsReq(v, "a", count, false)
		req.Topics = append(req.Topics, createPartitionsReq(v, "missing", 2, false).Topics[0])
		return req
	})
}
