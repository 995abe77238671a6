package broker

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/internal/testenv"
)

// cgMember plays a KIP-848 member over the wire with kmsg requests.
type cgMember struct {
	t       *testing.T
	w       *wireConn
	v       int16
	group   string
	id      string
	epoch   int32
	topics  []string
	owned   []kmsg.ConsumerGroupHeartbeatRequestTopic
	lastErr int16
}

func newCGMember(t *testing.T, srv *InProcess, v int16, group, id string, topics ...string) *cgMember {
	return &cgMember{t: t, w: dialWire(t, srv), v: v, group: group, id: id, topics: topics}
}

// heartbeat sends a heartbeat (full with epoch 0) and applies the answer
// like a client that revokes at once.
func (m *cgMember) heartbeat() *kmsg.ConsumerGroupHeartbeatResponse {
	m.t.Helper()
	req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	req.Version = m.v
	req.Group = m.group
	req.MemberID = m.id
	req.MemberEpoch = m.epoch
	req.Topics = m.owned
	if req.Topics == nil {
		req.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	}
	if m.epoch == 0 {
		req.RebalanceTimeoutMillis = 30000
		req.SubscribedTopicNames = m.topics
		req.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	}
	resp := m.w.do(req).(*kmsg.ConsumerGroupHeartbeatResponse)
	m.lastErr = resp.ErrorCode
	if resp.ErrorCode != 0 {
		return resp
	}
	if resp.MemberID != nil {
		m.id = *resp.MemberID
	}
	m.epoch = resp.MemberEpoch
	if resp.Assignment != nil {
		m.owned = m.owned[:0]
		for _, t := range resp.Assignment.Topics {
			rt := kmsg.NewConsumerGroupHeartbeatRequestTopic()
			rt.TopicID, rt.Partitions = t.TopicID, t.Partitions
			m.owned = append(m.owned, rt)
		}
	}
	return resp
}

func (m *cgMember) mustBeat() *kmsg.ConsumerGroupHeartbeatResponse {
	m.t.Helper()
	resp := m.heartbeat()
	if resp.ErrorCode != 0 {
		m.t.Fatalf("%s heartbeat v%d: %v (%v)", m.id, m.v, kerr.ErrorForCode(resp.ErrorCode), resp.ErrorMessage)
	}
	return resp
}

// partitions counts the partitions the member owns.
func (m *cgMember) partitions() int {
	n := 0
	for _, t := range m.owned {
		n += len(t.Partitions)
	}
	return n
}

func (m *cgMember) leave() *kmsg.ConsumerGroupHeartbeatResponse {
	req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	req.Version = m.v
	req.Group, req.MemberID, req.MemberEpoch = m.group, m.id, -1
	return m.w.do(req).(*kmsg.ConsumerGroupHeartbeatResponse)
}

func describeConsumerGroup(t *testing.T, srv *InProcess, v int16, ids ...string) *kmsg.ConsumerGroupDescribeResponse {
	t.Helper()
	req := kmsg.NewPtrConsumerGroupDescribeRequest()
	req.Version = v
	req.Groups = ids
	req.IncludeAuthorizedOperations = true
	return adminRequest[*kmsg.ConsumerGroupDescribeResponse](t, srv, req)
}

