package broker

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// streamsJoin is the first heartbeat of a Kafka Streams member of the
// count application over topic in (stream(in).groupBy().count()).
func streamsJoin(group, member, process string) *kmsg.StreamsGroupHeartbeatRequest {
	req := kmsg.NewPtrStreamsGroupHeartbeatRequest()
	req.Version = 1
	req.Group, req.MemberID, req.MemberEpoch = group, member, 0
	req.RebalanceTimeoutMillis = 30000
	req.ProcessID = kmsg.StringPtr(process)
	req.EndpointInformationEpoch = -1
	req.ActiveTasks, req.StandbyTasks, req.WarmupTasks = []kmsg.TaskIDs{}, []kmsg.TaskIDs{}, []kmsg.TaskIDs{}
	top := kmsg.NewStreamsGroupHeartbeatRequestTopology()
	s0 := kmsg.NewStreamsGroupHeartbeatRequestTopologySubtopology()
	s0.SubtopologyID, s0.SourceTopics, s0.RepartitionSinkTopics = "0", []string{"in"}, []string{group + "-rep"}
	s1 := kmsg.NewStreamsGroupHeartbeatRequestTopologySubtopology()
	s1.SubtopologyID = "1"
	s1.RepartitionSourceTopics = []kmsg.TopicInfo{{Topic: group + "-rep"}}
	s1.StateChangelogTopics = []kmsg.TopicInfo{{Topic: group + "-changelog", Configs: []kmsg.TopicInfoConfig{{Key: "cleanup.policy", Value: "compact"}}}}
	top.Subtopologies = []kmsg.StreamsGroupHeartbeatRequestTopologySubtopology{s0, s1}
	req.Topology = &top
	return req
}

