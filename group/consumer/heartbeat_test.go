package consumer

import (
	"testing"
	"time"

	"github.com/kbroker/kbroker/group/grouperr"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kbroker/kbroker/internal/testenv"
)

// TestJoin: the first member of a new group gets every partition at epoch
// 2 (a new group starts at epoch 1, as in Kafka), with the configured
// heartbeat interval; the group is Stable.
func TestJoin(t *testing.T) {
	run(t, testConfig(), nil, func(t *testing.T, c *Coordinator, md *fakeMetadata) {
		foo := md.add("foo", 4)
		a := newClient(t, c, md, "g", "a", "foo")
		r := a.join()
		if r.MemberID != "a" || r.MemberEpoch != 2 || r.HeartbeatInterval != 5*time.Second || !r.HasAssignment {
			t.Fatalf("join: got %+v, want member a at epoch 2 with an assignment, interval 5s", r)
		}
		if !disjointCover(foo, 4, a.owned) {
			t.Fatalf("a owns %v, want foo 0-3", a.owned)
		}
		d := describe(t, c, md, "g")
		if d.State != Stable || d.Epoch != 2 || d.AssignmentEpoch != 2 || d.Assignor != "uniform" {
			t.Fatalf("group: got %+v, want Stable at epoch 2 with the uniform assignor", d)
		}
		m := memberOf(t, d, "a")
		if m.State != MemberStable || len(m.Assignment) != 1 || m.Assignment[0].Name != "foo" || len(m.Assignment[0].Partitions) != 4 {
			t.Fatalf("member: got %+v", m)
		}
		// A steady heartbeat changes nothing and carries no assignment.
		if r := a.beat(); r.MemberEpoch != 2 || r.HasAssignment {
			t.Fatalf("heartbeat: got %+v, want epoch 2 without assignment", r)
		}
		// v0: the coordinator generates the member id.
		b := newClient(t, c, md, "g0", "", "foo")
		b.version = 0
		if r := b.join(); len(r.MemberID) != 22 || r.MemberEpoch != 2 {
			t.Fatalf("v0 join: got %+v, want a generated 22-character member id", r)
		}
	})
}

// TestSecondMemberRevokeThenAssign: when a second member joins, the first
// keeps its epoch while it revokes the partitions moving away
// (UNREVOKED_PARTITIONS), the new one waits for them
// (UNRELEASED_PARTITIONS), and each gets its share only once released.
func TestSecondMemberRevokeThenAssign(t *testing.T) {
	run(t, testConfig(), nil, func(t *testing.T, c *Coordinator, md *fakeMetadata) {
		foo := md.add("foo", 4)
		a := newClient(t, c, md, "g", "a", "foo")
		b := newClient(t, c, md, "g", "b", "foo")
		a.join()
		r := b.join()
		if r.MemberEpoch != 3 || b.count() != 0 {
			t.Fatalf("b's join: got %+v, b owns %v; want epoch 3 and nothing yet (a still owns everything)", r, b.owned)
		}
		d := describe(t, c, md, "g")
		if d.State != Reconciling || d.Epoch != 3 || d.AssignmentEpoch != 3 {
			t.Fatalf("group after b joined: got %s epoch %d/%d, want Reconciling 3/3", d.State, d.Epoch, d.AssignmentEpoch)
		}
		if m := memberOf(t, d, "b"); m.State != MemberUnreleasedPartitions || len(m.TargetAssignment) != 1 || len(m.TargetAssignment[0].Partitions) != 2 {
			t.Fatalf("b: got %+v, want UNRELEASED_PARTITIONS with 2 target partitions", m)
		}
		// a learns of the new target: it must revoke 2, at its epoch.
		owned := a.owned
		r = a.beat()
		if r.MemberEpoch != 2 || !r.HasAssignment || a.count() != 2 {
			t.Fatalf("a: got %+v, a owns %v; want epoch 2 and 2 partitions left", r, a.owned)
		}
		if m := memberOf(t, describe(t, c, md, "g"), "a"); m.State != MemberUnrevokedPartitions {
			t.Fatalf("a's state: got %v, want UNREVOKED_PARTITIONS", m.State)
		}
		// Until a acknowledges, b gets nothing more.
		if r := b.beat(); b.count() != 0 || r.MemberEpoch != 3 {
			t.Fatalf("b before a revoked: got %+v, owns %v", r, b.owned)
		}
		// A heartbeat that still lists the revoked partitions is not an
		// acknowledgement.
		a.owned, a.stubborn = owned, true
		if r := a.beat(); r.MemberEpoch != 2 {
			t.Fatalf("a still owning all: got epoch %d, want 2", r.MemberEpoch)
		}
		a.stubborn = false
		a.owned = assignmentOf(describeToList(memberOf(t, describe(t, c, md, "g"), "a").Assignment))
		if r := a.beat(); r.MemberEpoch != 3 {
			t.Fatalf("a after revoking: got epoch %d, want 3", r.MemberEpoch)
		}
		r = b.beat()
		if r.MemberEpoch != 3 || !r.HasAssignment || !disjointCover(foo, 4, a.owned, b.owned) {
			t.Fatalf("b after a revoked: got %+v; a owns %v, b owns %v", r, a.owned, b.owned)
		}
		if d := describe(t, c, md, "g"); d.State != Stable {
			t.Fatalf("group: got %s, want Stable", d.State)
		}
	})
}

