package streams

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// fakeTopics is a topic registry: names to partition counts.
type fakeTopics struct {
	mu sync.Mutex
	m  map[string]int32
}

func (f *fakeTopics) Partitions(name string) (int32, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	n, ok := f.m[name]
	return n, ok
}

func (f *fakeTopics) create(ts []TopicInfo) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, t := range ts {
		f.m[t.Name] = t.Partitions
	}
	return nil
}

// countTopology is what Kafka Streams sends for
// stream(in).groupBy(...).count(): subtopology 0 reads in and writes the
// repartition topic, subtopology 1 reads it and keeps a store.
func countTopology(epoch int32) *Topology {
	return &Topology{Epoch: epoch, Subtopologies: []Subtopology{
		{ID: "0", SourceTopics: []string{"in"}, RepartitionSinkTopics: []string{"app-rep"}},
		{ID: "1", RepartitionSourceTopics: []TopicInfo{{Name: "app-rep"}},
			StateChangelogTopics: []TopicInfo{{Name: "app-changelog", Configs: []TopicConfig{{"cleanup.policy", "compact"}}}},
			CopartitionGroups:    []CopartitionGroup{{RepartitionSourceTopics: []int16{0}}}},
	}}
}

func testConfig() Config {
	cfg := DefaultConfig()
	cfg.MinSessionTimeout, cfg.SessionTimeout = time.Second, 10*time.Second
	cfg.MinHeartbeatInterval, cfg.HeartbeatInterval = 100*time.Millisecond, time.Second
	cfg.InitialRebalanceDelay = 0
	return cfg
}

// harness runs f with a coordinator whose topics are "in" with 4
// partitions.
func harness(t *testing.T, cfg Config, f func(t *testing.T, c *Coordinator, topics *fakeTopics)) {
	synctest.Test(t, func(t *testing.T) {
		topics := &fakeTopics{m: map[string]int32{"in": 4}}
		c, err := New(cfg, WithTopicCreator(topics.create))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		f(t, c, topics)
	})
}

type testMember struct {
	t       *testing.T
	c       *Coordinator
	md      Metadata
	id, pid string
	epoch   int32
	owned   Tasks
	last    HeartbeatResponse
}

func newMember(t *testing.T, c *Coordinator, md Metadata, id, process string) *testMember {
	return &testMember{t: t, c: c, md: md, id: id, pid: process, owned: emptyTasks()}
}

// heartbeat sends a heartbeat as the Java client does: the topology and
// process on joining, the owned tasks always (a full heartbeat); it adopts
// the returned tasks at once (revoking is immediate here).
func (m *testMember) heartbeat() HeartbeatResponse {
	m.t.Helper()
	req := HeartbeatRequest{Group: "app", MemberID: m.id, MemberEpoch: m.epoch, RebalanceTimeoutMillis: 30000, EndpointInformationEpoch: -1}
	if m.epoch == 0 {
		req.Topology = countTopology(0)
		req.ProcessID = &m.pid
	} else {
		req.OwnedTasks = true
		req.ActiveTasks, req.StandbyTasks, req.WarmupTasks = m.owned.Active.List(), m.owned.Standby.List(), m.owned.Warmup.List()
	}
	r := m.c.Heartbeat(req, false, m.md)
	m.last = r
	if r.Err != nil {
		return r
	}
	m.epoch = r.MemberEpoch
	if r.HasTasks {
		m.owned = r.Tasks.clone()
	}
	return r
}

func (m *testMember) mustHeartbeat() HeartbeatResponse {
	m.t.Helper()
	r := m.heartbeat()
	if r.Err != nil {
		m.t.Fatalf("member %s heartbeat: %v", m.id, r.Err)
	}
	return r
}

