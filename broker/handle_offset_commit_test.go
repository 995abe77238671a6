package broker

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap/zaptest"

	"github.com/kbroker/kbroker/topic"
)

// commitReq is an OffsetCommit of one partition by a simple consumer
// (generation -1, no member) unless gen and member say otherwise.
func commitReq(version int16, group, topicName string, id [16]byte, p int32, offset int64, gen int32, member string) *kmsg.OffsetCommitRequest {
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Version = version
	req.Group, req.Generation, req.MemberID = group, gen, member
	rt := kmsg.NewOffsetCommitRequestTopic()
	rt.Topic, rt.TopicID = topicName, id
	rp := kmsg.NewOffsetCommitRequestTopicPartition()
	rp.Partition, rp.Offset, rp.LeaderEpoch = p, offset, 4
	md := "meta"
	rp.Metadata = &md
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return req
}

func commitCode(t *testing.T, w *wireConn, req *kmsg.OffsetCommitRequest) int16 {
	t.Helper()
	resp := w.do(req).(*kmsg.OffsetCommitResponse)
	return resp.Topics[0].Partitions[0].ErrorCode
}

// fetchOne fetches one partition's committed offset at version v.
func fetchOne(t *testing.T, w *wireConn, v int16, group, topicName string, id [16]byte, p int32) kmsg.OffsetFetchResponseGroupTopicPartition {
	t.Helper()
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Version = v
	if v < 8 {
		req.Group = group
		req.Topics = []kmsg.OffsetFetchRequestTopic{{Topic: topicName, Partitions: []int32{p}}}
	} else {
		req.Groups = []kmsg.OffsetFetchRequestGroup{{Group: group, Topics: []kmsg.OffsetFetchRequestGroupTopic{{Topic: topicName, TopicID: id, Partitions: []int32{p}}}}}
	}
	resp := w.do(req).(*kmsg.OffsetFetchResponse)
	if v < 8 {
		if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
			t.Fatalf("OffsetFetch v%d: %+v", v, resp)
		}
		x := resp.Topics[0].Partitions[0]
		return kmsg.OffsetFetchResponseGroupTopicPartition{Partition: x.Partition, Offset: x.Offset, LeaderEpoch: x.LeaderEpoch, Metadata: x.Metadata, ErrorCode: x.ErrorCode}
	}
	if len(resp.Groups) != 1 || len(resp.Groups[0].Topics) != 1 || len(resp.Groups[0].Topics[0].Partitions) != 1 {
		t.Fatalf("OffsetFetch v%d: %+v", v, resp)
	}
	return resp.Groups[0].Topics[0].Partitions[0]
}

func createTopic(t *testing.T, srv *InProcess, name string, parts int32) topic.Topic {
	t.Helper()
	tp, err := srv.Topics().Create(name, parts, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	return tp
}

// TestOffsetCommitFetchVersions commits at several versions and reads back
// at several, by name and (v10) by topic id, across a restart.
func TestOffsetCommitFetchVersions(t *testing.T) {
	dir := t.TempDir()
	srv, err := StartInProcess(dir, nil, WithLogger(zaptest.NewLogger(t)))
	if err != nil {
		t.Fatal(err)
	}
	tp := createTopic(t, srv, "t", 3)
	w := dialWire(t, srv)
	for i, v := range []int16{0, 2, 6, 9, 10} {
		if code := commitCode(t, w, commitReq(v, "g", "t", tp.ID, int32(i%3), int64(100+i), -1, "")); code != 0 {
			t.Fatalf("commit v%d: %v", v, kerr.ErrorForCode(code))
		}
	}
	check := func(w *wireConn) {
		// The last commit of partition 0 was v9 (i=3), of 1 v10 (i=4).
		for _, v := range []int16{1, 5, 8, 10} {
			got := fetchOne(t, w, v, "g", "t", tp.ID, 1)
			wantEpoch := int32(4)
			if v < 5 {
				wantEpoch = -1
			}
			if got.ErrorCode != 0 || got.Offset != 104 || got.LeaderEpoch != wantEpoch || got.Metadata == nil || *got.Metadata != "meta" {
				t.Fatalf("fetch v%d: %+v", v, got)
			}
			if got := fetchOne(t, w, v, "g", "t", tp.ID, 0); got.Offset != 103 {
				t.Fatalf("fetch v%d p0: %+v", v, got)
			}
			if got := fetchOne(t, w, v, "other", "t", tp.ID, 0); got.Offset != -1 || got.ErrorCode != 0 {
				t.Fatalf("fetch v%d of a group without offsets: %+v", v, got)
			}
		}
	}
	check(w)
	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}
	srv = newTestServerIn(t, dir)
	check(dialWire(t, srv))
	groups, err := newAdmin(t, srv).ListGroups(testCtx(t))
	if _, ok := groups["g"]; err != nil || !ok {
		t.Fatalf("ListGroups after restart: %v %v", groups, err)
	}
}

