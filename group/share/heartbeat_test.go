package share

import (
	"errors"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// fakeTopics is a topic registry for tests.
type fakeTopics map[string]Topic

func (f fakeTopics) TopicByName(name string) (Topic, bool) { t, ok := f[name]; return t, ok }

func (f fakeTopics) TopicByID(id TopicID) (Topic, bool) {
	for _, t := range f {
		if t.ID == id {
			return t, true
		}
	}
	return Topic{}, false
}

func testCoordinator(t *testing.T, edit func(*Config)) *Coordinator {
	t.Helper()
	cfg := DefaultConfig()
	if edit != nil {
		edit(&cfg)
	}
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

func count(a []TopicPartitions) int {
	n := 0
	for _, tp := range a {
		n += len(tp.Partitions)
	}
	return n
}

func TestHeartbeatSplitsPartitions(t *testing.T) {
	c := testCoordinator(t, nil)
	md := fakeTopics{"q": {Name: "q", ID: TopicID{1}, Partitions: 5}}
	a := c.Heartbeat(HeartbeatRequest{Group: "g", MemberID: "a", SubscribedTopicNames: []string{"q"}}, md)
	if a.Err != nil || !a.HasAssignment || count(a.Assignment) != 5 || a.MemberEpoch != 2 {
		t.Fatalf("a joins: %+v", a)
	}
	b := c.Heartbeat(HeartbeatRequest{Group: "g", MemberID: "b", SubscribedTopicNames: []string{"q"}}, md)
	if b.Err != nil || count(b.Assignment) < 2 || b.MemberEpoch != 3 {
		t.Fatalf("b joins: %+v", b)
	}
	// An epoch from the future is fenced; a is still at epoch 2 until it
	// heartbeats (Kafka's members move to the new epoch one by one).
	if r := c.Heartbeat(HeartbeatRequest{Group: "g", MemberID: "a", MemberEpoch: 7}, md); !errors.Is(r.Err, kerr.FencedMemberEpoch) {
		t.Fatalf("wrong epoch: %+v", r)
	}
	if d, _ := c.Describe("g"); d.Members[0].MemberEpoch != 2 || d.Members[1].MemberEpoch != 3 {
		t.Fatalf("epochs before a heartbeats: %+v", d.Members)
	}
	r := c.Heartbeat(HeartbeatRequest{Group: "g", MemberID: "a", MemberEpoch: 2}, md)
	if r.Err != nil || !r.HasAssignment || r.MemberEpoch != 3 || !r.Changed || count(r.Assignment)+count(b.Assignment) != 5 {
		t.Fatalf("a hears its new share: %+v (b has %v)", r, b.Assignment)
	}
	// The answer that moved a to epoch 3 may have been lost: its
	// previous epoch is accepted and answered with the assignment.
	if r := c.Heartbeat(HeartbeatRequest{Group: "g", MemberID: "a", MemberEpoch: 2}, md); r.Err != nil || r.MemberEpoch != 3 || !r.HasAssignment || r.Changed {
		t.Fatalf("a at its previous epoch: %+v", r)
	}
	if r := c.Heartbeat(HeartbeatRequest{Group: "g", MemberID: "a", MemberEpoch: 0}, md); !errors.Is(r.Err, kerr.InvalidRequest) {
		t.Fatalf("rejoin without topics: %+v", r)
	}
	// Nothing changed: no assignment in the answer.
	if r := c.Heartbeat(HeartbeatRequest{Group: "g", MemberID: "a", MemberEpoch: 3}, md); r.Err != nil || r.HasAssignment || r.Changed {
		t.Fatalf("steady heartbeat: %+v", r)
	}
	// More members than partitions: every member gets one, shared.
	md["q"] = Topic{Name: "q", ID: TopicID{1}, Partitions: 1}
	for _, id := range []string{"a", "b"} {
		if r := c.Heartbeat(HeartbeatRequest{Group: "g", MemberID: id, MemberEpoch: 0, SubscribedTopicNames: []string{"q"}}, md); r.Err != nil || count(r.Assignment) != 1 {
			t.Fatalf("%s with one partition: %+v", id, r)
		}
	}
	if r := c.Heartbeat(HeartbeatRequest{Group: "g", MemberID: "a", MemberEpoch: LeaveEpoch}, md); r.Err != nil || r.MemberEpoch != LeaveEpoch {
		t.Fatalf("leave: %+v", r)
	}
	if d, _ := c.Describe("g"); len(d.Members) != 1 || d.State != StateStable {
		t.Fatalf("after a left: %+v", d)
	}
}

func TestHeartbeatValidation(t *testing.T) {
	c := testCoordinator(t, nil)
	c.taken = func(g string) bool { return g == "classic" }
	md := fakeTopics{}
	for _, tc := range []struct {
		req  HeartbeatRequest
		want *kerr.Error
	}{
		{HeartbeatRequest{MemberID: "a", SubscribedTopicNames: []string{"q"}}, kerr.InvalidRequest},
		{HeartbeatRequest{Group: "g", SubscribedTopicNames: []string{"q"}}, kerr.InvalidRequest},
		{HeartbeatRequest{Group: "g", MemberID: "a"}, kerr.InvalidRequest},
		{HeartbeatRequest{Group: "g", MemberID: "a", MemberEpoch: -2}, kerr.InvalidRequest},
		{HeartbeatRequest{Group: "g", MemberID: "a", MemberEpoch: 3}, kerr.GroupIDNotFound},
		{HeartbeatRequest{Group: "classic", MemberID: "a", SubscribedTopicNames: []string{"q"}}, kerr.GroupIDNotFound},
	} {
		if r := c.Heartbeat(tc.req, md); !errors.Is(r.Err, tc.want) {
			t.Errorf("%+v: %v, want %v", tc.req, r.Err, tc.want)
		}
	}
}

// TestSessionExpiryReleases has a member stop heartbeating: at its session
// timeout it leaves the group and its acquired records are available
// again at once.
func TestSessionExpiryReleases(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := testCoordinator(t, func(cfg *Config) { cfg.SessionTimeout, cfg.HeartbeatInterval = time.Second, 100*time.Millisecond })
		md := fakeTopics{"q": {Name: "q", ID: TopicID{1}, Partitions: 1}}
		c.Heartbeat(HeartbeatRequest{Group: "g", MemberID: "a", SubscribedTopicNames: []string{"q"}}, md)
		p := c.Partition(Key{Group: "g", TopicID: TopicID{1}}, func(bool) int64 { return 0 })
		if got := p.Acquire(nil, "a", 0, 3, 500, time.Hour, time.Now()); len(got) != 1 {
			t.Fatalf("acquired %v", got)
		}
		time.Sleep(2 * time.Second)
		synctest.Wait()
		if d, _ := c.Describe("g"); len(d.Members) != 0 || d.State != StateEmpty {
			t.Fatalf("after the session timeout: %+v", d)
		}
		if got := p.Acquire(nil, "b", 0, 3, 500, time.Hour, time.Now()); len(got) != 1 || got[0].DeliveryCount != 2 {
			t.Fatalf("b acquired %v, want a's released records", got)
		}
	})
}