func TestJoinCreatesInternalTopicsAndAssigns(t *testing.T) {
	harness(t, testConfig(), func(t *testing.T, c *Coordinator, topics *fakeTopics) {
		a := newMember(t, c, topics, "a", "p1")
		r := a.mustHeartbeat()
		if n, ok := topics.Partitions("app-rep"); !ok || n != 4 {
			t.Fatalf("repartition topic: %d %v, want 4 partitions", n, ok)
		}
		if n, ok := topics.Partitions("app-changelog"); !ok || n != 4 {
			t.Fatalf("changelog topic: %d %v, want 4 partitions", n, ok)
		}
		if len(r.Status) != 0 {
			t.Fatalf("status %v, want none", r.Status)
		}
		if !r.HasTasks || len(r.Tasks.Active) != 8 {
			t.Fatalf("tasks %v, want all 8 active", r.Tasks.Active)
		}
		if r.MemberEpoch != 2 || r.HeartbeatInterval != time.Second {
			t.Fatalf("epoch %d interval %v, want the first member of a new group at epoch 2, 1s", r.MemberEpoch, r.HeartbeatInterval)
		}
		d, err := c.Describe("app")
		if err != nil || d.State != Stable || len(d.Members) != 1 {
			t.Fatalf("describe: %+v %v", d, err)
		}
	})
}

func TestMissingSourceTopics(t *testing.T) {
	harness(t, testConfig(), func(t *testing.T, c *Coordinator, topics *fakeTopics) {
		topics.m = map[string]int32{}
		a := newMember(t, c, topics, "a", "p1")
		r := a.mustHeartbeat()
		if len(r.Status) != 1 || r.Status[0].Code != StatusMissingSourceTopics || r.Status[0].Detail != "Source topics in are missing." {
			t.Fatalf("status %+v", r.Status)
		}
		if len(r.Tasks.Active) != 0 {
			t.Fatalf("tasks without source topics: %v", r.Tasks.Active)
		}
		if d, _ := c.Describe("app"); d.State != NotReady {
			t.Fatalf("state %s, want NotReady", d.State)
		}
		// The topic appears: the next heartbeat assigns.
		topics.m["in"] = 2
		r = a.mustHeartbeat()
		if len(r.Status) != 0 || len(r.Tasks.Active) != 4 {
			t.Fatalf("after creating the source: status %+v tasks %v", r.Status, r.Tasks.Active)
		}
	})
}

func TestSecondMemberRevocationFirst(t *testing.T) {
	harness(t, testConfig(), func(t *testing.T, c *Coordinator, topics *fakeTopics) {
		a := newMember(t, c, topics, "a", "p1")
		a.mustHeartbeat()
		b := newMember(t, c, topics, "b", "p2")
		rb := b.mustHeartbeat()
		// b joins at the new target epoch but gets nothing a still owns.
		if len(rb.Tasks.Active) != 0 {
			t.Fatalf("b got %v while a still owns everything", rb.Tasks.Active)
		}
		epochA := a.epoch
		ra := a.mustHeartbeat()
		if ra.MemberEpoch != epochA || len(ra.Tasks.Active) != 4 {
			t.Fatalf("a must revoke half at its epoch: epoch %d (was %d) tasks %v", ra.MemberEpoch, epochA, ra.Tasks.Active)
		}
		if d, _ := c.Describe("app"); d.State != Reconciling {
			t.Fatalf("state %s, want Reconciling", d.State)
		}
		// a acknowledges (its owned tasks no longer list the revoked
		// ones) and moves to the target epoch.
		ra = a.mustHeartbeat()
		if ra.MemberEpoch <= epochA {
			t.Fatalf("a did not move on: epoch %d", ra.MemberEpoch)
		}
		rb = b.mustHeartbeat()
		if len(b.owned.Active) != 4 {
			t.Fatalf("b owns %v after the revocation, want 4 tasks", b.owned.Active)
		}
		for tk := range b.owned.Active {
			if a.owned.Active.has(tk) {
				t.Fatalf("task %v owned by both", tk)
			}
		}
		if d, _ := c.Describe("app"); d.State != Stable {
			t.Fatalf("state %s, want Stable", d.State)
		}
		// b leaves: a gets everything back.
		b.epoch = -1
		if r := b.heartbeat(); r.Err != nil || r.MemberEpoch != -1 {
			t.Fatalf("leave: %+v", r)
		}
		a.mustHeartbeat()
		if len(a.owned.Active) != 8 {
			t.Fatalf("a owns %d tasks after b left, want 8", len(a.owned.Active))
		}
	})
}