// TestConsumerGroupHeartbeat: two members over the wire, at v0 (server
// generated member id) and v1 (client generated), split 4 partitions:
// the first revokes before the second gets them; topic ids are the
// registry's; ConsumerGroupDescribe (v0, v1) shows the group; one leaves
// and the other takes all.
func TestConsumerGroupHeartbeat(t *testing.T) {
	srv := newTestServer(t, nil)
	foo := dataTopic(t, srv, "foo", 4, nil)
	a := newCGMember(t, srv, 0, "g", "", "foo")
	b := newCGMember(t, srv, 1, "g", "member-b", "foo")

	r := a.mustBeat()
	if a.id == "" || r.MemberEpoch != 2 || r.HeartbeatIntervalMillis != 5000 || a.partitions() != 4 {
		t.Fatalf("a's join: %+v", r)
	}
	if r.Assignment.Topics[0].TopicID != foo.ID {
		t.Fatalf("topic id %x, want the registry's %x", r.Assignment.Topics[0].TopicID, foo.ID)
	}
	r = b.mustBeat()
	if b.id != "member-b" || r.MemberEpoch != 3 || b.partitions() != 0 {
		t.Fatalf("b's join: %+v", r)
	}
	a.mustBeat() // revoke 2
	if a.partitions() != 2 || a.epoch != 2 {
		t.Fatalf("a after the new target: %d partitions at epoch %d, want 2 at 2", a.partitions(), a.epoch)
	}
	a.mustBeat() // acknowledged
	b.mustBeat()
	if a.epoch != 3 || b.partitions() != 2 {
		t.Fatalf("after a revoked: a at epoch %d, b owns %d", a.epoch, b.partitions())
	}

	for v := int16(0); v <= kmsgMax(int16(kmsg.ConsumerGroupDescribe)); v++ {
		resp := describeConsumerGroup(t, srv, v, "g", "", "missing", "g")
		if len(resp.Groups) != 3 {
			t.Fatalf("describe v%d: %d groups", v, len(resp.Groups))
		}
		g := resp.Groups[0]
		if g.ErrorCode != 0 || g.State != "Stable" || g.Epoch != 3 || g.AssignmentEpoch != 3 || g.AssignorName != "uniform" ||
			len(g.Members) != 2 || g.AuthorizedOperations != groupAuthorizedOps {
			t.Fatalf("describe v%d: %+v", v, g)
		}
		for _, m := range g.Members {
			if len(m.Assignment.TopicPartitions) != 1 || m.Assignment.TopicPartitions[0].Topic != "foo" ||
				len(m.Assignment.TopicPartitions[0].Partitions) != 2 || m.ClientID != "wire-test" ||
				!strings.HasPrefix(m.ClientHost, "/127.0.0.1") || !slices.Equal(m.SubscribedTopics, []string{"foo"}) {
				t.Fatalf("describe v%d member: %+v", v, m)
			}
			if v >= 1 && m.MemberType != 1 {
				t.Fatalf("describe v%d member type %d", v, m.MemberType)
			}
		}
		if resp.Groups[1].ErrorCode != kerr.InvalidGroupID.Code || resp.Groups[2].ErrorCode != kerr.GroupIDNotFound.Code ||
			resp.Groups[2].ErrorMessage == nil || *resp.Groups[2].ErrorMessage != "Group missing not found." {
			t.Fatalf("describe v%d errors: %+v", v, resp.Groups[1:])
		}
	}

	if r := b.leave(); r.ErrorCode != 0 || r.MemberEpoch != -1 || r.MemberID == nil || *r.MemberID != "member-b" {
		t.Fatalf("b's leave: %+v", r)
	}
	a.mustBeat()
	if a.partitions() != 4 || a.epoch != 4 {
		t.Fatalf("a after b left: %d partitions at epoch %d", a.partitions(), a.epoch)
	}

	// New partitions reach the group at the next heartbeat.
	adm := newAdmin(t, srv)
	if _, err := adm.CreatePartitions(testCtx(t), 2, "foo"); err != nil {
		t.Fatal(err)
	}
	a.mustBeat()
	if a.partitions() != 6 || a.epoch != 5 {
		t.Fatalf("a after CreatePartitions: %d partitions at epoch %d", a.partitions(), a.epoch)
	}
}