func describeToList(ts []DescribedTopic) []TopicPartitions {
	out := make([]TopicPartitions, len(ts))
	for i, t := range ts {
		out[i] = TopicPartitions{TopicID: t.ID, Partitions: t.Partitions}
	}
	return out
}

// converge heartbeats the clients round-robin until none changes.
func converge(t *testing.T, cls ...*client) {
	t.Helper()
	for range 10 {
		changed := false
		for _, cl := range cls {
			before := cl.epoch
			r := cl.beat()
			changed = changed || r.HasAssignment || r.MemberEpoch != before
		}
		if !changed {
			return
		}
	}
	t.Fatal("the group did not converge in 10 rounds")
}

// TestMemberLeaves: a member leaving with epoch -1 bumps the group epoch
// and the other gets its partitions at its next heartbeat.
func TestMemberLeaves(t *testing.T) {
	run(t, testConfig(), nil, func(t *testing.T, c *Coordinator, md *fakeMetadata) {
		foo := md.add("foo", 4)
		a := newClient(t, c, md, "g", "a", "foo")
		b := newClient(t, c, md, "g", "b", "foo")
		a.join()
		b.join()
		converge(t, a, b)
		r := b.leave()
		if r.Err != nil || r.MemberID != "b" || r.MemberEpoch != LeaveEpoch {
			t.Fatalf("leave: got %+v, want b with epoch -1", r)
		}
		if d := describe(t, c, md, "g"); d.Epoch != 4 || d.State != Assigning || len(d.Members) != 1 {
			t.Fatalf("after the leave: got %+v, want Assigning at epoch 4 with one member", d)
		}
		r = a.beat()
		if r.MemberEpoch != 4 || !disjointCover(foo, 4, a.owned) {
			t.Fatalf("a: got %+v, owns %v; want all 4 at epoch 4", r, a.owned)
		}
		testenv.WantErr(t, "b's heartbeat after leaving", b.heartbeat().Err, kerr.UnknownMemberID)
		testenv.WantErr(t, "b leaving again", b.leave().Err, kerr.UnknownMemberID)
		// The last member leaves: Empty, epochs caught up.
		a.leave()
		if d := describe(t, c, md, "g"); d.State != Empty || d.Epoch != 5 || d.AssignmentEpoch != 5 {
			t.Fatalf("after the last leave: got %+v, want Empty at 5/5", d)
		}
	})
}

