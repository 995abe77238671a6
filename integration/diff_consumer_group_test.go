package integration

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// consumerGroupDiffSteps are KIP-848 consumer groups on both brokers: a
// member the broker names (v0) and one the client names (v1), the error
// paths of a heartbeat (no rebalance timeout on a join, an unknown member,
// a fenced epoch), offset commits and fetches at the member's epoch and
// beside it, the describe (also with the classic API) before and after the
// members leave, deletes with and without members, ListGroups with its
// filters, a classic group's LeaveGroup, and a consumer-group heartbeat to
// a classic group with a member (the README's difference: no online
// migration).
func consumerGroupDiffSteps(run string) []diffStep {
	topic, group, classic := "cgt-"+run, "cg-"+run, "cl-"+run
	member := "member-" + run
	heartbeat := func(id func(*diffSide) string, epoch int32, subscribe bool) func(*diffSide, int16) kmsg.Request {
		return func(s *diffSide, v int16) kmsg.Request {
			r := kmsg.NewPtrConsumerGroupHeartbeatRequest()
			r.Group, r.MemberID, r.MemberEpoch = group, id(s), epoch
			if subscribe {
				r.RebalanceTimeoutMillis = 10000
				r.SubscribedTopicNames = []string{topic}
				r.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
			} else {
				r.RebalanceTimeoutMillis = -1
			}
			return r
		}
	}
	named := func(*diffSide) string { return member }
	brokerNamed := func(s *diffSide) string { return s.memberID }
	remember := func(s *diffSide, resp kmsg.Response) {
		if r := resp.(*kmsg.ConsumerGroupHeartbeatResponse); r.ErrorCode == 0 && r.MemberID != nil {
			s.memberID = *r.MemberID
		}
	}
	sortAssignment := sortHeartbeatAssignment
	describe := func(s *diffSide, v int16) kmsg.Request {
		r := kmsg.NewPtrConsumerGroupDescribeRequest()
		r.Groups = []string{group, "nocg-" + run}
		return r
	}
	// Groups and members come in no defined order: sorted by name and by
	// epoch, and the assignments' partitions sorted.
	sortMembers := func(resp kmsg.Response) {
		r := resp.(*kmsg.ConsumerGroupDescribeResponse)
		slices.SortFunc(r.Groups, func(a, b kmsg.ConsumerGroupDescribeResponseGroup) int {
			return strings.Compare(a.Group, b.Group)
		})
		for gi := range r.Groups {
			g := &r.Groups[gi]
			for mi := range g.Members {
				for _, a := range []*kmsg.Assignment{&g.Members[mi].Assignment, &g.Members[mi].TargetAssignment} {
					for ti := range a.TopicPartitions {
						slices.Sort(a.TopicPartitions[ti].Partitions)
					}
				}
			}
			slices.SortFunc(g.Members, func(a, b kmsg.ConsumerGroupDescribeResponseGroupMember) int {
				return int(a.MemberEpoch - b.MemberEpoch)
			})
		}
	}
	clientHost := regexp.MustCompile(`ClientHost$`)
	listGroups := func(states, types []string) func(*diffSide, int16) kmsg.Request {
		return func(s *diffSide, v int16) kmsg.Request {
			r := kmsg.NewPtrListGroupsRequest()
			r.StatesFilter, r.TypesFilter = states, types
			return r
		}
	}
	// onlyRun keeps this run's groups of a ListGroups answer, by name (a
	// reused Kafka has others).
	onlyRun := func(resp kmsg.Response) {
		r := resp.(*kmsg.ListGroupsResponse)
		r.Groups = slices.DeleteFunc(r.Groups, func(g kmsg.ListGroupsResponseGroup) bool {
			return g.Group != group && g.Group != classic
		})
		slices.SortFunc(r.Groups, func(a, b kmsg.ListGroupsResponseGroup) int {
			return strings.Compare(a.Group, b.Group)
		})
	}
	// commitReq commits offset 1 of the topic's partition 0 as the member,
	// at its epoch moved by delta.
	commitReq := func(delta int32) func(*diffSide, int16) kmsg.Request {
		return offsetCommitReq(group, topic, func(s *diffSide) (string, int32) { return member, s.generation + delta }, nil, 0, 1)
	}
	// fetchOffsetsReq fetches partition 0's committed offset as the
	// member, at its epoch moved by delta (v9's member-checked form).
	fetchOffsetsReq := func(delta int32) func(*diffSide, int16) kmsg.Request {
		return func(s *diffSide, v int16) kmsg.Request {
			r := kmsg.NewPtrOffsetFetchRequest()
			g := kmsg.NewOffsetFetchRequestGroup()
			g.Group, g.MemberID, g.MemberEpoch = group, &member, s.generation+delta
			gt := kmsg.NewOffsetFetchRequestGroupTopic()
			gt.Topic, gt.Partitions = topic, []int32{0}
			g.Topics = append(g.Topics, gt)
			r.Groups = append(r.Groups, g)
			return r
		}
	}
	steps := append(createAndAwait(topic, 3), awaitGroupReady(group)...)
	return append(steps, append([]diffStep{awaitAssignable(topic, run)}, []diffStep{
		{name: "heartbeat of an unknown member", req: heartbeat(named, 3, false)},
		{name: "join without a rebalance timeout", req: func(s *diffSide, v int16) kmsg.Request {
			r := heartbeat(named, 0, true)(s, v).(*kmsg.ConsumerGroupHeartbeatRequest)
			r.RebalanceTimeoutMillis = -1
			return r
		}, versions: newest},
		{name: "join v1 without a member id", req: heartbeat(func(*diffSide) string { return "" }, 0, true), versions: atVersion(1)},
		{name: "join v1", req: heartbeat(named, 0, true), versions: atVersion(1), normalize: sortAssignment,
			after: func(s *diffSide, resp kmsg.Response) {
				s.generation = resp.(*kmsg.ConsumerGroupHeartbeatResponse).MemberEpoch
			}},
		{name: "heartbeat with a fenced epoch", req: heartbeat(named, 7, false), versions: newest},
		{name: "heartbeat at the member's epoch", req: func(s *diffSide, v int16) kmsg.Request {
			r := heartbeat(named, s.generation, false)(s, v).(*kmsg.ConsumerGroupHeartbeatRequest)
			r.RebalanceTimeoutMillis = 10000
			return r
		}, versions: newest},
		{name: "describe one member", req: describe, ignore: clientHost, normalize: sortMembers},
		{name: "offset commit at the member's epoch", req: commitReq(0), versions: newest},
		{name: "offset commit at the epoch before", req: commitReq(-1), versions: newest},
		{name: "offset commit at a newer epoch", req: commitReq(1), versions: newest},
		{name: "offset commit of an unknown member", req: func(s *diffSide, v int16) kmsg.Request {
			r := commitReq(0)(s, v).(*kmsg.OffsetCommitRequest)
			r.MemberID = "nobody"
			return r
		}, versions: newest},
		// v9 names topics, v10 names them by id.
		{name: "offset fetch at the member's epoch", req: fetchOffsetsReq(0), versions: atVersion(9)},
		{name: "offset fetch at the epoch before", req: fetchOffsetsReq(-1), versions: atVersion(9)},
		{name: "describe with the classic API", req: func(s *diffSide, v int16) kmsg.Request {
			r := kmsg.NewPtrDescribeGroupsRequest()
			r.Groups = []string{group}
			return r
		}},
		{name: "delete while it has a member", req: deleteGroupsReq(group), versions: newest},
		{name: "join v0, the broker names the member", req: heartbeat(func(*diffSide) string { return "" }, 0, true),
			versions: atVersion(0), after: remember, normalize: sortAssignment},
		{name: "describe two members", req: describe, ignore: clientHost, normalize: sortMembers},
		{name: "the first member leaves", req: heartbeat(named, -1, false), versions: newest},
		{name: "the second member leaves", req: heartbeat(brokerNamed, -1, false), versions: atVersion(0)},
		{name: "describe after both left", req: describe, versions: newest, normalize: sortMembers},
		{name: "delete the empty group", req: deleteGroupsReq(group), versions: newest},
		{name: "describe after the delete", req: describe, versions: newest, normalize: sortMembers},
		{name: "join a classic group", req: joinReq(classic, ""), versions: newest,
			after: func(s *diffSide, resp kmsg.Response) { s.memberID = resp.(*kmsg.JoinGroupResponse).MemberID }},
		{name: "join a classic group with the member id", req: func(s *diffSide, v int16) kmsg.Request { return joinReq(classic, s.memberID)(s, v) },
			versions: newest, ignore: regexp.MustCompile(`(LeaderID|Members\.0\.MemberID)$`)},
		{name: "list this run's groups", req: listGroups(nil, nil), normalize: onlyRun},
		{name: "list this run's groups in state Empty", req: listGroups([]string{"Empty"}, nil), normalize: onlyRun,
			versions: func(lo, hi int16) []int16 { return []int16{4, hi} }},
		{name: "list this run's classic groups", req: listGroups(nil, []string{"classic"}), normalize: onlyRun, versions: newest},
		{name: "list this run's consumer groups", req: listGroups(nil, []string{"consumer"}), normalize: onlyRun, versions: newest},
		{name: "heartbeat to a classic group with a member", req: heartbeatTo(classic), versions: newest,
			known: "no KIP-848 online migration: kbroker answers GROUP_ID_NOT_FOUND, Kafka turns the classic group into a consumer group"},
		{name: "leave a classic group as an unknown member", req: leaveClassic(classic, func(*diffSide) string { return "nobody" })},
		{name: "leave a classic group", req: leaveClassic(classic, func(s *diffSide) string { return s.memberID }), versions: newest,
			until: func(resp kmsg.Response) bool { return resp.(*kmsg.LeaveGroupResponse).ErrorCode == 0 }},
	}...)...)
}