// TestConsumerGroupHeartbeatErrors: the request checks and fencing, with
// Kafka's error messages.
func TestConsumerGroupHeartbeatErrors(t *testing.T) {
	srv := newTestServer(t, nil)
	dataTopic(t, srv, "foo", 1, nil)
	w := dialWire(t, srv)
	hb := func(edit func(*kmsg.ConsumerGroupHeartbeatRequest)) *kmsg.ConsumerGroupHeartbeatResponse {
		req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
		req.Version = 1
		req.Group, req.MemberID, req.RebalanceTimeoutMillis = "g", "m", 1000
		req.SubscribedTopicNames = []string{"foo"}
		req.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
		edit(req)
		return w.do(req).(*kmsg.ConsumerGroupHeartbeatResponse)
	}
	s := kmsg.StringPtr
	for _, tc := range []struct {
		name string
		edit func(*kmsg.ConsumerGroupHeartbeatRequest)
		want *kerr.Error
		msg  string
	}{
		{"v1 without member id", func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.MemberID = "" }, kerr.InvalidRequest, "MemberId can't be empty."},
		{"no rebalance timeout", func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.RebalanceTimeoutMillis = -1 }, kerr.InvalidRequest, "RebalanceTimeoutMs must be provided in first request."},
		{"null owned partitions", func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.Topics = nil }, kerr.InvalidRequest, "TopicPartitions must be empty when (re-)joining."},
		{"no subscription", func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.SubscribedTopicNames = nil }, kerr.InvalidRequest, "Either SubscribedTopicNames or SubscribedTopicRegex must be non-null when (re-)joining."},
		{"unknown assignor", func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.ServerAssignor = s("cooperative-sticky") }, kerr.UnsupportedAssignor, "ServerAssignor cooperative-sticky is not supported. Supported assignors: uniform, range."},
		{"bad regex", func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.SubscribedTopicRegex = s("[") }, kerr.InvalidRegularExpression, ""},
		{"missing group", func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.MemberEpoch = 1 }, kerr.GroupIDNotFound, "Consumer group g not found."},
	} {
		resp := hb(tc.edit)
		if resp.ErrorCode != tc.want.Code || (tc.msg != "" && (resp.ErrorMessage == nil || *resp.ErrorMessage != tc.msg)) {
			t.Errorf("%s: got %v %v, want %v %q", tc.name, kerr.ErrorForCode(resp.ErrorCode), resp.ErrorMessage, tc.want, tc.msg)
		}
		if resp.ErrorCode != 0 && resp.MemberID != nil {
			t.Errorf("%s: member id %q in an error answer", tc.name, *resp.MemberID)
		}
	}
	if resp := hb(func(*kmsg.ConsumerGroupHeartbeatRequest) {}); resp.ErrorCode != 0 || resp.MemberEpoch != 2 {
		t.Fatalf("join: %+v", resp)
	}
	if resp := hb(func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.MemberEpoch = 7 }); resp.ErrorCode != kerr.FencedMemberEpoch.Code {
		t.Fatalf("a greater epoch: %v", kerr.ErrorForCode(resp.ErrorCode))
	}
	if resp := hb(func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.MemberEpoch, r.MemberID = 2, "other" }); resp.ErrorCode != kerr.UnknownMemberID.Code {
		t.Fatalf("an unknown member: %v", kerr.ErrorForCode(resp.ErrorCode))
	}
	// A classic JoinGroup to the consumer group is refused; the classic
	// heartbeat finds no such member; DescribeGroups does not describe it.
	if resp := w.do(joinReq(maxJoinVersion, "g", "")).(*kmsg.JoinGroupResponse); resp.ErrorCode != kerr.InconsistentGroupProtocol.Code {
		t.Fatalf("classic join to a consumer group: %v", kerr.ErrorForCode(resp.ErrorCode))
	}
	if g := describeOne(t, srv, "g"); g.ErrorCode != kerr.GroupIDNotFound.Code || g.ErrorMessage == nil || *g.ErrorMessage != "Group g is not a classic group." {
		t.Fatalf("DescribeGroups of a consumer group: %+v", g)
	}
	// And ConsumerGroupDescribe does not describe a classic group.
	joinNew(t, w, maxJoinVersion, "classic")
	if g := describeConsumerGroup(t, srv, 1, "classic").Groups[0]; g.ErrorCode != kerr.GroupIDNotFound.Code {
		t.Fatalf("ConsumerGroupDescribe of a classic group: %+v", g)
	}
	// Joining a classic group with members is GROUP_ID_NOT_FOUND.
	if resp := hb(func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.Group = "classic" }); resp.ErrorCode != kerr.GroupIDNotFound.Code {
		t.Fatalf("consumer join to a classic group: %v", kerr.ErrorForCode(resp.ErrorCode))
	}
}

