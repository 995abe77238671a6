package group

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kbroker/kbroker/internal/testenv"
)

func TestConfigValidate(t *testing.T) {
	def := DefaultConfig()
	if err := def.Validate(); err != nil {
		t.Fatalf("default config: %v", err)
	}
	bad := Config{InitialRebalanceDelay: -1, MinSessionTimeout: 0, MaxSessionTimeout: -1, MaxSize: 0}
	err := bad.Validate()
	if err == nil {
		t.Fatal("bad config: got nil, want errors")
	}
	for _, want := range []string{"group.initial.rebalance.delay.ms", "group.min.session.timeout.ms", "group.max.session.timeout.ms", "group.max.size"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %s", err, want)
		}
	}
	if _, err := New(bad); err == nil {
		t.Fatal("New with a bad config: got nil error")
	}
	d := DefaultConfig()
	if d.InitialRebalanceDelay != 3*time.Second || d.MinSessionTimeout != 6*time.Second ||
		d.MaxSessionTimeout != 30*time.Minute || d.MaxSize != 1<<31-1 {
		t.Fatalf("defaults: got %+v, want Kafka's", d)
	}
}

func TestStateString(t *testing.T) {
	for s, want := range map[State]string{Empty: "Empty", PreparingRebalance: "PreparingRebalance",
		CompletingRebalance: "CompletingRebalance", Stable: "Stable", Dead: "Dead", State(9): "State(9)"} {
		if got := s.String(); got != want {
			t.Errorf("got %q, want %q", got, want)
		}
	}
}

// TestDescribeKeepsAssignment: a rebalance keeps the members' assignments
// until it abandons the generation, and Describe shows them in every
// state, with metadata and protocol only while Stable (Kafka 4's
// ClassicGroupMember.describeNoMetadata).
func TestDescribeKeepsAssignment(t *testing.T) {
	run(t, testConfig(), func(t *testing.T, c *Coordinator) {
		a, b := newClient(t, c, "g", "a"), newClient(t, c, "g", "b")
		stableGroup(t, a, b)
		check := func(want State) {
			t.Helper()
			d := wantState(t, c, "g", want)
			if d.Protocol != "" || len(d.Members) != 2 {
				t.Fatalf("%v: got %+v, want two members and no protocol", want, d)
			}
			for _, m := range d.Members {
				cl := a
				if m.MemberID == b.id {
					cl = b
				}
				if m.Metadata != nil || string(m.Assignment) != "assign-"+cl.clientID {
					t.Fatalf("%v member: got %+v, want %s's assignment without metadata", want, m, cl.clientID)
				}
			}
		}
		aJoin := a.joinAsync() // the leader rejoins: a rebalance
		check(PreparingRebalance)
		b.join()
		a.await(aJoin)
		check(CompletingRebalance)
	})
}

