package integration

import (
	"regexp"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// topicEdgeSteps are the CreateTopics, DeleteTopics, CreatePartitions and
// broker DescribeConfigs corners beyond the "topics" sequence: default
// partition counts and replication factors, replica assignments (valid,
// to an unknown broker, together with a count), a replication factor the
// cluster cannot meet, names too long or colliding, several topics in one
// request, deletes by topic id, partitions added with an assignment, and
// broker configs of this broker, of an unknown one and its loggers.
// createTopicsWith creates names with one partition and one replica
// each, the request then changed by edit (if not nil).
func createTopicsWith(edit func(*kmsg.CreateTopicsRequest), names ...string) func(*diffSide, int16) kmsg.Request {
	return func(s *diffSide, v int16) kmsg.Request {
		r := kmsg.NewPtrCreateTopicsRequest()
		r.TimeoutMillis = 10000
		for _, n := range names {
			t := kmsg.NewCreateTopicsRequestTopic()
			t.Topic, t.NumPartitions, t.ReplicationFactor = n, 1, 1
			r.Topics = append(r.Topics, t)
		}
		if edit != nil {
			edit(r)
		}
		return r
	}
}

func topicEdgeSteps(run string) []diffStep {
	assigned, byDefault, gone := "ta-"+run, "td-"+run, "tg-"+run
	configs := regexp.MustCompile(`Topics\.\d+\.Configs\.`)
	create := createTopicsWith
	assignment := func(brokers ...int32) []kmsg.CreateTopicsRequestTopicReplicaAssignment {
		var out []kmsg.CreateTopicsRequestTopicReplicaAssignment
		for i, b := range brokers {
			out = append(out, kmsg.CreateTopicsRequestTopicReplicaAssignment{Partition: int32(i), Replicas: []int32{b}})
		}
		return out
	}
	deleteByID := func(id func(*diffSide) [16]byte) func(*diffSide, int16) kmsg.Request {
		return func(s *diffSide, v int16) kmsg.Request {
			r := kmsg.NewPtrDeleteTopicsRequest()
			r.TimeoutMillis = 10000
			r.Topics = []kmsg.DeleteTopicsRequestTopic{{TopicID: id(s)}}
			return r
		}
	}
	brokerConfigs := func(typ kmsg.ConfigResourceType, name string, keys ...string) func(*diffSide, int16) kmsg.Request {
		return func(s *diffSide, v int16) kmsg.Request {
			r := kmsg.NewPtrDescribeConfigsRequest()
			res := kmsg.NewDescribeConfigsRequestResource()
			res.ResourceType, res.ResourceName, res.ConfigNames = typ, name, keys
			r.Resources = append(r.Resources, res)
			return r
		}
	}
	return []diffStep{
		{name: "create with the default count and factor", req: create(func(r *kmsg.CreateTopicsRequest) {
			r.Topics[0].NumPartitions, r.Topics[0].ReplicationFactor = -1, -1
		}, byDefault), versions: newest, ignore: configs},
		{name: "create with replication factor 2", req: create(func(r *kmsg.CreateTopicsRequest) {
			r.Topics[0].ReplicationFactor = 2
		}, "rf2-"+run)},
		{name: "create with an assignment", req: create(func(r *kmsg.CreateTopicsRequest) {
			r.Topics[0].NumPartitions, r.Topics[0].ReplicationFactor = -1, -1
			r.Topics[0].ReplicaAssignment = assignment(1, 1)
		}, assigned), versions: newest, ignore: configs},
		{name: "create with an assignment to an unknown broker", req: create(func(r *kmsg.CreateTopicsRequest) {
			r.Topics[0].NumPartitions, r.Topics[0].ReplicationFactor = -1, -1
			r.Topics[0].ReplicaAssignment = assignment(7)
		}, "tu-"+run)},
		{name: "create with an assignment and a count", req: create(func(r *kmsg.CreateTopicsRequest) {
			r.Topics[0].ReplicaAssignment = assignment(1)
		}, "tc-"+run)},
		{name: "create a name too long", req: create(func(*kmsg.CreateTopicsRequest) {}, strings.Repeat("n", 250))},
		{name: "create two, one with a bad name", req: create(func(*kmsg.CreateTopicsRequest) {}, gone, "bad name "+run),
			versions: newest, ignore: configs},
		{name: "create a name with a dot", req: create(func(*kmsg.CreateTopicsRequest) {}, "dot."+run), versions: newest, ignore: configs},
		awaitTopic("dot."+run, 1),
		awaitTopic(assigned, 2),
		awaitTopic(byDefault, 1),
		awaitTopic(gone, 1),
		{name: "create a name that collides", req: create(func(*kmsg.CreateTopicsRequest) {}, "dot_"+run)},
		{name: "add partitions with an assignment", req: func(s *diffSide, v int16) kmsg.Request {
			r := createPartitionsReq(assigned, 3)(s, v).(*kmsg.CreatePartitionsRequest)
			r.Topics[0].Assignment = []kmsg.CreatePartitionsRequestTopicAssignment{{Replicas: []int32{1}}}
			return r
		}, versions: newest},
		{name: "add partitions with too short an assignment", req: func(s *diffSide, v int16) kmsg.Request {
			r := createPartitionsReq(assigned, 6)(s, v).(*kmsg.CreatePartitionsRequest)
			r.Topics[0].Assignment = []kmsg.CreatePartitionsRequestTopicAssignment{{Replicas: []int32{1}}}
			return r
		}},
		{name: "delete by topic id", req: deleteByID(func(s *diffSide) [16]byte { return s.topicIDs[gone] }), versions: newest},
		{name: "delete an unknown topic id", req: deleteByID(func(*diffSide) [16]byte { return [16]byte{9, 9, 9} }), versions: newest},
		// Settings both brokers have and treat alike (values, sources,
		// types, whether they can change at run time); the others differ
		// by design (README).
		{name: "metadata of every topic", req: func(s *diffSide, v int16) kmsg.Request {
			r := kmsg.NewPtrMetadataRequest()
			r.Topics = nil // all
			r.IncludeTopicAuthorizedOperations = true
			return r
		}, normalize: func(resp kmsg.Response) {
			r := resp.(*kmsg.MetadataResponse)
			r.Topics = slices.DeleteFunc(r.Topics, func(t kmsg.MetadataResponseTopic) bool {
				return t.Topic == nil || (*t.Topic != assigned && *t.Topic != byDefault)
			})
			slices.SortFunc(r.Topics, func(a, b kmsg.MetadataResponseTopic) int { return strings.Compare(*a.Topic, *b.Topic) })
		}},
		{name: "metadata by topic id", req: func(s *diffSide, v int16) kmsg.Request {
			r := kmsg.NewPtrMetadataRequest()
			t := kmsg.NewMetadataRequestTopic()
			t.TopicID = s.topicIDs[assigned]
			r.Topics = append(r.Topics, t)
			return r
		}, versions: newest},
		{name: "describe this broker's configs", req: brokerConfigs(kmsg.ConfigResourceTypeBroker, "1",
			"auto.create.topics.enable", "message.max.bytes", "default.replication.factor", "offsets.retention.minutes",
			"transaction.max.timeout.ms", "transactional.id.expiration.ms", "group.consumer.heartbeat.interval.ms",
			"group.consumer.assignors", "group.coordinator.rebalance.protocols", "log.cleanup.policy", "compression.type",
			"log.message.timestamp.type", "log.cleaner.min.cleanable.ratio", "log.cleaner.delete.retention.ms", "no.such.config"),
			ignore: regexp.MustCompile(`(Synonyms\..*|Documentation)$`), normalize: sortConfigs},
		{name: "describe an unknown broker's configs", req: brokerConfigs(kmsg.ConfigResourceTypeBroker, "7", "num.partitions")},
		{name: "describe a broker id that is not a number", req: brokerConfigs(kmsg.ConfigResourceTypeBroker, "one", "num.partitions")},
	}
}

// sortConfigs puts a DescribeConfigs answer's configs in name order (Kafka
// answers named ones in request order, kbroker in name order).
func sortConfigs(resp kmsg.Response) {
	for _, res := range resp.(*kmsg.DescribeConfigsResponse).Resources {
		slices.SortFunc(res.Configs, func(a, b kmsg.DescribeConfigsResponseResourceConfig) int {
			return strings.Compare(a.Name, b.Name)
		})
	}
}
