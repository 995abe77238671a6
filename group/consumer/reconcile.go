package consumer

import (
	"github.com/kbroker/kbroker/group/grouperr"
	"github.com/twmb/franz-go/pkg/kerr"
)

// reconciler moves one member towards its target assignment: Kafka's
// CurrentAssignmentBuilder. Partitions move in two steps so that no
// partition ever has two owners: a member first gives up (revokes) the
// partitions its target no longer has, staying at its epoch in
// UNREVOKED_PARTITIONS until a heartbeat's owned partitions no longer
// list them; then it moves to the target epoch and gets the partitions of
// its target that nobody else owns, waiting in UNRELEASED_PARTITIONS for
// the others.
type reconciler struct {
	g *group
	m *member // the member as the heartbeat updated it

	targetEpoch int32
	target      Assignment
	// subscriptionChanged forces the assignment to drop topics the member
	// no longer subscribes to even without a new target.
	subscriptionChanged bool
	// subscribed are the member's subscribed topic ids (sorted).
	subscribed []TopicID
	// owned is what the heartbeat said the member owns; nil when it did
	// not say.
	owned Assignment
}

// build returns the member's next version, or m itself when it cannot
// move (CurrentAssignmentBuilder.build).
func (r *reconciler) build() (*member, error) {
	m := r.m
	switch m.state {
	case MemberStable:
		switch {
		case m.epoch != r.targetEpoch:
			return r.next(m.epoch, m.assigned), nil
		case r.subscriptionChanged:
			return r.dropUnsubscribed(m.assigned), nil
		}
		return m, nil
	case MemberUnrevokedPartitions:
		if r.ownsAny(m.pendingRevocation) {
			if r.subscriptionChanged {
				return r.dropUnsubscribed(m.assigned), nil
			}
			return m, nil
		}
		// Every revoked partition is released: on to the next epoch, but
		// not past the target's (a subscription change can revoke before
		// a new target exists).
		return r.next(min(m.epoch+1, r.targetEpoch), m.assigned), nil
	case MemberUnreleasedPartitions:
		return r.next(m.epoch, m.assigned), nil
	}
	// MemberUnknown.
	if r.owned == nil || r.owned.size() > 0 {
		return nil, grouperr.Errorf(kerr.FencedMemberEpoch, "The consumer group member is in a unknown state. The member must abandon all its partitions and rejoin.")
	}
	return r.next(r.targetEpoch, m.assigned), nil
}

// ownsAny reports whether the member still owns any partition of a; a
// heartbeat that did not list its partitions owns them all
// (ownsRevokedPartitions).
func (r *reconciler) ownsAny(a Assignment) bool {
	if r.owned == nil {
		return true
	}
	for id, ps := range r.owned {
		for _, p := range ps {
			if a.has(id, p) {
				return true
			}
		}
	}
	return false
}

func (r *reconciler) isSubscribed(id TopicID) bool {
	for _, s := range r.subscribed {
		if s == id {
			return true
		}
	}
	return false
}

// dropUnsubscribed removes the topics the member no longer subscribes to
// from its assignment, revoking them (updateCurrentAssignment).
func (r *reconciler) dropUnsubscribed(assigned Assignment) *member {
	m := r.m
	var kept Assignment
	pending := assignmentBuilder{}
	for id, ps := range m.pendingRevocation {
		pending[id] = append(pending[id], ps...)
	}
	for id, ps := range assigned {
		if r.isSubscribed(id) {
			continue
		}
		if kept == nil {
			kept = make(Assignment, len(assigned))
			for k, v := range assigned {
				kept[k] = v
			}
		}
		delete(kept, id)
		pending[id] = append(pending[id], ps...)
	}
	if kept == nil {
		return m // nothing removed
	}
	out := m.clone()
	out.assigned = kept
	revoking := pending.build()
	if revoking.size() > 0 && r.ownsAny(revoking) {
		out.state = MemberUnrevokedPartitions
		out.pendingRevocation = revoking
	}
	// Otherwise the member already let them go: it keeps its state with
	// the smaller assignment.
	return out
}

// next computes the member's next assignment at memberEpoch
// (computeNextAssignment):
//
//	assigned  = current ∩ target
//	revoking  = current − assigned
//	assigning = target − assigned − partitions others still own
//
// With something to revoke that the member still owns, it stays at its
// epoch in UNREVOKED_PARTITIONS; otherwise it moves to the target epoch
// with its new partitions, in UNRELEASED_PARTITIONS if some are still held
// by others, else STABLE.
func (r *reconciler) next(memberEpoch int32, current Assignment) *member {
	m := r.m
	assigned := assignmentBuilder{}
	revoking := assignmentBuilder{}
	assigning := assignmentBuilder{}
	unreleased := false
	topics := map[TopicID]bool{}
	for id := range r.target {
		topics[id] = true
	}
	for id := range current {
		topics[id] = true
	}
	for id := range topics {
		target := r.target[id]
		if !r.isSubscribed(id) {
			target = nil // no longer subscribed: nothing of it is ours
		}
		cur := current[id]
		for _, p := range cur {
			if contains(target, p) {
				assigned.add(id, p)
			} else {
				revoking.add(id, p)
			}
		}
		for _, p := range target {
			if contains(cur, p) {
				continue
			}
			// Owned by another member, or by this one only as a partition
			// it is revoking: the latter is safe to take back.
			if r.g.ownedByAnyoneLocked(id, p) && !m.pendingRevocation.has(id, p) {
				unreleased = true
				continue
			}
			assigning.add(id, p)
		}
	}
	out := m.clone()
	rev := revoking.build()
	if rev.size() > 0 && r.ownsAny(rev) {
		out.state = MemberUnrevokedPartitions
		out.updateEpoch(memberEpoch)
		out.assigned = assigned.build()
		out.pendingRevocation = rev
		out.assignedAt = m.keptEpochs(r.targetEpoch, out.assigned, rev)
		return out
	}
	for id, ps := range assigning {
		assigned[id] = append(assigned[id], ps...)
	}
	out.state = MemberStable
	if unreleased {
		out.state = MemberUnreleasedPartitions
	}
	out.updateEpoch(r.targetEpoch)
	out.assigned = assigned.build()
	out.pendingRevocation = Assignment{}
	out.assignedAt = m.keptEpochs(r.targetEpoch, out.assigned)
	return out
}

// keptEpochs are the assignment epochs of the partitions in held, the
// member's next assignment (computeNextAssignment): a partition m has
// assigned keeps its epoch, any other one (new, or taken back from those
// m was revoking) is given at epoch.
func (m *member) keptEpochs(epoch int32, held ...Assignment) AssignmentEpochs {
	out := AssignmentEpochs{}
	for _, a := range held {
		for id, ps := range a {
			for _, p := range ps {
				e := epoch
				if m.assigned.has(id, p) {
					e, _ = m.assignmentEpoch(id, p)
				}
				out[TopicPartition{id, p}] = e
			}
		}
	}
	return out
}

// contains reports whether sorted ps holds p.
func contains(ps []int32, p int32) bool {
	for _, x := range ps {
		if x == p {
			return true
		}
		if x > p {
			return false
		}
	}
	return false
}
