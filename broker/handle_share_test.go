package broker

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// shareMember is a share-group member speaking the wire protocol, so a
// test decides exactly when it fetches, acknowledges or goes silent.
type shareMember struct {
	t            *testing.T
	w            *wireConn
	group, id    string
	epoch        int32
	sessionEpoch int32
	topicID      [16]byte
	partitions   []int32
}

func joinShare(t *testing.T, srv *InProcess, group, id, topicName string) *shareMember {
	t.Helper()
	tp, ok := srv.Topics().Get(topicName)
	if !ok {
		t.Fatalf("no topic %s", topicName)
	}
	m := &shareMember{t: t, w: dialWire(t, srv), group: group, id: id, topicID: tp.ID}
	req := kmsg.NewPtrShareGroupHeartbeatRequest()
	req.Version = 1
	req.GroupID, req.MemberID, req.SubscribedTopicNames = group, id, []string{topicName}
	resp := m.w.do(req).(*kmsg.ShareGroupHeartbeatResponse)
	if resp.ErrorCode != 0 {
		t.Fatalf("%s joins %s: %v %v", id, group, kerr.ErrorForCode(resp.ErrorCode), resp.ErrorMessage)
	}
	m.epoch = resp.MemberEpoch
	m.setAssignment(resp.Assignment)
	return m
}

func (m *shareMember) setAssignment(a *kmsg.ShareGroupHeartbeatResponseAssignment) {
	if a == nil {
		return
	}
	m.partitions = nil
	for _, tp := range a.TopicPartitions {
		m.partitions = append(m.partitions, tp.Partitions...)
	}
}

// heartbeat sends a regular heartbeat and returns its error code.
func (m *shareMember) heartbeat() int16 {
	req := kmsg.NewPtrShareGroupHeartbeatRequest()
	req.Version = 1
	req.GroupID, req.MemberID, req.MemberEpoch = m.group, m.id, m.epoch
	resp := m.w.do(req).(*kmsg.ShareGroupHeartbeatResponse)
	if resp.ErrorCode == 0 {
		m.epoch = resp.MemberEpoch
		m.setAssignment(resp.Assignment)
	}
	return resp.ErrorCode
}

// fetch sends a ShareFetch of the member's partitions with acks and
// returns the response; the session epoch moves on when it succeeds.
func (m *shareMember) fetch(wait time.Duration, acks map[int32][]kmsg.ShareFetchRequestTopicPartitionAcknowledgementBatch) *kmsg.ShareFetchResponse {
	m.t.Helper()
	req := kmsg.NewPtrShareFetchRequest()
	req.Version = 2
	req.GroupID, req.MemberID, req.ShareSessionEpoch = &m.group, &m.id, m.sessionEpoch
	req.MaxWaitMillis, req.MinBytes, req.MaxBytes, req.MaxRecords, req.BatchSize = int32(wait.Milliseconds()), 1, 1<<20, 500, 500
	t := kmsg.NewShareFetchRequestTopic()
	t.TopicID = m.topicID
	for _, p := range m.partitions {
		rp := kmsg.NewShareFetchRequestTopicPartition()
		rp.Partition, rp.PartitionMaxBytes, rp.AcknowledgementBatches = p, 1<<20, acks[p]
		t.Partitions = append(t.Partitions, rp)
	}
	req.Topics = []kmsg.ShareFetchRequestTopic{t}
	resp := m.w.do(req).(*kmsg.ShareFetchResponse)
	if resp.ErrorCode == 0 {
		m.sessionEpoch++
	}
	return resp
}

// acquired lists the acquired offset runs of a response, by partition.
func acquired(resp *kmsg.ShareFetchResponse) map[int32][]kmsg.ShareFetchResponseTopicPartitionAcquiredRecord {
	out := map[int32][]kmsg.ShareFetchResponseTopicPartitionAcquiredRecord{}
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			out[p.Partition] = append(out[p.Partition], p.AcquiredRecords...)
		}
	}
	return out
}

