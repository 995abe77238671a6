package consumer

import (
	"maps"
	"slices"
	"sync"
	"testing"
	"testing/synctest"

	"go.uber.org/goleak"

	"github.com/kbroker/kbroker/internal/testenv"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, testenv.LeakOptions()...)
}

// fakeMetadata is a topic registry for tests.
type fakeMetadata struct {
	mu     sync.Mutex
	topics map[string]Topic
	next   byte
}

func newMetadata() *fakeMetadata { return &fakeMetadata{topics: map[string]Topic{}} }

// add creates (or re-creates, with a new id) topic name.
func (f *fakeMetadata) add(name string, partitions int32) TopicID {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.next++
	id := TopicID{f.next}
	f.topics[name] = Topic{Name: name, ID: id, Partitions: partitions}
	return id
}

func (f *fakeMetadata) setPartitions(name string, n int32) {
	f.mu.Lock()
	defer f.mu.Unlock()
	t := f.topics[name]
	t.Partitions = n
	f.topics[name] = t
}

func (f *fakeMetadata) remove(name string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.topics, name)
}

func (f *fakeMetadata) TopicByName(name string) (Topic, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	t, ok := f.topics[name]
	return t, ok
}

func (f *fakeMetadata) TopicByID(id TopicID) (Topic, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, t := range f.topics {
		if t.ID == id {
			return t, true
		}
	}
	return Topic{}, false
}

func (f *fakeMetadata) TopicNames() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Sorted(maps.Keys(f.topics))
}

// testConfig is Kafka's defaults.
func testConfig() Config { return DefaultConfig() }

// run runs f in a synctest bubble with a fresh coordinator of cfg and
// classic (may be nil), closed at the end.
func run(t *testing.T, cfg Config, classic Classic, f func(t *testing.T, c *Coordinator, md *fakeMetadata)) {
	t.Helper()
	synctest.Test(t, func(t *testing.T) {
		var opts []Option
		if classic != nil {
			opts = append(opts, WithClassic(classic))
		}
		c, err := New(cfg, opts...)
		if err != nil {
			t.Fatalf("New: %v", err)
		}
		t.Cleanup(c.Close)
		f(t, c, newMetadata())
	})
}

// client plays one member: it remembers its id and epoch and, like a real
// client, owns what the last assignment gave it (revoking at once) unless
// stubborn, when it never gives anything up.
type client struct {
	t        *testing.T
	c        *Coordinator
	md       *fakeMetadata
	group    string
	id       string
	epoch    int32
	instance *string
	topics   []string
	regex    *string
	assignor *string
	// rebalance is the rebalance timeout in ms.
	rebalance int32
	owned     Assignment
	stubborn  bool
	version   int16
}

func newClient(t *testing.T, c *Coordinator, md *fakeMetadata, group, id string, topics ...string) *client {
	return &client{t: t, c: c, md: md, group: group, id: id, topics: topics, rebalance: 60_000, owned: Assignment{}, version: 1}
}

// request builds a heartbeat; full sends every field, as a join does.
func (cl *client) request(full bool) HeartbeatRequest {
	req := HeartbeatRequest{
		Version: cl.version, Group: cl.group, MemberID: cl.id, MemberEpoch: cl.epoch,
		RebalanceTimeoutMillis: -1, ClientID: "client-" + cl.id, ClientHost: "/10.0.0.1",
		Topics: cl.owned.list(),
	}
	if full {
		req.InstanceID = cl.instance
		req.RebalanceTimeoutMillis = cl.rebalance
		req.SubscribedTopicNames = cl.topics
		if req.SubscribedTopicNames == nil && cl.regex == nil {
			req.SubscribedTopicNames = []string{}
		}
		req.SubscribedTopicRegex = cl.regex
		req.ServerAssignor = cl.assignor
	} else if cl.instance != nil {
		req.InstanceID = cl.instance
	}
	return req
}

// send sends req and applies a successful response.
func (cl *client) send(req HeartbeatRequest) HeartbeatResponse {
	cl.t.Helper()
	r := cl.c.Heartbeat(req, cl.md)
	if r.Err != nil {
		return r
	}
	cl.id, cl.epoch = r.MemberID, r.MemberEpoch
	if r.HasAssignment && !cl.stubborn {
		cl.owned = assignmentOf(r.Assignment)
	}
	return r
}

// join joins (or rejoins) with epoch 0 and must succeed.
func (cl *client) join() HeartbeatResponse {
	cl.t.Helper()
	cl.epoch = 0
	cl.owned = Assignment{}
	r := cl.send(cl.request(true))
	if r.Err != nil {
		cl.t.Fatalf("%s joins: %v", cl.id, r.Err)
	}
	return r
}

// heartbeat sends a regular heartbeat with what the member owns.
func (cl *client) heartbeat() HeartbeatResponse {
	cl.t.Helper()
	return cl.send(cl.request(false))
}

// beat heartbeats and fails the test on an error.
func (cl *client) beat() HeartbeatResponse {
	cl.t.Helper()
	r := cl.heartbeat()
	if r.Err != nil {
		cl.t.Fatalf("%s heartbeats: %v", cl.id, r.Err)
	}
	return r
}

func (cl *client) leave() HeartbeatResponse {
	cl.t.Helper()
	req := cl.request(false)
	req.MemberEpoch = LeaveEpoch
	if cl.instance != nil {
		req.MemberEpoch = StaticLeaveEpoch
	}
	return cl.c.Heartbeat(req, cl.md)
}

// count is the number of partitions the client owns.
func (cl *client) count() int { return cl.owned.size() }

// describe returns the group's description and fails on an error.
func describe(t *testing.T, c *Coordinator, md Metadata, group string) Description {
	t.Helper()
	d, err := c.Describe(group, md)
	if err != nil {
		t.Fatalf("Describe %s: %v", group, err)
	}
	return d
}

// memberOf returns member id's description.
func memberOf(t *testing.T, d Description, id string) MemberDescription {
	t.Helper()
	for _, m := range d.Members {
		if m.MemberID == id {
			return m
		}
	}
	t.Fatalf("member %s not in %+v", id, d)
	return MemberDescription{}
}

// disjointCover reports whether the assignments split partitions 0..n-1
// of topic id between them, each differing in size by at most one.
func disjointCover(id TopicID, n int32, as ...Assignment) bool {
	seen := map[int32]bool{}
	lo, hi := int(n), 0
	for _, a := range as {
		lo, hi = min(lo, a.size()), max(hi, a.size())
		for _, p := range a[id] {
			if seen[p] {
				return false
			}
			seen[p] = true
		}
	}
	return len(seen) == int(n) && hi-lo <= 1
}
