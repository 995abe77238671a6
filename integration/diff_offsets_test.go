package integration

import (
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// offsetsDiffSteps are a group's committed offsets without members (the
// simple commits of a consumer that assigns partitions itself): a commit
// with metadata, to an unknown partition and topic, with metadata over
// offset.metadata.max.bytes, fetches of named partitions and of all of the
// group's, at every OffsetFetch form (v1-v7 one group, v8+ several, v10
// topic ids), and OffsetDelete.
func offsetsDiffSteps(run string) []diffStep {
	topic, group, missing := "of-"+run, "og-"+run, "missing-of-"+run
	// commit commits offset to partition of topicName as no member.
	commit := func(topicName string, partition int32, offset int64, metadata string) func(*diffSide, int16) kmsg.Request {
		return offsetCommitReq(group, topicName, func(*diffSide) (string, int32) { return "", -1 }, &metadata, partition, offset)
	}
	// fetch asks for partitions 0 and 1 of the topic, or for all of the
	// group's offsets when all is set.
	fetch := func(all bool) func(*diffSide, int16) kmsg.Request {
		return func(s *diffSide, v int16) kmsg.Request {
			r := kmsg.NewPtrOffsetFetchRequest()
			r.Group = group
			g := kmsg.NewOffsetFetchRequestGroup()
			g.Group = group
			if !all {
				r.Topics = []kmsg.OffsetFetchRequestTopic{{Topic: topic, Partitions: []int32{0, 1}}}
				g.Topics = []kmsg.OffsetFetchRequestGroupTopic{{Topic: topic, TopicID: s.topicIDs[topic], Partitions: []int32{0, 1}}}
			}
			r.Groups = append(r.Groups, g)
			return r
		}
	}
	// Versions 1 (the oldest both serve with offsets in the group), 7
	// (the last of one group per request), 8 (groups) and the newest.
	forms := func(lo, hi int16) []int16 { return []int16{max(lo, 1), 7, 8, hi} }
	allForms := func(lo, hi int16) []int16 { return []int16{2, 7, 8, hi} } // v2 first fetched all
	steps := append(createAndAwait(topic, 2), awaitGroupReady(group)...)
	return append(steps, []diffStep{
		{name: "commit without members", req: commit(topic, 0, 5, "m")},
		{name: "commit to an unknown partition", req: commit(topic, 9, 5, "")},
		{name: "commit to an unknown topic", req: commit(missing, 0, 5, ""), versions: func(lo, hi int16) []int16 { return []int16{lo, 9} }},
		{name: "commit metadata over the limit", req: commit(topic, 1, 5, strings.Repeat("x", 5000))},
		{name: "fetch the partitions", req: fetch(false), versions: forms},
		{name: "fetch all of the group's offsets", req: fetch(true), versions: allForms},
		{name: "delete an offset", req: func(s *diffSide, v int16) kmsg.Request {
			r := kmsg.NewPtrOffsetDeleteRequest()
			r.Group = group
			r.Topics = []kmsg.OffsetDeleteRequestTopic{{Topic: topic, Partitions: []kmsg.OffsetDeleteRequestTopicPartition{{Partition: 0}}}}
			return r
		}, versions: newest},
		{name: "fetch after the delete", req: fetch(false), versions: newest},
	}...)
}