func TestSessions(t *testing.T) {
	c := testCoordinator(t, func(cfg *Config) { cfg.MaxSessions = 1 })
	tp := TopicIDPartition{TopicID{1}, 0}
	if _, err := c.Session(SessionRequest{Group: "g", Member: "a", Epoch: 1, Fetch: true}); !errors.Is(err, kerr.ShareSessionNotFound) {
		t.Fatalf("no session: %v", err)
	}
	if parts, err := c.Session(SessionRequest{Group: "g", Member: "a", Epoch: 0, Add: []TopicIDPartition{tp}, Fetch: true}); err != nil || len(parts) != 1 {
		t.Fatalf("open: %v %v", parts, err)
	}
	if _, err := c.Session(SessionRequest{Group: "g", Member: "b", Epoch: 0, Fetch: true}); !errors.Is(err, kerr.ShareSessionLimitReached) {
		t.Fatalf("second session over the limit: %v", err)
	}
	if _, err := c.Session(SessionRequest{Group: "g", Member: "a", Epoch: 2, Fetch: true}); !errors.Is(err, kerr.InvalidShareSessionEpoch) {
		t.Fatalf("skipped epoch: %v", err)
	}
	if parts, err := c.Session(SessionRequest{Group: "g", Member: "a", Epoch: 1, Forget: []TopicIDPartition{tp}}); err != nil || len(parts) != 0 {
		t.Fatalf("forget: %v %v", parts, err)
	}
	if _, err := c.Session(SessionRequest{Group: "g", Member: "a", Epoch: 0}); !errors.Is(err, kerr.InvalidShareSessionEpoch) {
		t.Fatalf("ShareAcknowledge opening a session: %v", err)
	}
	if _, err := c.Session(SessionRequest{Group: "g", Member: "a", Epoch: FinalSessionEpoch}); err != nil {
		t.Fatalf("close: %v", err)
	}
	if _, err := c.Session(SessionRequest{Group: "g", Member: "a", Epoch: 3}); !errors.Is(err, kerr.ShareSessionNotFound) {
		t.Fatalf("after close: %v", err)
	}
}

