package integration

import (
	"github.com/twmb/franz-go/pkg/kmsg"
)

// streamsDiffSteps compares streams groups (KIP-1071): request checks,
// a join whose source topic is missing, fencing, describe and leave.
func streamsDiffSteps(run string) []diffStep {
	group := "stg-" + run
	in := "stg-in-" + run
	shareGroup := "sg-" + run // the share sequence's group (diff_share_test.go)
	join := func(member string) func(*diffSide, int16) kmsg.Request {
		return func(_ *diffSide, _ int16) kmsg.Request {
			r := kmsg.NewPtrStreamsGroupHeartbeatRequest()
			r.Group, r.MemberID, r.RebalanceTimeoutMillis = group, member, 30000
			r.ProcessID = kmsg.StringPtr("process-1")
			r.ActiveTasks, r.StandbyTasks, r.WarmupTasks = []kmsg.TaskIDs{}, []kmsg.TaskIDs{}, []kmsg.TaskIDs{}
			top := kmsg.NewStreamsGroupHeartbeatRequestTopology()
			s := kmsg.NewStreamsGroupHeartbeatRequestTopologySubtopology()
			s.SubtopologyID, s.SourceTopics = "0", []string{in}
			s.StateChangelogTopics = []kmsg.TopicInfo{{Topic: group + "-store-changelog"}}
			top.Subtopologies = append(top.Subtopologies, s)
			r.Topology = &top
			return r
		}
	}
	beat := func(member string, epoch int32) func(*diffSide, int16) kmsg.Request {
		return func(_ *diffSide, _ int16) kmsg.Request {
			r := kmsg.NewPtrStreamsGroupHeartbeatRequest()
			r.Group, r.MemberID, r.MemberEpoch = group, member, epoch
			return r
		}
	}
	describe := func(groups ...string) func(*diffSide, int16) kmsg.Request {
		return func(_ *diffSide, _ int16) kmsg.Request {
			r := kmsg.NewPtrStreamsGroupDescribeRequest()
			r.Groups = groups
			return r
		}
	}
	joinAs := func(id string, member string) func(*diffSide, int16) kmsg.Request {
		return func(s *diffSide, v int16) kmsg.Request {
			r := join(member)(s, v).(*kmsg.StreamsGroupHeartbeatRequest)
			r.Group = id
			return r
		}
	}
	return []diffStep{
		awaitCoordinator(group, 0),
		awaitGroupLoaded(group),
		{name: "streams join without member id", req: join("")},
		// The share sequence may or may not have made its group yet: the
		// request check comes first either way.
		{name: "streams join without member id, a share group's id", req: joinAs(shareGroup, ""), versions: newest},
		{name: "streams describe unknown group", req: describe(group)},
		{name: "streams join, source topic missing", req: join("m1"), versions: newest},
		{name: "streams heartbeat ahead of the member epoch", req: beat("m1", 99), versions: newest},
		{name: "streams heartbeat unknown member", req: beat("m2", 1)},
		// Within the initial rebalance delay: group epoch 2, the member
		// at the empty target of epoch 1.
		{name: "streams describe", req: describe(group)},
		{name: "streams leave", req: beat("m1", -1), versions: newest},
	}
}