// TestSessionExpiry: a member that stops heartbeating is fenced after
// group.consumer.session.timeout.ms; the others take its partitions, and
// its next heartbeat is UNKNOWN_MEMBER_ID.
func TestSessionExpiry(t *testing.T) {
	run(t, testConfig(), nil, func(t *testing.T, c *Coordinator, md *fakeMetadata) {
		foo := md.add("foo", 4)
		a := newClient(t, c, md, "g", "a", "foo")
		b := newClient(t, c, md, "g", "b", "foo")
		a.join()
		b.join()
		converge(t, a, b)
		start := time.Now()
		for time.Since(start) < 44*time.Second {
			time.Sleep(4 * time.Second)
			a.beat()
		}
		if d := describe(t, c, md, "g"); len(d.Members) != 2 {
			t.Fatalf("b fenced before its session timeout: %+v", d)
		}
		time.Sleep(start.Add(45*time.Second + time.Millisecond).Sub(time.Now()))
		if d := describe(t, c, md, "g"); len(d.Members) != 1 {
			t.Fatalf("b not fenced after its session timeout: %+v", d)
		}
		a.beat()
		if !disjointCover(foo, 4, a.owned) {
			t.Fatalf("a owns %v, want all 4", a.owned)
		}
		testenv.WantErr(t, "b's heartbeat", b.heartbeat().Err, kerr.UnknownMemberID)
		b.join()
		converge(t, a, b)
		if !disjointCover(foo, 4, a.owned, b.owned) {
			t.Fatalf("after b rejoined: a %v, b %v", a.owned, b.owned)
		}
	})
}

// TestStaticMember: a static member leaving with epoch -2 keeps its
// partitions (no rebalance); its instance rejoining under a new member id
// gets them back at once. Its instance id cannot be taken while it is in
// use, its old member id is fenced, and a static member whose session
// expires after leaving gives its partitions up.
func TestStaticMember(t *testing.T) {
	run(t, testConfig(), nil, func(t *testing.T, c *Coordinator, md *fakeMetadata) {
		foo := md.add("foo", 4)
		inst := "instance-a"
		a := newClient(t, c, md, "g", "a1", "foo")
		a.instance = &inst
		b := newClient(t, c, md, "g", "b", "foo")
		a.join()
		b.join()
		converge(t, a, b)
		aParts := a.owned

		// The instance id is in use.
		dup := newClient(t, c, md, "g", "a2", "foo")
		dup.instance = &inst
		dup.epoch = 0
		testenv.WantErr(t, "a second member with a's instance id", dup.send(dup.request(true)).Err, kerr.UnreleasedInstanceID)

		r := a.leave()
		if r.Err != nil || r.MemberEpoch != StaticLeaveEpoch || r.MemberID != "a1" {
			t.Fatalf("static leave: got %+v", r)
		}
		d := describe(t, c, md, "g")
		if m := memberOf(t, d, "a1"); m.MemberEpoch != StaticLeaveEpoch || len(m.Assignment) == 0 {
			t.Fatalf("a after the static leave: got %+v, want epoch -2 with its partitions", m)
		}
		epoch := d.Epoch
		b.beat()
		if b.count() != 2 || describe(t, c, md, "g").Epoch != epoch {
			t.Fatalf("b got %v after a's static leave, want its 2 and no new epoch", b.owned)
		}

		// The instance comes back as a2 and takes over a1's partitions.
		a2 := newClient(t, c, md, "g", "a2", "foo")
		a2.instance = &inst
		r = a2.join()
		if r.MemberEpoch != epoch || !a2.owned.equal(aParts) {
			t.Fatalf("a2's join: got %+v owning %v, want epoch %d with %v", r, a2.owned, epoch, aParts)
		}
		d = describe(t, c, md, "g")
		if len(d.Members) != 2 || d.Epoch != epoch || d.State != Stable {
			t.Fatalf("after a2 joined: %+v", d)
		}
		// The old member id of the instance is fenced.
		a.epoch = epoch
		testenv.WantErr(t, "a1's heartbeat", a.heartbeat().Err, kerr.FencedInstanceID)

		// a2 leaves for now and does not come back: its session expires.
		a2.leave()
		for range 12 {
			time.Sleep(4 * time.Second)
			b.beat()
		}
		d = describe(t, c, md, "g")
		if len(d.Members) != 1 || !disjointCover(foo, 4, b.owned) {
			t.Fatalf("after a2's session expired: %+v, b owns %v", d, b.owned)
		}
	})
}