func TestStreamsGroupHeartbeatAndAdmin(t *testing.T) {
	t.Parallel()
	srv := newTestServer(t, func(c *Config) { c.GroupStreamsInitialRebalanceDelay = 0 })
	if _, err := newAdmin(t, srv).CreateTopic(testCtx(t), 3, 1, nil, "in"); err != nil {
		t.Fatal(err)
	}
	r := adminRequest[*kmsg.StreamsGroupHeartbeatResponse](t, srv, streamsJoin("app", "m1", "p1"))
	if r.ErrorCode != 0 || r.MemberEpoch < 1 || len(r.Status) != 0 {
		t.Fatalf("join: %d %v epoch %d status %+v", r.ErrorCode, r.ErrorMessage, r.MemberEpoch, r.Status)
	}
	n := 0
	for _, tk := range r.ActiveTasks {
		n += len(tk.Partitions)
	}
	if n != 6 {
		t.Fatalf("active tasks %+v, want 3 of each subtopology", r.ActiveTasks)
	}
	// The broker created the internal topics with the decided counts and
	// the topology's configs.
	for _, name := range []string{"app-rep", "app-changelog"} {
		tp, ok := srv.Broker.topics.Get(name)
		if !ok || tp.Partitions != 3 {
			t.Fatalf("internal topic %s: %+v %v", name, tp, ok)
		}
	}
	if tp, _ := srv.Broker.topics.Get("app-changelog"); !tp.Configs.CleanupPolicy().Compact {
		t.Fatal("changelog not created compacted, as its topology asks")
	}
	epoch := r.MemberEpoch

	// StreamsGroupDescribe.
	dreq := kmsg.NewPtrStreamsGroupDescribeRequest()
	dreq.Groups = []string{"app", "nope"}
	d := adminRequest[*kmsg.StreamsGroupDescribeResponse](t, srv, dreq)
	if g := d.Groups[0]; g.ErrorCode != 0 || g.State != "Stable" || len(g.Members) != 1 || g.Members[0].MemberID != "m1" || g.Topology == nil || len(g.Topology.Subtopologies) != 2 {
		t.Fatalf("describe: %+v", g)
	}
	if g := d.Groups[1]; g.ErrorCode != kerr.GroupIDNotFound.Code {
		t.Fatalf("describe unknown: %+v", g)
	}

	// ListGroups with the streams type.
	lreq := kmsg.NewPtrListGroupsRequest()
	lreq.Version = 5
	lreq.TypesFilter = []string{"streams"}
	l := adminRequest[*kmsg.ListGroupsResponse](t, srv, lreq)
	if len(l.Groups) != 1 || l.Groups[0].Group != "app" || l.Groups[0].GroupType != "streams" || l.Groups[0].GroupState != "Stable" {
		t.Fatalf("list groups: %+v", l.Groups)
	}

	// Other group types cannot use the id, nor describe it.
	creq := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	creq.Version = 1
	creq.Group, creq.MemberID, creq.RebalanceTimeoutMillis, creq.SubscribedTopicNames = "app", "c1", 30000, []string{"in"}
	creq.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	if c := adminRequest[*kmsg.ConsumerGroupHeartbeatResponse](t, srv, creq); c.ErrorCode != kerr.GroupIDNotFound.Code {
		t.Fatalf("consumer heartbeat on a streams group: %v", kerr.ErrorForCode(c.ErrorCode))
	}
	cdreq := kmsg.NewPtrConsumerGroupDescribeRequest()
	cdreq.Groups = []string{"app"}
	if g := adminRequest[*kmsg.ConsumerGroupDescribeResponse](t, srv, cdreq).Groups[0]; g.ErrorCode != kerr.GroupIDNotFound.Code || g.ErrorMessage == nil || *g.ErrorMessage != "Group app is not a consumer group." {
		t.Fatalf("consumer describe of a streams group: %+v", g)
	}
	dgreq := kmsg.NewPtrDescribeGroupsRequest()
	dgreq.Version = 6
	dgreq.Groups = []string{"app"}
	if g := adminRequest[*kmsg.DescribeGroupsResponse](t, srv, dgreq).Groups[0]; g.ErrorCode != kerr.GroupIDNotFound.Code || g.ErrorMessage == nil || *g.ErrorMessage != "Group app is not a classic group." {
		t.Fatalf("classic describe of a streams group: %+v", g)
	}

	// Offset commits are checked against the member epoch.
	commit := func(e int32) int16 {
		req := kmsg.NewPtrOffsetCommitRequest()
		req.Version = 9
		req.Group, req.MemberID, req.Generation = "app", "m1", e
		rt := kmsg.NewOffsetCommitRequestTopic()
		rt.Topic = "in"
		rt.Partitions = []kmsg.OffsetCommitRequestTopicPartition{{Partition: 0, Offset: 5, LeaderEpoch: -1}}
		req.Topics = []kmsg.OffsetCommitRequestTopic{rt}
		return adminRequest[*kmsg.OffsetCommitResponse](t, srv, req).Topics[0].Partitions[0].ErrorCode
	}
	if code := commit(epoch + 5); code != kerr.StaleMemberEpoch.Code {
		t.Fatalf("commit at a wrong epoch: %v", kerr.ErrorForCode(code))
	}
	if code := commit(epoch); code != 0 {
		t.Fatalf("commit at the member epoch: %v", kerr.ErrorForCode(code))
	}

	// OffsetDelete: not for a topic the topology reads while it has members.
	odel := kmsg.NewPtrOffsetDeleteRequest()
	odel.Group = "app"
	odel.Topics = []kmsg.OffsetDeleteRequestTopic{{Topic: "in", Partitions: []kmsg.OffsetDeleteRequestTopicPartition{{Partition: 0}}}}
	if od := adminRequest[*kmsg.OffsetDeleteResponse](t, srv, odel); od.ErrorCode != 0 || od.Topics[0].Partitions[0].ErrorCode != kerr.GroupSubscribedToTopic.Code {
		t.Fatalf("offset delete of a read topic: %d %+v", od.ErrorCode, od.Topics)
	}

	// DeleteGroups: not while it has members.
	del := func() int16 {
		req := kmsg.NewPtrDeleteGroupsRequest()
		req.Groups = []string{"app"}
		return adminRequest[*kmsg.DeleteGroupsResponse](t, srv, req).Groups[0].ErrorCode
	}
	if code := del(); code != kerr.NonEmptyGroup.Code {
		t.Fatalf("delete with a member: %v", kerr.ErrorForCode(code))
	}
	leave := kmsg.NewPtrStreamsGroupHeartbeatRequest()
	leave.Group, leave.MemberID, leave.MemberEpoch = "app", "m1", -1
	if lr := adminRequest[*kmsg.StreamsGroupHeartbeatResponse](t, srv, leave); lr.ErrorCode != 0 || lr.MemberEpoch != -1 {
		t.Fatalf("leave: %+v", lr)
	}
	if code := del(); code != 0 {
		t.Fatalf("delete empty: %v", kerr.ErrorForCode(code))
	}
	if g := adminRequest[*kmsg.StreamsGroupDescribeResponse](t, srv, dreq).Groups[0]; g.ErrorCode != kerr.GroupIDNotFound.Code {
		t.Fatalf("describe after delete: %+v", g)
	}
}