func ackBatch(first, last int64, typ int8) []kmsg.ShareFetchRequestTopicPartitionAcknowledgementBatch {
	return []kmsg.ShareFetchRequestTopicPartitionAcknowledgementBatch{{FirstOffset: first, LastOffset: last, AcknowledgeTypes: []int8{typ}}}
}

// setShareGroupConfig sets one share group config.
func setShareGroupConfig(t *testing.T, srv *InProcess, group, name, value string) {
	t.Helper()
	res := adminRequest[*kmsg.IncrementalAlterConfigsResponse](t, srv, groupConfigsReq(false, group,
		incOp(name, kmsg.IncrementalAlterConfigOpSet, kmsg.StringPtr(value)))).Resources[0]
	if res.ErrorCode != 0 {
		t.Fatalf("set %s=%s: %v", name, value, res.ErrorMessage)
	}
}

// TestShareLockExpiryRedelivers has a member acquire records and go
// silent with its connection open (a hung consumer): after the
// acquisition lock expires the records go to another member with delivery
// count 2, the silent member can no longer acknowledge them, and once the
// delivery count limit is reached they are archived.
func TestShareLockExpiryRedelivers(t *testing.T) {
	srv := newTestServer(t, func(c *Config) {
		// 2 s, not less: b holds the records under this lock too, and
		// must still hold them when it acknowledges, two round trips
		// later, on a loaded machine under -race.
		c.GroupShareRecordLockDuration = 2 * time.Second
		c.GroupShareDeliveryCountLimit = 2
	})
	createTopic(t, srv, "q", 1)
	setShareGroupConfig(t, srv, "sg", shareAutoOffsetResetConfig, "earliest")
	produceN(t, newClient(t, srv), "q", 10)

	a := joinShare(t, srv, "sg", "a", "q")
	got := acquired(a.fetch(time.Second, nil))
	if len(got[0]) != 1 || got[0][0].FirstOffset != 0 || got[0][0].LastOffset != 9 || got[0][0].DeliveryCount != 1 {
		t.Fatalf("a acquired %+v, want 0-9 at delivery 1", got)
	}
	b := joinShare(t, srv, "sg", "b", "q")
	b.partitions = []int32{0} // both read the one partition
	var redelivered []kmsg.ShareFetchResponseTopicPartitionAcquiredRecord
	deadline := time.Now().Add(10 * time.Second)
	for len(redelivered) == 0 && time.Now().Before(deadline) {
		redelivered = acquired(b.fetch(500*time.Millisecond, nil))[0]
	}
	if len(redelivered) != 1 || redelivered[0].FirstOffset != 0 || redelivered[0].LastOffset != 9 || redelivered[0].DeliveryCount != 2 {
		t.Fatalf("b acquired %+v, want 0-9 at delivery 2", redelivered)
	}
	resp := a.fetch(0, map[int32][]kmsg.ShareFetchRequestTopicPartitionAcknowledgementBatch{0: ackBatch(0, 9, 1)})
	if code := resp.Topics[0].Partitions[0].AcknowledgeErrorCode; code != kerr.InvalidRecordState.Code {
		t.Fatalf("a acknowledges records it lost: %v, want INVALID_RECORD_STATE", kerr.ErrorForCode(code))
	}
	// b releases 0-4 and accepts 5-9: at the limit the released records are
	// archived, so nothing is left to deliver and the start offset is 10.
	resp = b.fetch(0, map[int32][]kmsg.ShareFetchRequestTopicPartitionAcknowledgementBatch{0: {
		{FirstOffset: 0, LastOffset: 4, AcknowledgeTypes: []int8{2}}, {FirstOffset: 5, LastOffset: 9, AcknowledgeTypes: []int8{1}}}})
	if code := resp.Topics[0].Partitions[0].AcknowledgeErrorCode; code != 0 {
		t.Fatalf("b acknowledges: %v", kerr.ErrorForCode(code))
	}
	if start := shareStartOffset(t, srv, "sg", "q", 0); start != 10 {
		t.Fatalf("start offset %d, want 10 (released at the delivery limit: archived)", start)
	}
}

