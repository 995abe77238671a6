package integration

import (
	"regexp"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// diffSequence is a named list of steps run in order on both brokers.
type diffSequence struct {
	name  string
	steps []diffStep
}

// Small request builders for the sequences.

func createTopicsReq(name string, partitions int32, configs map[string]string, validateOnly bool) func(*diffSide, int16) kmsg.Request {
	return func(_ *diffSide, v int16) kmsg.Request {
		r := kmsg.NewPtrCreateTopicsRequest()
		r.TimeoutMillis = 10000
		r.ValidateOnly = validateOnly
		t := kmsg.NewCreateTopicsRequestTopic()
		t.Topic, t.NumPartitions, t.ReplicationFactor = name, partitions, 1
		for k, val := range configs {
			c := kmsg.NewCreateTopicsRequestTopicConfig()
			c.Name, c.Value = k, kmsg.StringPtr(val)
			t.Configs = append(t.Configs, c)
		}
		r.Topics = append(r.Topics, t)
		return r
	}
}

func metadataReq(allowAuto bool, topics ...string) func(*diffSide, int16) kmsg.Request {
	return func(_ *diffSide, v int16) kmsg.Request {
		r := kmsg.NewPtrMetadataRequest()
		r.AllowAutoTopicCreation = allowAuto
		for _, name := range topics {
			t := kmsg.NewMetadataRequestTopic()
			t.Topic = kmsg.StringPtr(name)
			r.Topics = append(r.Topics, t)
		}
		return r
	}
}

func produceReq(topic string, partition int32, acks int16, batch func(*diffSide) []byte) func(*diffSide, int16) kmsg.Request {
	return func(s *diffSide, v int16) kmsg.Request {
		r := kmsg.NewPtrProduceRequest()
		r.Acks, r.TimeoutMillis = acks, 10000
		t := kmsg.NewProduceRequestTopic()
		t.Topic, t.TopicID = topic, s.topicIDs[topic] // v13+ names topics by id
		p := kmsg.NewProduceRequestTopicPartition()
		p.Partition, p.Records = partition, batch(s)
		t.Partitions = append(t.Partitions, p)
		r.Topics = append(r.Topics, t)
		return r
	}
}

func plainBatch(values ...string) func(*diffSide) []byte {
	return func(*diffSide) []byte { return diffBatch(-1, -1, -1, false, values...) }
}

func idemBatch(seq int32, values ...string) func(*diffSide) []byte {
	return func(s *diffSide) []byte { return diffBatch(s.producerID, s.epoch, seq, false, values...) }
}

func listOffsetsReq(topic string, partition int32, ts int64) func(*diffSide, int16) kmsg.Request {
	return func(_ *diffSide, v int16) kmsg.Request {
		r := kmsg.NewPtrListOffsetsRequest()
		r.ReplicaID = -1
		t := kmsg.NewListOffsetsRequestTopic()
		t.Topic = topic
		p := kmsg.NewListOffsetsRequestTopicPartition()
		p.Partition, p.Timestamp, p.CurrentLeaderEpoch = partition, ts, -1
		t.Partitions = append(t.Partitions, p)
		r.Topics = append(r.Topics, t)
		return r
	}
}

func fetchReq(topic string, partition int32, offset int64) func(*diffSide, int16) kmsg.Request {
	return func(s *diffSide, v int16) kmsg.Request {
		r := kmsg.NewPtrFetchRequest()
		r.ReplicaID = -1
		r.MaxWaitMillis, r.MinBytes, r.MaxBytes = 0, 1, 1<<20
		r.SessionEpoch = -1 // no fetch session: full responses on both
		t := kmsg.NewFetchRequestTopic()
		t.Topic, t.TopicID = topic, s.topicIDs[topic] // v13+ names topics by id
		p := kmsg.NewFetchRequestTopicPartition()
		p.Partition, p.FetchOffset, p.PartitionMaxBytes, p.CurrentLeaderEpoch, p.LogStartOffset = partition, offset, 1<<20, -1, -1
		t.Partitions = append(t.Partitions, p)
		r.Topics = append(r.Topics, t)
		return r
	}
}

func deleteRecordsReq(topic string, partition int32, offset int64) func(*diffSide, int16) kmsg.Request {
	return func(_ *diffSide, v int16) kmsg.Request {
		r := kmsg.NewPtrDeleteRecordsRequest()
		r.TimeoutMillis = 10000
		t := kmsg.NewDeleteRecordsRequestTopic()
		t.Topic = topic
		p := kmsg.NewDeleteRecordsRequestTopicPartition()
		p.Partition, p.Offset = partition, offset
		t.Partitions = append(t.Partitions, p)
		r.Topics = append(r.Topics, t)
		return r
	}
}

func createPartitionsReq(topic string, count int32) func(*diffSide, int16) kmsg.Request {
	return func(_ *diffSide, v int16) kmsg.Request {
		r := kmsg.NewPtrCreatePartitionsRequest()
		r.TimeoutMillis = 10000
		t := kmsg.NewCreatePartitionsRequestTopic()
		t.Topic, t.Count = topic, count
		r.Topics = append(r.Topics, t)
		return r
	}
}

func deleteTopicsReq(names ...string) func(*diffSide, int16) kmsg.Request {
	return func(_ *diffSide, v int16) kmsg.Request {
		r := kmsg.NewPtrDeleteTopicsRequest()
		r.TimeoutMillis = 10000
		r.TopicNames = names
		for _, n := range names {
			t := kmsg.NewDeleteTopicsRequestTopic()
			t.Topic = kmsg.StringPtr(n)
			r.Topics = append(r.Topics, t)
		}
		return r
	}
}

func incrementalAlterReq(topic, key, value string) func(*diffSide, int16) kmsg.Request {
	return func(_ *diffSide, v int16) kmsg.Request {
		r := kmsg.NewPtrIncrementalAlterConfigsRequest()
		res := kmsg.NewIncrementalAlterConfigsRequestResource()
		res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeTopic, topic
		c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		c.Name, c.Op, c.Value = key, kmsg.IncrementalAlterConfigOpSet, kmsg.StringPtr(value)
		res.Configs = append(res.Configs, c)
		r.Resources = append(r.Resources, res)
		return r
	}
}

func initProducerIDReq(txnID *string) func(*diffSide, int16) kmsg.Request {
	return func(_ *diffSide, v int16) kmsg.Request {
		r := kmsg.NewPtrInitProducerIDRequest()
		r.TransactionalID, r.TransactionTimeoutMillis = txnID, 10000
		r.ProducerID, r.ProducerEpoch = -1, -1
		return r
	}
}

// rememberProducer records InitProducerId's id and epoch on the side.
func rememberProducer(s *diffSide, resp kmsg.Response) {
	r := resp.(*kmsg.InitProducerIDResponse)
	s.producerID, s.epoch = r.ProducerID, r.ProducerEpoch
}

// diffSequences are the scripted sequences; run makes names unique.
func diffSequences(run string) []diffSequence {
	topic := "t-" + run
	small := "small-" + run
	gone := "gone-" + run
	idem := "idem-" + run
	group := "g-" + run
	txnID := "tx-" + run
	missing := "missing-" + run
	return []diffSequence{
		{name: "share", steps: shareSteps(run)},
		{name: "share records", steps: shareRecordsSteps(run)},
		{name: "topics", steps: []diffStep{
			{name: "create 3 partitions", req: createTopicsReq(topic, 3, nil, false), versions: newest,
				// The newest CreateTopics returns the topic's configs, whose
				// sources and synonyms Kafka fills from its own config files.
				ignore: regexp.MustCompile(`Topics\.0\.Configs\.`)},
			awaitTopic(topic, 3),
			{name: "create existing", req: createTopicsReq(topic, 3, nil, false)},
			{name: "create invalid name", req: createTopicsReq("bad/name", 1, nil, false)},
			{name: "create zero partitions", req: createTopicsReq("zero-"+run, 0, nil, false)},
			{name: "create invalid config value", req: createTopicsReq("badcfg-"+run, 1, map[string]string{"retention.ms": "soon"}, false)},
			{name: "create unknown config", req: createTopicsReq("unkcfg-"+run, 1, map[string]string{"no.such.config": "1"}, false)},
			{name: "create validate only", req: createTopicsReq("validate-"+run, 2, nil, true),
				ignore: regexp.MustCompile(`Topics\.0\.Configs\.`)},
			{name: "metadata known", req: metadataReq(false, topic)},
			// Only v4+, which can say "do not auto-create".
			{name: "metadata unknown, no auto-create", req: metadataReq(false, missing), versions: newest},
			{name: "metadata v0 unknown topic", req: metadataReq(true, "auto-"+run),
				versions: func(lo, hi int16) []int16 { return []int16{lo} },
				known:    "kbroker creates the topic before answering; Kafka answers UNKNOWN_TOPIC_OR_PARTITION and creates it in the background"},
			awaitTopic("auto-"+run, 1),
			{name: "create partitions 3→5", req: createPartitionsReq(topic, 5), versions: newest},
			awaitTopic(topic, 5),
			{name: "create partitions 5→2", req: createPartitionsReq(topic, 2)},
			{name: "create partitions unknown topic", req: createPartitionsReq(missing, 2)},
			{name: "alter config invalid value", req: incrementalAlterReq(topic, "retention.ms", "soon")},
			{name: "alter config unknown topic", req: incrementalAlterReq(missing, "retention.ms", "1000")},
			{name: "delete unknown topic", req: deleteTopicsReq(missing)},
		}},
		{name: "topic edges", steps: topicEdgeSteps(run)},
		{name: "produce edges", steps: produceEdgeSteps(run)},
		{name: "produce-fetch", steps: []diffStep{
			{name: "create", req: createTopicsReq(small, 1, map[string]string{"max.message.bytes": "2000"}, false), versions: newest,
				ignore: regexp.MustCompile(`Topics\.0\.Configs\.`)},
			awaitTopic(small, 1),
			{name: "produce 3 records", req: produceReq(small, 0, -1, plainBatch("a", "b", "c"))},
			{name: "produce unknown partition", req: produceReq(small, 7, -1, plainBatch("x"))},
			{name: "produce oversized batch", req: produceReq(small, 0, -1, plainBatch(string(make([]byte, 4000))))},
			{name: "list offsets latest", req: listOffsetsReq(small, 0, -1)},
			{name: "list offsets earliest", req: listOffsetsReq(small, 0, -2)},
			{name: "list offsets unknown partition", req: listOffsetsReq(small, 9, -1)},
			{name: "fetch from 0", req: fetchReq(small, 0, 0)},
			{name: "fetch out of range", req: fetchReq(small, 0, 100)},
			{name: "fetch unknown partition", req: fetchReq(small, 4, 0)},
			{name: "delete records below HW", req: deleteRecordsReq(small, 0, 2), versions: newest},
			{name: "delete records above HW", req: deleteRecordsReq(small, 0, 50)},
			{name: "fetch below log start", req: fetchReq(small, 0, 0)},
			{name: "list offsets earliest after delete", req: listOffsetsReq(small, 0, -2)},
			{name: "create to delete", req: createTopicsReq(gone, 1, nil, false), versions: newest,
				ignore: regexp.MustCompile(`Topics\.0\.Configs\.`)},
			awaitTopic(gone, 1),
			{name: "delete topic", req: deleteTopicsReq(gone), versions: newest},
			awaitTopic(gone, 0),
			{name: "produce to deleted topic", req: produceReq(gone, 0, -1, plainBatch("x"))},
		}},
		{name: "idempotence", steps: []diffStep{
			{name: "create", req: createTopicsReq(idem, 1, nil, false), versions: newest,
				ignore: regexp.MustCompile(`Topics\.0\.Configs\.`)},
			awaitTopic(idem, 1),
			// A fresh Kafka answers COORDINATOR_LOAD_IN_PROGRESS until its
			// producer-id manager has a block of ids.
			{name: "init producer id", req: initProducerIDReq(nil), after: rememberProducer, versions: newest,
				until: func(resp kmsg.Response) bool { return resp.(*kmsg.InitProducerIDResponse).ErrorCode == 0 }},
			{name: "init another producer id", req: initProducerIDReq(nil), versions: oldest},
			{name: "produce seq 0", req: produceReq(idem, 0, -1, idemBatch(0, "a", "b")), versions: newest},
			{name: "produce seq 2", req: produceReq(idem, 0, -1, idemBatch(2, "c")), versions: newest},
			{name: "duplicate seq 2", req: produceReq(idem, 0, -1, idemBatch(2, "c")), versions: newest},
			{name: "out of order seq 9", req: produceReq(idem, 0, -1, idemBatch(9, "z")), versions: newest},
			{name: "old epoch", req: produceReq(idem, 0, -1, func(s *diffSide) []byte {
				return diffBatch(s.producerID, s.epoch-1, 3, false, "old")
			}), versions: newest},
			{name: "list offsets latest", req: listOffsetsReq(idem, 0, -1)},
		}},
		{name: "groups", steps: []diffStep{
			awaitCoordinator(group, 0),
			awaitGroupLoaded(group),
			{name: "heartbeat unknown group", req: func(s *diffSide, v int16) kmsg.Request {
				r := kmsg.NewPtrHeartbeatRequest()
				r.Group, r.Generation, r.MemberID = group, 1, "nobody"
				return r
			}},
			{name: "join without member id", req: joinReq(group, ""), versions: newest,
				after: func(s *diffSide, resp kmsg.Response) { s.memberID = resp.(*kmsg.JoinGroupResponse).MemberID }},
			{name: "join with member id", req: func(s *diffSide, v int16) kmsg.Request { return joinReq(group, s.memberID)(s, v) },
				versions: newest, ignore: regexp.MustCompile(`(LeaderID|Members\.0\.MemberID)$`),
				after: func(s *diffSide, resp kmsg.Response) { s.generation = resp.(*kmsg.JoinGroupResponse).Generation }},
			{name: "sync wrong generation", req: func(s *diffSide, v int16) kmsg.Request {
				r := kmsg.NewPtrSyncGroupRequest()
				r.Group, r.Generation, r.MemberID = group, s.generation+5, s.memberID
				r.ProtocolType, r.Protocol = kmsg.StringPtr("consumer"), kmsg.StringPtr("range")
				return r
			}},
			{name: "heartbeat unknown member", req: func(s *diffSide, v int16) kmsg.Request {
				r := kmsg.NewPtrHeartbeatRequest()
				r.Group, r.Generation, r.MemberID = group, s.generation, "nobody"
				return r
			}, versions: newest},
			{name: "offset commit wrong generation", req: func(s *diffSide, v int16) kmsg.Request {
				r := kmsg.NewPtrOffsetCommitRequest()
				r.Group, r.Generation, r.MemberID = group, s.generation+5, s.memberID
				t := kmsg.NewOffsetCommitRequestTopic()
				t.Topic, t.TopicID = idem, s.topicIDs[idem] // v10+ names topics by id
				p := kmsg.NewOffsetCommitRequestTopicPartition()
				p.Partition, p.Offset, p.LeaderEpoch = 0, 1, -1
				t.Partitions = append(t.Partitions, p)
				r.Topics = append(r.Topics, t)
				return r
			}, versions: newest},
		}},
		{name: "offsets", steps: offsetsDiffSteps(run)},
		{name: "classic group lifecycle", steps: classicGroupLifecycleSteps(run)},
		{name: "classic group at v0", steps: classicGroupV0Steps(run)},
		{name: "group admin", steps: []diffStep{
			awaitCoordinator("nogroup-"+run, 0),
			awaitGroupLoaded("nogroup-" + run),
			{name: "find coordinator", req: func(s *diffSide, v int16) kmsg.Request {
				r := kmsg.NewPtrFindCoordinatorRequest()
				r.CoordinatorKey, r.CoordinatorKeys = group, []string{group}
				return r
			}, ignore: regexp.MustCompile(`NodeID$`)},
			{name: "describe unknown group", req: func(s *diffSide, v int16) kmsg.Request {
				r := kmsg.NewPtrDescribeGroupsRequest()
				r.Groups = []string{"nogroup-" + run}
				return r
			}},
			{name: "offset fetch unknown group", req: func(s *diffSide, v int16) kmsg.Request {
				r := kmsg.NewPtrOffsetFetchRequest()
				r.Group = "nogroup-" + run
				t := kmsg.NewOffsetFetchRequestTopic()
				t.Topic, t.Partitions = idem, []int32{0}
				r.Topics = append(r.Topics, t)
				g := kmsg.NewOffsetFetchRequestGroup()
				g.Group = r.Group
				gt := kmsg.NewOffsetFetchRequestGroupTopic()
				gt.Topic, gt.Partitions = idem, []int32{0}
				g.Topics = append(g.Topics, gt)
				r.Groups = append(r.Groups, g)
				return r
			}, versions: func(lo, hi int16) []int16 { return []int16{lo, 9} }}, // v10 names topics by id
			{name: "delete unknown group", req: func(s *diffSide, v int16) kmsg.Request {
				r := kmsg.NewPtrDeleteGroupsRequest()
				r.Groups = []string{"nogroup-" + run}
				return r
			}},
			{name: "offset delete unknown group", req: func(s *diffSide, v int16) kmsg.Request {
				r := kmsg.NewPtrOffsetDeleteRequest()
				r.Group = "nogroup-" + run
				t := kmsg.NewOffsetDeleteRequestTopic()
				t.Topic = idem
				p := kmsg.NewOffsetDeleteRequestTopicPartition()
				t.Partitions = append(t.Partitions, p)
				r.Topics = append(r.Topics, t)
				return r
			}},
		}},
		{name: "configs", steps: []diffStep{
			{name: "describe configs unknown topic", req: func(s *diffSide, v int16) kmsg.Request {
				r := kmsg.NewPtrDescribeConfigsRequest()
				res := kmsg.NewDescribeConfigsRequestResource()
				res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeTopic, missing
				res.ConfigNames = []string{"retention.ms"}
				r.Resources = append(r.Resources, res)
				return r
			}},
			{name: "describe one topic config", req: func(s *diffSide, v int16) kmsg.Request {
				r := kmsg.NewPtrDescribeConfigsRequest()
				res := kmsg.NewDescribeConfigsRequestResource()
				res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeTopic, idem
				res.ConfigNames = []string{"retention.ms", "cleanup.policy", "max.message.bytes"}
				r.Resources = append(r.Resources, res)
				return r
			}, ignore: regexp.MustCompile(`(Synonyms\..*|Documentation)$`),
				normalize: func(resp kmsg.Response) {
					for _, res := range resp.(*kmsg.DescribeConfigsResponse).Resources {
						slices.SortFunc(res.Configs, func(a, b kmsg.DescribeConfigsResponseResourceConfig) int {
							return strings.Compare(a.Name, b.Name)
						})
					}
				}},
		}},
		{name: "configs, every topic config", steps: []diffStep{
			{name: "describe every config of a topic", req: func(s *diffSide, v int16) kmsg.Request {
				r := kmsg.NewPtrDescribeConfigsRequest()
				res := kmsg.NewDescribeConfigsRequestResource()
				res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeTopic, idem
				r.Resources = append(r.Resources, res)
				return r
			}, ignore: regexp.MustCompile(`(Synonyms\..*|Documentation)$`),
				// Left out: segment.bytes, where kbroker reports its
				// commit log's files (README), and min.insync.replicas,
				// which Kafka's storage format sets as a dynamic
				// cluster default.
				normalize: func(resp kmsg.Response) {
					for i := range resp.(*kmsg.DescribeConfigsResponse).Resources {
						res := &resp.(*kmsg.DescribeConfigsResponse).Resources[i]
						res.Configs = slices.DeleteFunc(res.Configs, func(c kmsg.DescribeConfigsResponseResourceConfig) bool {
							return c.Name == "segment.bytes" || c.Name == "min.insync.replicas"
						})
						slices.SortFunc(res.Configs, func(a, b kmsg.DescribeConfigsResponseResourceConfig) int {
							return strings.Compare(a.Name, b.Name)
						})
					}
				}},
		}},
		{name: "transactions", steps: []diffStep{
			awaitCoordinator(txnID, 1),
			awaitTxnLoaded(txnID),
			awaitCoordinator("none-"+run, 1),
			awaitTxnLoaded("none-" + run),
			{name: "end txn unknown transactional id", req: func(s *diffSide, v int16) kmsg.Request {
				r := kmsg.NewPtrEndTxnRequest()
				r.TransactionalID, r.ProducerID, r.ProducerEpoch, r.Commit = "none-"+run, 12345, 0, true
				return r
			}},
			// Even with the transaction log loaded, a fresh Kafka answers
			// COORDINATOR_LOAD_IN_PROGRESS until its producer-id manager
			// has a block of ids.
			{name: "init transactional producer", req: initProducerIDReq(&txnID), after: rememberProducer, versions: newest,
				until: func(resp kmsg.Response) bool { return resp.(*kmsg.InitProducerIDResponse).ErrorCode == 0 }},
			{name: "end txn with nothing open", req: func(s *diffSide, v int16) kmsg.Request {
				r := kmsg.NewPtrEndTxnRequest()
				r.TransactionalID, r.ProducerID, r.ProducerEpoch, r.Commit = txnID, s.producerID, s.epoch, true
				return r
			}, versions: newest},
			{name: "add partitions with a fenced epoch", req: func(s *diffSide, v int16) kmsg.Request {
				r := kmsg.NewPtrAddPartitionsToTxnRequest()
				r.TransactionalID, r.ProducerID, r.ProducerEpoch = txnID, s.producerID, s.epoch+3
				t := kmsg.NewAddPartitionsToTxnRequestTopic()
				t.Topic, t.Partitions = idem, []int32{0}
				r.Topics = append(r.Topics, t)
				return r
				// v3, the clients' newest: v4+ is the batched form (see
				// txnProtoSteps), to which Kafka never answers without
				// transactions.
			}, versions: func(lo, hi int16) []int16 { return []int16{3} }},
			{name: "add offsets with a fenced epoch", req: addOffsetsReq(txnID, group, 3)},
			{name: "add offsets", req: addOffsetsReq(txnID, group, 0), versions: newest},
			{name: "txn offset commit after AddOffsetsToTxn", req: txnOffsetCommitReq(txnID, group, idem, false), versions: oldest},
			{name: "describe the transaction with the offsets", req: func(s *diffSide, v int16) kmsg.Request {
				r := kmsg.NewPtrDescribeTransactionsRequest()
				r.TransactionalIDs = []string{txnID}
				return r
			}, versions: newest, ignore: regexp.MustCompile(`StartTimestamp$`),
				// The group's partition of __consumer_offsets: kbroker has 1
				// by default, Kafka 50 (README).
				normalize: func(resp kmsg.Response) {
					for _, st := range resp.(*kmsg.DescribeTransactionsResponse).TransactionStates {
						for i := range st.Topics {
							if st.Topics[i].Topic == "__consumer_offsets" {
								st.Topics[i].Partitions = []int32{-1}
							}
						}
					}
				}},
			{name: "abort the transaction with the offsets", req: func(s *diffSide, v int16) kmsg.Request {
				r := kmsg.NewPtrEndTxnRequest()
				r.TransactionalID, r.ProducerID, r.ProducerEpoch, r.Commit = txnID, s.producerID, s.epoch, false
				return r
			}, versions: newest},
		}},
		{name: "transactions v2", steps: txnV2Steps(run)},
		{name: "transaction protocol versions", steps: txnProtoSteps(run)},
		{name: "read committed", steps: readCommittedSteps(run)},
		{name: "streams groups", steps: streamsDiffSteps(run)},
		{name: "consumer groups", steps: consumerGroupDiffSteps(run)},
		{name: "admin", steps: adminDiffSteps(run)},
		{name: "sasl on plaintext", steps: saslOnPlaintextSteps()},
		{name: "api versions", steps: apiVersionsSteps()},
		{name: "list config resources", steps: listConfigResourcesSteps(run)},
		{name: "fetch edges", steps: fetchEdgeSteps(run)},
		{name: "config edges", steps: configEdgeSteps(run)},
		{name: "classic edges", steps: classicEdgeSteps(run)},
		{name: "consumer edges", steps: consumerEdgeSteps(run)},
		{name: "admin edges", steps: adminEdgeSteps(run)},
		{name: "txn edges", steps: txnEdgeSteps(run)},
		{name: "produce edges 2", steps: produceEdge2Steps(run)},
	}
}

// txnV2Steps is a transaction of transactions v2 (KIP-890 part 2,
// transaction.version 2 on both brokers): Produce v12 joins the
// transaction, TxnOffsetCommit v5 adds the group's partition, EndTxn v5
// bumps the epoch (a retry gets the same answer, an abort with nothing
// open bumps again), and the old epoch is fenced at the partition.
func txnV2Steps(run string) []diffStep {
	topic, id, group := "tv2-"+run, "tv2-"+run, "gv2-"+run
	endReq := func(commit bool, epochDelta int16) func(*diffSide, int16) kmsg.Request {
		return endTxnReq(id, commit, epochDelta)
	}
	bumped, notConcurrent := rememberEndTxnEpoch, notConcurrentTxn
	txnProduce := func(epochDelta int16, seq int32) func(*diffSide, int16) kmsg.Request {
		return txnProduceReq(topic, id, epochDelta, seq, "v2")
	}
	describe := func(s *diffSide, v int16) kmsg.Request {
		r := kmsg.NewPtrDescribeTransactionsRequest()
		r.TransactionalIDs = []string{id}
		return r
	}
	startTime := regexp.MustCompile(`StartTimestamp$`)
	steps := append(awaitGroupReady(group), transactionalSetup(topic, id)...)
	return append(steps, []diffStep{
		// Kafka may take the new partition's leadership a moment after
		// its metadata shows it (NOT_LEADER_OR_FOLLOWER meanwhile).
		{name: "produce v11 outside the transaction", req: txnProduce(0, 0), versions: atVersion(11),
			until: func(resp kmsg.Response) bool {
				return resp.(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode != kerr.NotLeaderForPartition.Code
			}},
		{name: "produce v12 joins the transaction", req: txnProduce(0, 0), versions: atVersion(12)},
		{name: "txn offset commit v5 without AddOffsetsToTxn", req: txnOffsetCommitReq(id, group, topic, false), versions: atVersion(5)},
		{name: "txn offset commit v6, the topic by id", req: txnOffsetCommitReq(id, group, topic, false), versions: atVersion(6)},
		{name: "txn offset commit v6, an unknown topic id", req: txnOffsetCommitReq(id, group, topic, true), versions: atVersion(6)},
		{name: "describe the open transaction", req: describe, versions: newest, ignore: startTime,
			normalize: func(resp kmsg.Response) {
				for _, st := range resp.(*kmsg.DescribeTransactionsResponse).TransactionStates {
					slices.SortFunc(st.Topics, func(a, b kmsg.DescribeTransactionsResponseTransactionStateTopic) int {
						return strings.Compare(a.Topic, b.Topic)
					})
					// The group's partition of __consumer_offsets: kbroker
					// has 1 by default, Kafka 50 (README).
					for i := range st.Topics {
						if st.Topics[i].Topic == "__consumer_offsets" {
							st.Topics[i].Partitions = []int32{-1}
						}
					}
				}
			}},
		{name: "end txn v5 commit bumps the epoch", req: endReq(true, 0), after: bumped, versions: atVersion(5)},
		{name: "end txn v5 commit retried", req: endReq(true, -1), versions: atVersion(5), until: notConcurrent},
		{name: "zombie produce with the old epoch", req: txnProduce(-1, 1), versions: atVersion(12)},
		{name: "end txn v5 abort with nothing open", req: endReq(false, 0), after: bumped, versions: atVersion(5), until: notConcurrent},
		{name: "end txn v5 commit with nothing open", req: endReq(true, 0), versions: atVersion(5), until: notConcurrent},
		{name: "describe after the abort", req: describe, versions: newest, ignore: startTime,
			until: func(resp kmsg.Response) bool {
				return resp.(*kmsg.DescribeTransactionsResponse).TransactionStates[0].State == "CompleteAbort"
			}},
		// A new producer fences an open transaction: the abort and the
		// answer's epochs (CONCURRENT_TRANSACTIONS until the abort is
		// complete).
		{name: "produce v12, a transaction left open", req: txnProduce(0, 0), versions: atVersion(12)},
		{name: "init of a new producer fences it", req: initProducerIDReq(&id), after: rememberProducer, versions: newest,
			until: func(resp kmsg.Response) bool { return resp.(*kmsg.InitProducerIDResponse).ErrorCode == 0 }},
		{name: "describe after the fence", req: describe, versions: newest, ignore: startTime},
	}...)
}

// transactionalSetup creates topic (one partition) and initializes
// transactional producer id on each side, once both brokers serve them.
func transactionalSetup(topic, id string) []diffStep {
	return append(createAndAwait(topic, 1),
		awaitCoordinator(id, 1),
		awaitTxnLoaded(id),
		diffStep{name: "init", req: initProducerIDReq(&id), after: rememberProducer, versions: newest,
			until: func(resp kmsg.Response) bool { return resp.(*kmsg.InitProducerIDResponse).ErrorCode == 0 }},
	)
}

// createAndAwait creates topic with n partitions, compared at the newest
// version without the answer's configs (Kafka fills their sources from its
// own files), and waits until both brokers serve it.
func createAndAwait(topic string, n int32) []diffStep {
	return []diffStep{
		{name: "create " + topic, req: createTopicsReq(topic, n, nil, false), versions: newest,
			ignore: regexp.MustCompile(`Topics\.0\.Configs\.`)},
		awaitTopic(topic, int(n)),
	}
}

// awaitGroupReady waits until both brokers have a loaded coordinator
// for group.
func awaitGroupReady(group string) []diffStep {
	return []diffStep{awaitCoordinator(group, 0), awaitGroupLoaded(group)}
}

// offsetCommitReq commits offsets to topic's partitions from first on,
// with metadata meta (nil for none), for group as the member and at the
// generation or member epoch who gives.
func offsetCommitReq(group, topic string, who func(*diffSide) (member string, generation int32), meta *string, first int32, offsets ...int64) func(*diffSide, int16) kmsg.Request {
	return func(s *diffSide, v int16) kmsg.Request {
		r := kmsg.NewPtrOffsetCommitRequest()
		r.Group = group
		r.MemberID, r.Generation = who(s)
		t := kmsg.NewOffsetCommitRequestTopic()
		t.Topic, t.TopicID = topic, s.topicIDs[topic]
		for i, off := range offsets {
			p := kmsg.NewOffsetCommitRequestTopicPartition()
			p.Partition, p.Offset, p.LeaderEpoch, p.Metadata = first+int32(i), off, -1, meta
			t.Partitions = append(t.Partitions, p)
		}
		r.Topics = append(r.Topics, t)
		return r
	}
}

// txnOffsetCommitReq commits offset 1 of topic's partition 0 for group in
// transaction id, naming the topic by name and id (v6+ use the id; a
// made-up one if unknownID).
func txnOffsetCommitReq(id, group, topic string, unknownID bool) func(*diffSide, int16) kmsg.Request {
	return func(s *diffSide, v int16) kmsg.Request {
		r := kmsg.NewPtrTxnOffsetCommitRequest()
		r.TransactionalID, r.Group, r.ProducerID, r.ProducerEpoch, r.Generation = id, group, s.producerID, s.epoch, -1
		t := kmsg.NewTxnOffsetCommitRequestTopic()
		t.Topic, t.TopicID = topic, s.topicIDs[topic]
		if unknownID {
			t.TopicID = [16]byte{0xde, 0xad}
		}
		p := kmsg.NewTxnOffsetCommitRequestTopicPartition()
		p.Partition, p.Offset, p.LeaderEpoch = 0, 1, -1
		t.Partitions = append(t.Partitions, p)
		r.Topics = append(r.Topics, t)
		return r
	}
}

func addOffsetsReq(txnID, group string, epochDelta int16) func(*diffSide, int16) kmsg.Request {
	return func(s *diffSide, v int16) kmsg.Request {
		r := kmsg.NewPtrAddOffsetsToTxnRequest()
		r.TransactionalID, r.ProducerID, r.ProducerEpoch, r.Group = txnID, s.producerID, s.epoch+epochDelta, group
		return r
	}
}

// endTxnReq ends transaction id at the side's producer epoch moved by
// epochDelta.
func endTxnReq(id string, commit bool, epochDelta int16) func(*diffSide, int16) kmsg.Request {
	return func(s *diffSide, v int16) kmsg.Request {
		r := kmsg.NewPtrEndTxnRequest()
		r.TransactionalID, r.ProducerID, r.ProducerEpoch, r.Commit = id, s.producerID, s.epoch+epochDelta, commit
		return r
	}
}

// rememberEndTxnEpoch keeps the next epoch EndTxn v5 answered
// (transactions v2 bump the epoch at every end).
func rememberEndTxnEpoch(s *diffSide, resp kmsg.Response) {
	if r := resp.(*kmsg.EndTxnResponse); r.ErrorCode == 0 && r.ProducerEpoch >= 0 {
		s.epoch = r.ProducerEpoch
	}
}

// notConcurrentTxn holds unless Kafka is still writing the previous
// transaction's markers (CONCURRENT_TRANSACTIONS), which is retried.
func notConcurrentTxn(resp kmsg.Response) bool {
	return resp.(*kmsg.EndTxnResponse).ErrorCode != kerr.ConcurrentTransactions.Code
}

// txnProduceReq produces values to partition 0 of topic in transaction id,
// at the side's producer epoch moved by epochDelta, from sequence seq.
func txnProduceReq(topic, id string, epochDelta int16, seq int32, values ...string) func(*diffSide, int16) kmsg.Request {
	build := produceReq(topic, 0, -1, func(s *diffSide) []byte {
		return diffBatch(s.producerID, s.epoch+epochDelta, seq, true, values...)
	})
	return func(s *diffSide, v int16) kmsg.Request {
		r := build(s, v).(*kmsg.ProduceRequest)
		r.TransactionID = &id
		return r
	}
}

func joinReq(group, member string) func(*diffSide, int16) kmsg.Request {
	return func(_ *diffSide, v int16) kmsg.Request {
		r := kmsg.NewPtrJoinGroupRequest()
		r.Group, r.MemberID = group, member
		r.SessionTimeoutMillis, r.RebalanceTimeoutMillis = 6000, 6000
		r.ProtocolType = "consumer"
		p := kmsg.NewJoinGroupRequestProtocol()
		p.Name = "range"
		meta := kmsg.NewConsumerMemberMetadata()
		meta.Topics = []string{"x"}
		p.Metadata = meta.AppendTo(nil)
		r.Protocols = append(r.Protocols, p)
		return r
	}
}
