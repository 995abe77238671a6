package streams

import (
	"iter"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kbroker/kbroker/internal/testenv"
)

// commitsOf yields the partitions a commit of the tasks ts names, by
// topic: countTopology's subtopology 0 reads "in", 1 reads "app-rep".
func commitsOf(ts TaskSet) iter.Seq2[string, int32] {
	topics := map[string]string{"0": "in", "1": "app-rep"}
	return func(yield func(string, int32) bool) {
		for _, t := range ts.sorted() {
			if !yield(topics[t.Subtopology], t.Partition) {
				return
			}
		}
	}
}

// minusTasks is a without the tasks of b.
func minusTasks(a, b TaskSet) TaskSet {
	out := TaskSet{}
	for t := range a {
		if !b.has(t) {
			out[t] = struct{}{}
		}
	}
	return out
}

// TestCommitAssignmentEpochs: a commit with an older member epoch than
// the member's passes for the partitions of the active tasks the member
// has held since that epoch (KIP-1251's assignment epochs), assigned or
// pending revocation, and fails for any other (STALE_MEMBER_EPOCH,
// ILLEGAL_GENERATION in a transaction): tasks gained later, tasks of
// another member, topics no subtopology reads. A newer epoch fails. A
// restored group keeps the epochs; records without them allow only the
// current epoch.
func TestCommitAssignmentEpochs(t *testing.T) {
	harness(t, testConfig(), func(t *testing.T, c *Coordinator, topics *fakeTopics) {
		check := func(c *Coordinator, what string, epoch int32, txn bool, parts iter.Seq2[string, int32], want *kerr.Error) {
			t.Helper()
			found, err := c.ValidateCommit("app", "a", epoch, txn, 9, parts)
			if !found {
				t.Fatalf("%s: group not found", what)
			}
			testenv.WantErr(t, what, err, want)
		}

		// a gets all 8 tasks at epoch 2, then gives half to b and moves
		// to epoch 3: it has held its half since epoch 2.
		a := newMember(t, c, topics, "a", "p1")
		a.mustHeartbeat()
		if a.epoch != 2 || len(a.owned.Active) != 8 {
			t.Fatalf("a: epoch %d with %d tasks, want epoch 2 with 8", a.epoch, len(a.owned.Active))
		}
		b := newMember(t, c, topics, "b", "p2")
		b.mustHeartbeat()
		a.mustHeartbeat() // revoke
		a.mustHeartbeat() // acknowledge: epoch 3
		b.mustHeartbeat()
		kept := a.owned.Active.clone()
		if a.epoch != 3 || len(kept) != 4 || len(b.owned.Active) != 4 {
			t.Fatalf("a at epoch %d with %v, b with %v; want a at 3 with half", a.epoch, kept, b.owned.Active)
		}
		check(c, "the previous epoch, tasks held since epoch 2", 2, false, commitsOf(kept), nil)
		check(c, "the previous epoch, b's tasks", 2, false, commitsOf(b.owned.Active), kerr.StaleMemberEpoch)

		// b leaves (epoch 4): a takes b's tasks at epoch 4.
		b.epoch = -1
		b.mustHeartbeat()
		a.mustHeartbeat()
		gained := minusTasks(a.owned.Active, kept)
		if a.epoch != 4 || len(gained) != 4 {
			t.Fatalf("a after b left: epoch %d with %v, want epoch 4 with all 8", a.epoch, a.owned.Active)
		}
		all := a.owned.Active.clone()
		checkAll := func(c *Coordinator) {
			t.Helper()
			check(c, "the current epoch, every task", 4, false, commitsOf(all), nil)
			check(c, "the previous epoch, tasks held since epoch 2", 3, false, commitsOf(kept), nil)
			check(c, "epoch 2, tasks held since epoch 2", 2, false, commitsOf(kept), nil)
			check(c, "epoch 1, tasks held since epoch 2", 1, false, commitsOf(kept), kerr.StaleMemberEpoch)
			check(c, "the previous epoch, tasks gained at epoch 4", 3, false, commitsOf(gained), kerr.StaleMemberEpoch)
			check(c, "the previous epoch, every task", 3, false, commitsOf(all), kerr.StaleMemberEpoch)
			check(c, "the previous epoch, no partition", 3, false, nil, nil)
			check(c, "the previous epoch, a topic no subtopology reads", 3, false, func(yield func(string, int32) bool) {
				yield("app-changelog", 0)
			}, kerr.StaleMemberEpoch)
			check(c, "a newer epoch", 5, false, commitsOf(kept), kerr.StaleMemberEpoch)
			check(c, "transactional, the previous epoch, tasks held since", 3, true, commitsOf(kept), nil)
			check(c, "transactional, the previous epoch, tasks gained", 3, true, commitsOf(gained), kerr.IllegalGeneration)
		}
		checkAll(c)

		// A restart keeps the assignment epochs.
		r, found, err := c.Record("app")
		if err != nil || !found {
			t.Fatalf("record: %v %v", found, err)
		}
		restored := func(r Record) *Coordinator {
			c2, err := New(testConfig(), WithTopicCreator(topics.create))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(c2.Close)
			c2.Restore(r, topics)
			return c2
		}
		checkAll(restored(r))
		// Records from before KIP-1251 have no epochs: only the current
		// epoch commits.
		for i := range r.Members {
			r.Members[i].AssignmentEpochs = nil
		}
		c3 := restored(r)
		check(c3, "no recorded epochs, the current epoch", 4, false, commitsOf(all), nil)
		check(c3, "no recorded epochs, the previous epoch", 3, false, commitsOf(kept), kerr.StaleMemberEpoch)

		// d joins (epoch 5) and a, still at 4, must give up half.
		d := newMember(t, c, topics, "d", "p4")
		d.mustHeartbeat()
		a.mustHeartbeat()
		revoking := minusTasks(all, a.owned.Active)
		if a.epoch != 4 || len(revoking) != 4 {
			t.Fatalf("a after d joined: epoch %d, revoking %v; want epoch 4 revoking 4 tasks", a.epoch, revoking)
		}
		check(c, "the current epoch, revoking tasks", 4, false, commitsOf(revoking), nil)
		// Once revoked, the tasks are gone: a commit of them at the old
		// epoch (a zombie's) fails.
		a.mustHeartbeat()
		if a.epoch != 5 {
			t.Fatalf("a after revoking: epoch %d, want 5", a.epoch)
		}
		check(c, "revoked tasks at the epoch they were revoked at", 4, false, commitsOf(revoking), kerr.StaleMemberEpoch)
		check(c, "kept tasks at that epoch", 4, false, commitsOf(a.owned.Active), nil)
	})
}