func TestStreamsGroupNamespaceAndErrors(t *testing.T) {
	t.Parallel()
	srv := newTestServer(t, func(c *Config) { c.GroupStreamsInitialRebalanceDelay = 0 })
	// A consumer group holds the id.
	creq := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	creq.Version = 1
	creq.Group, creq.MemberID, creq.RebalanceTimeoutMillis, creq.SubscribedTopicNames = "cg", "c1", 30000, []string{"x"}
	creq.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	if c := adminRequest[*kmsg.ConsumerGroupHeartbeatResponse](t, srv, creq); c.ErrorCode != 0 {
		t.Fatalf("consumer join: %v", kerr.ErrorForCode(c.ErrorCode))
	}
	r := adminRequest[*kmsg.StreamsGroupHeartbeatResponse](t, srv, streamsJoin("cg", "m1", "p1"))
	if r.ErrorCode != kerr.GroupIDNotFound.Code || r.ErrorMessage == nil || *r.ErrorMessage != "Group cg is not a streams group." {
		t.Fatalf("streams join of a consumer group: %d %v", r.ErrorCode, r.ErrorMessage)
	}
	// An invalid request is answered as such before the id's type is
	// looked at, as Kafka does.
	r = adminRequest[*kmsg.StreamsGroupHeartbeatResponse](t, srv, streamsJoin("cg", "", "p1"))
	if r.ErrorCode != kerr.InvalidRequest.Code {
		t.Fatalf("streams join of a consumer group without member id: %v, want INVALID_REQUEST", kerr.ErrorForCode(r.ErrorCode))
	}
	// Missing source topic: a status, no tasks, no error.
	r = adminRequest[*kmsg.StreamsGroupHeartbeatResponse](t, srv, streamsJoin("app", "m1", "p1"))
	if r.ErrorCode != 0 || len(r.Status) != 1 || r.Status[0].StatusCode != 1 || r.Status[0].StatusDetail != "Source topics in are missing." {
		t.Fatalf("missing source: %d %+v", r.ErrorCode, r.Status)
	}
	// Invalid requests.
	bad := streamsJoin("app", "", "p1")
	if r := adminRequest[*kmsg.StreamsGroupHeartbeatResponse](t, srv, bad); r.ErrorCode != kerr.InvalidRequest.Code || *r.ErrorMessage != "MemberId can't be empty." {
		t.Fatalf("no member id: %d %v", r.ErrorCode, r.ErrorMessage)
	}
	bad = streamsJoin("app", "m2", "p2")
	bad.Topology.Subtopologies[0].SourceTopicRegex = []string{"in.*"}
	if r := adminRequest[*kmsg.StreamsGroupHeartbeatResponse](t, srv, bad); r.ErrorCode != kerr.InvalidRequest.Code {
		t.Fatalf("source regex: %d %v", r.ErrorCode, r.ErrorMessage)
	}
	// ApiVersions advertises the keys while streams.version is 1.
	av := adminRequest[*kmsg.ApiVersionsResponse](t, srv, kmsg.NewPtrApiVersionsRequest())
	found := 0
	for _, k := range av.ApiKeys {
		if k.ApiKey == int16(kmsg.StreamsGroupHeartbeat) && k.MaxVersion == 1 || k.ApiKey == int16(kmsg.StreamsGroupDescribe) && k.MaxVersion == 0 {
			found++
		}
	}
	if found != 2 {
		t.Fatalf("ApiVersions: streams keys not advertised as expected (%d of 2)", found)
	}
}

