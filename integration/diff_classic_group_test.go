package integration

import (
	"regexp"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// classicGroupLifecycleSteps are a classic group's whole round, as a
// consumer with the range assignor goes through it: join (member id
// required, then with it), sync as the leader with an assignment,
// heartbeat, commit and fetch offsets at the generation, describe the
// Stable group, a second sync, leave, and describe the Empty group.
// memberIDs are the fields that carry member ids, which differ.
var memberIDs = regexp.MustCompile(`(LeaderID|MemberID|Members\.\d+\.MemberID)$`)

// leaderSyncReq is the SyncGroup of group's only member, as its leader,
// assigning it partitions 0 and 1 of topic.
func leaderSyncReq(group, topic string) func(*diffSide, int16) kmsg.Request {
	return func(s *diffSide, v int16) kmsg.Request {
		r := kmsg.NewPtrSyncGroupRequest()
		r.Group, r.Generation, r.MemberID = group, s.generation, s.memberID
		r.ProtocolType, r.Protocol = kmsg.StringPtr("consumer"), kmsg.StringPtr("range")
		a := kmsg.NewConsumerMemberAssignment()
		a.Topics = []kmsg.ConsumerMemberAssignmentTopic{{Topic: topic, Partitions: []int32{0, 1}}}
		r.GroupAssignment = []kmsg.SyncGroupRequestGroupAssignment{{MemberID: s.memberID, MemberAssignment: a.AppendTo(nil)}}
		return r
	}
}

func classicGroupLifecycleSteps(run string) []diffStep {
	group, topic := "lc-"+run, "lct-"+run
	sync := leaderSyncReq(group, topic)
	describe := func(s *diffSide, v int16) kmsg.Request {
		r := kmsg.NewPtrDescribeGroupsRequest()
		r.Groups = []string{group}
		return r
	}
	steps := append(createAndAwait(topic, 2), awaitGroupReady(group)...)
	return append(steps, []diffStep{
		{name: "join", req: joinReq(group, ""), versions: newest,
			after: func(s *diffSide, resp kmsg.Response) { s.memberID = resp.(*kmsg.JoinGroupResponse).MemberID }},
		{name: "join with the member id", req: func(s *diffSide, v int16) kmsg.Request { return joinReq(group, s.memberID)(s, v) },
			versions: newest, ignore: memberIDs,
			after: func(s *diffSide, resp kmsg.Response) { s.generation = resp.(*kmsg.JoinGroupResponse).Generation }},
		{name: "sync as the leader", req: sync, versions: newest},
		{name: "heartbeat", req: func(s *diffSide, v int16) kmsg.Request {
			r := kmsg.NewPtrHeartbeatRequest()
			r.Group, r.Generation, r.MemberID = group, s.generation, s.memberID
			return r
		}},
		{name: "commit at the generation", req: offsetCommitReq(group, topic, func(s *diffSide) (string, int32) { return s.memberID, s.generation }, nil, 0, 7, 9),
			versions: func(lo, hi int16) []int16 { return []int16{max(lo, 1), hi} }},
		{name: "fetch the offsets", req: func(s *diffSide, v int16) kmsg.Request {
			r := kmsg.NewPtrOffsetFetchRequest()
			r.Group = group
			r.Topics = []kmsg.OffsetFetchRequestTopic{{Topic: topic, Partitions: []int32{0, 1}}}
			r.Groups = []kmsg.OffsetFetchRequestGroup{{Group: group, Topics: []kmsg.OffsetFetchRequestGroupTopic{{Topic: topic, Partitions: []int32{0, 1}}}}}
			return r
		}, versions: func(lo, hi int16) []int16 { return []int16{1, 9} }},
		{name: "describe the Stable group", req: describe, ignore: regexp.MustCompile(`(MemberID|ClientHost|MemberMetadata|MemberAssignment)$`)},
		{name: "sync again", req: sync, versions: newest},
		{name: "leave", req: func(s *diffSide, v int16) kmsg.Request {
			r := kmsg.NewPtrLeaveGroupRequest()
			r.Group, r.MemberID = group, s.memberID
			r.Members = []kmsg.LeaveGroupRequestMember{{MemberID: s.memberID}}
			return r
		}, versions: newest, ignore: memberIDs},
		{name: "describe the Empty group", req: describe},
	}...)
}

// classicGroupV0Steps are a classic group's join, sync and leave at v0 of
// each, where a join gets its member id at once (no MEMBER_ID_REQUIRED).
func classicGroupV0Steps(run string) []diffStep {
	group, topic := "lc0-"+run, "lct-"+run // the topic of classicGroupLifecycleSteps
	return append(awaitGroupReady(group), []diffStep{
		{name: "join v0", req: joinReq(group, ""), versions: oldest, ignore: memberIDs,
			after: func(s *diffSide, resp kmsg.Response) {
				r := resp.(*kmsg.JoinGroupResponse)
				s.memberID, s.generation = r.MemberID, r.Generation
			}},
		{name: "sync v0 as the leader", req: leaderSyncReq(group, topic), versions: oldest},
		{name: "leave v0", req: func(s *diffSide, v int16) kmsg.Request {
			r := kmsg.NewPtrLeaveGroupRequest()
			r.Group, r.MemberID = group, s.memberID
			return r
		}, versions: oldest},
	}...)
}