// shareStartOffset asks DescribeShareGroupOffsets for one partition.
func shareStartOffset(t *testing.T, srv *InProcess, group, topicName string, p int32) int64 {
	t.Helper()
	req := kmsg.NewPtrDescribeShareGroupOffsetsRequest()
	req.Version = 1
	req.Groups = []kmsg.DescribeShareGroupOffsetsRequestGroup{{GroupID: group, Topics: []kmsg.DescribeShareGroupOffsetsRequestGroupTopic{{Topic: topicName, Partitions: []int32{p}}}}}
	resp := adminRequest[*kmsg.DescribeShareGroupOffsetsResponse](t, srv, req)
	g := resp.Groups[0]
	if g.ErrorCode != 0 || len(g.Topics) != 1 || len(g.Topics[0].Partitions) != 1 || g.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("describe share offsets: %+v", g)
	}
	return g.Topics[0].Partitions[0].StartOffset
}

// TestShareStateSurvivesCrash acknowledges part of a partition, stops the
// broker as a kill -9 would, and checks that after recovery the
// acknowledged records are not delivered again while the others are, with
// their delivery counts kept.
func TestShareStateSurvivesCrash(t *testing.T) {
	srv := newTestServer(t, nil)
	createTopic(t, srv, "q", 1)
	setShareGroupConfig(t, srv, "sg", shareAutoOffsetResetConfig, "earliest")
	produceN(t, newClient(t, srv), "q", 20)
	a := joinShare(t, srv, "sg", "a", "q")
	if got := acquired(a.fetch(time.Second, nil))[0]; len(got) != 1 || got[0].LastOffset != 19 {
		t.Fatalf("acquired %+v", got)
	}
	resp := a.fetch(0, map[int32][]kmsg.ShareFetchRequestTopicPartitionAcknowledgementBatch{0: {
		{FirstOffset: 0, LastOffset: 9, AcknowledgeTypes: []int8{1}}, {FirstOffset: 12, LastOffset: 12, AcknowledgeTypes: []int8{3}}}})
	if code := resp.Topics[0].Partitions[0].AcknowledgeErrorCode; code != 0 {
		t.Fatalf("ack: %v", kerr.ErrorForCode(code))
	}
	if err := srv.RestartCrashed(); err != nil {
		t.Fatal(err)
	}
	if start := shareStartOffset(t, srv, "sg", "q", 0); start != 10 {
		t.Fatalf("start offset after the crash %d, want 10", start)
	}
	// a is still a member after the crash (its membership is stored):
	// it heartbeats at its epoch on a new connection and opens a new
	// share session, as a client does when its session is gone.
	b := a
	b.w, b.sessionEpoch = dialWire(t, srv), 0
	if code := b.heartbeat(); code != 0 {
		t.Fatalf("heartbeat after the crash: %v", kerr.ErrorForCode(code))
	}
	got := acquired(b.fetch(time.Second, nil))[0]
	want := []kmsg.ShareFetchResponseTopicPartitionAcquiredRecord{
		{FirstOffset: 10, LastOffset: 11, DeliveryCount: 2}, {FirstOffset: 13, LastOffset: 19, DeliveryCount: 2}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("acquired after the crash %+v, want %+v", got, want)
	}
	// a accepts everything; a clean restart (which snapshots the state
	// and lets the commit log drop its records) keeps that too.
	resp = b.fetch(0, map[int32][]kmsg.ShareFetchRequestTopicPartitionAcknowledgementBatch{0: {
		{FirstOffset: 10, LastOffset: 11, AcknowledgeTypes: []int8{1}}, {FirstOffset: 13, LastOffset: 19, AcknowledgeTypes: []int8{1}}}})
	if code := resp.Topics[0].Partitions[0].AcknowledgeErrorCode; code != 0 {
		t.Fatalf("ack after the crash: %v", kerr.ErrorForCode(code))
	}
	if err := srv.Restart(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	if start := shareStartOffset(t, srv, "sg", "q", 0); start != 20 {
		t.Fatalf("start offset after a clean restart %d, want 20", start)
	}
}

// TestShareGroupKgo runs two franz-go share consumers in one group: the
// partitions are split between them, every record is delivered once and
// acknowledged (kgo accepts what it polled), and the group is listed,
// described and, once empty, deleted.
func TestShareGroupKgo(t *testing.T) {
	srv := newTestServer(t, func(c *Config) {
		c.GroupShareHeartbeatInterval = 100 * time.Millisecond
		c.GroupShareSessionTimeout = 5 * time.Second
	})
	createTopic(t, srv, "q", 4)
	setShareGroupConfig(t, srv, "sg", shareAutoOffsetResetConfig, "earliest")
	const n = 200
	ctx := testCtx(t)
	var mu sync.Mutex
	seen := map[string]int{}
	perMember := [2]int{}
	var wg sync.WaitGroup
	stop := make(chan struct{})
	var clients [2]*kgo.Client
	for i := range clients {
		clients[i] = newClient(t, srv, kgo.ShareGroup("sg"), kgo.ConsumeTopics("q"), kgo.FetchMaxWait(200*time.Millisecond))
	}
	for i, cl := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				pctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
				fs := cl.PollRecords(pctx, 100)
				cancel()
				mu.Lock()
				for _, r := range fs.Records() {
					seen[fmt.Sprintf("%d/%d", r.Partition, r.Offset)]++
					perMember[i]++
				}
				mu.Unlock()
			}
		}()
	}
	// Produce once both members hold their half, so that both consume.
	describe := func() kmsg.ShareGroupDescribeResponseGroup {
		return adminRequest[*kmsg.ShareGroupDescribeResponse](t, srv, &kmsg.ShareGroupDescribeRequest{Version: 1, GroupIDs: []string{"sg"}}).Groups[0]
	}
	split := func(g kmsg.ShareGroupDescribeResponseGroup) bool {
		if g.ErrorCode != 0 || g.GroupState != "Stable" || len(g.Members) != 2 {
			return false
		}
		for _, m := range g.Members {
			if len(m.Assignment.TopicPartitions) != 1 || len(m.Assignment.TopicPartitions[0].Partitions) != 2 {
				return false
			}
		}
		return true
	}
	deadline := time.Now().Add(20 * time.Second)
	for !split(describe()) {
		if time.Now().After(deadline) {
			t.Fatalf("the members did not split the partitions: %+v", describe())
		}
		time.Sleep(50 * time.Millisecond) // polling a test condition, not synchronising the broker
	}
	produceN(t, newClient(t, srv), "q", n)
	for {
		mu.Lock()
		done := len(seen) == n
		mu.Unlock()
		if done || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond) // polling a test condition, not synchronising the broker
	}
	close(stop)
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != n {
		t.Fatalf("consumed %d distinct records of %d", len(seen), n)
	}
	for k, c := range seen {
		if c != 1 {
			t.Errorf("record %s delivered %d times", k, c)
		}
	}
	// Which member gets which records depends on when each client hears
	// the new assignment (a fetch in flight still names the partitions it
	// had), so only the split of the assignment is asserted above.
	t.Logf("records per member: %v", perMember)
	lg := adminRequest[*kmsg.ListGroupsResponse](t, srv, &kmsg.ListGroupsRequest{Version: 5, TypesFilter: []string{"share"}})
	if len(lg.Groups) != 1 || lg.Groups[0].Group != "sg" || lg.Groups[0].GroupType != "share" {
		t.Fatalf("list share groups: %+v", lg.Groups)
	}
	del := adminRequest[*kmsg.DeleteGroupsResponse](t, srv, &kmsg.DeleteGroupsRequest{Version: 2, Groups: []string{"sg"}})
	if code := del.Groups[0].ErrorCode; code != kerr.NonEmptyGroup.Code {
		t.Fatalf("delete a group with members: %v", kerr.ErrorForCode(code))
	}
}

