package consumer

import (
	"testing"

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
			found, err := c.ValidateCommit("g", member, nil, epoch, txn, version)
			if !found {
				t.Fatalf("%s: group not found", what)
			}
			testenv.WantErr(t, what, err, want)
		}
		check("current epoch", "a", 1, false, 9, nil)
		check("stale epoch", "a", 0, false, 9, kerr.StaleMemberEpoch)
		check("v8", "a", 1, false, 8, kerr.UnsupportedVersion)
		check("unknown member", "x", 1, false, 9, kerr.UnknownMemberID)
		check("simple commit to a group with members", "", -1, false, 9, kerr.UnknownMemberID)
		check("transactional without member data", "", -1, true, 0, nil)
		check("transactional stale epoch", "a", 7, true, 0, kerr.IllegalGeneration)
		if found, _ := c.ValidateCommit("other", "a", nil, 1, false, 9); found {
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
		wantFetch("member fetch", s("a"), 1, nil)
		wantFetch("stale fetch", s("a"), 2, kerr.StaleMemberEpoch)
		wantFetch("unknown member fetch", s("x"), 1, kerr.UnknownMemberID)
		a.leave()
		check("simple commit to an Empty group", "", -1, false, 9, nil)
	})
}
