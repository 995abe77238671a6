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
// a fenced epoch, a group of another type), the describe before and after
// the members leave, and the classic LeaveGroup and ListGroups around a
// classic group.
func consumerGroupDiffSteps(run string) []diffStep {
	topic, group, classic := "cgt-"+run, "cg-"+run, "cl-"+run
	member := "member-" + run
	newest := func(lo, hi int16) []int16 { return []int16{hi} }
	at := func(v int16) func(lo, hi int16) []int16 { return func(lo, hi int16) []int16 { return []int16{v} } }
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
	// The order of an assignment's partitions carries no meaning.
	sortAssignment := func(resp kmsg.Response) {
		if a := resp.(*kmsg.ConsumerGroupHeartbeatResponse).Assignment; a != nil {
			for i := range a.Topics {
				slices.Sort(a.Topics[i].Partitions)
			}
		}
	}
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
	return []diffStep{
		{name: "create", req: createTopicsReq(topic, 3, nil, false), versions: newest,
			ignore: regexp.MustCompile(`Topics\.0\.Configs\.`)},
		awaitTopic(topic, 3),
		awaitCoordinator(group, 0),
		awaitGroupLoaded(group),
		awaitAssignable(topic, run),
		{name: "heartbeat of an unknown member", req: heartbeat(named, 3, false)},
		{name: "join without a rebalance timeout", req: func(s *diffSide, v int16) kmsg.Request {
			r := heartbeat(named, 0, true)(s, v).(*kmsg.ConsumerGroupHeartbeatRequest)
			r.RebalanceTimeoutMillis = -1
			return r
		}, versions: newest},
		{name: "join v1 without a member id", req: heartbeat(func(*diffSide) string { return "" }, 0, true), versions: at(1)},
		{name: "join v1", req: heartbeat(named, 0, true), versions: at(1), normalize: sortAssignment},
		{name: "heartbeat with a fenced epoch", req: heartbeat(named, 7, false), versions: newest},
		{name: "heartbeat at the member's epoch", req: func(s *diffSide, v int16) kmsg.Request {
			r := heartbeat(named, 1, false)(s, v).(*kmsg.ConsumerGroupHeartbeatRequest)
			r.RebalanceTimeoutMillis = 10000
			return r
		}, versions: newest},
		{name: "describe one member", req: describe, ignore: clientHost, normalize: sortMembers},
		{name: "join v0, the broker names the member", req: heartbeat(func(*diffSide) string { return "" }, 0, true),
			versions: at(0), after: remember, normalize: sortAssignment},
		{name: "describe two members", req: describe, ignore: clientHost, normalize: sortMembers},
		{name: "the first member leaves", req: heartbeat(named, -1, false), versions: newest},
		{name: "the second member leaves", req: heartbeat(brokerNamed, -1, false), versions: at(0)},
		{name: "describe after both left", req: describe, versions: newest, normalize: sortMembers},
		{name: "join a classic group", req: joinReq(classic, ""), versions: newest,
			after: func(s *diffSide, resp kmsg.Response) { s.memberID = resp.(*kmsg.JoinGroupResponse).MemberID }},
		{name: "heartbeat to a classic group", req: func(s *diffSide, v int16) kmsg.Request {
			r := kmsg.NewPtrConsumerGroupHeartbeatRequest()
			r.Group, r.MemberID, r.RebalanceTimeoutMillis = classic, member, 10000
			r.SubscribedTopicNames, r.Topics = []string{topic}, []kmsg.ConsumerGroupHeartbeatRequestTopic{}
			return r
		}, versions: newest},
		{name: "list this run's groups", req: func(s *diffSide, v int16) kmsg.Request {
			return kmsg.NewPtrListGroupsRequest()
		}, normalize: func(resp kmsg.Response) {
			r := resp.(*kmsg.ListGroupsResponse)
			r.Groups = slices.DeleteFunc(r.Groups, func(g kmsg.ListGroupsResponseGroup) bool {
				return g.Group != group && g.Group != classic
			})
			slices.SortFunc(r.Groups, func(a, b kmsg.ListGroupsResponseGroup) int {
				return strings.Compare(a.Group, b.Group)
			})
		}},
		{name: "leave a classic group as an unknown member", req: func(s *diffSide, v int16) kmsg.Request {
			r := kmsg.NewPtrLeaveGroupRequest()
			r.Group, r.MemberID = classic, "nobody"
			m := kmsg.NewLeaveGroupRequestMember()
			m.MemberID = "nobody"
			r.Members = append(r.Members, m)
			return r
		}},
		{name: "leave a classic group", req: func(s *diffSide, v int16) kmsg.Request {
			r := kmsg.NewPtrLeaveGroupRequest()
			r.Group, r.MemberID = classic, s.memberID
			m := kmsg.NewLeaveGroupRequestMember()
			m.MemberID = s.memberID
			r.Members = append(r.Members, m)
			return r
		}, versions: newest},
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
		versions: func(lo, hi int16) []int16 { return []int16{hi} },
		until: func(resp kmsg.Response) bool {
			r := resp.(*kmsg.ConsumerGroupHeartbeatResponse)
			return r.ErrorCode == 0 && r.Assignment != nil && len(r.Assignment.Topics) > 0
		},
		normalize: func(resp kmsg.Response) {
			if a := resp.(*kmsg.ConsumerGroupHeartbeatResponse).Assignment; a != nil {
				for i := range a.Topics {
					slices.Sort(a.Topics[i].Partitions)
				}
			}
		},
	}
}