func TestDeleteTopicDropsStates(t *testing.T) {
	c := testCoordinator(t, nil)
	k1 := Key{Group: "g", TopicID: TopicID{1}}
	k2 := Key{Group: "g", TopicID: TopicID{2}}
	c.Partition(k1, func(bool) int64 { return 0 })
	c.Partition(k2, func(bool) int64 { return 0 })
	done := make(chan error, 1)
	c.DeleteTopic(TopicID{1}, func(err error) { done <- err })
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if c.Existing(k1) != nil || c.Existing(k2) == nil {
		t.Fatalf("after deleting topic 1: %v %v", c.Existing(k1), c.Existing(k2))
	}
}

// TestRecordRestore takes a group's record and restores it in a new
// coordinator: the members come back with their epochs and assignments,
// heartbeat at their epochs without rejoining and without a new
// assignment; a record whose topics do not match its hash has them
// recomputed at the next heartbeat.
func TestRecordRestore(t *testing.T) {
	c := testCoordinator(t, nil)
	md := fakeTopics{"q": {Name: "q", ID: TopicID{1}, Partitions: 4}}
	rack := "r1"
	c.Heartbeat(HeartbeatRequest{Group: "g", MemberID: "a", Rack: &rack, SubscribedTopicNames: []string{"q"}, ClientID: "ca", ClientHost: "/h"}, md)
	b := c.Heartbeat(HeartbeatRequest{Group: "g", MemberID: "b", SubscribedTopicNames: []string{"q"}, ClientID: "cb", ClientHost: "/h"}, md)
	rec, ok := c.Record("g")
	if !ok || rec.Epoch != 3 || rec.AssignmentEpoch != 3 || len(rec.Members) != 2 || len(rec.Topics) != 1 ||
		rec.Members[0].Epoch != 2 || rec.Members[1].Epoch != 3 || rec.Members[1].PreviousEpoch != 0 || rec.Members[0].Rack != "r1" {
		t.Fatalf("record %+v", rec)
	}
	before, _ := c.Describe("g")

	d := testCoordinator(t, nil)
	d.Restore(rec)
	after, _ := d.Describe("g")
	if fmt.Sprint(after) != fmt.Sprint(before) {
		t.Fatalf("restored %+v, want %+v", after, before)
	}
	r := d.Heartbeat(HeartbeatRequest{Group: "g", MemberID: "b", MemberEpoch: b.MemberEpoch, ClientID: "cb", ClientHost: "/h"}, md)
	if r.Err != nil || r.MemberEpoch != 3 || r.HasAssignment || r.Changed {
		t.Fatalf("b after the restore: %+v", r)
	}
	r = d.Heartbeat(HeartbeatRequest{Group: "g", MemberID: "a", MemberEpoch: 2, ClientID: "ca", ClientHost: "/h"}, md)
	if r.Err != nil || r.MemberEpoch != 3 || !r.HasAssignment || count(r.Assignment)+count(b.Assignment) != 4 {
		t.Fatalf("a after the restore: %+v", r)
	}
	if _, ok := d.Record("nope"); ok {
		t.Fatal("record of a group that does not exist")
	}

	rec.MetadataHash++
	e := testCoordinator(t, nil)
	e.Restore(rec)
	if r := e.Heartbeat(HeartbeatRequest{Group: "g", MemberID: "b", MemberEpoch: 3, ClientID: "cb", ClientHost: "/h"}, md); r.Err != nil || r.MemberEpoch != 4 || !r.Changed {
		t.Fatalf("b after restoring a record with a wrong hash: %+v", r)
	}
}
