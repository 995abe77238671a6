package group

import (
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"go.uber.org/goleak"

	"github.com/kbroker/kbroker/internal/testenv"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, testenv.LeakOptions()...)
}

// Test timeouts: short, explicit, never the clients' production defaults.
const (
	testSession   = 10 * time.Second
	testRebalance = 30 * time.Second
)

// testConfig is Kafka's defaults without the initial rebalance delay.
func testConfig() Config {
	cfg := DefaultConfig()
	cfg.InitialRebalanceDelay = 0
	return cfg
}

// newTestCoordinator returns a coordinator closed at the end of the test.
// Inside a synctest bubble, call it inside the bubble.
func newTestCoordinator(t *testing.T, cfg Config, opts ...Option) *Coordinator {
	t.Helper()
	c, err := New(cfg, opts...)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(c.Close)
	return c
}

// run runs f in a synctest bubble with a fresh coordinator of cfg.
func run(t *testing.T, cfg Config, f func(t *testing.T, c *Coordinator)) {
	t.Helper()
	runWith(t, cfg, nil, f)
}

// runWith is run with options for the coordinator.
func runWith(t *testing.T, cfg Config, opts []Option, f func(t *testing.T, c *Coordinator)) {
	t.Helper()
	synctest.Test(t, func(t *testing.T) {
		f(t, newTestCoordinator(t, cfg, opts...))
	})
}

// hookLog records the state hook's calls.
type hookLog struct {
	mu     sync.Mutex
	events []string
}

func (h *hookLog) hook(groupID string, s State) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.events = append(h.events, groupID+":"+s.String())
}

func (h *hookLog) get() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.events...)
}

// protocols builds a protocol list whose metadata names the protocol.
func protocols(names ...string) []Protocol {
	out := make([]Protocol, len(names))
	for i, n := range names {
		out[i] = Protocol{Name: n, Metadata: []byte("meta-" + n)}
	}
	return out
}

// client plays one group member, remembering its id and generation.
type client struct {
	t         *testing.T
	c         *Coordinator
	group     string
	clientID  string
	instance  string
	id        string
	gen       int32
	leader    string // from the last successful join
	protocols []Protocol
	session   time.Duration
	rebalance time.Duration
	// requireID makes joins behave as JoinGroup v4+ (KIP-394).
	requireID bool
}

func newClient(t *testing.T, c *Coordinator, groupID, clientID string) *client {
	return &client{
		t: t, c: c, group: groupID, clientID: clientID, gen: -1,
		protocols: protocols("range"), session: testSession, rebalance: testRebalance,
	}
}

func (cl *client) joinRequest() JoinRequest {
	return JoinRequest{
		Group: cl.group, MemberID: cl.id, InstanceID: cl.instance,
		ClientID: cl.clientID, ClientHost: "/10.0.0.1",
		SessionTimeout: cl.session, RebalanceTimeout: cl.rebalance,
		ProtocolType: "consumer", Protocols: cl.protocols,
		RequireKnownMemberID: cl.requireID,
	}
}

// joinAsync sends a JoinGroup; the response arrives on the channel.
func (cl *client) joinAsync() <-chan JoinResponse {
	ch := make(chan JoinResponse, 1)
	cl.c.Join(cl.joinRequest(), func(r JoinResponse) { ch <- r })
	return ch
}

// join sends a JoinGroup, waits for the answer, handles MEMBER_ID_REQUIRED
// like a client and fails the test on any other error.
func (cl *client) join() JoinResponse {
	cl.t.Helper()
	r := cl.await(cl.joinAsync())
	if errors.Is(r.Err, kerr.MemberIDRequired) {
		cl.id = r.MemberID
		r = cl.await(cl.joinAsync())
	}
	if r.Err != nil {
		cl.t.Fatalf("%s: join: %v", cl.clientID, r.Err)
	}
	return r
}

// await waits for a join response and records the member id and generation.
func (cl *client) await(ch <-chan JoinResponse) JoinResponse {
	cl.t.Helper()
	r := recv(cl.t, ch, cl.clientID+": join")
	if r.Err == nil {
		cl.id, cl.gen, cl.leader = r.MemberID, r.Generation, r.Leader
	}
	return r
}