// TestConsumerGroupAdmin: ListGroups shows consumer groups with their type
// and state; OffsetCommit and OffsetFetch check the member epoch; an
// Empty consumer group is deleted with its offsets.
func TestConsumerGroupAdmin(t *testing.T) {
	srv := newTestServer(t, nil)
	foo := dataTopic(t, srv, "foo", 2, nil)
	m := newCGMember(t, srv, 1, "cg", "m1", "foo")
	m.mustBeat()
	joinNew(t, dialWire(t, srv), maxJoinVersion, "classic")

	types := func(v int16, states, types []string) map[string]string {
		t.Helper()
		resp := listGroupsAt(t, srv, v, states, types)
		out := map[string]string{}
		for _, g := range resp.Groups {
			out[g.Group] = g.GroupType + "/" + g.GroupState + "/" + g.ProtocolType
		}
		return out
	}
	if got := types(maxListVersion, nil, nil); got["cg"] != "consumer/Stable/consumer" || got["classic"] != "classic/CompletingRebalance/consumer" {
		t.Fatalf("list: %v", got)
	}
	if got := types(maxListVersion, nil, []string{"Consumer"}); len(got) != 1 || got["cg"] == "" {
		t.Fatalf("list consumer: %v", got)
	}
	if got := types(maxListVersion, []string{"stable"}, nil); len(got) != 1 || got["cg"] == "" {
		t.Fatalf("list stable: %v", got)
	}
	if got := types(4, []string{"Assigning", "Reconciling"}, nil); len(got) != 0 {
		t.Fatalf("list assigning: %v", got)
	}

	commit := func(v int16, member string, epoch int32) int16 {
		req := kmsg.NewPtrOffsetCommitRequest()
		req.Version = v
		req.Group, req.MemberID, req.Generation = "cg", member, epoch
		rt := kmsg.NewOffsetCommitRequestTopic()
		rt.Topic, rt.TopicID = "foo", foo.ID
		rp := kmsg.NewOffsetCommitRequestTopicPartition()
		rp.Partition, rp.Offset = 0, 7
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		return adminRequest[*kmsg.OffsetCommitResponse](t, srv, req).Topics[0].Partitions[0].ErrorCode
	}
	maxCommit := kmsgMax(int16(kmsg.OffsetCommit))
	for _, tc := range []struct {
		v      int16
		member string
		epoch  int32
		want   int16
	}{
		{maxCommit, "m1", 2, 0},
		{9, "m1", 2, 0},
		{maxCommit, "m1", 3, kerr.StaleMemberEpoch.Code},
		{maxCommit, "nobody", 2, kerr.UnknownMemberID.Code},
		{8, "m1", 2, kerr.UnsupportedVersion.Code},
		{maxCommit, "", -1, kerr.UnknownMemberID.Code},
	} {
		if got := commit(tc.v, tc.member, tc.epoch); got != tc.want {
			t.Errorf("commit v%d by %q at %d: %v, want %v", tc.v, tc.member, tc.epoch, kerr.ErrorForCode(got), kerr.ErrorForCode(tc.want))
		}
	}
	fetch := func(member *string, epoch int32) kmsg.OffsetFetchResponseGroup {
		req := kmsg.NewPtrOffsetFetchRequest()
		req.Version = 9
		g := kmsg.NewOffsetFetchRequestGroup()
		g.Group, g.MemberID, g.MemberEpoch = "cg", member, epoch
		g.Topics = []kmsg.OffsetFetchRequestGroupTopic{{Topic: "foo", Partitions: []int32{0}}}
		req.Groups = append(req.Groups, g)
		return adminRequest[*kmsg.OffsetFetchResponse](t, srv, req).Groups[0]
	}
	if g := fetch(kmsg.StringPtr("m1"), 2); g.ErrorCode != 0 || g.Topics[0].Partitions[0].Offset != 7 {
		t.Fatalf("member fetch: %+v", g)
	}
	if g := fetch(nil, -1); g.ErrorCode != 0 || g.Topics[0].Partitions[0].Offset != 7 {
		t.Fatalf("admin fetch: %+v", g)
	}
	if g := fetch(kmsg.StringPtr("m1"), 4); g.ErrorCode != kerr.StaleMemberEpoch.Code {
		t.Fatalf("stale fetch: %v", kerr.ErrorForCode(g.ErrorCode))
	}
	if g := fetch(kmsg.StringPtr("x"), 2); g.ErrorCode != kerr.UnknownMemberID.Code {
		t.Fatalf("unknown member fetch: %v", kerr.ErrorForCode(g.ErrorCode))
	}

	del := func() int16 {
		req := kmsg.NewPtrDeleteGroupsRequest()
		req.Version = kmsgMax(int16(kmsg.DeleteGroups))
		req.Groups = []string{"cg"}
		return adminRequest[*kmsg.DeleteGroupsResponse](t, srv, req).Groups[0].ErrorCode
	}
	if code := del(); code != kerr.NonEmptyGroup.Code {
		t.Fatalf("delete with a member: %v", kerr.ErrorForCode(code))
	}
	m.leave()
	if got := types(maxListVersion, nil, nil); got["cg"] != "consumer/Empty/consumer" {
		t.Fatalf("list after the leave: %v", got)
	}
	// Offsets of an Empty group may be committed without a member.
	if got := commit(maxCommit, "", -1); got != 0 {
		t.Fatalf("simple commit to the Empty group: %v", kerr.ErrorForCode(got))
	}
	if code := del(); code != 0 {
		t.Fatalf("delete: %v", kerr.ErrorForCode(code))
	}
	if got := types(maxListVersion, nil, nil); got["cg"] != "" {
		t.Fatalf("list after delete: %v", got)
	}
	if g := fetch(nil, -1); g.Topics[0].Partitions[0].Offset != -1 {
		t.Fatalf("offsets after delete: %+v", g)
	}
}