// TestStreamsGroupInitialRebalanceDelay: a new group's first heartbeats
// get the ASSIGNMENT_DELAYED status and no tasks, at epoch 1, as Kafka's.
func TestStreamsGroupInitialRebalanceDelay(t *testing.T) {
	t.Parallel()
	srv := newTestServer(t, nil)
	if _, err := newAdmin(t, srv).CreateTopic(testCtx(t), 1, 1, nil, "in"); err != nil {
		t.Fatal(err)
	}
	r := adminRequest[*kmsg.StreamsGroupHeartbeatResponse](t, srv, streamsJoin("app", "m1", "p1"))
	if r.ErrorCode != 0 || r.MemberEpoch != 1 || len(r.Status) != 1 || r.Status[0].StatusCode != 5 || len(r.ActiveTasks) != 0 {
		t.Fatalf("join within the delay: %d epoch %d status %+v tasks %+v", r.ErrorCode, r.MemberEpoch, r.Status, r.ActiveTasks)
	}
}

// TestStreamsGroupAfterRestart: a streams group survives a restart with
// its epochs and tasks: its members' heartbeats at their member epochs go
// on without a rebalance, a member that leaves frees its tasks for the
// other, the group's committed offsets are still there, and after the
// group is deleted and the broker restarts again it is GROUP_ID_NOT_FOUND.
func TestStreamsGroupAfterRestart(t *testing.T) {
	t.Parallel()
	rs := newRestartable(t, func(c *Config) { c.GroupStreamsInitialRebalanceDelay = 0 })
	srv := rs.running
	if _, err := newAdmin(t, srv).CreateTopic(testCtx(t), 2, 1, nil, "in"); err != nil {
		t.Fatal(err)
	}
	r := adminRequest[*kmsg.StreamsGroupHeartbeatResponse](t, srv, streamsJoin("app", "m1", "p1"))
	if r.ErrorCode != 0 || len(r.ActiveTasks) != 2 {
		t.Fatalf("join: %d %+v", r.ErrorCode, r.ActiveTasks)
	}
	commit := kmsg.NewPtrOffsetCommitRequest()
	commit.Version = 9
	commit.Group, commit.MemberID, commit.Generation = "app", "m1", r.MemberEpoch
	ct := kmsg.NewOffsetCommitRequestTopic()
	ct.Topic = "in"
	ct.Partitions = []kmsg.OffsetCommitRequestTopicPartition{{Partition: 1, Offset: 7, LeaderEpoch: -1}}
	commit.Topics = []kmsg.OffsetCommitRequestTopic{ct}
	if code := adminRequest[*kmsg.OffsetCommitResponse](t, srv, commit).Topics[0].Partitions[0].ErrorCode; code != 0 {
		t.Fatalf("commit: %v", kerr.ErrorForCode(code))
	}
	// A second member joins and takes half the tasks (m1 revokes first).
	r2 := adminRequest[*kmsg.StreamsGroupHeartbeatResponse](t, srv, streamsJoin("app", "m2", "p2"))
	if r2.ErrorCode != 0 {
		t.Fatalf("join m2: %v", kerr.ErrorForCode(r2.ErrorCode))
	}
	owned := map[string][]kmsg.TaskIDs{"m1": r.ActiveTasks, "m2": r2.ActiveTasks}
	epochs := map[string]int32{"m1": r.MemberEpoch, "m2": r2.MemberEpoch}
	beat := func(srv *InProcess, member string) *kmsg.StreamsGroupHeartbeatResponse {
		t.Helper()
		b := kmsg.NewPtrStreamsGroupHeartbeatRequest()
		b.Version = 1
		b.Group, b.MemberID, b.MemberEpoch, b.EndpointInformationEpoch = "app", member, epochs[member], -1
		b.ActiveTasks, b.StandbyTasks, b.WarmupTasks = owned[member], []kmsg.TaskIDs{}, []kmsg.TaskIDs{}
		resp := adminRequest[*kmsg.StreamsGroupHeartbeatResponse](t, srv, b)
		if resp.ErrorCode == 0 {
			epochs[member] = resp.MemberEpoch
			if resp.ActiveTasks != nil {
				owned[member] = resp.ActiveTasks
			}
		}
		return resp
	}
	count := func(ts []kmsg.TaskIDs) (n int) {
		for _, tk := range ts {
			n += len(tk.Partitions)
		}
		return n
	}
	for range 3 {
		for _, m := range []string{"m1", "m2"} {
			if resp := beat(srv, m); resp.ErrorCode != 0 {
				t.Fatalf("heartbeat %s: %v", m, kerr.ErrorForCode(resp.ErrorCode))
			}
		}
	}
	if count(owned["m1"]) != 2 || count(owned["m2"]) != 2 {
		t.Fatalf("tasks before the restart: %+v", owned)
	}
	before := epochs["m1"]
	joined, keptByM1 := r.MemberEpoch, owned["m1"]

	srv = rs.restart()
	for _, m := range []string{"m1", "m2"} {
		was := epochs[m]
		tasks := owned[m]
		resp := beat(srv, m)
		if resp.ErrorCode != 0 || resp.MemberEpoch != was || (resp.ActiveTasks != nil && count(resp.ActiveTasks) != count(tasks)) {
			t.Fatalf("heartbeat of %s after restart: %v epoch %d (was %d) tasks %+v (had %+v)",
				m, kerr.ErrorForCode(resp.ErrorCode), resp.MemberEpoch, was, resp.ActiveTasks, tasks)
		}
	}
	d := kmsg.NewPtrStreamsGroupDescribeRequest()
	d.Groups = []string{"app"}
	if g := adminRequest[*kmsg.StreamsGroupDescribeResponse](t, srv, d).Groups[0]; g.ErrorCode != 0 || g.State != "Stable" || g.Epoch != before || len(g.Members) != 2 {
		t.Fatalf("describe after restart: %v %s epoch %d (want %d), %d members", kerr.ErrorForCode(g.ErrorCode), g.State, g.Epoch, before, len(g.Members))
	}
	// m2 leaves: m1 gets everything, as before the restart.
	leave := kmsg.NewPtrStreamsGroupHeartbeatRequest()
	leave.Group, leave.MemberID, leave.MemberEpoch = "app", "m2", -1
	if resp := adminRequest[*kmsg.StreamsGroupHeartbeatResponse](t, srv, leave); resp.ErrorCode != 0 {
		t.Fatalf("leave: %v", kerr.ErrorForCode(resp.ErrorCode))
	}
	for range 3 {
		if resp := beat(srv, "m1"); resp.ErrorCode != 0 {
			t.Fatalf("heartbeat m1: %v", kerr.ErrorForCode(resp.ErrorCode))
		}
	}
	if count(owned["m1"]) != 4 {
		t.Fatalf("m1 owns %+v after m2 left, want all 4 tasks", owned["m1"])
	}
	// The epochs at which m1 got its tasks survived the restart
	// (KIP-1251): at its join epoch it may still commit the tasks it has
	// held since, not those it took from m2.
	commitTasks := func(epoch int32, tasks []kmsg.TaskIDs) int16 {
		t.Helper()
		req := kmsg.NewPtrOffsetCommitRequest()
		req.Version = 9
		req.Group, req.MemberID, req.Generation = "app", "m1", epoch
		for _, tk := range tasks {
			rt := kmsg.NewOffsetCommitRequestTopic()
			rt.Topic = map[string]string{"0": "in", "1": "app-rep"}[tk.SubtopologyID]
			for _, p := range tk.Partitions {
				rt.Partitions = append(rt.Partitions, kmsg.OffsetCommitRequestTopicPartition{Partition: p, Offset: 7, LeaderEpoch: -1})
			}
			req.Topics = append(req.Topics, rt)
		}
		return adminRequest[*kmsg.OffsetCommitResponse](t, srv, req).Topics[0].Partitions[0].ErrorCode
	}
	if joined >= before {
		t.Fatalf("m1 joined at epoch %d, was at %d before the restart; want it to have moved on", joined, before)
	}
	if code := commitTasks(joined, keptByM1); code != 0 {
		t.Fatalf("commit at m1's join epoch of the tasks held since: %v", kerr.ErrorForCode(code))
	}
	if code := commitTasks(joined, owned["m2"]); code != kerr.StaleMemberEpoch.Code {
		t.Fatalf("commit at m1's join epoch of the tasks taken from m2: %v", kerr.ErrorForCode(code))
	}
	r.MemberEpoch = epochs["m1"]
	fetch := kmsg.NewPtrOffsetFetchRequest()
	fetch.Version = 9
	g := kmsg.NewOffsetFetchRequestGroup()
	g.Group, g.MemberID, g.MemberEpoch = "app", kmsg.StringPtr("m1"), r.MemberEpoch
	g.Topics = []kmsg.OffsetFetchRequestGroupTopic{{Topic: "in", Partitions: []int32{1}}}
	fetch.Groups = []kmsg.OffsetFetchRequestGroup{g}
	f := adminRequest[*kmsg.OffsetFetchResponse](t, srv, fetch)
	if fg := f.Groups[0]; fg.ErrorCode != 0 || len(fg.Topics) != 1 || fg.Topics[0].Partitions[0].Offset != 7 {
		t.Fatalf("offsets after restart: %+v", fg)
	}

	leave.MemberID = "m1"
	if resp := adminRequest[*kmsg.StreamsGroupHeartbeatResponse](t, srv, leave); resp.ErrorCode != 0 {
		t.Fatalf("leave m1: %v", kerr.ErrorForCode(resp.ErrorCode))
	}
	del := kmsg.NewPtrDeleteGroupsRequest()
	del.Groups = []string{"app"}
	if code := adminRequest[*kmsg.DeleteGroupsResponse](t, srv, del).Groups[0].ErrorCode; code != 0 {
		t.Fatalf("delete: %v", kerr.ErrorForCode(code))
	}
	srv = rs.restart()
	if resp := beat(srv, "m1"); resp.ErrorCode != kerr.GroupIDNotFound.Code {
		t.Fatalf("heartbeat to the deleted group after restart: %v", kerr.ErrorForCode(resp.ErrorCode))
	}
}

