package broker

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/partition"
	"github.com/kbroker/kbroker/topic"
)

func TestDeleteTopicsWithKadm(t *testing.T) {
	srv := newTestServer(t, nil)
	adm := newAdmin(t, srv)
	ctx := testCtx(t)
	a := mustCreate(t, srv, "a", 2)
	mustCreate(t, srv, "b", 1)
	resps, err := adm.DeleteTopics(ctx, "a", "missing")
	if err != nil {
		t.Fatal(err)
	}
	if r := resps["a"]; r.Err != nil || [16]byte(r.ID) != a.ID {
		t.Fatalf("a: %+v", r)
	}
	if r := resps["missing"]; r.Err != kerr.UnknownTopicOrPartition {
		t.Fatalf("missing: %+v", r)
	}
	if _, ok := srv.Topics().Get("a"); ok {
		t.Fatal("a still exists")
	}
	if ps := srv.Store().Partitions(partition.TopicID(a.ID)); len(ps) != 0 {
		t.Fatalf("store still serves %d partitions of a", len(ps))
	}
	listed, err := adm.ListTopics(ctx)
	if err != nil || len(listed) != 1 || !listed.Has("b") {
		t.Fatalf("listed %v, %v", listed.Names(), err)
	}
}

// deleteByName is a DeleteTopics request in the v0–v5 form.
func deleteByName(version int16, names ...string) *kmsg.DeleteTopicsRequest {
	req := kmsg.NewPtrDeleteTopicsRequest()
	req.Version = version
	req.TimeoutMillis = 5000
	req.TopicNames = names
	return req
}

func TestDeleteTopicsV0(t *testing.T) {
	srv := newTestServer(t, nil)
	mustCreate(t, srv, "a", 1)
	resp := adminRequest[*kmsg.DeleteTopicsResponse](t, srv, deleteByName(0, "a", "missing"))
	if len(resp.Topics) != 2 || *resp.Topics[0].Topic != "a" || resp.Topics[0].ErrorCode != 0 ||
		*resp.Topics[1].Topic != "missing" || resp.Topics[1].ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("%+v", resp.Topics)
	}
}

// TestDeleteTopicsV6ByID deletes by id (KIP-516), and checks Kafka's
// refusals of malformed entries.
func TestDeleteTopicsV6ByID(t *testing.T) {
	srv := newTestServer(t, nil)
	a := mustCreate(t, srv, "a", 1)
	b := mustCreate(t, srv, "b", 1)
	c := mustCreate(t, srv, "c", 1)
	req := kmsg.NewPtrDeleteTopicsRequest()
	req.Version = 6
	add := func(name *string, id [16]byte) {
		rt := kmsg.NewDeleteTopicsRequestTopic()
		rt.Topic, rt.TopicID = name, id
		req.Topics = append(req.Topics, rt)
	}
	unknown := [16]byte{7}
	add(nil, a.ID)                       // by id
	add(kmsg.StringPtr("b"), [16]byte{}) // by name
	add(nil, unknown)                    // unknown id
	add(nil, [16]byte{})                 // neither
	add(kmsg.StringPtr("c"), c.ID)       // both
	add(kmsg.StringPtr("dup"), [16]byte{})
	add(kmsg.StringPtr("dup"), [16]byte{})
	resp := adminRequest[*kmsg.DeleteTopicsResponse](t, srv, req)
	want := []struct {
		name *string
		id   [16]byte
		code int16
	}{
		{kmsg.StringPtr("a"), a.ID, 0},
		{kmsg.StringPtr("b"), b.ID, 0},
		{nil, unknown, kerr.UnknownTopicID.Code},
		{nil, [16]byte{}, kerr.InvalidRequest.Code},
		{kmsg.StringPtr("c"), c.ID, kerr.InvalidRequest.Code},
		{kmsg.StringPtr("dup"), [16]byte{}, kerr.InvalidRequest.Code},
	}
	if len(resp.Topics) != len(want) {
		t.Fatalf("%d answers, want %d: %+v", len(resp.Topics), len(want), resp.Topics)
	}
	for i, w := range want {
		got := resp.Topics[i]
		if (got.Topic == nil) != (w.name == nil) || got.Topic != nil && *got.Topic != *w.name || got.TopicID != w.id || got.ErrorCode != w.code {
			t.Fatalf("answer %d: %+v, want %+v", i, got, w)
		}
	}
	if got := srv.Topics().List(); len(got) != 1 || got[0].Name != "c" {
		t.Fatalf("left %+v", got)
	}
}

// TestDeleteTopicsNameAndIDOfSameTopic: Kafka deletes neither and answers
// once.
func TestDeleteTopicsNameAndIDOfSameTopic(t *testing.T) {
	srv := newTestServer(t, nil)
	a := mustCreate(t, srv, "a", 1)
	req := kmsg.NewPtrDeleteTopicsRequest()
	req.Version = 6
	byID := kmsg.NewDeleteTopicsRequestTopic()
	byID.TopicID = a.ID
	byName := kmsg.NewDeleteTopicsRequestTopic()
	byName.Topic = kmsg.StringPtr("a")
	req.Topics = append(req.Topics, byID, byName)
	resp := adminRequest[*kmsg.DeleteTopicsResponse](t, srv, req)
	if len(resp.Topics) != 1 || resp.Topics[0].ErrorCode != kerr.InvalidRequest.Code || resp.Topics[0].TopicID != a.ID {
		t.Fatalf("%+v", resp.Topics)
	}
	if _, ok := srv.Topics().Get("a"); !ok {
		t.Fatal("deleted")
	}
}

func TestDeleteTopicsInternal(t *testing.T) {
	srv := newTestServer(t, nil)
	if _, err := srv.Topics().CreateInternal(topic.GroupMetadataTopic, 1, nil); err != nil {
		t.Fatal(err)
	}
	resp := adminRequest[*kmsg.DeleteTopicsResponse](t, srv, deleteByName(5, topic.GroupMetadataTopic))
	if st := resp.Topics[0]; st.ErrorCode != kerr.InvalidRequest.Code || st.ErrorMessage == nil {
		t.Fatalf("%+v", st)
	}
}

func TestDeleteTopicsRoundTrip(t *testing.T) {
	srv := newTestServer(t, nil)
	checkRoundTrip(t, srv, func(v int16) kmsg.Request {
		tp, ok := srv.Topics().Get("gone")
		if !ok {
			tp = mustCreate(t, srv, "gone", 2)
		}
		if v < 6 {
			return deleteByName(v, "gone", "missing", "x", "x")
		}
		req := kmsg.NewPtrDeleteTopicsRequest()
		for _, id := range [][16]byte{tp.ID, {3}} {
			rt := kmsg.NewDeleteTopicsRequestTopic()
			rt.TopicID = id
			req.Topics = append(req.Topics, rt)
		}
		rt := kmsg.NewDeleteTopicsRequestTopic()
		rt.Topic = kmsg.StringPtr("missing")
		req.Topics = append(req.Topics, rt)
		return req
	})
}