// TestFencing: epochs the coordinator does not expect are
// FENCED_MEMBER_EPOCH, except the previous epoch with owned partitions
// within the assignment (a lost response); a fenced member rejoins with
// its member id and epoch 0 and gets its assignment back.
func TestFencing(t *testing.T) {
	run(t, testConfig(), nil, func(t *testing.T, c *Coordinator, md *fakeMetadata) {
		md.add("foo", 4)
		a := newClient(t, c, md, "g", "a", "foo")
		b := newClient(t, c, md, "g", "b", "foo")
		a.join()
		b.join()
		converge(t, a, b) // a at epoch 3, previous 2

		a.epoch = 5
		testenv.WantErr(t, "a greater epoch", a.heartbeat().Err, kerr.FencedMemberEpoch)
		a.epoch = 0
		a.epoch = -5 + 5 // 0 rejoins, tested below
		a.epoch = 2
		a.owned = Assignment{}
		// The previous epoch passes only with the owned partitions given.
		req := a.request(false)
		req.Topics = nil
		testenv.WantErr(t, "the previous epoch without owned partitions", c.Heartbeat(req, md).Err, kerr.FencedMemberEpoch)
		r := a.heartbeat() // previous epoch, owning nothing: within
		if r.Err != nil || r.MemberEpoch != 3 {
			t.Fatalf("previous epoch with a subset: got %+v, want epoch 3", r)
		}
		a.epoch = 2
		b.epoch = 2 // b's previous epoch is 3: it is at 3 since its join
		testenv.WantErr(t, "a smaller epoch", b.heartbeat().Err, kerr.FencedMemberEpoch)
		// Rejoin in place with epoch 0 (KAFKA-19233).
		r = b.join()
		if r.MemberID != "b" || r.MemberEpoch != 3 || !r.HasAssignment || b.count() != 2 {
			t.Fatalf("b's rejoin: got %+v, owns %v", r, b.owned)
		}
		if d := describe(t, c, md, "g"); len(d.Members) != 2 || d.Epoch != 3 {
			t.Fatalf("after b rejoined: %+v, want the same 2 members at epoch 3", d)
		}
	})
}

// TestRebalanceTimeout: a member that never revokes what it must is fenced
// after its rebalance timeout, and the others then get its partitions.
func TestRebalanceTimeout(t *testing.T) {
	run(t, testConfig(), nil, func(t *testing.T, c *Coordinator, md *fakeMetadata) {
		foo := md.add("foo", 4)
		a := newClient(t, c, md, "g", "a", "foo")
		a.rebalance = 20_000
		b := newClient(t, c, md, "g", "b", "foo")
		a.join()
		a.stubborn = true
		b.join()
		a.beat() // told to revoke 2; it never does
		start := time.Now()
		for range 6 { // to 18 s
			time.Sleep(3 * time.Second)
			a.beat()
			b.beat()
			if b.count() != 0 {
				t.Fatalf("b got %v while a still owns everything", b.owned)
			}
		}
		time.Sleep(start.Add(20*time.Second + time.Millisecond).Sub(time.Now()))
		testenv.WantErr(t, "a's heartbeat after its rebalance timeout", a.heartbeat().Err, kerr.UnknownMemberID)
		b.beat()
		if !disjointCover(foo, 4, b.owned) {
			t.Fatalf("b owns %v, want all 4", b.owned)
		}
	})
}