// heartbeatTo is a consumer-group join of a member named after the group,
// subscribed to nothing.
func heartbeatTo(group string) func(*diffSide, int16) kmsg.Request {
	return func(s *diffSide, v int16) kmsg.Request {
		r := kmsg.NewPtrConsumerGroupHeartbeatRequest()
		r.Group, r.MemberID, r.RebalanceTimeoutMillis = group, "m-"+group, 10000
		r.SubscribedTopicNames, r.Topics = []string{}, []kmsg.ConsumerGroupHeartbeatRequestTopic{}
		return r
	}
}

// leaveClassic is a classic LeaveGroup of one member, in the single and the
// batched form.
func leaveClassic(group string, id func(*diffSide) string) func(*diffSide, int16) kmsg.Request {
	return func(s *diffSide, v int16) kmsg.Request {
		r := kmsg.NewPtrLeaveGroupRequest()
		r.Group, r.MemberID = group, id(s)
		m := kmsg.NewLeaveGroupRequestMember()
		m.MemberID = id(s)
		r.Members = append(r.Members, m)
		return r
	}
}

// awaitAssignable is a step that joins a new consumer group (a fresh one
// at each try) subscribed to topic until the answer assigns partitions:
// Kafka's group coordinator learns of a new topic from its metadata log a
// moment after its Metadata answers show it, and a member that joins
// before then gets an empty assignment (and a later group epoch). The last
// answers are compared.
func awaitAssignable(topic, run string) diffStep {
	tries := 0
	return diffStep{
		name: "await a consumer group assignment of " + topic,
		req: func(s *diffSide, v int16) kmsg.Request {
			tries++
			r := kmsg.NewPtrConsumerGroupHeartbeatRequest()
			r.Group = fmt.Sprintf("probe-%s-%d", run, tries)
			r.MemberID, r.RebalanceTimeoutMillis = "probe-"+run, 10000
			r.SubscribedTopicNames, r.Topics = []string{topic}, []kmsg.ConsumerGroupHeartbeatRequestTopic{}
			return r
		},
		versions: newest,
		until: func(resp kmsg.Response) bool {
			r := resp.(*kmsg.ConsumerGroupHeartbeatResponse)
			return r.ErrorCode == 0 && r.Assignment != nil && len(r.Assignment.Topics) > 0
		},
		normalize: sortHeartbeatAssignment,
	}
}

// sortHeartbeatAssignment sorts the partitions of a consumer-group
// heartbeat's assignment, whose order carries no meaning.
func sortHeartbeatAssignment(resp kmsg.Response) {
	if a := resp.(*kmsg.ConsumerGroupHeartbeatResponse).Assignment; a != nil {
		for i := range a.Topics {
			slices.Sort(a.Topics[i].Partitions)
		}
	}
}

func deleteGroupsReq(groups ...string) func(*diffSide, int16) kmsg.Request {
	return func(_ *diffSide, v int16) kmsg.Request {
		r := kmsg.NewPtrDeleteGroupsRequest()
		r.Groups = groups
		return r
	}
}
