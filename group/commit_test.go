package group

import (
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kbroker/kbroker/internal/testenv"
)

// TestValidateCommit: Kafka's rules for an OffsetCommit's generation,
// member id and instance id, in every group state.
func TestValidateCommit(t *testing.T) {
	run(t, testConfig(), func(t *testing.T, c *Coordinator) {
		// A simple consumer's commit creates an Empty group.
		testenv.WantErr(t, "simple commit, new group", c.ValidateCommit("simple", "", "", -1), nil)
		wantState(t, c, "simple", Empty)
		testenv.WantErr(t, "commit with a generation to a missing group", c.ValidateCommit("nope", "m", "", 1), kerr.IllegalGeneration)
		if d, _ := c.Describe("nope"); d.State != Dead {
			t.Fatalf("a refused commit created group %+v", d)
		}
		testenv.WantErr(t, "member commit to an Empty group", c.ValidateCommit("simple", "m", "", 0), kerr.UnknownMemberID)
		testenv.WantErr(t, "v0-style commit to an Empty group", c.ValidateCommit("simple", "", "", 0), kerr.UnknownMemberID)

		a := newClient(t, c, "g", "a")
		a.instance = "ia"
		a.join()
		// CompletingRebalance: valid member, but no assignment yet.
		testenv.WantErr(t, "commit while completing", c.ValidateCommit("g", a.id, "ia", a.gen), kerr.RebalanceInProgress)
		a.sync(map[string][]byte{a.id: []byte("x")})

		for _, tc := range []struct {
			name       string
			member     string
			instance   string
			generation int32
			want       *kerr.Error
		}{
			{"member of the generation", a.id, "ia", a.gen, nil},
			{"simple commit to a group with members", "", "", -1, kerr.UnknownMemberID},
			{"old generation", a.id, "ia", a.gen - 1, kerr.IllegalGeneration},
			{"generation -1 with a member id", a.id, "ia", -1, kerr.IllegalGeneration},
			{"unknown member", "x", "", a.gen, kerr.UnknownMemberID},
			{"unknown instance", a.id, "ix", a.gen, kerr.UnknownMemberID},
			{"fenced instance", "x", "ia", a.gen, kerr.FencedInstanceID},
			{"no member id with a generation", "", "", a.gen, kerr.UnknownMemberID},
		} {
			testenv.WantErr(t, tc.name, c.ValidateCommit("g", tc.member, tc.instance, tc.generation), tc.want)
		}

		// PreparingRebalance: the current generation may still commit.
		b := newClient(t, c, "g", "b")
		bJoin := b.joinAsync()
		testenv.WantErr(t, "commit while preparing", c.ValidateCommit("g", a.id, "ia", a.gen), nil)
		a.await(a.joinAsync())
		b.await(bJoin)
	})
}

// TestCommitKeepsMemberAlive: a valid commit counts as a heartbeat, as in
// Kafka.
func TestCommitKeepsMemberAlive(t *testing.T) {
	run(t, testConfig(), func(t *testing.T, c *Coordinator) {
		a := newClient(t, c, "g", "a")
		stableGroup(t, a)
		for range 5 { // 25 s with commits only
			time.Sleep(testSession / 2)
			testenv.WantErr(t, "commit", c.ValidateCommit("g", a.id, "", a.gen), nil)
		}
		testenv.WantErr(t, "heartbeat", a.heartbeat(), nil)
	})
}

// TestValidateTxnCommit checks the transactional rules: no member is fine
// on a group with members, and a missing group is created only for
// generation < 0.
func TestValidateTxnCommit(t *testing.T) {
	runWith(t, testConfig(), nil, func(t *testing.T, c *Coordinator) {
		if err := c.ValidateTxnCommit("missing", "m", "", 2, nil); !errors.Is(err, kerr.IllegalGeneration) {
			t.Fatalf("member of a missing group: %v", err)
		}
		if err := c.ValidateTxnCommit("solo", "", "", -1, nil); err != nil {
			t.Fatalf("producer without group management: %v", err)
		}
	})
}