// TestConsumerProtocolSetting: group.coordinator.rebalance.protocols
// decides whether ConsumerGroupHeartbeat and ConsumerGroupDescribe are
// advertised; off, they answer UNSUPPORTED_VERSION, as in Kafka.
func TestConsumerProtocolSetting(t *testing.T) {
	advertised := func(srv *InProcess) (hb, desc bool) {
		req := kmsg.NewPtrApiVersionsRequest()
		req.Version = 2
		for _, k := range adminRequest[*kmsg.ApiVersionsResponse](t, srv, req).ApiKeys {
			hb = hb || (k.ApiKey == 68 && k.MinVersion == 0 && k.MaxVersion == kmsgMax(68))
			desc = desc || (k.ApiKey == 69 && k.MinVersion == 0 && k.MaxVersion == kmsgMax(69))
		}
		return hb, desc
	}
	on := newTestServer(t, nil)
	if hb, desc := advertised(on); !hb || !desc {
		t.Fatalf("default: heartbeat advertised %v, describe %v; want both", hb, desc)
	}
	off := newTestServer(t, func(c *Config) { c.GroupCoordinatorRebalanceProtocols = "classic" })
	if hb, desc := advertised(off); hb || desc {
		t.Fatalf("classic only: heartbeat advertised %v, describe %v; want neither", hb, desc)
	}
	m := newCGMember(t, off, 1, "g", "m", "foo")
	if m.heartbeat(); m.lastErr != kerr.UnsupportedVersion.Code {
		t.Fatalf("heartbeat with the protocol off: %v", kerr.ErrorForCode(m.lastErr))
	}
	if g := describeConsumerGroup(t, off, 0, "g").Groups[0]; g.ErrorCode != kerr.UnsupportedVersion.Code {
		t.Fatalf("describe with the protocol off: %v", kerr.ErrorForCode(g.ErrorCode))
	}
	for _, bad := range []string{"consumer", "classic,bogus", ""} {
		cfg := DefaultConfig()
		cfg.GroupCoordinatorRebalanceProtocols = bad
		if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "group.coordinator.rebalance.protocols") {
			t.Errorf("protocols %q: %v", bad, err)
		}
	}
	cfg := DefaultConfig()
	if err := cfg.Set("group.coordinator.rebalance.protocols", "classic, consumer"); err != nil {
		t.Fatal(err)
	}
	if err := cfg.Set("group.consumer.heartbeat.interval.ms", "60000"); err != nil {
		t.Fatal(err)
	}
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "group.consumer.heartbeat.interval.ms") {
		t.Fatalf("a heartbeat interval above the maximum: %v", err)
	}
}

