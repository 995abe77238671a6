package integration

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// consumerEdgeSteps are the edge and error paths of KIP-848 consumer
// groups (ConsumerGroupHeartbeat v0–v1, ConsumerGroupDescribe) on both
// brokers: what a heartbeat must or must not carry, subscriptions by
// regular expression (invalid ones, RE2 syntax both accept or refuse, one
// matching nothing, one matching an internal topic, names and a regular
// expression at once, a switch to names and to nothing), unknown and named
// server assignors and a switch between them, rebalance timeouts of 0 and
// below, stale and invalid member epochs, static membership (an instance
// id in use, a static leave, the rejoin that takes the assignment over
// under another or the same member id, the replaced member's heartbeat),
// a subscribed topic created, grown and deleted after the join, rack ids,
// and ConsumerGroupDescribe of unknown, classic, share, empty and blank
// group ids and with the authorized operations. Member ids are the
// client's (v1) wherever a describe pairs members, so that members sort
// alike on both brokers; assignments are compared where the assignor
// makes them deterministic (one member, or the range assignor).
func consumerEdgeSteps(run string) []diffStep {
	p := "kce-" + run
	topicA, topicB, late := p+"-a", p+"-b", p+"-late"
	regex := p + "-[ab]"
	gBad, gRe, gBoth := p+"-bad", p+"-re", p+"-both"
	gRange, gUniform, gStatic := p+"-range", p+"-uniform", p+"-static"
	gEpoch, gLate, gRack, classic := p+"-epoch", p+"-late", p+"-rack", p+"-classic"
	gSyntax, gPrefix, gInternal, gSwitch := p+"-syntax", p+"-prefix", p+"-internal", p+"-switch"
	gShare := p + "-share"
	instance := "inst-" + run
	ms := edgeMembers{}

	steps := createAndAwait(topicB, 1)
	steps = append(steps, createAndAwait(topicA, 2)...)
	for _, g := range []string{gBad, gRe, gBoth, gRange, gUniform, gStatic, gEpoch, gLate, gRack, classic, gSyntax, gPrefix, gInternal, gSwitch, gShare} {
		steps = append(steps, awaitGroupReady(g)...)
	}
	// Kafka's coordinator learns of topics in the order they were created:
	// once the second is assignable, so is the first.
	steps = append(steps, awaitAssignable(topicA, "kce"+run))

	// join is a member's first heartbeat: epoch 0, a rebalance timeout,
	// no owned partitions, subscribed to names.
	join := func(group, member string, names ...string) func(*diffSide, int16) *kmsg.ConsumerGroupHeartbeatRequest {
		return func(s *diffSide, v int16) *kmsg.ConsumerGroupHeartbeatRequest {
			r := kmsg.NewPtrConsumerGroupHeartbeatRequest()
			r.Group, r.MemberID, r.RebalanceTimeoutMillis = group, member, 10000
			r.SubscribedTopicNames = append([]string{}, names...)
			r.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
			return r
		}
	}
	with := func(base func(*diffSide, int16) *kmsg.ConsumerGroupHeartbeatRequest, mod func(*kmsg.ConsumerGroupHeartbeatRequest)) func(*diffSide, int16) kmsg.Request {
		return func(s *diffSide, v int16) kmsg.Request {
			r := base(s, v)
			mod(r)
			return r
		}
	}
	plain := func(base func(*diffSide, int16) *kmsg.ConsumerGroupHeartbeatRequest) func(*diffSide, int16) kmsg.Request {
		return with(base, func(*kmsg.ConsumerGroupHeartbeatRequest) {})
	}
	// beat is a regular heartbeat of a tracked member: its epoch (moved
	// by delta) and the partitions it owns.
	beat := func(group, member string, delta int32) func(*diffSide, int16) *kmsg.ConsumerGroupHeartbeatRequest {
		return func(s *diffSide, v int16) *kmsg.ConsumerGroupHeartbeatRequest {
			m := ms.of(s, member)
			r := kmsg.NewPtrConsumerGroupHeartbeatRequest()
			r.Group, r.MemberID, r.MemberEpoch = group, member, m.epoch+delta
			r.Topics = m.owned(s)
			return r
		}
	}
	track := func(member string) func(*diffSide, kmsg.Response) {
		return func(s *diffSide, resp kmsg.Response) {
			ms.of(s, member).learn(s, resp)
			sortHeartbeatTopics(s, resp)
		}
	}
	describe := func(include bool, groups ...string) func(*diffSide, int16) kmsg.Request {
		return func(s *diffSide, v int16) kmsg.Request {
			r := kmsg.NewPtrConsumerGroupDescribeRequest()
			r.Groups, r.IncludeAuthorizedOperations = groups, include
			return r
		}
	}
	describeStep := func(name string, groups ...string) diffStep {
		return diffStep{name: name, req: describe(false, groups...), versions: newest,
			ignore: clientHostField, after: sortDescribedTopics, normalize: sortDescribedMembers}
	}

	// The request's checks, then members that join subscribed to nothing.
	steps = append(steps, []diffStep{
		{name: "join with an invalid regular expression", req: with(join(gBad, "re-bad-"+run), func(r *kmsg.ConsumerGroupHeartbeatRequest) {
			r.SubscribedTopicNames, r.SubscribedTopicRegex = nil, kmsg.StringPtr("[")
		}), versions: newest},
		{name: "join with an unknown server assignor", req: with(join(gBad, "asg-"+run, topicA), func(r *kmsg.ConsumerGroupHeartbeatRequest) {
			r.ServerAssignor = kmsg.StringPtr("nope")
		})},
		{name: "join without a subscription", req: with(join(gBad, "nosub-"+run), func(r *kmsg.ConsumerGroupHeartbeatRequest) {
			r.SubscribedTopicNames = nil
		})},
		{name: "join owning partitions", req: with(join(gBad, "owning-"+run, topicA), func(r *kmsg.ConsumerGroupHeartbeatRequest) {
			t := kmsg.NewConsumerGroupHeartbeatRequestTopic()
			t.Partitions = []int32{0}
			r.Topics = append(r.Topics, t)
		})},
		{name: "join with a blank member id", req: plain(join(gBad, "  ", topicA)), versions: newest},
		{name: "join with an empty instance id", req: with(join(gBad, "inst-"+run, topicA), func(r *kmsg.ConsumerGroupHeartbeatRequest) {
			r.InstanceID = kmsg.StringPtr("")
		})},
		{name: "join with an empty rack id", req: with(join(gBad, "rack-"+run, topicA), func(r *kmsg.ConsumerGroupHeartbeatRequest) {
			r.RackID = kmsg.StringPtr("")
		})},
		{name: "join with an empty group id", req: plain(join("", "nogroup-"+run, topicA))},
		{name: "join with a blank group id", req: plain(join("  ", "nogroup-"+run, topicA)), versions: newest},
		{name: "join with an empty server assignor", req: with(join(gBad, "asg-"+run, topicA), func(r *kmsg.ConsumerGroupHeartbeatRequest) {
			r.ServerAssignor = kmsg.StringPtr("")
		}), versions: newest},
		{name: "heartbeat without a member id at epoch 3", req: with(join(gBad, "", topicA), func(r *kmsg.ConsumerGroupHeartbeatRequest) {
			r.MemberEpoch, r.RebalanceTimeoutMillis, r.SubscribedTopicNames, r.Topics = 3, -1, nil, nil
		})},
		{name: "heartbeat at epoch -3", req: with(join(gBad, "minus3-"+run, topicA), func(r *kmsg.ConsumerGroupHeartbeatRequest) {
			r.MemberEpoch = -3
		})},
		{name: "static leave without an instance id", req: with(join(gBad, "static-"+run), func(r *kmsg.ConsumerGroupHeartbeatRequest) {
			r.MemberEpoch, r.RebalanceTimeoutMillis, r.SubscribedTopicNames, r.Topics = -2, -1, nil, nil
		})},
		{name: "heartbeat to an unknown group", req: with(join("nocg-"+p, "m-"+run), func(r *kmsg.ConsumerGroupHeartbeatRequest) {
			r.MemberEpoch, r.RebalanceTimeoutMillis, r.SubscribedTopicNames, r.Topics = 5, -1, nil, nil
		})},
		{name: "leave an unknown group", req: with(join("nocg-"+p, "m-"+run), func(r *kmsg.ConsumerGroupHeartbeatRequest) {
			r.MemberEpoch, r.RebalanceTimeoutMillis, r.SubscribedTopicNames, r.Topics = -1, -1, nil, nil
		})},
		{name: "describe the group nobody joined", req: describe(false, gBad), versions: newest},

		// Joins that succeed: each a new member of gBad, subscribed to
		// nothing.
		{name: "join with an empty subscription", req: plain(join(gBad, "empty-"+run)), versions: newest},
		{name: "join with a rebalance timeout of 0", req: with(join(gBad, "zero-"+run), func(r *kmsg.ConsumerGroupHeartbeatRequest) {
			r.RebalanceTimeoutMillis = 0
		}), versions: newest},
		{name: "join with a negative rebalance timeout", req: with(join(gBad, "neg-"+run), func(r *kmsg.ConsumerGroupHeartbeatRequest) {
			r.RebalanceTimeoutMillis = -5
		}), versions: newest},
		{name: "join v0 with a member id of the client's", req: plain(join(gBad, "v0-"+run)), versions: atVersion(0)},
		{name: "leave as an unknown member", req: with(join(gBad, "nobody-"+run), func(r *kmsg.ConsumerGroupHeartbeatRequest) {
			r.MemberEpoch, r.RebalanceTimeoutMillis, r.SubscribedTopicNames, r.Topics = -1, -1, nil, nil
		})},
		describeStep("describe the members subscribed to nothing", gBad),
	}...)

	// A subscription by regular expression: Kafka resolves it in the
	// background, so the member rejoins until it has both topics.
	re := "re-" + run
	steps = append(steps, []diffStep{
		ms.poll("join with a regular expression", re, with(join(gRe, re), func(r *kmsg.ConsumerGroupHeartbeatRequest) {
			r.SubscribedTopicNames, r.SubscribedTopicRegex = nil, &regex
		}), hasTopics(2)),
		describeStep("describe the regular-expression member", gRe),
		{name: "heartbeat with another invalid regular expression", req: with(beat(gRe, re, 0), func(r *kmsg.ConsumerGroupHeartbeatRequest) {
			r.SubscribedTopicRegex = kmsg.StringPtr("(?<")
		}), versions: newest},
		ms.poll("the regular expression narrowed to one topic", re, with(beat(gRe, re, 0), func(r *kmsg.ConsumerGroupHeartbeatRequest) {
			r.SubscribedTopicRegex = kmsg.StringPtr(topicB)
		}), settledOn(topicB)),
		describeStep("describe after the narrowing", gRe),
	}...)

	// Regular expressions as RE2/J and Go's RE2 read them: what both
	// accept or refuse, matched against whole topic names. Whether one is
	// accepted is compared; what it matched is compared below.
	syntax := func(n int, re string) diffStep {
		return diffStep{name: "join with the regular expression " + re,
			req: with(join(gSyntax, fmt.Sprintf("syntax%d-%s", n, run)), func(r *kmsg.ConsumerGroupHeartbeatRequest) {
				r.SubscribedTopicNames, r.SubscribedTopicRegex = nil, &re
			}), versions: newest, ignore: regexp.MustCompile(`(^|\.)(MemberEpoch|Assignment)(\.|$)`)}
	}
	for i, re := range []string{"", `(?<name>x)`, `(?P<name>x)`, `\pL+`, `[[:alpha:]]+`, `(?i)CE-X`, `\Qa.b\E`, `a{1001}`, `\Z`, `a++`, `(?=x)`, `\1`} {
		steps = append(steps, syntax(i, re))
	}
	prefix, internal := "prefix-"+run, "internal-"+run
	// Kafka 4.4 sets up __consumer_offsets with 50 partitions (its
	// offsets.topic.num.partitions), kbroker with 1: whether it is
	// assigned is compared, not its partitions.
	offsetsTopic := func(s *diffSide, resp kmsg.Response) {
		switch r := resp.(type) {
		case *kmsg.ConsumerGroupHeartbeatResponse:
			sortHeartbeatTopics(s, r)
			if r.Assignment != nil {
				for i := range r.Assignment.Topics {
					if sideTopicName(s, r.Assignment.Topics[i].TopicID) == "__consumer_offsets" {
						r.Assignment.Topics[i].Partitions = nil
					}
				}
			}
		case *kmsg.ConsumerGroupDescribeResponse:
			sortDescribedTopics(s, r)
			for _, g := range r.Groups {
				for _, m := range g.Members {
					for _, a := range []kmsg.Assignment{m.Assignment, m.TargetAssignment} {
						for i := range a.TopicPartitions {
							if a.TopicPartitions[i].Topic == "__consumer_offsets" {
								a.TopicPartitions[i].Partitions = nil
							}
						}
					}
				}
			}
		}
	}
	internalPoll := ms.poll("the member of a regular expression matching an internal topic gets it", internal, plain(beat(gInternal, internal, 0)), settledOn("__consumer_offsets", topicA, topicB))
	internalPoll.after = offsetsTopic
	internalDescribe := describeStep("describe the member of a regular expression matching an internal topic", gInternal)
	internalDescribe.after = offsetsTopic
	steps = append(steps, []diffStep{
		{name: "the id of __consumer_offsets", req: metadataReq(false, "__consumer_offsets"), versions: newest,
			ignore: regexp.MustCompile(`Topics\.0\.Partitions`),
			after: func(s *diffSide, resp kmsg.Response) {
				if t := resp.(*kmsg.MetadataResponse).Topics; len(t) == 1 && t[0].ErrorCode == 0 {
					s.topicIDs["__consumer_offsets"] = t[0].TopicID
				}
			}},
		// Matching nothing, the regular expression leaves the group's
		// topics as they were: no new epoch.
		{name: "join with a regular expression matching a prefix of topics", req: with(join(gPrefix, prefix), func(r *kmsg.ConsumerGroupHeartbeatRequest) {
			r.SubscribedTopicNames, r.SubscribedTopicRegex = nil, kmsg.StringPtr(p)
		}), versions: newest, after: track(prefix)},
		ms.poll("heartbeat of the member matching nothing", prefix, plain(beat(gPrefix, prefix, 0)), settled),
		describeStep("describe the member of a regular expression matching nothing", gPrefix),
		// Kafka answers the join before it has resolved the regular
		// expression, kbroker after.
		{name: "join with a regular expression matching an internal topic", req: with(join(gInternal, internal), func(r *kmsg.ConsumerGroupHeartbeatRequest) {
			r.SubscribedTopicNames, r.SubscribedTopicRegex = nil, kmsg.StringPtr("__consumer_offsets|"+regex)
		}), versions: newest, after: track(internal), ignore: regexp.MustCompile(`(^|\.)(MemberEpoch|Assignment)(\.|$)`)},
		internalPoll,
		internalDescribe,
	}...)

	// Names and a regular expression at once. Kafka bumps the group epoch
	// for the names at the join and again once its background task has
	// resolved the regular expression; kbroker resolves it in the join
	// (group/consumer/doc.go, "Where this differs from Kafka"), one bump:
	// the epochs are one apart, the assignments the same.
	both := "both-" + run
	regexEpochs := regexp.MustCompile(`(^|\.)(MemberEpoch|Epoch|AssignmentEpoch)$`)
	steps = append(steps, []diffStep{
		ignoring(ms.poll("join with names and a regular expression", both, with(join(gBoth, both, topicB), func(r *kmsg.ConsumerGroupHeartbeatRequest) {
			r.SubscribedTopicRegex = kmsg.StringPtr(topicA)
		}), hasTopics(2)), regexEpochs),
		ignoring(describeStep("describe the member of names and a regular expression", gBoth), regexEpochs),
	}...)

	// The server assignors by name: range with two members (deterministic:
	// members in member-id order), uniform with one.
	ra, rb := "a-"+run, "b-"+run
	rangeJoin := func(member string) func(*diffSide, int16) kmsg.Request {
		return with(join(gRange, member, topicA, topicB), func(r *kmsg.ConsumerGroupHeartbeatRequest) {
			r.ServerAssignor = kmsg.StringPtr("range")
		})
	}
	uni := "u-" + run
	steps = append(steps, []diffStep{
		{name: "join with the range assignor", req: rangeJoin(ra), versions: newest, after: track(ra)},
		{name: "a second member joins with the range assignor", req: rangeJoin(rb), versions: newest, after: track(rb)},
		ms.poll("the first member revokes", ra, plain(beat(gRange, ra, 0)), settled),
		ms.poll("the second member gets its partitions", rb, plain(beat(gRange, rb, 0)), settled),
		describeStep("describe the range group", gRange),
		{name: "join with the uniform assignor", req: with(join(gUniform, uni, topicA, topicB), func(r *kmsg.ConsumerGroupHeartbeatRequest) {
			r.ServerAssignor = kmsg.StringPtr("uniform")
		}), versions: newest, after: track(uni)},
		describeStep("describe the uniform group", gUniform),
		// A change of the group's preferred assignor is a new group
		// epoch, and a new target assignment by the new assignor.
		{name: "the member switches to the range assignor", req: with(beat(gUniform, uni, 0), func(r *kmsg.ConsumerGroupHeartbeatRequest) {
			r.ServerAssignor = kmsg.StringPtr("range")
		}), versions: newest, after: track(uni)},
		describeStep("describe the group after the switch", gUniform),
	}...)

	// Static membership.
	s1, s2 := "s1-"+run, "s2-"+run
	static := func(member string) func(*diffSide, int16) kmsg.Request {
		return with(join(gStatic, member, topicA), func(r *kmsg.ConsumerGroupHeartbeatRequest) {
			r.InstanceID = &instance
		})
	}
	staticBeat := func(member string, epoch int32) func(*diffSide, int16) kmsg.Request {
		return with(beat(gStatic, member, 0), func(r *kmsg.ConsumerGroupHeartbeatRequest) {
			r.InstanceID = &instance
			if epoch != 0 {
				r.MemberEpoch, r.Topics = epoch, nil
			}
		})
	}
	steps = append(steps, []diffStep{
		{name: "a static member joins", req: static(s1), versions: newest, after: track(s1)},
		{name: "another member joins with the instance id in use", req: static(s2), versions: newest},
		{name: "the static member leaves for now", req: staticBeat(s1, -2), versions: newest},
		describeStep("describe the static member gone for now", gStatic),
		{name: "the instance id rejoins as another member", req: static(s2), versions: newest, after: track(s2)},
		{name: "the replaced member heartbeats", req: staticBeat(s1, 0), versions: newest},
		describeStep("describe the rejoined static member", gStatic),
		{name: "the static member rejoins with epoch 0 while active", req: static(s2), versions: newest, after: track(s2)},
		{name: "heartbeat of an unknown instance id", req: with(beat(gStatic, s2, 0), func(r *kmsg.ConsumerGroupHeartbeatRequest) {
			r.InstanceID = kmsg.StringPtr("other-" + instance)
		}), versions: newest},
		{name: "static leave of an unknown instance id", req: with(beat(gStatic, s2, 0), func(r *kmsg.ConsumerGroupHeartbeatRequest) {
			r.InstanceID, r.MemberEpoch = kmsg.StringPtr("other-"+instance), -2
		}), versions: newest},
		{name: "the replaced member leaves", req: staticBeat(s1, -1), versions: newest},
		{name: "the static member leaves for good", req: staticBeat(s2, -1), versions: newest},
		describeStep("describe after the static member left", gStatic),
		// The same member id back after a static leave, and a heartbeat
		// of the member gone for now.
		{name: "a static member joins again", req: static(s1), versions: newest, after: track(s1)},
		{name: "it leaves for now", req: staticBeat(s1, -2), versions: newest},
		{name: "it heartbeats while gone", req: staticBeat(s1, 0), versions: newest},
		{name: "it rejoins under its member id", req: static(s1), versions: newest, after: track(s1)},
		describeStep("describe the static member back", gStatic),
	}...)

	// Stale epochs: e1 moves from epoch 2 to 3 (the range assignor gives
	// it partition 0 and e2 partition 1), then heartbeats at older epochs.
	e1, e2 := "e1-"+run, "e2-"+run
	epochJoin := func(member string) func(*diffSide, int16) kmsg.Request {
		return with(join(gEpoch, member, topicA), func(r *kmsg.ConsumerGroupHeartbeatRequest) {
			r.ServerAssignor = kmsg.StringPtr("range")
		})
	}
	ownedAt := func(delta int32, partitions ...int32) func(*diffSide, int16) kmsg.Request {
		return with(beat(gEpoch, e1, delta), func(r *kmsg.ConsumerGroupHeartbeatRequest) {
			r.Topics = nil
			if partitions != nil {
				t := kmsg.NewConsumerGroupHeartbeatRequestTopic()
				t.TopicID, t.Partitions = [16]byte{}, partitions
				r.Topics = append(r.Topics, t)
			}
		})
	}
	withTopicID := func(f func(*diffSide, int16) kmsg.Request) func(*diffSide, int16) kmsg.Request {
		return func(s *diffSide, v int16) kmsg.Request {
			r := f(s, v).(*kmsg.ConsumerGroupHeartbeatRequest)
			for i := range r.Topics {
				r.Topics[i].TopicID = s.topicIDs[topicA]
			}
			return r
		}
	}
	steps = append(steps, []diffStep{
		{name: "join for the epoch checks", req: epochJoin(e1), versions: newest, after: track(e1)},
		{name: "a second member for the epoch checks", req: epochJoin(e2), versions: newest, after: track(e2)},
		ms.poll("the first member moves to the next epoch", e1, plain(beat(gEpoch, e1, 0)), settled),
		{name: "heartbeat at the previous epoch owning its partition", req: withTopicID(ownedAt(-1, 0)), versions: newest},
		{name: "heartbeat at the previous epoch owning a partition it gave up", req: withTopicID(ownedAt(-1, 0, 1)), versions: newest},
		{name: "heartbeat at the previous epoch without its partitions", req: withTopicID(ownedAt(-1)), versions: newest},
		{name: "heartbeat at an older epoch", req: withTopicID(ownedAt(-2, 0)), versions: newest},
		{name: "the fenced member rejoins with its member id", req: plain(join(gEpoch, e1, topicA)), versions: newest, after: track(e1)},
		describeStep("describe after the epoch checks", gEpoch),
	}...)

	// A subscribed topic created after the join.
	l1 := "l1-" + run
	steps = append(steps, []diffStep{
		{name: "join naming a topic yet to be created", req: plain(join(gLate, l1, topicA, late)), versions: newest, after: track(l1)},
	}...)
	steps = append(steps, createAndAwait(late, 2)...)
	steps = append(steps, []diffStep{
		ms.poll("the assignment grows by the new topic", l1, plain(beat(gLate, l1, 0)), hasTopics(2)),
		describeStep("describe after the topic was created", gLate),
		{name: "add a partition to the new topic", req: createPartitionsReq(late, 3), versions: newest},
		awaitTopic(late, 3),
		ms.poll("the assignment grows by the new partition", l1, plain(beat(gLate, l1, 0)), settledWith(late, 3)),
		{name: "delete the new topic", req: deleteTopicsReq(late), versions: newest},
		awaitTopic(late, 0),
		ms.poll("the assignment loses the deleted topic", l1, plain(beat(gLate, l1, 0)), settledOn(topicA)),
		describeStep("describe after the topic was deleted", gLate),
	}...)

	// A member switching from a regular expression to names, then to
	// nothing, and heartbeats that change nothing or name what it cannot
	// own.
	sw := "sw-" + run
	steps = append(steps, []diffStep{
		ms.poll("join with a regular expression to switch from", sw, with(join(gSwitch, sw), func(r *kmsg.ConsumerGroupHeartbeatRequest) {
			r.SubscribedTopicNames, r.SubscribedTopicRegex = nil, &topicA
		}), hasTopics(1)),
		ms.poll("switch from the regular expression to names", sw, with(beat(gSwitch, sw, 0), func(r *kmsg.ConsumerGroupHeartbeatRequest) {
			r.SubscribedTopicNames, r.SubscribedTopicRegex = []string{topicB}, kmsg.StringPtr("")
		}), settledOn(topicB)),
		describeStep("describe after the switch to names", gSwitch),
		ms.poll("unsubscribe from every topic", sw, with(beat(gSwitch, sw, 0), func(r *kmsg.ConsumerGroupHeartbeatRequest) {
			r.SubscribedTopicNames = []string{}
		}), settledOn()),
		describeStep("describe the member subscribed to nothing", gSwitch),
		{name: "heartbeat changing only the rebalance timeout", req: with(beat(gSwitch, sw, 0), func(r *kmsg.ConsumerGroupHeartbeatRequest) {
			r.RebalanceTimeoutMillis = 5000
		}), versions: newest, after: track(sw)},
		{name: "heartbeat owning a partition of an unknown topic", req: with(beat(gSwitch, sw, 0), func(r *kmsg.ConsumerGroupHeartbeatRequest) {
			t := kmsg.NewConsumerGroupHeartbeatRequestTopic()
			t.TopicID, t.Partitions = [16]byte{0xde, 0xad}, []int32{0}
			r.Topics = append(r.Topics, t)
		}), versions: newest, after: track(sw)},
		{name: "a dynamic member heartbeats with an instance id", req: with(beat(gSwitch, sw, 0), func(r *kmsg.ConsumerGroupHeartbeatRequest) {
			r.InstanceID = kmsg.StringPtr("sw-inst-" + run)
		}), versions: newest},
		{name: "the dynamic member rejoins with an instance id", req: with(join(gSwitch, sw, topicB), func(r *kmsg.ConsumerGroupHeartbeatRequest) {
			r.InstanceID = kmsg.StringPtr("sw-inst-" + run)
		}), versions: newest, after: track(sw)},
		describeStep("describe the member made static", gSwitch),
		{name: "join naming a topic twice, an empty and an invalid name", req: plain(join(gSwitch, "names-"+run, topicB, topicB, "", "bad/name")),
			versions: newest, after: track("names-" + run)},
		describeStep("describe the member of odd names", gSwitch),
	}...)

	// Rack ids, and ConsumerGroupDescribe's authorized operations and
	// groups that are not consumer groups.
	r1 := "r1-" + run
	steps = append(steps, []diffStep{
		{name: "join with a rack id", req: with(join(gRack, r1, topicB), func(r *kmsg.ConsumerGroupHeartbeatRequest) {
			r.RackID = kmsg.StringPtr("rack-a")
		}), versions: newest, after: track(r1)},
		describeStep("describe the member with its rack", gRack),
		{name: "heartbeat with another rack id", req: with(beat(gRack, r1, 0), func(r *kmsg.ConsumerGroupHeartbeatRequest) {
			r.RackID = kmsg.StringPtr("rack-b")
		}), versions: newest, after: track(r1)},
		{name: "describe with the authorized operations", req: describe(true, gRack, "nocg-"+p), ignore: clientHostField,
			after: sortDescribedTopics, normalize: func(resp kmsg.Response) {
				// diffIgnore leaves authorized operations out (they
				// depend on the authorizer); neither broker has one
				// here, so they are compared, carried in the state.
				for i := range resp.(*kmsg.ConsumerGroupDescribeResponse).Groups {
					g := &resp.(*kmsg.ConsumerGroupDescribeResponse).Groups[i]
					g.State += fmt.Sprintf(" ops %#x", g.AuthorizedOperations)
				}
				sortDescribedMembers(resp)
			}},
		{name: "join a classic group", req: joinReq(classic, ""), versions: newest,
			after: func(s *diffSide, resp kmsg.Response) { s.memberID = resp.(*kmsg.JoinGroupResponse).MemberID }},
		{name: "join the classic group with the member id", req: func(s *diffSide, v int16) kmsg.Request { return joinReq(classic, s.memberID)(s, v) },
			versions: newest, ignore: leaderAndMemberIDs},
		{name: "describe a classic, an unknown, an empty and a blank group id", req: describe(false, classic, "nocg-"+p, "", "  "),
			normalize: sortDescribedMembers},
		{name: "leave the classic group", req: leaveClassic(classic, func(s *diffSide) string { return s.memberID }), versions: newest,
			until: func(resp kmsg.Response) bool { return resp.(*kmsg.LeaveGroupResponse).ErrorCode == 0 }},
		{name: "describe the empty classic group", req: describe(false, classic), versions: newest},
		{name: "join the empty classic group", req: plain(join(classic, "cl-"+run, topicB)), versions: newest, after: track("cl-" + run)},
		describeStep("describe the classic group become a consumer group", classic),
		// Kafka initializes a share group's partitions in the background:
		// the join's assignment and epochs depend on when.
		{name: "a share group", req: shareHeartbeatReq(gShare, shareEdgeMember, 0, topicB), versions: newest,
			ignore: regexp.MustCompile(`(Assignment|MemberEpoch|HeartbeatIntervalMillis)(\.|$)`)},
		{name: "join the share group", req: plain(join(gShare, "m-"+run, topicB))},
		{name: "describe the share group", req: describe(false, gShare)},
		{name: "the share member leaves", req: shareHeartbeatReq(gShare, shareEdgeMember, -1), versions: newest},
	}...)
	return steps
}

