package integration

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// adminEdgeSteps are the topic and admin APIs' edges beyond the "topics",
// "topic edges" and "admin" sequences: CreateTopics of a name twice in one
// request, names with invalid characters, of 249 characters, "." and "..",
// empty, colliding the other way round or with another of the same
// request, internal names, replication factors and partition counts out of
// range (also with a bad config), faulty replica assignments;
// CreatePartitions to the same count, with faulty assignments, twice,
// validate-only (also of __consumer_offsets, a known difference), beyond
// the per-request limit; DeleteTopics of a name twice, of an empty name, of
// __cluster_metadata, of an entry with both a name and an id or neither, of
// a name and its id; DeleteRecords of several partitions at once, at -1 and
// -2, of a partition and a topic twice and of an internal topic; Metadata
// with an empty topic list, an unknown topic id, auto-creation of invalid
// names and the authorized operations; DescribeCluster's endpoint types
// and authorized operations; DescribeTopicPartitions' cursors, limits and
// invalid names (the empty one a known difference); DescribeLogDirs of
// unknown topics and partitions and of an empty list; OffsetDelete of a
// group with a member subscribed to the topic, and after it left.
//
// Not sent: DeleteTopics of __consumer_offsets. Kafka deletes it (kbroker
// refuses, its handler's documented deviation), which would break the
// reference broker for every later sequence and run.
func adminEdgeSteps(run string) []diffStep {
	base, other, under, gone := "ae-"+run, "aeo-"+run, "ae_u-"+run, "aed-"+run
	missing, grp, member := "missing-ae-"+run, "aeg-"+run, "aem-"+run
	configs := regexp.MustCompile(`Topics\.\d+\.Configs\.`)
	create := createTopicsWith
	validateOnly := func(r *kmsg.CreateTopicsRequest) { r.ValidateOnly = true }
	counts := func(partitions int32, rf int16) func(*kmsg.CreateTopicsRequest) {
		return func(r *kmsg.CreateTopicsRequest) {
			r.Topics[0].NumPartitions, r.Topics[0].ReplicationFactor = partitions, rf
		}
	}
	// assign places partition i on replicas[i], with count and factor -1
	// unless rf says otherwise.
	assign := func(rf int16, partitions []int32, replicas ...[]int32) func(*kmsg.CreateTopicsRequest) {
		return func(r *kmsg.CreateTopicsRequest) {
			t := &r.Topics[0]
			t.NumPartitions, t.ReplicationFactor = -1, rf
			for i, p := range partitions {
				t.ReplicaAssignment = append(t.ReplicaAssignment, kmsg.CreateTopicsRequestTopicReplicaAssignment{Partition: p, Replicas: replicas[i]})
			}
		}
	}
	grow := func(topic string, count int32, validate bool, assignment ...[]int32) func(*diffSide, int16) kmsg.Request {
		return func(s *diffSide, v int16) kmsg.Request {
			r := createPartitionsReq(topic, count)(s, v).(*kmsg.CreatePartitionsRequest)
			r.ValidateOnly = validate
			for _, a := range assignment {
				r.Topics[0].Assignment = append(r.Topics[0].Assignment, kmsg.CreatePartitionsRequestTopicAssignment{Replicas: a})
			}
			return r
		}
	}
	// Kafka shuffles DeleteTopics answers (so that their order tells
	// nothing about topics a client may not see): sorted by name.
	sortDeleted := func(resp kmsg.Response) {
		slices.SortFunc(resp.(*kmsg.DeleteTopicsResponse).Topics, func(a, b kmsg.DeleteTopicsResponseTopic) int {
			return strings.Compare(nameOf(a.Topic), nameOf(b.Topic))
		})
	}
	deleteEntries := func(entries func(*diffSide) []kmsg.DeleteTopicsRequestTopic) func(*diffSide, int16) kmsg.Request {
		return func(s *diffSide, v int16) kmsg.Request {
			r := kmsg.NewPtrDeleteTopicsRequest()
			r.TimeoutMillis, r.Topics = 10000, entries(s)
			return r
		}
	}
	// Kafka answers DeleteRecords and OffsetDelete from maps, in no
	// defined order: sorted by topic and partition.
	sortRecords := func(resp kmsg.Response) {
		r := resp.(*kmsg.DeleteRecordsResponse)
		slices.SortFunc(r.Topics, func(a, b kmsg.DeleteRecordsResponseTopic) int { return strings.Compare(a.Topic, b.Topic) })
		for _, t := range r.Topics {
			slices.SortFunc(t.Partitions, func(a, b kmsg.DeleteRecordsResponseTopicPartition) int { return int(a.Partition - b.Partition) })
		}
	}
	sortOffsetDelete := func(resp kmsg.Response) {
		r := resp.(*kmsg.OffsetDeleteResponse)
		slices.SortFunc(r.Topics, func(a, b kmsg.OffsetDeleteResponseTopic) int { return strings.Compare(a.Topic, b.Topic) })
		for _, t := range r.Topics {
			slices.SortFunc(t.Partitions, func(a, b kmsg.OffsetDeleteResponseTopicPartition) int { return int(a.Partition - b.Partition) })
		}
	}
	// Kafka answers the unknown topics of a Metadata request from a set,
	// in no defined order: sorted by name.
	sortMetadata := func(resp kmsg.Response) {
		slices.SortFunc(resp.(*kmsg.MetadataResponse).Topics, func(a, b kmsg.MetadataResponseTopic) int {
			return strings.Compare(nameOf(a.Topic), nameOf(b.Topic))
		})
	}
	deleteRecords := func(topics ...kmsg.DeleteRecordsRequestTopic) func(*diffSide, int16) kmsg.Request {
		return func(s *diffSide, v int16) kmsg.Request {
			r := kmsg.NewPtrDeleteRecordsRequest()
			r.TimeoutMillis, r.Topics = 10000, topics
			return r
		}
	}
	records := func(topic string, partitionOffsets ...int64) kmsg.DeleteRecordsRequestTopic {
		t := kmsg.DeleteRecordsRequestTopic{Topic: topic}
		for i := 0; i < len(partitionOffsets); i += 2 {
			t.Partitions = append(t.Partitions, kmsg.DeleteRecordsRequestTopicPartition{Partition: int32(partitionOffsets[i]), Offset: partitionOffsets[i+1]})
		}
		return t
	}
	// The authorized operations are left out of every comparison
	// (diffIgnore); these steps ask for them, so they compare them, as
	// part of the topic's name and as a made-up broker or topic.
	topicOps := func(resp kmsg.Response) {
		r := resp.(*kmsg.MetadataResponse)
		for i := range r.Topics {
			t := &r.Topics[i]
			t.Topic = kmsg.StringPtr(fmt.Sprintf("%s ops %#x", nameOf(t.Topic), t.AuthorizedOperations))
		}
		if r.Version >= 8 && r.Version <= 10 {
			r.Topics = append(r.Topics, kmsg.MetadataResponseTopic{Topic: kmsg.StringPtr(fmt.Sprintf("cluster ops %#x", r.AuthorizedOperations))})
		}
	}
	clusterOps := func(resp kmsg.Response) {
		r := resp.(*kmsg.DescribeClusterResponse)
		r.Brokers = append(r.Brokers, kmsg.DescribeClusterResponseBroker{NodeID: r.ClusterAuthorizedOperations})
	}
	describeCluster := func(endpoint int8, ops, fenced bool) func(*diffSide, int16) kmsg.Request {
		return func(s *diffSide, v int16) kmsg.Request {
			r := kmsg.NewPtrDescribeClusterRequest()
			r.EndpointType, r.IncludeClusterAuthorizedOperations, r.IncludeFencedBrokers = endpoint, ops, fenced
			return r
		}
	}
	fromV1 := func(lo, hi int16) []int16 { return []int16{max(lo, 1), hi} }
	cursor := func(topic string, partition, limit int32) func(*kmsg.DescribeTopicPartitionsRequest) {
		return func(r *kmsg.DescribeTopicPartitionsRequest) {
			r.ResponsePartitionLimit = limit
			if topic != "" {
				r.Cursor = &kmsg.DescribeTopicPartitionsRequestCursor{Topic: topic, Partition: partition}
			}
		}
	}
	logDirs := func(topics []kmsg.DescribeLogDirsRequestTopic) func(*diffSide, int16) kmsg.Request {
		return func(s *diffSide, v int16) kmsg.Request {
			r := kmsg.NewPtrDescribeLogDirsRequest()
			r.Topics = topics
			return r
		}
	}
	logDirSizes := regexp.MustCompile(`(Dir|Size|TotalBytes|UsableBytes)$`)
	offsetDelete := func(topics ...kmsg.OffsetDeleteRequestTopic) func(*diffSide, int16) kmsg.Request {
		return func(s *diffSide, v int16) kmsg.Request {
			r := kmsg.NewPtrOffsetDeleteRequest()
			r.Group, r.Topics = grp, topics
			return r
		}
	}
	offsetTopic := func(topic string, partitions ...int32) kmsg.OffsetDeleteRequestTopic {
		t := kmsg.OffsetDeleteRequestTopic{Topic: topic}
		for _, p := range partitions {
			t.Partitions = append(t.Partitions, kmsg.OffsetDeleteRequestTopicPartition{Partition: p})
		}
		return t
	}
	heartbeat := func(epoch func(*diffSide) int32) func(*diffSide, int16) kmsg.Request {
		return func(s *diffSide, v int16) kmsg.Request {
			r := kmsg.NewPtrConsumerGroupHeartbeatRequest()
			r.Group, r.MemberID, r.MemberEpoch, r.RebalanceTimeoutMillis = grp, member, epoch(s), 10000
			if r.MemberEpoch == 0 {
				r.SubscribedTopicNames, r.Topics = []string{base}, []kmsg.ConsumerGroupHeartbeatRequestTopic{}
			}
			return r
		}
	}
	asMember := func(s *diffSide) (string, int32) { return member, s.generation }
	fetchCommitted := func(s *diffSide, v int16) kmsg.Request {
		r := kmsg.NewPtrOffsetFetchRequest()
		g := kmsg.NewOffsetFetchRequestGroup()
		g.Group = grp
		for _, t := range []string{base, other} {
			g.Topics = append(g.Topics, kmsg.OffsetFetchRequestGroupTopic{Topic: t, TopicID: s.topicIDs[t], Partitions: []int32{0, 1}})
		}
		r.Groups = append(r.Groups, g)
		return r
	}
	long := strings.Repeat("l", 249-len(run)) + run

	steps := append(createAndAwait(base, 2), createAndAwait(other, 2)...)
	steps = append(steps, createAndAwait(under, 1)...)
	steps = append(steps, createAndAwait(gone, 1)...)
	// Both brokers have created their internal topics by now (Kafka
	// creates them at the first FindCoordinator): a CreateTopics of their
	// names must not be the one that creates them.
	steps = append(steps, awaitGroupReady(grp)...)
	steps = append(steps, awaitCoordinator("aet-"+run, 1), awaitTxnLoaded("aet-"+run))
	return append(steps, []diffStep{
		// CreateTopics.
		{name: "create a topic twice in one request", req: create(nil, "twice-"+run, "twice-"+run)},
		{name: "the topic named twice was not created", req: metadataReq(false, "twice-"+run), versions: newest},
		{name: "create names with invalid characters", req: create(nil, "a$b-"+run, "ü-"+run, "tab\t"+run, "colon:"+run)},
		{name: "create . and ..", req: create(nil, ".", "..")},
		{name: "create an empty name", req: create(nil, "")},
		{name: "create a name of 249 characters, validate only", req: create(validateOnly, long), ignore: configs},
		{name: "create a name of 249 characters", req: create(nil, long), versions: newest, ignore: configs},
		awaitTopic(long, 1),
		{name: "create a name that collides, '.' for '_'", req: create(nil, "ae.u-"+run)},
		{name: "create a name that collides, validate only", req: create(validateOnly, "ae.u-"+run)},
		{name: "create two names that collide in one request, validate only", req: create(validateOnly, "cx."+run, "cx_"+run),
			ignore: configs},
		{name: "create __consumer_offsets", req: create(nil, "__consumer_offsets")},
		{name: "create __transaction_state", req: create(nil, "__transaction_state")},
		{name: "create __cluster_metadata", req: create(nil, "__cluster_metadata")},
		{name: "create with replication factor 0", req: create(counts(1, 0), "rf0-"+run)},
		{name: "create with replication factor -2", req: create(counts(1, -2), "rfm2-"+run)},
		{name: "create with partition count -2", req: create(counts(-2, 1), "pm2-"+run)},
		{name: "create with partition count -2 and replication factor 0", req: create(counts(-2, 0), "pm2rf0-"+run)},
		{name: "create with partition count 0 and replication factor 3", req: create(counts(0, 3), "p0rf3-"+run)},
		{name: "create with replication factor 0 and an invalid config", req: func(s *diffSide, v int16) kmsg.Request {
			r := create(counts(1, 0), "rf0cfg-"+run)(s, v).(*kmsg.CreateTopicsRequest)
			r.Topics[0].Configs = []kmsg.CreateTopicsRequestTopicConfig{{Name: "retention.ms", Value: kmsg.StringPtr("soon")}}
			return r
		}},
		{name: "create with partition count -2 and an unknown config", req: func(s *diffSide, v int16) kmsg.Request {
			r := create(counts(-2, 1), "pm2cfg-"+run)(s, v).(*kmsg.CreateTopicsRequest)
			r.Topics[0].Configs = []kmsg.CreateTopicsRequestTopicConfig{{Name: "no.such.config", Value: kmsg.StringPtr("1")}}
			return r
		}},
		{name: "create with an assignment and replication factor 1", req: create(assign(1, []int32{0}, []int32{1}), "ar1-"+run)},
		{name: "create with an assignment skipping a partition", req: create(assign(-1, []int32{0, 2}, []int32{1}, []int32{1}), "askip-"+run)},
		{name: "create with an assignment naming a partition twice", req: create(assign(-1, []int32{0, 0}, []int32{1}, []int32{1}), "atwice-"+run)},
		{name: "create with an assignment from partition 1", req: create(assign(-1, []int32{1}, []int32{1}), "afrom1-"+run)},
		{name: "create with an empty replica list", req: create(assign(-1, []int32{0}, []int32{}), "aempty-"+run)},
		{name: "create with a replica listed twice", req: create(assign(-1, []int32{0}, []int32{1, 1}), "adup-"+run)},
		{name: "create with a negative partition in the assignment", req: create(assign(-1, []int32{-1}, []int32{1}), "aneg-"+run)},

		// CreatePartitions.
		{name: "grow to the same count", req: grow(base, 2, false)},
		{name: "grow to 0", req: grow(base, 0, false)},
		{name: "grow with too long an assignment", req: grow(base, 3, false, []int32{1}, []int32{1})},
		{name: "grow with an assignment to an unknown broker", req: grow(base, 3, false, []int32{7})},
		{name: "grow with an empty replica list", req: grow(base, 3, false, []int32{})},
		{name: "grow with two replicas", req: grow(base, 3, false, []int32{1, 1})},
		{name: "grow an unknown topic with an assignment", req: grow(missing, 3, false, []int32{1})},
		{name: "grow the same topic twice in one request", req: func(s *diffSide, v int16) kmsg.Request {
			r := grow(base, 3, false)(s, v).(*kmsg.CreatePartitionsRequest)
			r.Topics = append(r.Topics, r.Topics[0])
			return r
		}},
		{name: "grow, validate only", req: grow(base, 4, true)},
		{name: "grow with an assignment, validate only", req: grow(base, 3, true, []int32{1})},
		{name: "grow beyond the partitions of one request, validate only", req: grow(base, 20000, true)},
		// Validate only: Kafka would grow it, moving groups to other
		// coordinator partitions.
		{name: "grow __consumer_offsets, validate only", req: grow("__consumer_offsets", 100, true),
			known: "CreatePartitions of an internal topic: kbroker refuses it (INVALID_REQUEST), Kafka grows it and moves groups and transactional ids to other coordinator partitions"},
		{name: "metadata after validate-only growth", req: metadataReq(false, base), versions: newest},

		// DeleteTopics.
		{name: "delete a topic twice in one request", req: deleteTopicsReq(gone, gone), normalize: sortDeleted},
		{name: "delete an empty name", req: deleteTopicsReq(""), normalize: sortDeleted},
		{name: "delete a topic twice and an unknown one", req: deleteTopicsReq(gone, missing, gone), normalize: sortDeleted},
		{name: "delete by name and id in one entry", req: deleteEntries(func(s *diffSide) []kmsg.DeleteTopicsRequestTopic {
			return []kmsg.DeleteTopicsRequestTopic{{Topic: kmsg.StringPtr(gone), TopicID: s.topicIDs[gone]}}
		}), versions: newest, normalize: sortDeleted},
		{name: "delete an entry with neither name nor id", req: deleteEntries(func(s *diffSide) []kmsg.DeleteTopicsRequestTopic {
			return []kmsg.DeleteTopicsRequestTopic{{}}
		}), versions: newest, normalize: sortDeleted},
		{name: "delete by name and by id in two entries", req: deleteEntries(func(s *diffSide) []kmsg.DeleteTopicsRequestTopic {
			return []kmsg.DeleteTopicsRequestTopic{{TopicID: s.topicIDs[gone]}, {Topic: kmsg.StringPtr(gone)}}
		}), versions: newest, normalize: sortDeleted},
		{name: "delete an id twice", req: deleteEntries(func(s *diffSide) []kmsg.DeleteTopicsRequestTopic {
			return []kmsg.DeleteTopicsRequestTopic{{TopicID: s.topicIDs[gone]}, {TopicID: s.topicIDs[gone]}}
		}), versions: newest, normalize: sortDeleted},
		{name: "delete __cluster_metadata", req: deleteTopicsReq("__cluster_metadata"), normalize: sortDeleted},
		awaitTopic(gone, 1),

		// DeleteRecords. Kafka may take a new partition's leadership a
		// moment after its metadata shows it.
		{name: "produce 3 records", req: produceReq(base, 0, -1, plainBatch("a", "b", "c")), versions: newest,
			until: func(resp kmsg.Response) bool {
				return resp.(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode == 0
			}},
		{name: "delete records of several partitions", req: deleteRecords(records(base, 0, 1, 1, 5, 7, 0), records(missing, 0, 0)), normalize: sortRecords},
		{name: "delete records at -1, the high watermark", req: deleteRecords(records(base, 0, -1, 1, -1)), normalize: sortRecords},
		{name: "delete records at -2", req: deleteRecords(records(base, 0, -2)), normalize: sortRecords},
		{name: "delete records of a partition twice", req: deleteRecords(records(base, 0, 99, 0, 3)), normalize: sortRecords},
		{name: "delete records of a topic twice and one naming no partitions", req: deleteRecords(records(base, 0, 3), records(other), records(base, 1, 0)), normalize: sortRecords},
		{name: "delete records of __consumer_offsets", req: deleteRecords(records("__consumer_offsets", 0, 0)), normalize: sortRecords},
		{name: "list offsets earliest after the deletes", req: listOffsetsReq(base, 0, -2)},

		// Metadata.
		{name: "metadata of an empty topic list", req: func(s *diffSide, v int16) kmsg.Request {
			r := metadataReq(false)(s, v).(*kmsg.MetadataRequest)
			r.Topics = []kmsg.MetadataRequestTopic{} // not null: every topic
			return r
		}, versions: fromV1},
		{name: "metadata auto-creating an invalid name", req: metadataReq(true, "bad$name-"+run)},
		{name: "metadata auto-creating a name too long", req: metadataReq(true, strings.Repeat("m", 250))},
		{name: "metadata auto-creating . and an empty name", req: metadataReq(true, ".", ""), normalize: sortMetadata},
		{name: "metadata with authorized operations", req: func(s *diffSide, v int16) kmsg.Request {
			r := metadataReq(false, base, missing)(s, v).(*kmsg.MetadataRequest)
			r.IncludeTopicAuthorizedOperations, r.IncludeClusterAuthorizedOperations = true, true
			return r
		}, versions: func(lo, hi int16) []int16 { return []int16{8, 10, hi} }, normalize: topicOps},
		{name: "metadata of an unknown topic id", req: func(s *diffSide, v int16) kmsg.Request {
			r := kmsg.NewPtrMetadataRequest()
			r.Topics = []kmsg.MetadataRequestTopic{{TopicID: [16]byte{7, 7, 7}}}
			return r
		}, versions: newest},
		{name: "metadata without authorized operations", req: metadataReq(false, base), versions: newest, normalize: topicOps},

		// DescribeCluster: v0 has no endpoint type (brokers).
		{name: "describe cluster v1, controllers", req: describeCluster(2, false, false), versions: atVersion(1)},
		{name: "describe cluster, endpoint type 3", req: describeCluster(3, false, false), versions: fromV1},
		{name: "describe cluster, endpoint type 0", req: describeCluster(0, false, false), versions: newest},
		{name: "describe cluster with authorized operations", req: describeCluster(1, true, false), normalize: clusterOps},
		{name: "describe cluster without authorized operations", req: describeCluster(1, false, false), versions: newest, normalize: clusterOps},
		{name: "describe cluster with fenced brokers", req: describeCluster(1, false, true), versions: newest},
		{name: "describe cluster, controllers with authorized operations", req: describeCluster(2, true, false), versions: newest},

		// DescribeTopicPartitions.
		{name: "describe topic partitions from a cursor past the topic's", req: describeTopicPartitionsReq(cursor(base, 5, 2000), base, other)},
		{name: "describe topic partitions, limit 0", req: describeTopicPartitionsReq(cursor("", 0, 0), base)},
		{name: "describe topic partitions, limit -1", req: describeTopicPartitionsReq(cursor("", 0, -1), base)},
		{name: "describe topic partitions, the limit used up at a topic's end", req: describeTopicPartitionsReq(cursor("", 0, 2), base, other)},
		{name: "describe topic partitions, limit 1 from a cursor", req: describeTopicPartitionsReq(cursor(base, 1, 1), base, other)},
		{name: "describe topic partitions, a cursor on another topic", req: describeTopicPartitionsReq(cursor(other, 0, 2000), base)},
		{name: "describe topic partitions, a negative cursor partition", req: describeTopicPartitionsReq(cursor(base, -1, 2000), base)},
		{name: "describe topic partitions, a cursor on an unknown topic", req: describeTopicPartitionsReq(cursor(missing, 0, 2000), base, missing)},
		{name: "describe topic partitions, a topic twice", req: describeTopicPartitionsReq(nil, base, base)},
		{name: "describe topic partitions, an invalid name", req: describeTopicPartitionsReq(nil, "bad$name")},
		{name: "describe topic partitions, .", req: describeTopicPartitionsReq(nil, ".")},
		{name: "describe topic partitions, an empty name", req: describeTopicPartitionsReq(nil, "", "bad$name"),
			known: "DescribeTopicPartitions naming the empty topic name: Kafka fails the whole request, UNKNOWN_SERVER_ERROR on every topic; kbroker answers INVALID_TOPIC_EXCEPTION for that name, as for the other invalid names"},
		{name: "describe topic partitions, a name too long", req: describeTopicPartitionsReq(nil, strings.Repeat("m", 250))},

		// DescribeLogDirs.
		{name: "describe log dirs of an unknown topic", req: logDirs([]kmsg.DescribeLogDirsRequestTopic{{Topic: missing, Partitions: []int32{0}}}),
			ignore: logDirSizes},
		{name: "describe log dirs of an empty list", req: logDirs([]kmsg.DescribeLogDirsRequestTopic{}), ignore: logDirSizes},
		{name: "describe log dirs of unknown partitions and a topic twice", req: logDirs([]kmsg.DescribeLogDirsRequestTopic{
			{Topic: base, Partitions: []int32{1, 9, -1}}, {Topic: base, Partitions: []int32{1, 0}}, {Topic: other, Partitions: []int32{}},
		}), ignore: logDirSizes, normalize: func(resp kmsg.Response) {
			for _, d := range resp.(*kmsg.DescribeLogDirsResponse).Dirs {
				slices.SortFunc(d.Topics, func(a, b kmsg.DescribeLogDirsResponseDirTopic) int { return strings.Compare(a.Topic, b.Topic) })
				for _, t := range d.Topics {
					slices.SortFunc(t.Partitions, func(a, b kmsg.DescribeLogDirsResponseDirTopicPartition) int {
						return int(a.Partition - b.Partition)
					})
				}
			}
		}},

		// OffsetDelete of a group with a member subscribed to base.
		awaitAssignable(base, run+"-ae"),
		{name: "join subscribed to the topic", req: heartbeat(func(*diffSide) int32 { return 0 }), versions: newest,
			normalize: sortHeartbeatAssignment, after: func(s *diffSide, resp kmsg.Response) {
				s.generation = resp.(*kmsg.ConsumerGroupHeartbeatResponse).MemberEpoch
			}},
		{name: "commit to the subscribed topic", req: offsetCommitReq(grp, base, asMember, nil, 0, 1), versions: newest},
		{name: "commit to another topic", req: offsetCommitReq(grp, other, asMember, nil, 0, 1), versions: newest},
		{name: "offset delete with a member subscribed", req: offsetDelete(
			offsetTopic(base, 0, 1), offsetTopic(other, 0, 1, 5), offsetTopic(missing, 0)), normalize: sortOffsetDelete},
		{name: "fetch the offsets left", req: fetchCommitted, versions: newest},
		{name: "the member leaves", req: heartbeat(func(*diffSide) int32 { return -1 }), versions: newest},
		{name: "offset delete of the empty group", req: offsetDelete(offsetTopic(base, 0, 1)), normalize: sortOffsetDelete},
		{name: "fetch the offsets after the deletes", req: fetchCommitted, versions: newest},
	}...)
}

// nameOf is a nullable topic name for sorting and showing.
func nameOf(name *string) string {
	if name == nil {
		return "<null>"
	}
	return *name
}
