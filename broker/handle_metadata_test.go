package broker

import (
	"bytes"
	"encoding/binary"
	"net"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap/zaptest"

	"github.com/kbroker/kbroker/protocol"
	"github.com/kbroker/kbroker/topic"
)

// adminRequest sends req at exactly req's version over a new connection
// and decodes the response. kgo always negotiates the newest version, so
// version-specific tests go through here.
func adminRequest[R kmsg.Response](t *testing.T, srv *InProcess, req kmsg.Request) R {
	t.Helper()
	nc, err := net.DialTimeout("tcp", srv.Addr(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(10 * time.Second))
	frame := kmsg.NewRequestFormatter(kmsg.FormatterClientID("admin-test")).AppendRequest(nil, req, 42)
	if _, err := nc.Write(frame); err != nil {
		t.Fatal(err)
	}
	n, err := protocol.ReadSize(nc, 64<<20)
	if err != nil {
		t.Fatalf("%s v%d: read response size: %v", kmsg.NameForKey(req.Key()), req.GetVersion(), err)
	}
	body, err := protocol.ReadBody(nc, n, nil)
	if err != nil {
		t.Fatal(err)
	}
	if corr := int32(binary.BigEndian.Uint32(body)); corr != 42 {
		t.Fatalf("correlation id %d", corr)
	}
	body = body[4:]
	resp := req.ResponseKind()
	if resp.IsFlexible() {
		if len(body) == 0 || body[0] != 0 {
			t.Fatalf("unexpected response header tags % x", body[:min(len(body), 4)])
		}
		body = body[1:]
	}
	if err := resp.ReadFrom(body); err != nil {
		t.Fatalf("%s v%d: decode response: %v", kmsg.NameForKey(req.Key()), req.GetVersion(), err)
	}
	r, ok := resp.(R)
	if !ok {
		t.Fatalf("response of type %T", resp)
	}
	return r
}

// testConn is a connection value for calling handlers directly.
func testConn(t *testing.T, srv *InProcess) *conn {
	return &conn{b: srv.Broker, l: srv.listeners[0], lg: zaptest.NewLogger(t), principal: anonymous}
}

// checkRoundTrip calls the handler of req's key at every version it serves
// and checks that each response re-encodes byte for byte after decoding:
// nothing the handler set is lost or changed by the wire format.
func checkRoundTrip(t *testing.T, srv *InProcess, newReq func(version int16) kmsg.Request) {
	t.Helper()
	c := testConn(t, srv)
	key := newReq(0).Key()
	var a *api
	for i := range srv.apis {
		if srv.apis[i].key == key {
			a = &srv.apis[i]
		}
	}
	if a == nil {
		t.Fatalf("key %d not served", key)
	}
	for v := a.min; v <= a.max; v++ {
		req := newReq(v)
		req.SetVersion(v)
		res, err := a.handle(srv.Broker, c, req)
		if err != nil {
			t.Fatalf("%s v%d: %v", kmsg.NameForKey(key), v, err)
		}
		if res.ready != nil {
			<-res.ready
		}
		first := res.resp.AppendTo(nil)
		again := req.ResponseKind()
		if err := again.ReadFrom(first); err != nil {
			t.Fatalf("%s v%d: decode: %v", kmsg.NameForKey(key), v, err)
		}
		if second := again.AppendTo(nil); !bytes.Equal(first, second) {
			t.Fatalf("%s v%d: re-encoding differs:\n% x\n% x", kmsg.NameForKey(key), v, first, second)
		}
	}
}

// metadataAt asks for topics (nil: all) at version v.
func metadataAt(t *testing.T, srv *InProcess, v int16, allowAuto bool, topics ...string) *kmsg.MetadataResponse {
	t.Helper()
	req := kmsg.NewPtrMetadataRequest()
	req.Version = v
	req.AllowAutoTopicCreation = allowAuto
	if topics != nil {
		req.Topics = []kmsg.MetadataRequestTopic{}
	}
	for _, name := range topics {
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(name)
		req.Topics = append(req.Topics, rt)
	}
	return adminRequest[*kmsg.MetadataResponse](t, srv, req)
}

// mustCreate creates a topic through the registry.
func mustCreate(t *testing.T, srv *InProcess, name string, partitions int32) topic.Topic {
	t.Helper()
	tp, err := srv.Topics().Create(name, partitions, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	return tp
}

func topicNames(ts []kmsg.MetadataResponseTopic) []string {
	var out []string
	for _, mt := range ts {
		if mt.Topic != nil {
			out = append(out, *mt.Topic)
		}
	}
	return out
}

// checkMetadataTopic checks a healthy topic as one broker serves it.
func checkMetadataTopic(t *testing.T, srv *InProcess, mt kmsg.MetadataResponseTopic, want topic.Topic, version int16) {
	t.Helper()
	if mt.ErrorCode != 0 || mt.Topic == nil || *mt.Topic != want.Name {
		t.Fatalf("topic %v: error %d", mt.Topic, mt.ErrorCode)
	}
	if version >= 10 && mt.TopicID != want.ID {
		t.Fatalf("topic id %x, want %x", mt.TopicID, want.ID)
	}
	if len(mt.Partitions) != int(want.Partitions) {
		t.Fatalf("%d partitions, want %d", len(mt.Partitions), want.Partitions)
	}
	node := srv.Config().NodeID
	for i, p := range mt.Partitions {
		if p.ErrorCode != 0 || p.Partition != int32(i) || p.Leader != node ||
			!slices.Equal(p.Replicas, []int32{node}) || !slices.Equal(p.ISR, []int32{node}) {
			t.Fatalf("partition %d: %+v", i, p)
		}
		if version >= 7 && p.LeaderEpoch != 0 {
			t.Fatalf("leader epoch %d", p.LeaderEpoch)
		}
	}
}

func TestMetadataWithKadm(t *testing.T) {
	srv := newTestServer(t, nil)
	adm := newAdmin(t, srv)
	ctx := testCtx(t)
	if _, err := adm.CreateTopic(ctx, 3, 1, nil, "orders"); err != nil {
		t.Fatal(err)
	}
	md, err := adm.Metadata(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if md.Cluster != srv.Config().ClusterID || md.Controller != srv.Config().NodeID {
		t.Fatalf("cluster %q controller %d", md.Cluster, md.Controller)
	}
	if len(md.Brokers) != 1 || md.Brokers[0].Host != srv.listeners[0].advHost || md.Brokers[0].Port != srv.listeners[0].advPort || md.Brokers[0].Rack != nil {
		t.Fatalf("brokers %+v", md.Brokers)
	}
	td, ok := md.Topics["orders"]
	if !ok || td.Err != nil || len(td.Partitions) != 3 || td.IsInternal {
		t.Fatalf("orders: %+v", td)
	}
	want, _ := srv.Topics().Get("orders")
	if [16]byte(td.ID) != want.ID {
		t.Fatalf("id %v, want %v", td.ID, want.ID)
	}
	for _, p := range td.Partitions {
		if p.Leader != 0 || p.LeaderEpoch != 0 || !slices.Equal(p.Replicas, []int32{0}) || !slices.Equal(p.ISR, []int32{0}) || len(p.OfflineReplicas) != 0 {
			t.Fatalf("partition %+v", p)
		}
	}
	listed, err := adm.ListTopics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if names := listed.Names(); !slices.Equal(names, []string{"orders"}) {
		t.Fatalf("listed %v", names)
	}
}

// TestMetadataV0 is kafka-python's Metadata: an empty list means all
// topics, and a named unknown topic is always auto-created.
func TestMetadataV0(t *testing.T) {
	srv := newTestServer(t, nil)
	a := mustCreate(t, srv, "a", 2)
	b := mustCreate(t, srv, "b", 1)
	resp := metadataAt(t, srv, 0, false, []string{}...)
	if got := topicNames(resp.Topics); !slices.Equal(got, []string{"a", "b"}) {
		t.Fatalf("all topics: %v", got)
	}
	checkMetadataTopic(t, srv, resp.Topics[0], a, 0)
	checkMetadataTopic(t, srv, resp.Topics[1], b, 0)
	if len(resp.Brokers) != 1 || resp.Brokers[0].NodeID != 0 || resp.Brokers[0].Port != srv.listeners[0].advPort {
		t.Fatalf("brokers %+v", resp.Brokers)
	}

	resp = metadataAt(t, srv, 0, false, "fresh")
	created, ok := srv.Topics().Get("fresh")
	if !ok || created.Partitions != srv.Config().DefaultPartitions {
		t.Fatalf("fresh not auto-created: %+v", created)
	}
	checkMetadataTopic(t, srv, resp.Topics[0], created, 0)
}

// TestMetadataV1 is kafka-go's: null asks for all topics, an empty list
// for none; the controller and is_internal appear.
func TestMetadataV1(t *testing.T) {
	srv := newTestServer(t, nil)
	a := mustCreate(t, srv, "a", 2)
	if _, err := srv.Topics().CreateInternal(topic.GroupMetadataTopic, 3, nil); err != nil {
		t.Fatal(err)
	}
	resp := metadataAt(t, srv, 1, false)
	if got := topicNames(resp.Topics); !slices.Equal(got, []string{topic.GroupMetadataTopic, "a"}) {
		t.Fatalf("null topics: %v", got)
	}
	if !resp.Topics[0].IsInternal || resp.Topics[1].IsInternal {
		t.Fatal("is_internal wrong")
	}
	checkMetadataTopic(t, srv, resp.Topics[1], a, 1)
	if resp.ControllerID != 0 {
		t.Fatalf("controller %d", resp.ControllerID)
	}
	if resp = metadataAt(t, srv, 1, false, []string{}...); len(resp.Topics) != 0 {
		t.Fatalf("empty list answered with %v", topicNames(resp.Topics))
	}
}

// TestMetadataV4AutoCreate is kcat's Metadata (librdkafka 2.0): v4 carries
// allow_auto_topic_creation.
func TestMetadataV4AutoCreate(t *testing.T) {
	srv := newTestServer(t, nil)
	resp := metadataAt(t, srv, 4, false, "nope")
	if resp.Topics[0].ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("not allowed: error %d", resp.Topics[0].ErrorCode)
	}
	if _, ok := srv.Topics().Get("nope"); ok {
		t.Fatal("created although not allowed")
	}
	resp = metadataAt(t, srv, 4, true, "yes")
	got, ok := srv.Topics().Get("yes")
	if !ok {
		t.Fatal("not auto-created")
	}
	checkMetadataTopic(t, srv, resp.Topics[0], got, 4)
	if *resp.ClusterID != srv.Config().ClusterID {
		t.Fatalf("cluster id %q", *resp.ClusterID)
	}
}

func TestMetadataAutoCreateDisabled(t *testing.T) {
	srv := newTestServer(t, func(c *Config) { c.AutoCreateTopics = false })
	for _, v := range []int16{0, 4, 13} {
		resp := metadataAt(t, srv, v, true, "nope")
		if len(resp.Topics) != 1 || resp.Topics[0].ErrorCode != kerr.UnknownTopicOrPartition.Code {
			t.Fatalf("v%d: %+v", v, resp.Topics)
		}
	}
	if _, ok := srv.Topics().Get("nope"); ok {
		t.Fatal("auto-created although disabled")
	}
}

func TestMetadataInvalidTopicName(t *testing.T) {
	srv := newTestServer(t, nil)
	for _, allow := range []bool{false, true} {
		resp := metadataAt(t, srv, 9, allow, "bad name!", "ok")
		if resp.Topics[0].ErrorCode != kerr.InvalidTopicException.Code {
			t.Fatalf("allow=%v: error %d", allow, resp.Topics[0].ErrorCode)
		}
	}
	// An internal topic is never auto-created by a client's Metadata.
	resp := metadataAt(t, srv, 9, true, topic.GroupMetadataTopic)
	if resp.Topics[0].ErrorCode != kerr.UnknownTopicOrPartition.Code || !resp.Topics[0].IsInternal {
		t.Fatalf("internal: %+v", resp.Topics[0])
	}
}

// TestMetadataV12ByTopicID asks for topics by id (KIP-516).
func TestMetadataV12ByTopicID(t *testing.T) {
	srv := newTestServer(t, nil)
	a := mustCreate(t, srv, "a", 2)
	unknown := [16]byte{9, 9, 9}
	req := kmsg.NewPtrMetadataRequest()
	req.Version = 12
	for _, id := range [][16]byte{a.ID, unknown, a.ID} {
		rt := kmsg.NewMetadataRequestTopic()
		rt.TopicID = id
		req.Topics = append(req.Topics, rt)
	}
	resp := adminRequest[*kmsg.MetadataResponse](t, srv, req)
	if len(resp.Topics) != 2 {
		t.Fatalf("%d topics, want 2 (deduplicated)", len(resp.Topics))
	}
	checkMetadataTopic(t, srv, resp.Topics[0], a, 12)
	if u := resp.Topics[1]; u.ErrorCode != kerr.UnknownTopicID.Code || u.Topic != nil || u.TopicID != unknown {
		t.Fatalf("unknown id: %+v", u)
	}

	// Before v12 a topic id in the request is refused.
	req.Version = 11
	req.Topics = req.Topics[:1]
	req.Topics[0].Topic = kmsg.StringPtr("a")
	resp = adminRequest[*kmsg.MetadataResponse](t, srv, req)
	if resp.Topics[0].ErrorCode != kerr.InvalidRequest.Code {
		t.Fatalf("v11 by id: error %d", resp.Topics[0].ErrorCode)
	}
}

// TestMetadataAuthorizedOperations: without an authorizer Kafka reports
// every operation when asked, and the schema default when not.
func TestMetadataAuthorizedOperations(t *testing.T) {
	srv := newTestServer(t, nil)
	mustCreate(t, srv, "a", 1)
	req := kmsg.NewPtrMetadataRequest()
	req.Version = 10
	req.IncludeClusterAuthorizedOperations = true
	req.IncludeTopicAuthorizedOperations = true
	resp := adminRequest[*kmsg.MetadataResponse](t, srv, req)
	if resp.AuthorizedOperations != clusterAuthorizedOps || resp.Topics[0].AuthorizedOperations != topicAuthorizedOps {
		t.Fatalf("ops %b %b", resp.AuthorizedOperations, resp.Topics[0].AuthorizedOperations)
	}
	req.IncludeClusterAuthorizedOperations = false
	req.IncludeTopicAuthorizedOperations = false
	resp = adminRequest[*kmsg.MetadataResponse](t, srv, req)
	if resp.AuthorizedOperations != -2147483648 || resp.Topics[0].AuthorizedOperations != -2147483648 {
		t.Fatalf("ops %d %d", resp.AuthorizedOperations, resp.Topics[0].AuthorizedOperations)
	}
}

func TestMetadataDuplicateTopics(t *testing.T) {
	srv := newTestServer(t, nil)
	mustCreate(t, srv, "a", 1)
	resp := metadataAt(t, srv, 13, false, "a", "x", "a", "x")
	if got := topicNames(resp.Topics); !slices.Equal(got, []string{"a", "x"}) {
		t.Fatalf("topics %v", got)
	}
}

// TestMetadataConcurrentAutoCreate: clients racing to auto-create the same
// topic all get it, and it is created once.
func TestMetadataConcurrentAutoCreate(t *testing.T) {
	srv := newTestServer(t, nil)
	c := testConn(t, srv)
	errs := make(chan error, 8)
	for range 8 {
		go func() {
			req := kmsg.NewPtrMetadataRequest()
			req.Version = 12
			req.AllowAutoTopicCreation = true
			rt := kmsg.NewMetadataRequestTopic()
			rt.Topic = kmsg.StringPtr("raced")
			req.Topics = append(req.Topics, rt)
			res, _ := srv.handleMetadata(c, req)
			resp := res.resp.(*kmsg.MetadataResponse)
			if code := resp.Topics[0].ErrorCode; code != 0 {
				errs <- kerr.ErrorForCode(code)
				return
			}
			errs <- nil
		}()
	}
	for range 8 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if got := len(srv.Topics().List()); got != 1 {
		t.Fatalf("%d topics", got)
	}
}

func TestMetadataRoundTrip(t *testing.T) {
	srv := newTestServer(t, nil)
	mustCreate(t, srv, "a", 3)
	if _, err := srv.Topics().CreateInternal(topic.TransactionTopic, 2, nil); err != nil {
		t.Fatal(err)
	}
	checkRoundTrip(t, srv, func(v int16) kmsg.Request {
		req := kmsg.NewPtrMetadataRequest()
		req.IncludeTopicAuthorizedOperations = true
		for _, name := range []string{"a", "bad name", "auto"} {
			rt := kmsg.NewMetadataRequestTopic()
			rt.Topic = kmsg.StringPtr(name)
			req.Topics = append(req.Topics, rt)
		}
		if v >= 12 {
			rt := kmsg.NewMetadataRequestTopic()
			rt.TopicID = [16]byte{1}
			req.Topics = append(req.Topics, rt)
		}
		return req
	})
	checkRoundTrip(t, srv, func(int16) kmsg.Request { return kmsg.NewPtrMetadataRequest() })
}