func TestSessionTimeoutFencesMember(t *testing.T) {
	harness(t, testConfig(), func(t *testing.T, c *Coordinator, topics *fakeTopics) {
		a := newMember(t, c, topics, "a", "p1")
		b := newMember(t, c, topics, "b", "p2")
		a.mustHeartbeat()
		b.mustHeartbeat()
		// a keeps heartbeating, b goes silent past the session timeout.
		for range 12 {
			time.Sleep(time.Second)
			a.mustHeartbeat()
		}
		synctest.Wait()
		if d, _ := c.Describe("app"); len(d.Members) != 1 || d.Members[0].MemberID != "a" {
			t.Fatalf("members after b timed out: %+v", d.Members)
		}
		if r := b.heartbeat(); !errors.Is(r.Err, kerr.UnknownMemberID) {
			t.Fatalf("heartbeat of a fenced member: %v", r.Err)
		}
		if len(a.owned.Active) != 8 {
			t.Fatalf("a owns %d tasks, want 8", len(a.owned.Active))
		}
	})
}

func TestRebalanceTimeoutFencesMemberThatDoesNotRevoke(t *testing.T) {
	harness(t, testConfig(), func(t *testing.T, c *Coordinator, topics *fakeTopics) {
		a := newMember(t, c, topics, "a", "p1")
		a.mustHeartbeat()
		b := newMember(t, c, topics, "b", "p2")
		b.mustHeartbeat()
		// a is told to revoke but keeps reporting every task.
		all := a.owned.clone()
		a.mustHeartbeat()
		for range 40 {
			a.owned = all.clone()
			if r := a.heartbeat(); r.Err != nil {
				if !errors.Is(r.Err, kerr.UnknownMemberID) {
					t.Fatalf("a: %v", r.Err)
				}
				return // fenced by its rebalance timeout
			}
			b.mustHeartbeat()
			time.Sleep(time.Second)
		}
		t.Fatal("a was never fenced for not revoking within its rebalance timeout")
	})
}

func TestEpochValidation(t *testing.T) {
	harness(t, testConfig(), func(t *testing.T, c *Coordinator, topics *fakeTopics) {
		a := newMember(t, c, topics, "a", "p1")
		a.mustHeartbeat()
		good := a.epoch
		a.epoch = good + 1
		if r := a.heartbeat(); !errors.Is(r.Err, kerr.FencedMemberEpoch) {
			t.Fatalf("greater epoch: %v", r.Err)
		}
		a.epoch = good
		// A group the broker does not know: groups survive restarts,
		// so it was deleted or never was (GROUP_ID_NOT_FOUND, as Kafka).
		if r := c.Heartbeat(HeartbeatRequest{Group: "nope", MemberID: "x", MemberEpoch: 1}, false, topics); !errors.Is(r.Err, kerr.GroupIDNotFound) {
			t.Fatalf("unknown group: %v", r.Err)
		}
		if r := c.Heartbeat(HeartbeatRequest{Group: "app", MemberID: "x", MemberEpoch: 1}, false, topics); !errors.Is(r.Err, kerr.UnknownMemberID) {
			t.Fatalf("unknown member: %v", r.Err)
		}
	})
}