// shareEdgeMember is the member id of consumerEdgeSteps' share group.
const shareEdgeMember = "Q2VFZGdlU2hhcmVNZW1iZQ"

var (
	// clientHostField: the client's address as each broker saw it.
	clientHostField = regexp.MustCompile(`ClientHost$`)
	// leaderAndMemberIDs: a classic group's member ids are the broker's.
	leaderAndMemberIDs = regexp.MustCompile(`(LeaderID|Members\.\d+\.MemberID)$`)
)

// ignoring is st with more fields to ignore.
func ignoring(st diffStep, re *regexp.Regexp) diffStep {
	if st.ignore != nil {
		re = regexp.MustCompile(st.ignore.String() + "|" + re.String())
	}
	st.ignore = re
	return st
}

// edgeMember is what a consumer-group member of consumerEdgeSteps learned
// on one side: its epoch and the partitions it owns, by topic name.
type edgeMember struct {
	epoch    int32
	assigned map[string][]int32
}

// edgeMembers are the members of consumerEdgeSteps by side and member id.
type edgeMembers map[string]*edgeMember

func (ms edgeMembers) of(s *diffSide, member string) *edgeMember {
	k := s.name + "\x00" + member
	if ms[k] == nil {
		ms[k] = &edgeMember{}
	}
	return ms[k]
}