// TestShareGroupIDNamespace checks that share groups share the group-id
// namespace: a share group cannot take a classic group's id, nor a
// classic or consumer group a share group's.
func TestShareGroupIDNamespace(t *testing.T) {
	srv := newTestServer(t, nil)
	createTopic(t, srv, "q", 1)
	joinShare(t, srv, "sg", "a", "q")
	w := dialWire(t, srv)
	jg := kmsg.NewPtrJoinGroupRequest()
	jg.Version, jg.Group, jg.ProtocolType, jg.SessionTimeoutMillis, jg.RebalanceTimeoutMillis = 9, "sg", "consumer", 6000, 6000
	jg.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: []byte{0, 0, 0, 0, 0, 0}}}
	if r := w.do(jg).(*kmsg.JoinGroupResponse); r.ErrorCode != kerr.InconsistentGroupProtocol.Code {
		t.Fatalf("JoinGroup of a share group's id: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	cg := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	cg.Group, cg.MemberID, cg.RebalanceTimeoutMillis, cg.SubscribedTopicNames, cg.Topics = "sg", "m", 5000, []string{"q"}, []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	if r := w.do(cg).(*kmsg.ConsumerGroupHeartbeatResponse); r.ErrorCode != kerr.GroupIDNotFound.Code {
		t.Fatalf("ConsumerGroupHeartbeat of a share group's id: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	cg.Group = "cg"
	if r := w.do(cg).(*kmsg.ConsumerGroupHeartbeatResponse); r.ErrorCode != 0 {
		t.Fatalf("consumer group joins: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	sh := kmsg.NewPtrShareGroupHeartbeatRequest()
	sh.Version, sh.GroupID, sh.MemberID, sh.SubscribedTopicNames = 1, "cg", "x", []string{"q"}
	if r := w.do(sh).(*kmsg.ShareGroupHeartbeatResponse); r.ErrorCode != kerr.GroupIDNotFound.Code {
		t.Fatalf("ShareGroupHeartbeat of a consumer group's id: %v", kerr.ErrorForCode(r.ErrorCode))
	}
}

// cuttableDialer dials normally until cut, which closes every connection
// it made and refuses new ones: a client process that died.
type cuttableDialer struct {
	mu    sync.Mutex
	conns []net.Conn
	dead  bool
}

func (d *cuttableDialer) dial(ctx context.Context, network, host string) (net.Conn, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.dead {
		return nil, errors.New("client process is gone")
	}
	var nd net.Dialer
	nc, err := nd.DialContext(ctx, network, host)
	if err == nil {
		d.conns = append(d.conns, nc)
	}
	return nc, err
}

func (d *cuttableDialer) cut() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.dead = true
	for _, nc := range d.conns {
		nc.Close()
	}
}

// TestShareKgoMemberCrash has a franz-go share consumer poll records and
// die without acknowledging them (its connections cut, as when its
// process is killed): the other member gets those records, with delivery
// count 2, and every record is consumed.
func TestShareKgoMemberCrash(t *testing.T) {
	srv := newTestServer(t, func(c *Config) {
		c.GroupShareHeartbeatInterval = 100 * time.Millisecond
		c.GroupShareRecordLockDuration = 2 * time.Second
	})
	createTopic(t, srv, "q", 1)
	setShareGroupConfig(t, srv, "sg", shareAutoOffsetResetConfig, "earliest")
	const n = 50
	produceN(t, newClient(t, srv), "q", n)
	ctx := testCtx(t)

	d := &cuttableDialer{}
	a := newClient(t, srv, kgo.ShareGroup("sg"), kgo.ConsumeTopics("q"), kgo.Dialer(d.dial), kgo.FetchMaxWait(200*time.Millisecond))
	held := a.PollRecords(ctx, n).Records()
	if len(held) == 0 {
		t.Fatal("a polled nothing")
	}
	d.cut()

	b := newClient(t, srv, kgo.ShareGroup("sg"), kgo.ConsumeTopics("q"), kgo.FetchMaxWait(200*time.Millisecond))
	seen := map[int64]int32{}
	for len(seen) < n {
		pctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
		fs := b.PollRecords(pctx, n)
		cancel()
		if ctx.Err() != nil {
			t.Fatalf("b consumed %d of %d records", len(seen), n)
		}
		for _, r := range fs.Records() {
			seen[r.Offset] = r.DeliveryCount()
		}
	}
	for _, r := range held {
		if c := seen[r.Offset]; c != 2 {
			t.Fatalf("record %d that a held came to b with delivery count %d, want 2", r.Offset, c)
		}
	}
}

// TestShareVersionFeature turns share groups off with UpdateFeatures
// (share.version 0): their keys leave ApiVersions and answer
// UNSUPPORTED_VERSION; back at 1 they are served again.
func TestShareVersionFeature(t *testing.T) {
	srv := newTestServer(t, nil)
	createTopic(t, srv, "q", 1)
	w := dialWire(t, srv)
	if fin, sup, _ := finalized(t, w); fin[featureShareVersion] != 1 || sup[featureShareVersion] != [2]int16{0, 1} {
		t.Fatalf("share.version finalized %d, supported %v", fin[featureShareVersion], sup[featureShareVersion])
	}
	set := func(level int16, upgrade int8) {
		t.Helper()
		res, err := newAdmin(t, srv).UpdateFeatures(testCtx(t), false, kadm.FeatureUpdate{Feature: featureShareVersion, MaxVersionLevel: level, UpgradeType: upgrade})
		if err != nil || res[featureShareVersion].Err != nil {
			t.Fatalf("share.version to %d: %v %v", level, err, res)
		}
	}
	set(0, 2)
	if hasKey(t, w, int16(kmsg.ShareFetch)) || hasKey(t, w, int16(kmsg.ShareGroupHeartbeat)) {
		t.Fatal("share keys advertised at share.version 0")
	}
	hb := kmsg.NewPtrShareGroupHeartbeatRequest()
	hb.Version, hb.GroupID, hb.MemberID, hb.SubscribedTopicNames = 1, "sg", "a", []string{"q"}
	if r := w.do(hb).(*kmsg.ShareGroupHeartbeatResponse); r.ErrorCode != kerr.UnsupportedVersion.Code {
		t.Fatalf("heartbeat at share.version 0: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	set(1, 1)
	if !hasKey(t, w, int16(kmsg.ShareFetch)) {
		t.Fatal("ShareFetch not advertised at share.version 1")
	}
	joinShare(t, srv, "sg", "a", "q")
}

// TestShareFetchSendfile checks that ShareFetch sends record bytes from
// the commit-log files with sendfile, as Fetch does: a 64 KiB record
// (above the copy threshold) adds at least its size to the sendfile
// counter, and the client reads it intact.
func TestShareFetchSendfile(t *testing.T) {
	srv := newTestServer(t, nil)
	createTopic(t, srv, "q", 1)
	setShareGroupConfig(t, srv, "sg", shareAutoOffsetResetConfig, "earliest")
	value := make([]byte, 64<<10)
	for i := range value {
		value[i] = byte(i * 7)
	}
	cl := newClient(t, srv, kgo.ProducerBatchCompression(kgo.NoCompression()))
	if err := cl.ProduceSync(testCtx(t), &kgo.Record{Topic: "q", Value: value}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	before := srv.Stats().SendfileBytes
	c := newClient(t, srv, kgo.ShareGroup("sg"), kgo.ConsumeTopics("q"), kgo.FetchMaxWait(200*time.Millisecond))
	ctx := testCtx(t)
	var got []*kgo.Record
	for len(got) == 0 {
		got = c.PollRecords(ctx, 1).Records()
		if ctx.Err() != nil {
			t.Fatal("no record")
		}
	}
	if !bytes.Equal(got[0].Value, value) {
		t.Fatal("record value changed on the way")
	}
	if sent := srv.Stats().SendfileBytes - before; sent < int64(len(value)) {
		t.Fatalf("%d bytes went with sendfile, want at least %d", sent, len(value))
	}
}