// TestValidation: requests missing what a join needs are INVALID_REQUEST,
// with Kafka's messages; an unknown assignor UNSUPPORTED_ASSIGNOR; a
// heartbeat for a missing group GROUP_ID_NOT_FOUND; a bad regular
// expression INVALID_REGULAR_EXPRESSION; a full group
// GROUP_MAX_SIZE_REACHED.
func TestValidation(t *testing.T) {
	cfg := testConfig()
	cfg.MaxSize = 1
	run(t, cfg, nil, func(t *testing.T, c *Coordinator, md *fakeMetadata) {
		md.add("foo", 1)
		base := func() HeartbeatRequest {
			return HeartbeatRequest{Version: 1, Group: "g", MemberID: "m", RebalanceTimeoutMillis: 1000,
				SubscribedTopicNames: []string{"foo"}, Topics: []TopicPartitions{}}
		}
		s := func(v string) *string { return &v }
		for _, tc := range []struct {
			name string
			edit func(*HeartbeatRequest)
			want *kerr.Error
			msg  string
		}{
			{"no member id (v1)", func(r *HeartbeatRequest) { r.MemberID = "" }, kerr.InvalidRequest, "MemberId can't be empty."},
			{"blank group", func(r *HeartbeatRequest) { r.Group = " " }, kerr.InvalidRequest, "GroupId can't be empty."},
			{"empty instance id", func(r *HeartbeatRequest) { r.InstanceID = s("") }, kerr.InvalidRequest, "InstanceId can't be empty."},
			{"empty rack", func(r *HeartbeatRequest) { r.RackID = s("") }, kerr.InvalidRequest, "RackId can't be empty."},
			{"no rebalance timeout", func(r *HeartbeatRequest) { r.RebalanceTimeoutMillis = -1 }, kerr.InvalidRequest, "RebalanceTimeoutMs must be provided in first request."},
			{"owned partitions on join", func(r *HeartbeatRequest) { r.Topics = []TopicPartitions{{Partitions: []int32{0}}} }, kerr.InvalidRequest, "TopicPartitions must be empty when (re-)joining."},
			{"null owned partitions on join", func(r *HeartbeatRequest) { r.Topics = nil }, kerr.InvalidRequest, "TopicPartitions must be empty when (re-)joining."},
			{"no subscription", func(r *HeartbeatRequest) { r.SubscribedTopicNames = nil }, kerr.InvalidRequest, "Either SubscribedTopicNames or SubscribedTopicRegex must be non-null when (re-)joining."},
			{"static leave without instance", func(r *HeartbeatRequest) { r.MemberEpoch = -2 }, kerr.InvalidRequest, "InstanceId can't be null."},
			{"epoch -3", func(r *HeartbeatRequest) { r.MemberEpoch = -3 }, kerr.InvalidRequest, "MemberEpoch is invalid."},
			{"unknown assignor", func(r *HeartbeatRequest) { r.ServerAssignor = s("sticky") }, kerr.UnsupportedAssignor, "ServerAssignor sticky is not supported. Supported assignors: uniform, range."},
			{"missing group", func(r *HeartbeatRequest) { r.MemberEpoch = 3 }, kerr.GroupIDNotFound, "Consumer group g not found."},
			{"bad regex", func(r *HeartbeatRequest) { r.SubscribedTopicRegex = s("a(") }, kerr.InvalidRegularExpression, ""},
		} {
			req := base()
			tc.edit(&req)
			r := c.Heartbeat(req, md)
			testenv.WantErr(t, tc.name, r.Err, tc.want)
			if tc.msg != "" && r.Err.Error() != tc.msg {
				t.Errorf("%s: message %q, want %q", tc.name, r.Err, tc.msg)
			}
		}
		// No failed join left a group behind.
		if gs, _ := c.List(); len(gs) != 0 {
			t.Fatalf("groups after failed joins: %v", gs)
		}
		if r := c.Heartbeat(base(), md); r.Err != nil {
			t.Fatalf("a valid join: %v", r.Err)
		}
		other := base()
		other.MemberID = "n"
		testenv.WantErr(t, "a second member over group.consumer.max.size 1", c.Heartbeat(other, md).Err, kerr.GroupMaxSizeReached)
		// The size check comes first, as in Kafka: an unknown member of a
		// full group hears that it is full.
		unknown := base()
		unknown.MemberEpoch, unknown.MemberID = 1, "n"
		testenv.WantErr(t, "an unknown member of a full group", c.Heartbeat(unknown, md).Err, kerr.GroupMaxSizeReached)
		unknown.Group = "g2"
		c.Heartbeat(HeartbeatRequest{Version: 1, Group: "g2", MemberID: "x", RebalanceTimeoutMillis: 1000, SubscribedTopicNames: []string{}, Topics: []TopicPartitions{}}, md)
		c.Heartbeat(HeartbeatRequest{Version: 1, Group: "g2", MemberID: "x", MemberEpoch: -1}, md)
		testenv.WantErr(t, "an unknown member", c.Heartbeat(unknown, md).Err, kerr.UnknownMemberID)
	})
}