// learn takes the member's epoch and assignment from a heartbeat's answer.
func (m *edgeMember) learn(s *diffSide, resp kmsg.Response) {
	r := resp.(*kmsg.ConsumerGroupHeartbeatResponse)
	if r.ErrorCode != 0 || r.MemberEpoch < 0 {
		return
	}
	m.epoch = r.MemberEpoch
	if r.Assignment != nil {
		m.assigned = map[string][]int32{}
		for _, t := range r.Assignment.Topics {
			m.assigned[sideTopicName(s, t.TopicID)] = slices.Sorted(slices.Values(t.Partitions))
		}
	}
}

// owned is the heartbeat's owned partitions: the member's assignment.
func (m *edgeMember) owned(s *diffSide) []kmsg.ConsumerGroupHeartbeatRequestTopic {
	out := []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	for _, name := range slices.Sorted(maps.Keys(m.assigned)) {
		t := kmsg.NewConsumerGroupHeartbeatRequestTopic()
		t.TopicID, t.Partitions = s.topicIDs[name], m.assigned[name]
		out = append(out, t)
	}
	return out
}

// poll is a step that heartbeats as member until done holds, the member
// learning its epoch and owned partitions from every answer (as a client
// does), then compares the last answers.
func (ms edgeMembers) poll(name, member string, req func(*diffSide, int16) kmsg.Request,
	done func(r *kmsg.ConsumerGroupHeartbeatResponse, before int32, m *edgeMember) bool) diffStep {
	var cur *edgeMember
	var side *diffSide
	var before int32
	return diffStep{
		name: name,
		req: func(s *diffSide, v int16) kmsg.Request {
			cur, side, before = ms.of(s, member), s, ms.of(s, member).epoch
			return req(s, v)
		},
		versions: newest,
		until: func(resp kmsg.Response) bool {
			cur.learn(side, resp)
			return done(resp.(*kmsg.ConsumerGroupHeartbeatResponse), before, cur)
		},
		after: sortHeartbeatTopics,
	}
}