// newTestServerIn starts a broker on an existing data directory.
func newTestServerIn(t *testing.T, dir string) *InProcess {
	t.Helper()
	srv, err := StartInProcess(dir, nil, WithLogger(zaptest.NewLogger(t)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	return srv
}

func TestOffsetCommitErrors(t *testing.T) {
	srv := newTestServer(t, nil)
	tp := createTopic(t, srv, "t", 1)
	w := dialWire(t, srv)
	long := kmsg.NewPtrOffsetCommitRequest()
	*long = *commitReq(8, "g", "t", tp.ID, 0, 1, -1, "")
	md := strings.Repeat("x", 4097)
	long.Topics[0].Partitions[0].Metadata = &md
	cases := []struct {
		name string
		req  *kmsg.OffsetCommitRequest
		want *kerr.Error
	}{
		{"unknown topic", commitReq(8, "g", "nope", [16]byte{}, 0, 1, -1, ""), kerr.UnknownTopicOrPartition},
		{"unknown partition", commitReq(8, "g", "t", [16]byte{}, 5, 1, -1, ""), kerr.UnknownTopicOrPartition},
		{"unknown topic id", commitReq(10, "g", "", [16]byte{9}, 0, 1, -1, ""), kerr.UnknownTopicID},
		{"metadata too large", long, kerr.OffsetMetadataTooLarge},
		{"member of a missing group v8", commitReq(8, "missing", "t", tp.ID, 0, 1, 3, "m"), kerr.IllegalGeneration},
		{"member of a missing group v9", commitReq(9, "missing", "t", tp.ID, 0, 1, 3, "m"), kerr.GroupIDNotFound},
		{"simple consumer", commitReq(8, "g", "t", tp.ID, 0, 1, -1, ""), nil},
		{"unknown member of an existing group", commitReq(8, "g", "t", tp.ID, 0, 1, 1, "m"), kerr.UnknownMemberID},
	}
	for _, c := range cases {
		got := commitCode(t, w, c.req)
		want := int16(0)
		if c.want != nil {
			want = c.want.Code
		}
		if got != want {
			t.Errorf("%s: got %v, want %v", c.name, kerr.ErrorForCode(got), c.want)
		}
	}
	if got := fetchOne(t, w, 8, "g", "t", tp.ID, 0); got.Offset != 1 {
		t.Fatalf("a refused commit changed the offset: %+v", got)
	}
}

// TestOffsetDeleteAndDeleteGroups checks kadm's view of offset and group
// deletion and that both survive a restart.
func TestOffsetDeleteAndDeleteGroups(t *testing.T) {
	dir := t.TempDir()
	srv := newTestServerIn(t, dir)
	createTopic(t, srv, "t", 2)
	adm := kadm.NewClient(newClient(t, srv))
	ctx := testCtx(t)
	offs := kadm.Offsets{}
	offs.Add(kadm.Offset{Topic: "t", Partition: 0, At: 10, LeaderEpoch: -1})
	offs.Add(kadm.Offset{Topic: "t", Partition: 1, At: 20, LeaderEpoch: -1})
	for _, g := range []string{"a", "b"} {
		if err := adm.CommitAllOffsets(ctx, g, offs); err != nil {
			t.Fatal(err)
		}
	}
	dr, err := adm.DeleteOffsets(ctx, "a", kadm.TopicsSet{"t": {0: {}}})
	if err != nil || dr.Error() != nil {
		t.Fatalf("DeleteOffsets: %v %v", err, dr.Error())
	}
	if dr, err := adm.DeleteOffsets(ctx, "missing", kadm.TopicsSet{"t": {0: {}}}); err == nil && dr.Error() == nil {
		t.Fatal("DeleteOffsets of a missing group passed")
	}
	gr, err := adm.DeleteGroups(ctx, "b", "missing")
	if err != nil {
		t.Fatal(err)
	}
	if gr["b"].Err != nil || gr["missing"].Err == nil {
		t.Fatalf("DeleteGroups: %+v", gr)
	}
	check := func(adm *kadm.Client) {
		t.Helper()
		fa, err := adm.FetchOffsets(testCtx(t), "a")
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := fa.Lookup("t", 0); ok {
			t.Error("a/t/0 not deleted")
		}
		if o, ok := fa.Lookup("t", 1); !ok || o.At != 20 {
			t.Errorf("a/t/1: %+v %t", o, ok)
		}
		fb, err := adm.FetchOffsets(testCtx(t), "b")
		if err != nil || len(fb.Offsets()) != 0 {
			t.Errorf("b after DeleteGroups: %v %v", fb, err)
		}
		ls, err := adm.ListGroups(testCtx(t))
		_, hasA := ls["a"]
		_, hasB := ls["b"]
		if err != nil || hasB || !hasA {
			t.Errorf("ListGroups: %v %v", ls.Groups(), err)
		}
	}
	check(adm)
	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}
	check(kadm.NewClient(newClient(t, newTestServerIn(t, dir))))
}

// TestConsumerOffsetsTopic checks that __consumer_offsets appears when a
// group first needs it, as in Kafka, is listed as internal, and that
// clients cannot produce to it.
func TestConsumerOffsetsTopic(t *testing.T) {
	srv := newTestServer(t, nil)
	adm := newAdmin(t, srv)
	md, err := adm.Metadata(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := md.Topics[topic.GroupMetadataTopic]; ok {
		t.Fatalf("%s exists before any group", topic.GroupMetadataTopic)
	}
	createTopic(t, srv, "t", 1)
	offs := kadm.Offsets{}
	offs.Add(kadm.Offset{Topic: "t", Partition: 0, At: 1, LeaderEpoch: -1})
	if err := adm.CommitAllOffsets(testCtx(t), "g", offs); err != nil {
		t.Fatal(err)
	}
	// A new client: kadm answers from recently cached metadata.
	if md, err = newAdmin(t, srv).Metadata(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	d, ok := md.Topics[topic.GroupMetadataTopic]
	if !ok || !d.IsInternal {
		t.Fatalf("%s in metadata: %+v %t", topic.GroupMetadataTopic, d, ok)
	}
	cl := newClient(t, srv)
	err = cl.ProduceSync(testCtx(t), &kgo.Record{Topic: topic.GroupMetadataTopic, Value: []byte("x")}).FirstErr()
	if err == nil {
		t.Fatal("produce to __consumer_offsets passed")
	}
}

// TestConsumerGroupResumes runs a kgo group consumer that commits, then a
// second one after a restart, which must start after the commits.
func TestConsumerGroupResumes(t *testing.T) {
	dir := t.TempDir()
	srv := newTestServerIn(t, dir)
	createTopic(t, srv, "t", 3)
	pr := newClient(t, srv, kgo.DefaultProduceTopic("t"))
	for i := range 300 {
		if err := pr.ProduceSync(testCtx(t), &kgo.Record{Partition: int32(i % 3), Value: []byte{byte(i)}}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	// consume polls the group for n records, for at most wait: generous
	// where the records are there (the loop ends as soon as it has them),
	// a few seconds where none should come.
	consume := func(srv *InProcess, n int, wait time.Duration) int {
		t.Helper()
		cl := newClient(t, srv, kgo.ConsumerGroup("cg"), kgo.ConsumeTopics("t"),
			kgo.DisableAutoCommit(), kgo.SessionTimeout(6*time.Second), kgo.HeartbeatInterval(500*time.Millisecond),
			kgo.FetchMaxWait(200*time.Millisecond))
		defer cl.Close()
		ctx, cancel := context.WithTimeout(testCtx(t), wait)
		defer cancel()
		got := 0
		for got < n {
			fs := cl.PollRecords(ctx, n-got)
			if ctx.Err() != nil {
				break
			}
			if err := fs.Err0(); err != nil {
				t.Fatal(err)
			}
			recs := fs.Records()
			got += len(recs)
			if err := cl.CommitRecords(testCtx(t), recs...); err != nil {
				t.Fatal(err)
			}
		}
		return got
	}
	if got := consume(srv, 200, 20*time.Second); got != 200 {
		t.Fatalf("first consumer got %d", got)
	}
	pr.Close()
	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}
	srv = newTestServerIn(t, dir)
	if got := consume(srv, 100, 20*time.Second); got != 100 {
		t.Fatalf("after the restart the group got %d, want the 100 left", got)
	}
	if got := consume(srv, 1, 5*time.Second); got != 0 {
		t.Fatalf("the group got %d more", got)
	}
}
