package broker

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

// TestConsumerGroupRestartAndDelete: two KIP-848 members over the wire
// split a topic; after a restart, and after a crash restart, they
// heartbeat on with their member epochs and keep their partitions
// (ConsumerGroupDescribe shows the same epochs); a member fenced while the
// broker was up stays gone after a restart; once both left and the group
// is deleted, a restart brings back nothing of it (no records, no group).
func TestConsumerGroupRestartAndDelete(t *testing.T) {
	r := newRestartable(t, nil)
	srv := r.running
	dataTopic(t, srv, "foo", 4, nil)
	a := newCGMember(t, srv, 1, "g", "member-a", "foo")
	b := newCGMember(t, srv, 1, "g", "member-b", "foo")
	a.mustBeat()
	b.mustBeat()
	for range 3 {
		a.mustBeat()
		b.mustBeat()
	}
	if a.partitions() != 2 || b.partitions() != 2 || a.epoch != b.epoch {
		t.Fatalf("before the restart: a owns %d at epoch %d, b %d at %d", a.partitions(), a.epoch, b.partitions(), b.epoch)
	}
	before := describeConsumerGroup(t, srv, 0, "g").Groups[0]
	redial := func(srv *InProcess) {
		a.w, b.w = dialWire(t, srv), dialWire(t, srv)
	}
	for _, crash := range []bool{false, true} {
		if crash {
			if err := srv.RestartCrashed(); err != nil {
				t.Fatal(err)
			}
		} else {
			srv = r.restart()
		}
		redial(srv)
		for _, m := range []*cgMember{a, b} {
			epoch := m.epoch
			if resp := m.mustBeat(); resp.MemberEpoch != epoch || m.partitions() != 2 {
				t.Fatalf("crash %v: %s after the restart: epoch %d owning %d, want %d owning 2", crash, m.id, resp.MemberEpoch, m.partitions(), epoch)
			}
		}
		after := describeConsumerGroup(t, srv, 0, "g").Groups[0]
		if after.State != "Stable" || after.Epoch != before.Epoch || after.AssignmentEpoch != before.AssignmentEpoch || len(after.Members) != 2 {
			t.Fatalf("crash %v: described %+v after the restart, %+v before", crash, after, before)
		}
	}

	// b leaves; after a restart the group has a alone, at the new epoch.
	b.leave()
	srv = r.restart()
	redial(srv)
	d := describeConsumerGroup(t, srv, 0, "g").Groups[0]
	if len(d.Members) != 1 || d.Members[0].MemberID != "member-a" || d.Epoch != before.Epoch+1 {
		t.Fatalf("after b left and a restart: %+v", d)
	}
	if resp := b.heartbeat(); resp.ErrorCode != kerr.UnknownMemberID.Code {
		t.Fatalf("b after leaving: %v, want UNKNOWN_MEMBER_ID", kerr.ErrorForCode(resp.ErrorCode))
	}

	a.leave()
	adm := newAdmin(t, srv)
	res, err := adm.DeleteGroups(testCtx(t), "g")
	if err != nil || res["g"].Err != nil {
		t.Fatalf("DeleteGroups: %v %+v", err, res)
	}
	srv = r.restart()
	if g := describeConsumerGroup(t, srv, 0, "g").Groups[0]; g.ErrorCode != kerr.GroupIDNotFound.Code {
		t.Fatalf("deleted group after a restart: %+v", g)
	}
	for _, g := range srv.offsets.Load().Groups() {
		if g.Group == "g" {
			t.Fatalf("records of the deleted group after a restart: %+v", g)
		}
	}
}
