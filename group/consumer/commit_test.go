package consumer

import (
	"iter"
	"testing"
	"testing/synctest"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kbroker/kbroker/internal/testenv"
)

// TestValidateCommit: commits of a consumer group's members need v9+ and
// the current member epoch; simple commits pass only while the group has
// no members; other ids are not this coordinator's.
func TestValidateCommit(t *testing.T) {
	run(t, testConfig(), nil, func(t *testing.T, c *Coordinator, md *fakeMetadata) {
		md.add("foo", 2)
		a := newClient(t, c, md, "g", "a", "foo")
		a.join()
		check := func(what, member string, epoch int32, txn bool, version int16, want *kerr.Error) {
			t.Helper()
			found, err := c.ValidateCommit("g", member, nil, epoch, txn, version, partitionsOf(a.owned))
			if !found {
				t.Fatalf("%s: group not found", what)
			}
			testenv.WantErr(t, what, err, want)
		}
		check("current epoch", "a", 2, false, 9, nil)
		check("stale epoch", "a", 1, false, 9, kerr.StaleMemberEpoch)
		check("v8", "a", 2, false, 8, kerr.UnsupportedVersion)
		check("unknown member", "x", 2, false, 9, kerr.UnknownMemberID)
		check("simple commit to a group with members", "", -1, false, 9, kerr.UnknownMemberID)
		check("transactional without member data", "", -1, true, 0, nil)
		check("transactional stale epoch", "a", 7, true, 0, kerr.IllegalGeneration)
		if found, _ := c.ValidateCommit("other", "a", nil, 2, false, 9, nil); found {
			t.Fatal("a missing group was found")
		}
		wantFetch := func(what string, member *string, epoch int32, want *kerr.Error) {
			t.Helper()
			found, err := c.ValidateFetch("g", member, epoch)
			if !found {
				t.Fatalf("%s: group not found", what)
			}
			testenv.WantErr(t, what, err, want)
		}
		s := func(v string) *string { return &v }
		wantFetch("admin fetch", nil, -1, nil)
		wantFetch("member fetch", s("a"), 2, nil)
		wantFetch("stale fetch", s("a"), 3, kerr.StaleMemberEpoch)
		wantFetch("unknown member fetch", s("x"), 2, kerr.UnknownMemberID)
		a.leave()
		check("simple commit to an Empty group", "", -1, false, 9, nil)
	})
}

// partitionsOf yields a's partitions as a commit names them.
func partitionsOf(a Assignment) iter.Seq2[string, TopicPartition] {
	return func(yield func(string, TopicPartition) bool) {
		for id, ps := range a {
			for _, p := range ps {
				if !yield("t", TopicPartition{id, p}) {
					return
				}
			}
		}
	}
}

// minus is a without the partitions of b.
func minus(a, b Assignment) Assignment {
	out := assignmentBuilder{}
	for id, ps := range a {
		for _, p := range ps {
			if !b.has(id, p) {
				out.add(id, p)
			}
		}
	}
	return out.build()
}

// TestCommitAssignmentEpochs: a commit with an older member epoch than
// the member's passes for the partitions the member has held since that
// epoch (KIP-1251's assignment epochs), assigned or pending revocation,
// and fails for any other (STALE_MEMBER_EPOCH, ILLEGAL_GENERATION in a
// transaction); a newer epoch fails. A restored group keeps the epochs.
func TestCommitAssignmentEpochs(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var log changeLog
		md := newMetadata()
		md.add("t", 4)
		other := md.add("u", 1)
		c := newPersistCoordinator(t, &log)
		a, b := stableTwo(t, c, md) // a holds its 2 since epoch 2, b its 2 since 3
		kept := a.owned
		if a.epoch != 3 || kept.size() != 2 {
			t.Fatalf("a: epoch %d owning %v, want epoch 3 with 2 partitions", a.epoch, kept)
		}
		b.leave() // epoch 4: a takes b's two
		a.beat()
		gained := minus(a.owned, kept)
		if a.epoch != 4 || gained.size() != 2 {
			t.Fatalf("a after b left: epoch %d owning %v, want epoch 4 with 4 partitions", a.epoch, a.owned)
		}
		check := func(c *Coordinator, what string, epoch int32, txn bool, parts Assignment, want *kerr.Error) {
			t.Helper()
			found, err := c.ValidateCommit("g", "a", nil, epoch, txn, 9, partitionsOf(parts))
			if !found {
				t.Fatalf("%s: group not found", what)
			}
			testenv.WantErr(t, what, err, want)
		}
		checkAll := func(c *Coordinator) {
			t.Helper()
			check(c, "current epoch, every partition", 4, false, a.owned, nil)
			check(c, "the previous epoch, partitions held since epoch 2", 3, false, kept, nil)
			check(c, "epoch 2, partitions held since epoch 2", 2, false, kept, nil)
			check(c, "epoch 1, partitions held since epoch 2", 1, false, kept, kerr.StaleMemberEpoch)
			check(c, "the previous epoch, partitions gained at epoch 4", 3, false, gained, kerr.StaleMemberEpoch)
			check(c, "the previous epoch, all partitions", 3, false, a.owned, kerr.StaleMemberEpoch)
			check(c, "the previous epoch, a partition never assigned", 3, false, Assignment{other: {0}}, kerr.StaleMemberEpoch)
			check(c, "the previous epoch, no partition", 3, false, Assignment{}, nil)
			check(c, "a newer epoch", 5, false, kept, kerr.StaleMemberEpoch)
			check(c, "transactional, the previous epoch, partitions held since", 3, true, kept, nil)
			check(c, "transactional, the previous epoch, partitions gained", 3, true, gained, kerr.IllegalGeneration)
		}
		checkAll(c)

		// A restart keeps the assignment epochs.
		r, found, err := c.Record("g")
		if err != nil || !found {
			t.Fatalf("record: found %v, %v", found, err)
		}
		c2 := newPersistCoordinator(t, &log)
		c2.Restore(r)
		checkAll(c2)
		// Records from before KIP-1251 have no epochs: only the current
		// epoch commits.
		for i := range r.Members {
			r.Members[i].AssignmentEpochs = nil
		}
		c3 := newPersistCoordinator(t, &log)
		c3.Restore(r)
		check(c3, "no recorded epochs, current epoch", 4, false, a.owned, nil)
		check(c3, "no recorded epochs, the previous epoch", 3, false, kept, kerr.StaleMemberEpoch)

		// A partition pending revocation keeps its epoch: a third member
		// joins (epoch 5) and a, still at 4, must give up some.
		d := newClient(t, c, md, "g", "d", "t")
		d.join()
		before := a.owned
		a.beat()
		revoking := minus(before, a.owned)
		if a.epoch != 4 || revoking.size() == 0 {
			t.Fatalf("a after d joined: epoch %d, revoking %v; want epoch 4 revoking some", a.epoch, revoking)
		}
		if held := minus(revoking, gained); held.size() > 0 {
			check(c, "the previous epoch, revoking partitions held since epoch 2", 3, false, held, nil)
		}
		if new := minus(revoking, kept); new.size() > 0 {
			check(c, "the previous epoch, revoking partitions gained at 4", 3, false, new, kerr.StaleMemberEpoch)
		}
	})
}