// hasTopics is poll's end: the answer assigns n topics.
func hasTopics(n int) func(*kmsg.ConsumerGroupHeartbeatResponse, int32, *edgeMember) bool {
	return func(r *kmsg.ConsumerGroupHeartbeatResponse, _ int32, _ *edgeMember) bool {
		return r.ErrorCode == 0 && r.Assignment != nil && len(r.Assignment.Topics) == n
	}
}

// settled is poll's end: an answer that changes neither the member's
// epoch nor its assignment.
func settled(r *kmsg.ConsumerGroupHeartbeatResponse, before int32, _ *edgeMember) bool {
	return r.ErrorCode == 0 && r.Assignment == nil && r.MemberEpoch == before
}

// settledOn is poll's end: settled, owning partitions of topics only.
func settledOn(topics ...string) func(*kmsg.ConsumerGroupHeartbeatResponse, int32, *edgeMember) bool {
	return func(r *kmsg.ConsumerGroupHeartbeatResponse, before int32, m *edgeMember) bool {
		return settled(r, before, m) && slices.Equal(slices.Sorted(maps.Keys(m.assigned)), slices.Sorted(slices.Values(topics)))
	}
}

// settledWith is poll's end: settled, owning n partitions of topic.
func settledWith(topic string, n int) func(*kmsg.ConsumerGroupHeartbeatResponse, int32, *edgeMember) bool {
	return func(r *kmsg.ConsumerGroupHeartbeatResponse, before int32, m *edgeMember) bool {
		return settled(r, before, m) && len(m.assigned[topic]) == n
	}
}