// TestMetadataChanges: new partitions, a deleted topic and a re-created
// one reach the group at the next heartbeat: the epoch is bumped and the
// assignment follows.
func TestMetadataChanges(t *testing.T) {
	run(t, testConfig(), nil, func(t *testing.T, c *Coordinator, md *fakeMetadata) {
		foo := md.add("foo", 2)
		md.add("bar", 2)
		a := newClient(t, c, md, "g", "a", "foo", "bar")
		a.join()
		if a.count() != 4 {
			t.Fatalf("a owns %v, want 4", a.owned)
		}
		md.setPartitions("foo", 4)
		r := a.beat()
		if r.MemberEpoch != 3 || a.count() != 6 || len(a.owned[foo]) != 4 {
			t.Fatalf("after CreatePartitions: got %+v, owns %v", r, a.owned)
		}
		md.remove("bar")
		a.beat() // revoke bar
		r = a.beat()
		if r.MemberEpoch != 4 || a.count() != 4 {
			t.Fatalf("after DeleteTopics: got %+v, owns %v", r, a.owned)
		}
		bar := md.add("bar", 1)
		a.beat()
		if r := a.beat(); r.MemberEpoch != 5 || len(a.owned[bar]) != 1 {
			t.Fatalf("after bar was created again: got %+v, owns %v", r, a.owned)
		}
		// Subscribing to a topic that does not exist yet is fine.
		a.topics = []string{"foo", "bar", "later"}
		a.send(a.request(true))
		converge(t, a)
		md.add("later", 2)
		converge(t, a)
		if a.count() != 7 {
			t.Fatalf("a owns %v, want foo, bar and later", a.owned)
		}
	})
}

// TestRegexSubscription: a member subscribed by regular expression gets
// the topics whose whole names match; a new matching topic joins the
// subscription at a heartbeat at most 10 s later.
func TestRegexSubscription(t *testing.T) {
	run(t, testConfig(), nil, func(t *testing.T, c *Coordinator, md *fakeMetadata) {
		md.add("orders-eu", 2)
		md.add("orders-us", 2)
		md.add("xorders-eu", 2)
		re := "orders-.*"
		a := newClient(t, c, md, "g", "a")
		a.regex = &re
		a.join()
		if a.count() != 4 {
			t.Fatalf("a owns %v, want the 4 partitions of orders-eu and orders-us", a.owned)
		}
		if m := memberOf(t, describe(t, c, md, "g"), "a"); m.SubscribedTopicRegex != re {
			t.Fatalf("described regex %q", m.SubscribedTopicRegex)
		}
		md.add("orders-asia", 2)
		a.beat()
		if a.count() != 4 {
			t.Fatalf("a owns %v before the refresh interval", a.owned)
		}
		time.Sleep(10 * time.Second)
		converge(t, a)
		if a.count() != 6 {
			t.Fatalf("a owns %v, want orders-asia too", a.owned)
		}
		if ts, found := c.SubscribedTopics("g"); !found || !ts["orders-asia"] || ts["xorders-eu"] {
			t.Fatalf("subscribed topics: %v", ts)
		}
	})
}

