package integration

import (
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// classicEdgeState is what the classic-edge steps learn on one side: the
// member ids each broker handed out, by name, and the group's generation.
type classicEdgeState struct {
	members    map[string]string
	generation int32
}

// classicEdgeSteps are the edge and error paths of classic groups: the
// empty group id at every group API, JoinGroup's session-timeout bounds
// and protocol checks, static membership (a replaced member fenced at
// Heartbeat, SyncGroup, OffsetCommit, JoinGroup and LeaveGroup), SyncGroup
// v5's protocol checks, a pending member's LeaveGroup in a batch with an
// unknown one (which rebalances the group in Kafka 4: Heartbeat answers
// REBALANCE_IN_PROGRESS), a second static member that joins while the
// first does not rejoin, a follower's SyncGroup before the leader's (the
// leader never syncs: the sync timeout ends the generation), the removal
// of a static member by instance id, OffsetCommit with generation -1 on a
// Stable and an Empty group, DescribeGroups of the group in each state and
// once deleted, and a static member whose rejoin with other protocols
// changes the group's protocol.
//
// Every step is one request on one connection, sent to kbroker and then
// to Kafka, so a request that parks until a timer fires on kbroker reaches
// Kafka just when the same timer fires there. The steps are timed so that
// no answer depends on such a race: the step that starts the rebalance
// answers at once and reaches Kafka half a rebalance timeout (1.25 s) after
// kbroker, so that Kafka's join phase ends that much later; the second
// static member's rebalance timeout (7.5 s) makes the sync timeout longer
// than the join phase (2.5 s), so that kbroker's generation does not expire
// while Kafka's join phase ends, and the follower's parked SyncGroup, which
// waits for the sync timeout, reaches Kafka 1.25 s before it fires there.
// The margins are that wide for a freshly started Kafka on a loaded
// machine, whose first answers on a code path can take hundreds of ms.
func classicEdgeSteps(run string) []diffStep {
	topic, grp, bad, other := "cet-"+run, "ce-"+run, "ceb-"+run, "cep-"+run
	const rebalanceMs, longRebalanceMs, sessionMs = 2500, 7500, 30000
	state := map[*diffSide]*classicEdgeState{}
	get := func(s *diffSide) *classicEdgeState {
		if state[s] == nil {
			state[s] = &classicEdgeState{members: map[string]string{}}
		}
		return state[s]
	}
	// remember keeps a JoinGroup's member id as name, and its generation.
	remember := func(name string) func(*diffSide, kmsg.Response) {
		return func(s *diffSide, resp kmsg.Response) {
			r := resp.(*kmsg.JoinGroupResponse)
			if r.MemberID != "" {
				get(s).members[name] = r.MemberID
			}
			if r.ErrorCode == 0 {
				get(s).generation = r.Generation
			}
		}
	}
	member := func(s *diffSide, name string) string {
		if m, ok := get(s).members[name]; ok {
			return m
		}
		return name // an id nobody was given
	}
	// join is a consumer's JoinGroup to group as member name ("" for none)
	// with instance id instance ("" for none), changed by mod.
	join := func(group, name, instance string, mod func(*kmsg.JoinGroupRequest)) func(*diffSide, int16) kmsg.Request {
		return func(s *diffSide, v int16) kmsg.Request {
			r := joinReq(group, "")(s, v).(*kmsg.JoinGroupRequest)
			if name != "" {
				r.MemberID = member(s, name)
			}
			if instance != "" {
				r.InstanceID = kmsg.StringPtr(instance)
			}
			r.SessionTimeoutMillis, r.RebalanceTimeoutMillis = sessionMs, rebalanceMs
			if mod != nil {
				mod(r)
			}
			return r
		}
	}
	// heartbeat is member name's Heartbeat at the generation plus delta.
	heartbeat := func(group, name, instance string, delta int32) func(*diffSide, int16) kmsg.Request {
		return func(s *diffSide, v int16) kmsg.Request {
			r := kmsg.NewPtrHeartbeatRequest()
			r.Group, r.MemberID, r.Generation = group, member(s, name), get(s).generation+delta
			if instance != "" {
				r.InstanceID = kmsg.StringPtr(instance)
			}
			return r
		}
	}
	// sync is member name's SyncGroup at the generation; as the leader
	// (assign) it gives itself both partitions. ptype and pname are the
	// v5 protocol type and name.
	sync := func(group, name, instance string, assign bool, ptype, pname *string) func(*diffSide, int16) kmsg.Request {
		return func(s *diffSide, v int16) kmsg.Request {
			r := kmsg.NewPtrSyncGroupRequest()
			r.Group, r.MemberID, r.Generation = group, member(s, name), get(s).generation
			r.ProtocolType, r.Protocol = ptype, pname
			if instance != "" {
				r.InstanceID = kmsg.StringPtr(instance)
			}
			if assign {
				a := kmsg.NewConsumerMemberAssignment()
				a.Topics = []kmsg.ConsumerMemberAssignmentTopic{{Topic: topic, Partitions: []int32{0, 1}}}
				r.GroupAssignment = []kmsg.SyncGroupRequestGroupAssignment{{MemberID: r.MemberID, MemberAssignment: a.AppendTo(nil)}}
			}
			return r
		}
	}
	consumer, rangeName := kmsg.StringPtr("consumer"), kmsg.StringPtr("range")
	// commit is OffsetCommit of offset 3 to partition 0 as member name
	// ("" for none) at generation gen (nil: the current one).
	commit := func(group, name, instance string, gen *int32) func(*diffSide, int16) kmsg.Request {
		return func(s *diffSide, v int16) kmsg.Request {
			who := func(s *diffSide) (string, int32) {
				g := get(s).generation
				if gen != nil {
					g = *gen
				}
				if name == "" {
					return "", g
				}
				return member(s, name), g
			}
			r := offsetCommitReq(group, topic, who, nil, 0, 3)(s, v).(*kmsg.OffsetCommitRequest)
			if instance != "" {
				r.InstanceID = kmsg.StringPtr(instance)
			}
			return r
		}
	}
	// leave is LeaveGroup v3+ of members, each a member name ("" for
	// none) and an instance id ("" for none).
	leave := func(group string, members ...[2]string) func(*diffSide, int16) kmsg.Request {
		return func(s *diffSide, v int16) kmsg.Request {
			r := kmsg.NewPtrLeaveGroupRequest()
			r.Group = group
			for _, m := range members {
				lm := kmsg.NewLeaveGroupRequestMember()
				if m[0] != "" {
					lm.MemberID = member(s, m[0])
				}
				if m[1] != "" {
					lm.InstanceID = kmsg.StringPtr(m[1])
				}
				r.Members = append(r.Members, lm)
			}
			if len(members) > 0 {
				r.MemberID = r.Members[0].MemberID // v0-v2
			}
			return r
		}
	}
	describe := func(group string) func(*diffSide, int16) kmsg.Request {
		return func(s *diffSide, v int16) kmsg.Request {
			r := kmsg.NewPtrDescribeGroupsRequest()
			r.Groups = []string{group}
			return r
		}
	}
	// Members of a JoinGroup or DescribeGroups answer come in no defined
	// order (Kafka keeps them in a hash map): sorted by instance id.
	sortJoinMembers := func(resp kmsg.Response) {
		slices.SortFunc(resp.(*kmsg.JoinGroupResponse).Members, func(a, b kmsg.JoinGroupResponseMember) int {
			return strings.Compare(instanceOf(a.InstanceID), instanceOf(b.InstanceID))
		})
	}
	sortDescribed := func(resp kmsg.Response) {
		for _, g := range resp.(*kmsg.DescribeGroupsResponse).Groups {
			slices.SortFunc(g.Members, func(a, b kmsg.DescribeGroupsResponseGroupMember) int {
				return strings.Compare(instanceOf(a.InstanceID), instanceOf(b.InstanceID))
			})
		}
	}
	since := func(min int16) func(lo, hi int16) []int16 {
		return func(lo, hi int16) []int16 { return []int16{max(lo, min), hi} }
	}
	noGeneration := int32(-1)

	steps := append(createAndAwait(topic, 2), awaitGroupReady(grp)...)
	steps = append(steps, awaitGroupReady(bad)...)
	steps = append(steps, awaitGroupReady(other)...)
	steps = append(steps, []diffStep{
		// The empty group id, at every group API.
		{name: "join the empty group id", req: join("", "", "", nil)},
		{name: "sync the empty group id", req: sync("", "a", "", false, consumer, rangeName)},
		{name: "heartbeat the empty group id", req: heartbeat("", "a", "", 0)},
		{name: "leave the empty group id", req: leave("", [2]string{"a", ""})},
		{name: "commit to the empty group id", req: commit("", "", "", &noGeneration)},
		{name: "describe the empty group id", req: describe("")},

		// JoinGroup's checks before the group is looked at, and those
		// of a new group's protocol.
		{name: "join with a session timeout below the minimum", req: join(bad, "", "", func(r *kmsg.JoinGroupRequest) { r.SessionTimeoutMillis = 999 })},
		{name: "join with a session timeout above the maximum", req: join(bad, "", "", func(r *kmsg.JoinGroupRequest) { r.SessionTimeoutMillis = 1800001 })},
		{name: "join a new group without a protocol type", req: join(bad, "", "", func(r *kmsg.JoinGroupRequest) { r.ProtocolType = "" })},
		{name: "join a new group without protocols", req: join(bad, "", "", func(r *kmsg.JoinGroupRequest) { r.Protocols = nil })},
		{name: "describe the group of the refused joins", req: describe(bad)},

		// A static member joins (no MEMBER_ID_REQUIRED) and leads.
		{name: "join with an instance id", req: join(grp, "", "i1", nil), versions: newest, after: remember("a1"), ignore: memberIDs},
		{name: "sync as the static leader", req: sync(grp, "a1", "i1", true, consumer, rangeName), versions: newest},
		// The same instance id without a member id replaces the member:
		// no rebalance, the new id leads and (v9) skips the assignment.
		{name: "join again with the instance id", req: join(grp, "", "i1", nil), versions: newest, after: remember("a2"), ignore: memberIDs},
		{name: "heartbeat of the replaced member", req: heartbeat(grp, "a1", "i1", 0), versions: since(3)},
		{name: "heartbeat of the replaced member id alone", req: heartbeat(grp, "a1", "", 0)},
		{name: "sync of the replaced member", req: sync(grp, "a1", "i1", false, consumer, rangeName), versions: since(3)},
		{name: "commit of the replaced member", req: commit(grp, "a1", "i1", nil), versions: since(7)},
		{name: "join of the replaced member", req: join(grp, "a1", "i1", nil), versions: since(5)},
		{name: "heartbeat of the new member", req: heartbeat(grp, "a2", "i1", 0), versions: since(3)},
		{name: "commit of the new member", req: commit(grp, "a2", "i1", nil), versions: since(7)},
		{name: "commit at generation -1 to the Stable group", req: commit(grp, "", "", &noGeneration), versions: since(1)},
		{name: "commit at generation -1 with the member id", req: commit(grp, "a2", "i1", &noGeneration), versions: since(7)},
		{name: "heartbeat with an unknown instance id", req: heartbeat(grp, "a2", "i9", 0), versions: since(3)},
		{name: "heartbeat with an empty instance id", req: func(s *diffSide, v int16) kmsg.Request {
			r := heartbeat(grp, "a2", "", 0)(s, v).(*kmsg.HeartbeatRequest)
			r.InstanceID = kmsg.StringPtr("")
			return r
		}, versions: since(3)},
		{name: "leave of an unknown member", req: leave(grp, [2]string{"nobody", ""})},
		{name: "leave of no members", req: leave(grp), versions: since(3)},
		{name: "join with an unknown member id", req: join(grp, "nobody", "", nil)},
		{name: "join of a member with another protocol type", req: join(grp, "a2", "i1", func(r *kmsg.JoinGroupRequest) { r.ProtocolType = "connect" }), versions: since(5)},
		{name: "join of a new member with another protocol", req: join(grp, "", "", func(r *kmsg.JoinGroupRequest) { r.Protocols[0].Name = "roundrobin" })},
		{name: "sync with another protocol type", req: sync(grp, "a2", "i1", false, kmsg.StringPtr("connect"), rangeName), versions: newest},
		{name: "sync with another protocol name", req: sync(grp, "a2", "i1", false, consumer, kmsg.StringPtr("roundrobin")), versions: newest},
		{name: "sync without a protocol type", req: sync(grp, "a2", "i1", false, nil, rangeName), versions: newest},
		{name: "describe the Stable group with a static member", req: describe(grp), versions: since(4)},

		// A dynamic member gets an id to join with, but leaves (in a
		// batch with an unknown member) before it joins: the group
		// rebalances. Kafka gets the leave half a rebalance timeout after
		// kbroker (see above).
		{name: "join of a dynamic member", req: join(grp, "", "", nil), versions: newest, after: remember("b")},
		{name: "leave of the pending member and an unknown one", req: func(s *diffSide, v int16) kmsg.Request {
			if s.name == "kafka" {
				time.Sleep(rebalanceMs / 2 * time.Millisecond)
			}
			return leave(grp, [2]string{"b", ""}, [2]string{"nobody", ""})(s, v)
		}, versions: newest},
		{name: "heartbeat after the pending member left", req: heartbeat(grp, "a2", "i1", 0), versions: newest},
		{name: "commit during the rebalance", req: commit(grp, "a2", "i1", nil), versions: newest},
		{name: "describe the PreparingRebalance group", req: describe(grp), versions: newest},
		// A second static member joins; the first does not rejoin, so
		// the join phase ends at the rebalance timeout with both (a
		// static member stays), the new one leading.
		{name: "join of a second static member", req: join(grp, "", "i2", func(r *kmsg.JoinGroupRequest) { r.RebalanceTimeoutMillis = longRebalanceMs }),
			versions: newest, after: remember("c"), ignore: memberIDs, normalize: sortJoinMembers},
		{name: "heartbeat at the old generation", req: heartbeat(grp, "a2", "i1", -1), versions: newest},
		{name: "heartbeat of the follower before syncing", req: heartbeat(grp, "a2", "i1", 0), versions: newest},
		{name: "describe the CompletingRebalance group", req: describe(grp), versions: newest, normalize: sortDescribed},
		{name: "commit of the follower before the assignment", req: commit(grp, "a2", "i1", nil), versions: newest},
		// The follower syncs first and the leader never does: at the
		// sync timeout the leader is removed and the follower is told
		// to rejoin.
		{name: "sync of the follower before the leader's", req: sync(grp, "a2", "i1", false, consumer, rangeName), versions: newest},
		{name: "describe after the sync timeout", req: describe(grp), versions: newest},
		{name: "rejoin of the first member", req: join(grp, "a2", "i1", nil), versions: newest, after: remember("a2"), ignore: memberIDs},
		{name: "sync as the leader again", req: sync(grp, "a2", "i1", true, consumer, rangeName), versions: newest},

		// Removing the static member by instance id.
		{name: "leave by instance id with another member id", req: leave(grp, [2]string{"a1", "i1"}), versions: since(3)},
		{name: "leave by instance id and an unknown instance", req: leave(grp, [2]string{"", "i1"}, [2]string{"", "i9"}), versions: newest},
		{name: "describe the Empty group", req: describe(grp)},
		{name: "heartbeat to the Empty group", req: heartbeat(grp, "a2", "i1", 0), versions: newest},
		{name: "sync to the Empty group", req: sync(grp, "a2", "", false, consumer, rangeName), versions: newest},
		{name: "commit of the old member to the Empty group", req: commit(grp, "a2", "", nil), versions: newest},
		{name: "commit at generation -1 to the Empty group", req: commit(grp, "", "", &noGeneration), versions: since(1)},
		{name: "commit at generation -1 with an old member id to the Empty group", req: commit(grp, "a2", "", &noGeneration)},
		// An Empty group takes any protocol type: a static member of
		// another protocol joins (the initial rebalance, no delay), then
		// leaves, and the group keeps its protocol type.
		{name: "join of another protocol type to the Empty group", req: join(grp, "", "i3", func(r *kmsg.JoinGroupRequest) { r.ProtocolType = "connect" }),
			versions: newest, after: remember("d"), ignore: memberIDs},
		{name: "leave of the member of another protocol type", req: leave(grp, [2]string{"d", "i3"}), versions: newest, ignore: memberIDs},
		{name: "describe the Empty group after another protocol type", req: describe(grp), versions: newest},
		{name: "delete the group", req: func(s *diffSide, v int16) kmsg.Request {
			r := kmsg.NewPtrDeleteGroupsRequest()
			r.Groups = []string{grp}
			return r
		}, versions: newest},
		{name: "describe the deleted group", req: describe(grp)},
		{name: "heartbeat to the deleted group", req: heartbeat(grp, "a2", "", 0), versions: newest},
		{name: "commit of a member to the deleted group", req: commit(grp, "a2", "", nil), versions: func(lo, hi int16) []int16 { return []int16{lo, 8, hi} }},

		// A static member that rejoins without its member id and with
		// protocols that change the group's choice rebalances it.
		{name: "join of a static member to rebalance", req: join(other, "", "i1", nil), versions: newest, after: remember("e1"), ignore: memberIDs},
		{name: "sync before the protocol changes", req: sync(other, "e1", "i1", true, consumer, rangeName), versions: newest},
		{name: "join again with the instance id and another protocol first", req: join(other, "", "i1", func(r *kmsg.JoinGroupRequest) {
			p := r.Protocols[0]
			p.Name = "roundrobin"
			r.Protocols = append([]kmsg.JoinGroupRequestProtocol{p}, r.Protocols...)
		}), versions: newest, after: remember("e2"), ignore: memberIDs},
		{name: "sync with the old protocol", req: sync(other, "e2", "i1", true, consumer, rangeName), versions: newest},
		{name: "sync with the new protocol", req: sync(other, "e2", "i1", true, consumer, kmsg.StringPtr("roundrobin")), versions: newest},
		{name: "describe the group of the new protocol", req: describe(other), versions: newest},
	}...)
	return steps
}

// instanceOf is an instance id, "" for null.
func instanceOf(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