// TestConsumerGroupTakesOverEmptyClassic: a consumer group takes the id of
// an Empty classic group, whose group metadata is deleted from
// __consumer_offsets (its offsets stay), as Kafka does.
func TestConsumerGroupTakesOverEmptyClassic(t *testing.T) {
	srv := newTestServer(t, nil)
	foo := dataTopic(t, srv, "foo", 1, nil)
	w := dialWire(t, srv)
	joined := joinNew(t, w, maxJoinVersion, "g")
	if resp := w.do(syncReq(maxSyncVersion, "g", joined.MemberID, "", 1, "", nil)).(*kmsg.SyncGroupResponse); resp.ErrorCode != 0 {
		t.Fatalf("sync: %v", kerr.ErrorForCode(resp.ErrorCode))
	}
	commit := kmsg.NewPtrOffsetCommitRequest()
	commit.Version = kmsgMax(int16(kmsg.OffsetCommit))
	commit.Group, commit.MemberID, commit.Generation = "g", joined.MemberID, 1
	rt := kmsg.NewOffsetCommitRequestTopic()
	rt.Topic, rt.TopicID = "foo", foo.ID
	rt.Partitions = []kmsg.OffsetCommitRequestTopicPartition{{Partition: 0, Offset: 3, LeaderEpoch: -1}}
	commit.Topics = append(commit.Topics, rt)
	if code := w.do(commit).(*kmsg.OffsetCommitResponse).Topics[0].Partitions[0].ErrorCode; code != 0 {
		t.Fatalf("commit: %v", kerr.ErrorForCode(code))
	}
	w.do(leaveReq(maxLeaveVersion, "g", leaving(joined.MemberID, nil)))
	waitGroupState(t, srv, "g", "Empty", 0)
	protocolType := func() string {
		for _, g := range srv.Broker.offsets.Load().Groups() {
			if g.Group == "g" {
				return g.ProtocolType
			}
		}
		return "missing"
	}
	if pt := protocolType(); pt != "consumer" {
		t.Fatalf("classic group metadata: protocol type %q", pt)
	}

	m := newCGMember(t, srv, 1, "g", "m", "foo")
	m.mustBeat()
	testenv.Eventually(t, 20*time.Second, "the classic group's metadata gone", func() bool { return protocolType() == "" })
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Version = 9
	g := kmsg.NewOffsetFetchRequestGroup()
	g.Group, g.MemberID, g.MemberEpoch = "g", kmsg.StringPtr("m"), m.epoch
	g.Topics = []kmsg.OffsetFetchRequestGroupTopic{{Topic: "foo", Partitions: []int32{0}}}
	req.Groups = append(req.Groups, g)
	if got := adminRequest[*kmsg.OffsetFetchResponse](t, srv, req).Groups[0]; got.ErrorCode != 0 || got.Topics[0].Partitions[0].Offset != 3 {
		t.Fatalf("the classic group's offsets after the takeover: %+v", got)
	}
}