// TestRegexGroupEpoch: a regular expression bumps the group epoch as in
// Kafka 4.4: a new one only when what it matches changes the group's
// topics (a new one matching nothing leaves the epoch alone), one that
// another member subscribes to already and dropping one always.
func TestRegexGroupEpoch(t *testing.T) {
	run(t, testConfig(), nil, func(t *testing.T, c *Coordinator, md *fakeMetadata) {
		md.add("foo", 2)
		epoch := func(want int32) {
			t.Helper()
			if d := describe(t, c, md, "g"); d.Epoch != want || d.AssignmentEpoch != want {
				t.Fatalf("group at epoch %d, target %d; want %d", d.Epoch, d.AssignmentEpoch, want)
			}
		}
		none, fo, dropped := "nothing-.*", "fo+", ""
		a := newClient(t, c, md, "g", "a")
		a.regex = &none
		if r := a.join(); r.MemberEpoch != 1 {
			t.Fatalf("a joins at epoch %d, want 1 (matching nothing, no new epoch)", r.MemberEpoch)
		}
		epoch(1)
		b := newClient(t, c, md, "g", "b", "foo")
		b.regex = &fo
		b.join()
		epoch(2) // the names; fo+ adds nothing to them
		cl := newClient(t, c, md, "g", "c")
		cl.regex = &fo
		cl.join()
		epoch(3) // fo+ resolved already: a new epoch, as in Kafka
		converge(t, a, b, cl)
		req := b.request(false)
		req.SubscribedTopicRegex = &dropped
		if r := b.send(req); r.Err != nil || r.MemberEpoch != 4 {
			t.Fatalf("b drops its regex: %+v, want epoch 4", r)
		}
		epoch(4)
	})
}

// TestPreferredAssignorChange: a heartbeat that changes the server
// assignor most members prefer is a new group epoch, and the new target
// assignment is the new assignor's (hasPreferredServerAssignorChanged).
func TestPreferredAssignorChange(t *testing.T) {
	run(t, testConfig(), nil, func(t *testing.T, c *Coordinator, md *fakeMetadata) {
		md.add("foo", 2)
		rng := "range"
		a := newClient(t, c, md, "g", "a", "foo")
		a.join()
		req := a.request(false)
		req.ServerAssignor = &rng
		if r := a.send(req); r.Err != nil || r.MemberEpoch != 3 {
			t.Fatalf("switch to range: %+v, want epoch 3", r)
		}
		if d := describe(t, c, md, "g"); d.Epoch != 3 || d.AssignmentEpoch != 3 || d.Assignor != "range" {
			t.Fatalf("group: %+v, want epoch 3 with the range assignor", d)
		}
		// Naming the assignor the group prefers already changes nothing.
		req = a.request(false)
		req.ServerAssignor = &rng
		if r := a.send(req); r.Err != nil || r.MemberEpoch != 3 {
			t.Fatalf("range again: %+v, want epoch 3", r)
		}
	})
}

// TestRangeAssignor: members naming the range assignor get consecutive
// ranges, the same numbers of each co-partitioned topic.
func TestRangeAssignor(t *testing.T) {
	run(t, testConfig(), nil, func(t *testing.T, c *Coordinator, md *fakeMetadata) {
		foo := md.add("foo", 3)
		bar := md.add("bar", 3)
		rng := "range"
		a := newClient(t, c, md, "g", "a", "foo", "bar")
		b := newClient(t, c, md, "g", "b", "foo", "bar")
		a.assignor, b.assignor = &rng, &rng
		a.join()
		b.join()
		converge(t, a, b)
		if d := describe(t, c, md, "g"); d.Assignor != "range" {
			t.Fatalf("assignor: %s", d.Assignor)
		}
		want := func(cl *client, ps ...int32) {
			t.Helper()
			if !equalInts(cl.owned[foo], ps) || !equalInts(cl.owned[bar], ps) {
				t.Fatalf("%s owns %v, want %v of foo and bar", cl.id, cl.owned, ps)
			}
		}
		want(a, 0, 1)
		want(b, 2)
	})
}