// sideTopicName is the name of the topic with id on s, or the id.
func sideTopicName(s *diffSide, id [16]byte) string {
	for name, tid := range s.topicIDs {
		if tid == id {
			return name
		}
	}
	return fmt.Sprintf("%x", id)
}

// sortHeartbeatTopics puts a heartbeat's assigned topics in the order of
// their names (topic ids differ between the brokers) and their partitions
// in order.
func sortHeartbeatTopics(s *diffSide, resp kmsg.Response) {
	a := resp.(*kmsg.ConsumerGroupHeartbeatResponse).Assignment
	if a == nil {
		return
	}
	slices.SortFunc(a.Topics, func(x, y kmsg.ConsumerGroupHeartbeatResponseAssignmentTopic) int {
		return strings.Compare(sideTopicName(s, x.TopicID), sideTopicName(s, y.TopicID))
	})
	for i := range a.Topics {
		slices.Sort(a.Topics[i].Partitions)
	}
}

// sortDescribedTopics puts a ConsumerGroupDescribe's assignments in topic
// name order, with their partitions in order.
func sortDescribedTopics(_ *diffSide, resp kmsg.Response) {
	for gi := range resp.(*kmsg.ConsumerGroupDescribeResponse).Groups {
		g := &resp.(*kmsg.ConsumerGroupDescribeResponse).Groups[gi]
		for mi := range g.Members {
			m := &g.Members[mi]
			slices.Sort(m.SubscribedTopics)
			for _, a := range []*kmsg.Assignment{&m.Assignment, &m.TargetAssignment} {
				slices.SortFunc(a.TopicPartitions, func(x, y kmsg.AssignmentTopicPartition) int {
					return strings.Compare(x.Topic, y.Topic)
				})
				for ti := range a.TopicPartitions {
					slices.Sort(a.TopicPartitions[ti].Partitions)
				}
			}
		}
	}
}

// sortDescribedMembers orders a ConsumerGroupDescribe's groups by id and
// their members by member id (the client's here, so the same on both
// brokers), which come in no defined order.
func sortDescribedMembers(resp kmsg.Response) {
	r := resp.(*kmsg.ConsumerGroupDescribeResponse)
	slices.SortFunc(r.Groups, func(a, b kmsg.ConsumerGroupDescribeResponseGroup) int {
		return strings.Compare(a.Group, b.Group)
	})
	for gi := range r.Groups {
		slices.SortFunc(r.Groups[gi].Members, func(a, b kmsg.ConsumerGroupDescribeResponseGroupMember) int {
			return strings.Compare(a.MemberID, b.MemberID)
		})
	}
}