// TestStreamsGroupExpires: when an empty streams group's offsets have all
// expired, the group goes with them, as Kafka's offset expiry deletes an
// empty group; one with members stays.
func TestStreamsGroupExpires(t *testing.T) {
	t.Parallel()
	srv := newTestServer(t, func(c *Config) { c.GroupStreamsInitialRebalanceDelay = 0 })
	if _, err := newAdmin(t, srv).CreateTopic(testCtx(t), 1, 1, nil, "in"); err != nil {
		t.Fatal(err)
	}
	for _, g := range []string{"gone", "kept"} {
		if r := adminRequest[*kmsg.StreamsGroupHeartbeatResponse](t, srv, streamsJoin(g, "m1", "p1")); r.ErrorCode != 0 {
			t.Fatalf("join %s: %v", g, kerr.ErrorForCode(r.ErrorCode))
		}
	}
	leave := kmsg.NewPtrStreamsGroupHeartbeatRequest()
	leave.Version = 1
	leave.Group, leave.MemberID, leave.MemberEpoch = "gone", "m1", -1
	if r := adminRequest[*kmsg.StreamsGroupHeartbeatResponse](t, srv, leave); r.ErrorCode != 0 {
		t.Fatalf("leave: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	srv.groupExpired("gone")
	srv.groupExpired("kept")
	d := kmsg.NewPtrStreamsGroupDescribeRequest()
	d.Groups = []string{"gone", "kept"}
	resp := adminRequest[*kmsg.StreamsGroupDescribeResponse](t, srv, d)
	if g := resp.Groups[0]; g.ErrorCode != kerr.GroupIDNotFound.Code {
		t.Errorf("empty group after its offsets expired: %v, want GROUP_ID_NOT_FOUND", kerr.ErrorForCode(g.ErrorCode))
	}
	if g := resp.Groups[1]; g.ErrorCode != 0 || len(g.Members) != 1 {
		t.Errorf("group with a member after expiry: %v with %d members, want it kept", kerr.ErrorForCode(g.ErrorCode), len(g.Members))
	}
}