func (cl *client) syncRequest(assignments map[string][]byte) SyncRequest {
	return SyncRequest{Group: cl.group, MemberID: cl.id, InstanceID: cl.instance, Generation: cl.gen, Assignments: assignments}
}

// syncAsync sends a SyncGroup; the response arrives on the channel.
func (cl *client) syncAsync(assignments map[string][]byte) <-chan SyncResponse {
	ch := make(chan SyncResponse, 1)
	cl.c.Sync(cl.syncRequest(assignments), func(r SyncResponse) { ch <- r })
	return ch
}

// sync sends a SyncGroup and waits for the answer.
func (cl *client) sync(assignments map[string][]byte) SyncResponse {
	cl.t.Helper()
	return recv(cl.t, cl.syncAsync(assignments), cl.clientID+": sync")
}

func (cl *client) heartbeat() error {
	return cl.c.Heartbeat(HeartbeatRequest{Group: cl.group, MemberID: cl.id, InstanceID: cl.instance, Generation: cl.gen})
}

// recv waits for a value; inside a bubble an hour of fake time passes in
// no real time, so a missing answer fails fast instead of hanging.
func recv[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(time.Hour):
		t.Fatalf("%s: no answer within an hour", what)
		panic("unreachable")
	}
}

// parked checks that a request is still waiting once the bubble is idle.
func parked[T any](t *testing.T, ch <-chan T, what string) {
	t.Helper()
	synctest.Wait()
	select {
	case v := <-ch:
		t.Fatalf("%s: answered %+v, want it parked", what, v)
	default:
	}
}

// wantState checks the group's state and generation through Describe.
func wantState(t *testing.T, c *Coordinator, groupID string, want State) Description {
	t.Helper()
	d, err := c.Describe(groupID)
	if err != nil {
		t.Fatalf("Describe(%q): %v", groupID, err)
	}
	if d.State != want {
		t.Fatalf("group %q: got state %v, want %v", groupID, d.State, want)
	}
	return d
}

// stableGroup brings new clients into one Stable generation, the same
// way whatever the timing: the first joins alone (generation 1), the
// others join and wait, the first rejoins as leader, so all meet in the
// next generation. The leader assigns "assign-<client id>" to each;
// followers sync first.
func stableGroup(t *testing.T, cls ...*client) {
	t.Helper()
	cls[0].join()
	if len(cls) > 1 {
		chs := make([]<-chan JoinResponse, len(cls))
		for i, cl := range cls[1:] {
			if cl.requireID && cl.id == "" {
				r := recv(t, cl.joinAsync(), cl.clientID+": join")
				testenv.WantErr(t, cl.clientID+": first join", r.Err, kerr.MemberIDRequired)
				cl.id = r.MemberID
			}
			chs[i+1] = cl.joinAsync()
		}
		chs[0] = cls[0].joinAsync()
		for i, cl := range cls {
			if r := cl.await(chs[i]); r.Err != nil {
				t.Fatalf("%s: join: %v", cl.clientID, r.Err)
			}
		}
	}
	assign := make(map[string][]byte)
	var leader *client
	for _, cl := range cls {
		if cl.gen != cls[0].gen || cl.leader != cls[0].leader {
			t.Fatalf("%s: generation %d leader %q; %s: generation %d leader %q",
				cl.clientID, cl.gen, cl.leader, cls[0].clientID, cls[0].gen, cls[0].leader)
		}
		assign[cl.id] = []byte("assign-" + cl.clientID)
		if cl.id == cl.leader {
			leader = cl
		}
	}
	if leader == nil {
		t.Fatalf("leader %q is none of the clients", cls[0].leader)
	}
	wantState(t, cls[0].c, cls[0].group, CompletingRebalance)
	var followers []<-chan SyncResponse
	for _, cl := range cls {
		if cl != leader {
			followers = append(followers, cl.syncAsync(nil))
		}
	}
	if r := leader.sync(assign); r.Err != nil {
		t.Fatalf("%s: leader sync: %v", leader.clientID, r.Err)
	}
	for i, ch := range followers {
		if r := recv(t, ch, "follower sync"); r.Err != nil {
			t.Fatalf("follower %d sync: %v", i, r.Err)
		}
	}
	wantState(t, cls[0].c, cls[0].group, Stable)
}