func TestRequestValidation(t *testing.T) {
	pid := "p"
	empty := ""
	cases := []struct {
		name  string
		req   HeartbeatRequest
		regex bool
		want  *kerr.Error
		msg   string
	}{
		{"no member id", HeartbeatRequest{Group: "g", MemberEpoch: 0}, false, kerr.InvalidRequest, "MemberId can't be empty."},
		{"no group", HeartbeatRequest{MemberID: "m"}, false, kerr.InvalidRequest, "GroupId can't be empty."},
		{"empty instance", HeartbeatRequest{Group: "g", MemberID: "m", InstanceID: &empty}, false, kerr.InvalidRequest, "InstanceId can't be empty."},
		{"no rebalance timeout", HeartbeatRequest{Group: "g", MemberID: "m", RebalanceTimeoutMillis: -1, Topology: countTopology(0), ProcessID: &pid}, false, kerr.InvalidRequest, "RebalanceTimeoutMs must be provided in first request."},
		{"no topology", HeartbeatRequest{Group: "g", MemberID: "m", RebalanceTimeoutMillis: 1000, ProcessID: &pid}, false, kerr.InvalidRequest, "Topology must be non-null when (re-)joining."},
		{"tasks on join", HeartbeatRequest{Group: "g", MemberID: "m", RebalanceTimeoutMillis: 1000, Topology: countTopology(0), ProcessID: &pid,
			ActiveTasks: []SubtopologyTasks{{"0", []int32{0}}}}, false, kerr.InvalidRequest, "ActiveTasks must be empty when (re-)joining."},
		{"topology later", HeartbeatRequest{Group: "g", MemberID: "m", MemberEpoch: 3, Topology: countTopology(0)}, false, kerr.InvalidRequest, "Topology can only be provided when (re-)joining."},
		{"epoch -3", HeartbeatRequest{Group: "g", MemberID: "m", MemberEpoch: -3}, false, kerr.InvalidRequest, "MemberEpoch is -3, but must be greater than or equal to -2."},
		{"static leave without instance", HeartbeatRequest{Group: "g", MemberID: "m", MemberEpoch: -2}, false, kerr.InvalidRequest, "InstanceId can't be null."},
		{"regex", HeartbeatRequest{Group: "g", MemberID: "m"}, true, kerr.InvalidRequest, "Regular expressions for source topics are not supported yet."},
		{"changelog with partitions", HeartbeatRequest{Group: "g", MemberID: "m", RebalanceTimeoutMillis: 1000, ProcessID: &pid, Topology: &Topology{Subtopologies: []Subtopology{
			{ID: "0", SourceTopics: []string{"in"}, StateChangelogTopics: []TopicInfo{{Name: "c", Partitions: 3}}}}}},
			false, kerr.StreamsInvalidTopology, "Changelog topic c must have an undefined partition count, but it is set to 3."},
	}
	c, err := New(testConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, tc := range cases {
		r := c.Heartbeat(tc.req, tc.regex, &fakeTopics{m: map[string]int32{}})
		if !errors.Is(r.Err, tc.want) || r.Err.Error() != tc.msg {
			t.Errorf("%s: %v, want %s %q", tc.name, r.Err, tc.want.Message, tc.msg)
		}
	}
}

func TestStaticMemberRejoinsWithoutRebalance(t *testing.T) {
	harness(t, testConfig(), func(t *testing.T, c *Coordinator, topics *fakeTopics) {
		inst := "i1"
		a := newMember(t, c, topics, "a", "p1")
		join := func(id string) HeartbeatResponse {
			return c.Heartbeat(HeartbeatRequest{Group: "app", MemberID: id, InstanceID: &inst, RebalanceTimeoutMillis: 1000,
				Topology: countTopology(0), ProcessID: &a.pid}, false, topics)
		}
		r := join("a")
		if r.Err != nil {
			t.Fatal(r.Err)
		}
		tasks := r.Tasks.Active
		d0, _ := c.Describe("app")
		if r := join("a2"); !errors.Is(r.Err, kerr.UnreleasedInstanceID) {
			t.Fatalf("instance in use: %v", r.Err)
		}
		if r := c.Heartbeat(HeartbeatRequest{Group: "app", MemberID: "a", InstanceID: &inst, MemberEpoch: -2}, false, topics); r.Err != nil || r.MemberEpoch != -2 {
			t.Fatalf("static leave: %+v", r)
		}
		r = join("a2")
		if r.Err != nil || !r.Tasks.Active.equal(tasks) {
			t.Fatalf("rejoin: %v tasks %v, want %v", r.Err, r.Tasks.Active, tasks)
		}
		d1, _ := c.Describe("app")
		if d1.Epoch != d0.Epoch || len(d1.Members) != 1 || d1.Members[0].MemberID != "a2" {
			t.Fatalf("rejoin changed the group: epoch %d -> %d, members %+v", d0.Epoch, d1.Epoch, d1.Members)
		}
	})
}

func TestValidateCommit(t *testing.T) {
	harness(t, testConfig(), func(t *testing.T, c *Coordinator, topics *fakeTopics) {
		if found, _ := c.ValidateCommit("app", "a", 1, false, 9, nil); found {
			t.Fatal("no group yet, found")
		}
		a := newMember(t, c, topics, "a", "p1")
		a.mustHeartbeat()
		for _, tc := range []struct {
			member        string
			epoch         int32
			transactional bool
			version       int16
			want          error
		}{
			{"a", a.epoch, false, 9, nil},
			{"a", a.epoch + 1, false, 9, kerr.StaleMemberEpoch},
			{"a", a.epoch + 1, true, 3, kerr.IllegalGeneration},
			{"a", a.epoch, false, 8, kerr.UnsupportedVersion},
			{"x", a.epoch, false, 9, kerr.UnknownMemberID},
		} {
			found, err := c.ValidateCommit("app", tc.member, tc.epoch, tc.transactional, tc.version, nil)
			if !found || !errors.Is(err, tc.want) && !(tc.want == nil && err == nil) {
				t.Errorf("commit %+v: %v %v", tc, found, err)
			}
		}
		if found, err := c.ValidateFetch("app", nil, -1); !found || err != nil {
			t.Fatalf("admin fetch: %v", err)
		}
		if _, err := c.Delete("app"); !errors.Is(err, kerr.NonEmptyGroup) {
			t.Fatalf("delete with members: %v", err)
		}
		a.epoch = -1
		a.mustHeartbeat()
		if found, err := c.Delete("app"); !found || err != nil {
			t.Fatalf("delete empty: %v %v", found, err)
		}
		if c.Has("app") {
			t.Fatal("deleted group still there")
		}
	})
}

func TestConfigure(t *testing.T) {
	md := &fakeTopics{m: map[string]int32{"a": 3, "b": 3, "c": 5}}
	join := &Topology{Subtopologies: []Subtopology{{
		ID: "0", SourceTopics: []string{"a", "c"},
		CopartitionGroups: []CopartitionGroup{{SourceTopics: []int16{0, 1}}},
	}}}
	if c := configure(join, md); c.status == nil || c.status.Code != StatusIncorrectlyPartitionedTopics {
		t.Fatalf("copartitioned topics of 3 and 5 partitions: %+v", c.status)
	}
	join.Subtopologies[0].SourceTopics = []string{"a", "b"}
	if c := configure(join, md); c.status != nil || c.tasks["0"] != 3 {
		t.Fatalf("copartitioned 3 and 3: %+v %v", c.status, c.tasks)
	}
	// A fixed repartition count wins; the changelog follows the tasks.
	fixed := &Topology{Subtopologies: []Subtopology{
		{ID: "0", SourceTopics: []string{"c"}, RepartitionSinkTopics: []string{"r"}},
		{ID: "1", RepartitionSourceTopics: []TopicInfo{{Name: "r", Partitions: 2}}, StateChangelogTopics: []TopicInfo{{Name: "ch"}}},
	}}
	c := configure(fixed, md)
	if c.tasks["0"] != 5 || c.tasks["1"] != 2 || len(c.missing) != 2 || c.missing[0].Name != "ch" || c.missing[0].Partitions != 2 ||
		c.missing[1].Name != "r" || c.missing[1].Partitions != 2 || c.status == nil || c.status.Code != StatusMissingInternalTopics {
		t.Fatalf("fixed repartition: %+v", c)
	}
	// An existing changelog with the wrong count.
	md.m["ch"] = 7
	if c := configure(fixed, md); c.status == nil || c.status.Code != StatusIncorrectlyPartitionedTopics ||
		c.status.Detail != "Existing topic ch has different number of partitions: expected 2, found 7" {
		t.Fatalf("mispartitioned changelog: %+v", c.status)
	}
}

func TestAssignorBalancedAndSticky(t *testing.T) {
	tasks := map[string]int32{"0": 5, "1": 5}
	spec := assignSpec{tasks: tasks, stateful: map[string]bool{"1": true}, numStandby: 1}
	for i := range 3 {
		spec.members = append(spec.members, assignMember{id: fmt.Sprint("m", i), process: fmt.Sprint("p", i), prev: emptyTasks()})
	}
	out := assign(spec)
	total := 0
	for id, ts := range out {
		n := len(ts.Active)
		if n < 3 || n > 4 {
			t.Errorf("%s has %d active tasks, want 3 or 4 of 10", id, n)
		}
		total += n
		for tk := range ts.Standby {
			if ts.Active.has(tk) {
				t.Errorf("%s has %v both active and standby", id, tk)
			}
			if tk.Subtopology != "1" {
				t.Errorf("standby of stateless task %v", tk)
			}
		}
	}
	if total != 10 {
		t.Fatalf("%d active tasks assigned, want 10", total)
	}
	standbys := 0
	for _, ts := range out {
		standbys += len(ts.Standby)
	}
	if standbys != 5 {
		t.Fatalf("%d standbys, want one per stateful task (5)", standbys)
	}
	// Sticky: with the same members, the same assignment.
	for i := range spec.members {
		spec.members[i].prev = out[spec.members[i].id]
	}
	again := assign(spec)
	for id := range out {
		if !again[id].Active.equal(out[id].Active) {
			t.Fatalf("%s moved: %v -> %v", id, out[id].Active, again[id].Active)
		}
	}
	// A fourth member takes tasks; the others keep what they still have.
	spec.members = append(spec.members, assignMember{id: "m3", process: "p3", prev: emptyTasks()})
	four := assign(spec)
	moved := 0
	for id, ts := range out {
		for tk := range ts.Active {
			if !four[id].Active.has(tk) {
				moved++
			}
		}
	}
	if n := len(four["m3"].Active); n < 2 || n > 3 || moved != n {
		t.Fatalf("new member got %d tasks, %d moved: the others must give up only what it takes", n, moved)
	}
}

func TestAssignorStandbysNeedOtherProcesses(t *testing.T) {
	spec := assignSpec{tasks: map[string]int32{"0": 2}, stateful: map[string]bool{"0": true}, numStandby: 1}
	// Two members of one process: nowhere to put a standby.
	spec.members = []assignMember{{id: "a", process: "p", prev: emptyTasks()}, {id: "b", process: "p", prev: emptyTasks()}}
	for id, ts := range assign(spec) {
		if len(ts.Standby) != 0 {
			t.Fatalf("%s got standbys %v on the active copy's process", id, ts.Standby)
		}
	}
}

// TestInitialRebalanceDelay: a new group's first target waits for the
// initial rebalance delay, then covers every member that joined in it.
func TestInitialRebalanceDelay(t *testing.T) {
	cfg := testConfig()
	cfg.InitialRebalanceDelay = 3 * time.Second
	harness(t, cfg, func(t *testing.T, c *Coordinator, topics *fakeTopics) {
		a := newMember(t, c, topics, "a", "p1")
		r := a.mustHeartbeat()
		if len(r.Status) != 1 || r.Status[0].Code != StatusAssignmentDelayed || len(r.Tasks.Active) != 0 {
			t.Fatalf("first heartbeat: status %+v tasks %v", r.Status, r.Tasks.Active)
		}
		// Kafka 4.4: the join bumps the group to epoch 2, and until the
		// delay ends the members stay at the new group's empty target of
		// epoch 1.
		if d, _ := c.Describe("app"); d.State != Assigning || d.Epoch != 2 || d.TargetEpoch != 1 || r.MemberEpoch != 1 {
			t.Fatalf("delayed group: %s epoch %d target %d member %d, want Assigning 2, target 1, member 1", d.State, d.Epoch, d.TargetEpoch, r.MemberEpoch)
		}
		b := newMember(t, c, topics, "b", "p2")
		b.mustHeartbeat()
		time.Sleep(3 * time.Second)
		synctest.Wait()
		// The delay's end computes the target at the group epoch the
		// joins reached, without a bump of its own.
		if d, _ := c.Describe("app"); d.Epoch != 3 || d.TargetEpoch != 3 {
			t.Fatalf("after the delay: epoch %d target %d, want both 3", d.Epoch, d.TargetEpoch)
		}
		a.mustHeartbeat()
		b.mustHeartbeat()
		if len(a.last.Status) != 0 || len(a.owned.Active) != 4 || len(b.owned.Active) != 4 {
			t.Fatalf("after the delay: status %+v, a %d tasks, b %d: one rebalance for both", a.last.Status, len(a.owned.Active), len(b.owned.Active))
		}
	})
}