// TestCommitAssignmentEpochsPendingRevocation: tasks pending revocation
// keep the epoch at which they were given, and so do tasks kept through
// an epoch change that did not touch them.
func TestCommitAssignmentEpochsPendingRevocation(t *testing.T) {
	harness(t, testConfig(), func(t *testing.T, c *Coordinator, topics *fakeTopics) {
		check := func(what string, epoch int32, parts iter.Seq2[string, int32], want *kerr.Error) {
			t.Helper()
			_, err := c.ValidateCommit("app", "a", epoch, false, 9, parts)
			testenv.WantErr(t, what, err, want)
		}
		a := newMember(t, c, topics, "a", "p1")
		a.mustHeartbeat()
		all := a.owned.Active.clone()
		// b joins and leaves before a hears of it: a moves to epoch 4
		// with the tasks it got at epoch 2.
		b := newMember(t, c, topics, "b", "p2")
		b.mustHeartbeat()
		b.epoch = -1
		b.mustHeartbeat()
		a.mustHeartbeat()
		if a.epoch != 4 || !a.owned.Active.equal(all) {
			t.Fatalf("a: epoch %d with %v, want epoch 4 with all 8 tasks", a.epoch, a.owned.Active)
		}
		check("epoch 2, tasks held since epoch 2", 2, commitsOf(all), nil)
		check("epoch 1, tasks held since epoch 2", 1, commitsOf(all), kerr.StaleMemberEpoch)

		// c joins (epoch 5): a, at 4, revokes half, held since epoch 2.
		cm := newMember(t, c, topics, "c", "p3")
		cm.mustHeartbeat()
		a.mustHeartbeat()
		revoking := minusTasks(all, a.owned.Active)
		if a.epoch != 4 || len(revoking) != 4 {
			t.Fatalf("a after c joined: epoch %d, revoking %v; want epoch 4 revoking 4 tasks", a.epoch, revoking)
		}
		check("epoch 2, tasks pending revocation", 2, commitsOf(revoking), nil)
		check("epoch 1, tasks pending revocation", 1, commitsOf(revoking), kerr.StaleMemberEpoch)
		check("epoch 2, tasks kept", 2, commitsOf(a.owned.Active), nil)
	})
}
