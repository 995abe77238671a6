package consumer

import (
	"slices"
	"strings"
)

// computeTargetLocked computes the target assignment of the group's next
// epoch with the server assignor most members prefer (TargetAssignmentBuilder
// and updateTargetAssignment). The group is taken as it is, with updated
// in place of the member of that id (or added) and the member replaced in
// remove (a static member's previous incarnation) left out; the new
// incarnation starts from its predecessor's target assignment, as in
// Kafka. It changes nothing: the caller installs the result.
func (g *group) computeTargetLocked(updated *member, remove string, resolved map[string][]string, md Metadata) map[string]Assignment {
	specs := make([]MemberSpec, 0, len(g.mu.members)+1)
	parts := map[TopicID]int32{}
	add := func(m *member) {
		current, ok := g.mu.target[m.id]
		if !ok && m == updated && remove != "" {
			current = g.mu.target[remove]
		}
		specs = append(specs, MemberSpec{
			MemberID:   m.id,
			InstanceID: m.instanceID,
			RackID:     m.rackID,
			Topics:     subscribedTopicIDs(m, resolved, md, parts),
			Current:    current,
		})
	}
	for id, m := range g.mu.members {
		if id == remove || id == updated.id {
			continue
		}
		add(m)
	}
	add(updated)
	slices.SortFunc(specs, func(a, b MemberSpec) int { return strings.Compare(a.MemberID, b.MemberID) })
	name := g.preferredAssignorLocked([]string{updated.id, remove}, updated)
	return builtinAssignor(name).Assign(&GroupSpec{Members: specs, Partitions: parts})
}