// TestDescribeAndList: DescribeGroups and ListGroups in each state.
func TestDescribeAndList(t *testing.T) {
	cfg := testConfig()
	cfg.InitialRebalanceDelay = time.Second // hold "preparing" in PreparingRebalance
	run(t, cfg, func(t *testing.T, c *Coordinator) {
		a, b := newClient(t, c, "stable", "a"), newClient(t, c, "stable", "b")
		a.instance = "ia"
		stableGroup(t, a, b)
		testenv.WantErr(t, "simple commit", c.ValidateCommit("empty", "", "", -1), nil)
		cr := newClient(t, c, "completing", "x")
		crJoin := cr.joinAsync() // answered after the 1 s initial delay
		time.Sleep(cfg.InitialRebalanceDelay / 2)
		newClient(t, c, "preparing", "p").joinAsync() // still waiting when checked
		cr.await(crJoin)

		d, err := c.Describe("stable")
		if err != nil {
			t.Fatal(err)
		}
		if d.State != Stable || d.ProtocolType != "consumer" || d.Protocol != "range" || len(d.Members) != 2 {
			t.Fatalf("stable: got %+v", d)
		}
		for _, m := range d.Members {
			cl := a
			if m.MemberID == b.id {
				cl = b
			}
			if m.MemberID != cl.id || m.InstanceID != cl.instance || m.ClientID != cl.clientID || m.ClientHost != "/10.0.0.1" ||
				string(m.Metadata) != "meta-range" || string(m.Assignment) != "assign-"+cl.clientID {
				t.Fatalf("stable member: got %+v, want %s's", m, cl.clientID)
			}
		}
		d, _ = c.Describe("completing")
		if d.State != CompletingRebalance || d.Protocol != "" || len(d.Members) != 1 ||
			d.Members[0].Metadata != nil || d.Members[0].Assignment != nil || d.Members[0].ClientID != "x" {
			t.Fatalf("completing: got %+v, want members without metadata or protocol", d)
		}
		if d, _ = c.Describe("missing"); d.State != Dead || d.Group != "missing" || len(d.Members) != 0 {
			t.Fatalf("missing: got %+v, want Dead", d)
		}

		list := func(states ...string) string {
			t.Helper()
			out, err := c.List(states)
			if err != nil {
				t.Fatal(err)
			}
			var parts []string
			for _, o := range out {
				parts = append(parts, o.Group+"/"+o.ProtocolType+"/"+o.State.String())
			}
			return strings.Join(parts, " ")
		}
		if got, want := list(), "completing/consumer/CompletingRebalance empty//Empty preparing/consumer/PreparingRebalance stable/consumer/Stable"; got != want {
			t.Fatalf("list: got %q, want %q", got, want)
		}
		if got, want := list("STABLE", "empty", "nonsense"), "empty//Empty stable/consumer/Stable"; got != want {
			t.Fatalf("list with states: got %q, want %q", got, want)
		}
	})
}

// TestDelete: only Empty groups can be deleted; a deleted group is Dead and
// gone, the hook hears of it, and a new join starts a fresh group.
func TestDelete(t *testing.T) {
	hooks := &hookLog{}
	runWith(t, testConfig(), []Option{WithStateHook(hooks.hook)}, func(t *testing.T, c *Coordinator) {
		testenv.WantErr(t, "missing group", c.Delete("nope"), kerr.GroupIDNotFound)
		a := newClient(t, c, "g", "a")
		stableGroup(t, a)
		testenv.WantErr(t, "Stable group", c.Delete("g"), kerr.NonEmptyGroup)
		b := newClient(t, c, "g", "b")
		bJoin := b.joinAsync()
		testenv.WantErr(t, "PreparingRebalance group", c.Delete("g"), kerr.NonEmptyGroup)
		a.await(a.joinAsync())
		b.await(bJoin)
		testenv.WantErr(t, "CompletingRebalance group", c.Delete("g"), kerr.NonEmptyGroup)
		if _, err := c.Leave("g", []LeaveMember{{MemberID: a.id}, {MemberID: b.id}}); err != nil {
			t.Fatal(err)
		}
		wantState(t, c, "g", Empty)
		testenv.WantErr(t, "Empty group", c.Delete("g"), nil)
		wantState(t, c, "g", Dead)
		testenv.WantErr(t, "deleted group", c.Delete("g"), kerr.GroupIDNotFound)
		if out, _ := c.List(nil); len(out) != 0 {
			t.Fatalf("list after delete: got %+v", out)
		}
		if got := hooks.get(); !slices.Equal(got, []string{"g:Stable", "g:Empty", "g:Dead"}) {
			t.Fatalf("hook: got %v, want [g:Stable g:Empty g:Dead]", got)
		}
		// The empty group id is valid for DeleteGroups.
		testenv.WantErr(t, "simple commit", c.ValidateCommit("", "", "", -1), nil)
		testenv.WantErr(t, "empty group id", c.Delete(""), nil)

		a2 := newClient(t, c, "g", "a")
		if r := a2.join(); r.Generation != 1 {
			t.Fatalf("join after delete: got generation %d, want a fresh group", r.Generation)
		}
	})
}

