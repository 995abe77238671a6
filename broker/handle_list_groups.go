package broker

// ListGroups v0–v5, as Kafka 4's KafkaApis.handleListGroupsRequest and
// GroupMetadataManager.listGroups without an authorizer.
//
// Every group the coordinators hold, classic, consumer (KIP-848) and share
// (KIP-932), with its protocol type ("" for a classic group until a member
// joined, "consumer" for a consumer group, "share" for a share group),
// state (v4+) and type (v5+, "classic", "consumer" or "share"). Share
// groups are listed only while share.version is at 1 or above. The states filter (v4+, KIP-518) matches state names
// without regard to case or surrounding blanks, as Kafka's, each group by
// the names of its own kind's states ("stable" matches both kinds); the
// types filter (v5+, KIP-848) type names without regard to case, and an
// unknown type matches nothing. An empty filter matches everything.
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
	"github.com/kbroker/kbroker/group/consumer"
)

// Group types (Kafka's Group.GroupType).
const (
	classicGroupType  = "classic"
	consumerGroupType = "consumer"
	shareGroupType    = "share"
	streamsGroupType  = "streams"
)

func (b *Broker) handleListGroups(c *conn, req *kmsg.ListGroupsRequest) (result, error) {
	resp := req.ResponseKind().(*kmsg.ListGroupsResponse)
	none := func() (result, error) {
		resp.Groups = []kmsg.ListGroupsResponseGroup{}
		return respond(resp)
	}
	wantClassic, wantConsumer, wantShare, wantStreams := true, true, b.shareGroups(), b.streamsGroups()
	if req.Version >= 5 && len(req.TypesFilter) > 0 {
		has := func(name string) bool {
			return slices.ContainsFunc(req.TypesFilter, func(t string) bool { return strings.EqualFold(t, name) })
		}
		wantClassic, wantConsumer, wantShare = has(classicGroupType), has(consumerGroupType), wantShare && has(shareGroupType)
		wantStreams = wantStreams && has(streamsGroupType)
		if !wantClassic && !wantConsumer && !wantShare && !wantStreams {
			return none()
		}
	}
	var states []string
	if req.Version >= 4 && len(req.StatesFilter) > 0 {
		if states = filteredGroupStates(req.StatesFilter); len(states) == 0 {
			return none()
		}
	}
	resp.Groups = []kmsg.ListGroupsResponseGroup{}
	if wantClassic {
		groups, err := b.groups.List(states)
		if err != nil {
			resp.ErrorCode = errorCode(err)
			return respond(resp)
		}
		for _, o := range groups {
			g := kmsg.NewListGroupsResponseGroup()
			g.Group = o.Group
			g.ProtocolType = o.ProtocolType
			g.GroupState = o.State.String()
			g.GroupType = classicGroupType
			resp.Groups = append(resp.Groups, g)
		}
	}
	if wantConsumer {
		groups, err := b.groups.Consumer().List()
		if err != nil {
			resp.ErrorCode = errorCode(err)
			resp.Groups = []kmsg.ListGroupsResponseGroup{}
			return respond(resp)
		}
		for _, o := range groups {
			name := o.State.String()
			if len(states) > 0 && !slices.Contains(states, name) {
				continue
			}
			g := kmsg.NewListGroupsResponseGroup()
			g.Group = o.Group
			g.ProtocolType = consumerGroupType // ConsumerProtocol.PROTOCOL_TYPE
			g.GroupState = name
			g.GroupType = consumerGroupType
			resp.Groups = append(resp.Groups, g)
		}
	}
	if wantShare {
		for _, o := range b.shares.List() {
			if len(states) > 0 && !slices.Contains(states, o.State) {
				continue
			}
			g := kmsg.NewListGroupsResponseGroup()
			g.Group, g.ProtocolType, g.GroupState, g.GroupType = o.Group, shareGroupType, o.State, shareGroupType
			resp.Groups = append(resp.Groups, g)
		}
	}
	if wantStreams {
		for _, o := range b.streamsCo.List() {
			if len(states) > 0 && !slices.Contains(states, string(o.State)) {
				continue
			}
			g := kmsg.NewListGroupsResponseGroup()
			g.Group, g.ProtocolType, g.GroupState, g.GroupType = o.Group, streamsGroupType, string(o.State), streamsGroupType
			resp.Groups = append(resp.Groups, g)
		}
	}
	if !b.allowedCluster(c, opDescribe) {
		// Without DESCRIBE on the cluster, only the groups the client may
		// describe; no error.
		resp.Groups = slices.DeleteFunc(resp.Groups, func(g kmsg.ListGroupsResponseGroup) bool {
			return !b.allowed(c, opDescribe, resGroup, g.Group)
		})
	}
	slices.SortStableFunc(resp.Groups, func(a, b kmsg.ListGroupsResponseGroup) int { return strings.Compare(a.Group, b.Group) })
	return respond(resp)
}

// groupStateNames are the names of the states a group of either kind can
// be in.
var groupStateNames = func() []string {
	var out []string
	for _, s := range []group.State{group.Empty, group.PreparingRebalance, group.CompletingRebalance, group.Stable, group.Dead} {
		out = append(out, s.String())
	}
	for _, s := range consumer.States() {
		if !slices.Contains(out, s.String()) {
			out = append(out, s.String())
		}
	}
	return out
}()

// filteredGroupStates returns the names of the states that a ListGroups
// states filter names, compared as Kafka does (trimmed, without regard to
// case); none if it names no state. Reducing the filter to at most the
// seven state names first keeps the work linear in the request, however
// long its filter and however many groups there are.
func filteredGroupStates(filter []string) []string {
	var out []string
	for _, name := range groupStateNames {
		if slices.ContainsFunc(filter, func(f string) bool { return strings.EqualFold(strings.TrimSpace(f), name) }) {
			out = append(out, name)
		}
	}
	return out
}