func equalInts(a, b []int32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestEmptyGroupExpiry: an Empty group without offsets is deleted after
// the check interval; one with offsets stays, and Delete removes Empty
// groups only.
func TestEmptyGroupExpiry(t *testing.T) {
	cfg := testConfig()
	cfg.EmptyGroupCheckInterval = time.Minute
	run(t, cfg, nil, func(t *testing.T, c *Coordinator, md *fakeMetadata) {
		md.add("foo", 1)
		c.SetOffsetsProbe(func(g string) bool { return g == "kept" })
		for _, g := range []string{"gone", "kept"} {
			cl := newClient(t, c, md, g, "a", "foo")
			cl.join()
			if found, err := c.Delete(g); !found || err == nil {
				t.Fatalf("Delete %s with a member: found %v, err %v; want NON_EMPTY_GROUP", g, found, err)
			}
			cl.leave()
		}
		time.Sleep(time.Minute + time.Millisecond)
		if c.Exists("gone") || !c.Exists("kept") {
			t.Fatalf("after the check interval: gone exists %v, kept exists %v", c.Exists("gone"), c.Exists("kept"))
		}
		if found, err := c.Delete("kept"); !found || err != nil {
			t.Fatalf("Delete kept: found %v, err %v", found, err)
		}
		if found, _ := c.Delete("kept"); found {
			t.Fatal("kept found after Delete")
		}
	})
}

// fakeClassic is a classic coordinator holding some group ids.
type fakeClassic struct {
	empty, busy map[string]bool
}

func (f *fakeClassic) TakeOver(id string) (func(), error) {
	if f.busy[id] {
		return nil, grouperr.New(kerr.GroupIDNotFound, "busy")
	}
	delete(f.empty, id)
	return nil, nil
}

func (f *fakeClassic) Exists(id string) bool { return f.empty[id] || f.busy[id] }

// TestNamespace: a consumer group takes the id of an Empty classic group,
// not of one with members; the classic side takes the id of an Empty
// consumer group, not of one with members.
func TestNamespace(t *testing.T) {
	cl := &fakeClassic{empty: map[string]bool{"e": true}, busy: map[string]bool{"b": true}}
	run(t, testConfig(), cl, func(t *testing.T, c *Coordinator, md *fakeMetadata) {
		md.add("foo", 1)
		newClient(t, c, md, "e", "a", "foo").join()
		if cl.empty["e"] {
			t.Fatal("the Empty classic group e was not taken over")
		}
		r := newClient(t, c, md, "b", "a", "foo").send(newClient(t, c, md, "b", "a", "foo").request(true))
		testenv.WantErr(t, "joining over a classic group with members", r.Err, kerr.GroupIDNotFound)
		busy := newClient(t, c, md, "b", "a", "foo")
		busy.epoch = 1
		if r := busy.heartbeat(); r.Err == nil || r.Err.Error() != "Group b is not a consumer group." {
			t.Fatalf("heartbeat to a classic group: %v", r.Err)
		}
		created := false
		if err := c.ReleaseForClassic("e", func() { created = true }); err != ErrClassicConflict || created {
			t.Fatalf("ReleaseForClassic of a consumer group with members: %v, created %v", err, created)
		}
		x := newClient(t, c, md, "x", "a", "foo")
		x.join()
		x.leave()
		if err := c.ReleaseForClassic("x", func() { created = true }); err != nil || !created || c.Exists("x") {
			t.Fatalf("ReleaseForClassic of an Empty consumer group: %v, created %v, exists %v", err, created, c.Exists("x"))
		}
	})
}