// TestClose: parked requests are answered NOT_COORDINATOR, timers stop,
// later calls get COORDINATOR_NOT_AVAILABLE.
func TestClose(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, err := New(testConfig())
		if err != nil {
			t.Fatal(err)
		}
		a, b, cc := newClient(t, c, "g", "a"), newClient(t, c, "g", "b"), newClient(t, c, "g", "c")
		stableGroup(t, a, b)
		cJoin := cc.joinAsync()
		aJoin := a.joinAsync()
		parked(t, aJoin, "a")
		c.Close()
		testenv.WantErr(t, "parked join", recv(t, aJoin, "a").Err, kerr.NotCoordinator)
		testenv.WantErr(t, "parked join", recv(t, cJoin, "c").Err, kerr.NotCoordinator)
		testenv.WantErr(t, "heartbeat", a.heartbeat(), kerr.CoordinatorNotAvailable)
		testenv.WantErr(t, "join", recv(t, newClient(t, c, "h", "x").joinAsync(), "x").Err, kerr.CoordinatorNotAvailable)
		testenv.WantErr(t, "sync", a.sync(nil).Err, kerr.CoordinatorNotAvailable)
		testenv.WantErr(t, "commit", c.ValidateCommit("g", a.id, "", a.gen), kerr.CoordinatorNotAvailable)
		testenv.WantErr(t, "delete", c.Delete("g"), kerr.CoordinatorNotAvailable)
		_, err = c.Leave("g", nil)
		testenv.WantErr(t, "leave", err, kerr.CoordinatorNotAvailable)
		_, err = c.List(nil)
		testenv.WantErr(t, "list", err, kerr.CoordinatorNotAvailable)
		_, err = c.Describe("g")
		testenv.WantErr(t, "describe", err, kerr.CoordinatorNotAvailable)
		c.Close()             // twice is fine
		time.Sleep(time.Hour) // no timer may fire into the closed coordinator
	})
}

// TestManyClients runs members concurrently through join, sync, heartbeats
// and leave, the way independent connections would, to let the race
// detector and synctest's deadlock detection look at the locking.
func TestManyClients(t *testing.T) {
	cfg := testConfig()
	cfg.InitialRebalanceDelay = 500 * time.Millisecond
	run(t, cfg, func(t *testing.T, c *Coordinator) {
		const n = 8
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				cl := newClient(t, c, "g", fmt.Sprintf("m%d", i))
				cl.requireID = i%2 == 0
				if i%3 == 0 {
					cl.instance = fmt.Sprintf("i%d", i)
				}
				time.Sleep(time.Duration(i) * 100 * time.Millisecond)
				playMember(t, cl, 3)
			})
		}
		wg.Wait()
		d := wantState(t, c, "g", Empty)
		if len(d.Members) != 0 {
			t.Fatalf("members left: %+v", d.Members)
		}
	})
}

// playMember behaves like a consumer: join and sync until it is in a Stable
// generation, heartbeat a few times (rejoining on REBALANCE_IN_PROGRESS),
// then leave.
func playMember(t *testing.T, cl *client, heartbeats int) {
	for beats := 0; beats < heartbeats; {
		r := recv(t, cl.joinAsync(), cl.clientID+": join")
		switch {
		case errors.Is(r.Err, kerr.MemberIDRequired):
			cl.id = r.MemberID
			continue
		case r.Err != nil:
			t.Errorf("%s: join: %v", cl.clientID, r.Err)
			return
		}
		cl.id, cl.gen, cl.leader = r.MemberID, r.Generation, r.Leader
		var assign map[string][]byte
		if len(r.Members) > 0 {
			assign = make(map[string][]byte)
			for _, m := range r.Members {
				assign[m.MemberID] = []byte(m.MemberID)
			}
		}
		s := recv(t, cl.syncAsync(assign), cl.clientID+": sync")
		if s.Err != nil {
			if !errors.Is(s.Err, kerr.RebalanceInProgress) {
				t.Errorf("%s: sync: %v", cl.clientID, s.Err)
				return
			}
			continue
		}
		if string(s.Assignment) != cl.id {
			t.Errorf("%s: assignment %q, want its own id", cl.clientID, s.Assignment)
		}
		for beats < heartbeats {
			time.Sleep(time.Second)
			err := cl.heartbeat()
			if err != nil {
				if !errors.Is(err, kerr.RebalanceInProgress) {
					t.Errorf("%s: heartbeat: %v", cl.clientID, err)
					return
				}
				break
			}
			beats++
		}
	}
	errs, err := cl.c.Leave(cl.group, []LeaveMember{{MemberID: cl.id, InstanceID: cl.instance}})
	if err != nil || errs[0] != nil {
		t.Errorf("%s: leave: %v %v", cl.clientID, err, errs)
	}
}
