package broker

// ListGroups v0–v5, as Kafka 4's KafkaApis.handleListGroupsRequest and
// GroupMetadataManager.listGroups without an authorizer.
//
// Every group the coordinator holds, with its protocol type ("" until a
// member joined), state (v4+) and type (v5+, always "classic": there are
// only classic groups here). The states filter (v4+, KIP-518) matches state
// names without regard to case or surrounding blanks, as Kafka's; the types
// filter (v5+, KIP-848) type names without regard to case, so a filter
// without "classic" matches nothing. An empty filter matches everything.
//
// Deviations from Apache Kafka:
//   - Groups are listed sorted by id; Kafka's order is its hash map's.
//
// Versions: v1 throttle; v3 flexible; v4 states filter and group state
// (KIP-518); v5 types filter and group type (KIP-848).

import (
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/group"
)

// classicGroupType is the type of every group here (Kafka's
// Group.GroupType.CLASSIC).
const classicGroupType = "classic"

func (b *Broker) handleListGroups(c *conn, req *kmsg.ListGroupsRequest) (result, error) {
	resp := req.ResponseKind().(*kmsg.ListGroupsResponse)
	if req.Version >= 5 && len(req.TypesFilter) > 0 &&
		!slices.ContainsFunc(req.TypesFilter, func(t string) bool { return strings.EqualFold(t, classicGroupType) }) {
		resp.Groups = []kmsg.ListGroupsResponseGroup{}
		return now(resp)
	}
	var states []string
	if req.Version >= 4 && len(req.StatesFilter) > 0 {
		if states = filteredGroupStates(req.StatesFilter); len(states) == 0 {
			resp.Groups = []kmsg.ListGroupsResponseGroup{}
			return now(resp)
		}
	}
	groups, err := b.groups.List(states)
	if err != nil {
		resp.ErrorCode = errorCode(err)
		return now(resp)
	}
	resp.Groups = make([]kmsg.ListGroupsResponseGroup, 0, len(groups))
	for _, o := range groups {
		g := kmsg.NewListGroupsResponseGroup()
		g.Group = o.Group
		g.ProtocolType = o.ProtocolType
		g.GroupState = o.State.String()
		g.GroupType = classicGroupType
		resp.Groups = append(resp.Groups, g)
	}
	return now(resp)
}

// classicGroupStates are the states a classic group can be in.
var classicGroupStates = []group.State{group.Empty, group.PreparingRebalance, group.CompletingRebalance, group.Stable, group.Dead}

// filteredGroupStates returns the names of the states that a ListGroups
// states filter names, compared as Kafka does (trimmed, without regard to
// case); none if it names no state. Reducing the filter to at most the five
// states first keeps the work linear in the request, however long its
// filter and however many groups there are.
func filteredGroupStates(filter []string) []string {
	var out []string
	for _, st := range classicGroupStates {
		name := st.String()
		if slices.ContainsFunc(filter, func(f string) bool { return strings.EqualFold(strings.TrimSpace(f), name) }) {
			out = append(out, name)
		}
	}
	return out
}
