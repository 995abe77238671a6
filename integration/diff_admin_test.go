package integration

import (
	"regexp"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// adminDiffSteps are the admin and single-node cluster APIs on both
// brokers: DescribeCluster, DescribeTopicPartitions, DescribeLogDirs,
// OffsetForLeaderEpoch, DescribeProducers and ListTransactions over a
// topic with idempotent records, the partition-placement APIs a one-node
// cluster answers (ElectLeaders, List/AlterPartitionReassignments),
// UpdateFeatures, client quotas and SCRAM credentials, each with its error
// paths.
func adminDiffSteps(run string) []diffStep {
	topic, missing, user := "adm-"+run, "missing-adm-"+run, "user-"+run
	partitions := func(ps ...int32) []int32 { return ps }
	return append(createAndAwait(topic, 2), []diffStep{
		{name: "init producer id", req: initProducerIDReq(nil), after: rememberProducer, versions: newest,
			until: func(resp kmsg.Response) bool { return resp.(*kmsg.InitProducerIDResponse).ErrorCode == 0 }},
		// Kafka may take a new partition's leadership a moment after its
		// metadata shows it.
		{name: "produce 3 idempotent records", req: produceReq(topic, 0, -1, idemBatch(0, "a", "b", "c")), versions: newest,
			until: func(resp kmsg.Response) bool {
				return resp.(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode == 0
			}},

		{name: "describe cluster", req: func(s *diffSide, v int16) kmsg.Request {
			r := kmsg.NewPtrDescribeClusterRequest()
			r.EndpointType = 1
			return r
		}},
		{name: "describe cluster, controllers", req: func(s *diffSide, v int16) kmsg.Request {
			r := kmsg.NewPtrDescribeClusterRequest()
			r.EndpointType = 2
			return r
		}, versions: newest},

		{name: "describe topic partitions", req: describeTopicPartitionsReq(nil, topic, missing)},
		{name: "describe topic partitions, one per answer", req: describeTopicPartitionsReq(func(r *kmsg.DescribeTopicPartitionsRequest) {
			r.ResponsePartitionLimit = 1
		}, topic)},
		{name: "describe topic partitions from a cursor", req: describeTopicPartitionsReq(func(r *kmsg.DescribeTopicPartitionsRequest) {
			r.Cursor = &kmsg.DescribeTopicPartitionsRequestCursor{Topic: topic, Partition: 1}
		}, topic)},

		{name: "describe log dirs", req: func(s *diffSide, v int16) kmsg.Request {
			r := kmsg.NewPtrDescribeLogDirsRequest()
			r.Topics = []kmsg.DescribeLogDirsRequestTopic{{Topic: topic, Partitions: partitions(0, 1)}, {Topic: missing, Partitions: partitions(0)}}
			return r
		}, ignore: regexp.MustCompile(`(Dir|Size|TotalBytes|UsableBytes)$`),
			normalize: func(resp kmsg.Response) {
				for _, d := range resp.(*kmsg.DescribeLogDirsResponse).Dirs {
					for _, t := range d.Topics {
						slices.SortFunc(t.Partitions, func(a, b kmsg.DescribeLogDirsResponseDirTopicPartition) int {
							return int(a.Partition - b.Partition)
						})
					}
				}
			}},

		{name: "offset for leader epoch", req: offsetForLeaderEpochReq(topic, []int32{0, 1, 5}, 0, -1)},
		{name: "offset for leader epoch, a newer current epoch", req: offsetForLeaderEpochReq(topic, []int32{0}, 0, 3),
			versions: newest},
		{name: "offset for leader epoch, unknown topic", req: offsetForLeaderEpochReq(missing, []int32{0}, 0, -1)},

		{name: "describe producers", req: func(s *diffSide, v int16) kmsg.Request {
			r := kmsg.NewPtrDescribeProducersRequest()
			r.Topics = []kmsg.DescribeProducersRequestTopic{{Topic: topic, Partitions: partitions(0, 1, 7)}, {Topic: missing, Partitions: partitions(0)}}
			return r
		}, ignore: regexp.MustCompile(`LastTimestamp$`)},
		// The earlier sequences' transactions: Kafka writes the markers
		// after EndTxn answers, and shows PrepareCommit or PrepareAbort
		// until they are written.
		{name: "list transactions of this run", req: func(s *diffSide, v int16) kmsg.Request {
			return kmsg.NewPtrListTransactionsRequest()
		}, until: func(resp kmsg.Response) bool {
			for _, t := range resp.(*kmsg.ListTransactionsResponse).TransactionStates {
				if strings.HasSuffix(t.TransactionalID, run) && strings.HasPrefix(t.TransactionState, "Prepare") {
					return false
				}
			}
			return true
		}, normalize: func(resp kmsg.Response) {
			r := resp.(*kmsg.ListTransactionsResponse)
			r.TransactionStates = slices.DeleteFunc(r.TransactionStates, func(t kmsg.ListTransactionsResponseTransactionState) bool {
				return !strings.HasSuffix(t.TransactionalID, run)
			})
			slices.SortFunc(r.TransactionStates, func(a, b kmsg.ListTransactionsResponseTransactionState) int {
				return strings.Compare(a.TransactionalID, b.TransactionalID)
			})
		}},
		{name: "list transactions by a pattern of this run", req: func(s *diffSide, v int16) kmsg.Request {
			r := kmsg.NewPtrListTransactionsRequest()
			r.TransactionalIDPattern = kmsg.StringPtr(".*-" + run)
			return r
		}, versions: atVersion(2), normalize: func(resp kmsg.Response) {
			slices.SortFunc(resp.(*kmsg.ListTransactionsResponse).TransactionStates, func(a, b kmsg.ListTransactionsResponseTransactionState) int {
				return strings.Compare(a.TransactionalID, b.TransactionalID)
			})
		}},
		// The pattern matches whole ids.
		{name: "list transactions by a pattern that matches a prefix", req: func(s *diffSide, v int16) kmsg.Request {
			r := kmsg.NewPtrListTransactionsRequest()
			r.TransactionalIDPattern = kmsg.StringPtr("tv2")
			return r
		}, versions: atVersion(2)},
		{name: "list transactions, an invalid pattern", req: func(s *diffSide, v int16) kmsg.Request {
			r := kmsg.NewPtrListTransactionsRequest()
			r.TransactionalIDPattern = kmsg.StringPtr("a)|(b")
			return r
		}, versions: atVersion(2)},
		{name: "list transactions, unknown state filter", req: func(s *diffSide, v int16) kmsg.Request {
			r := kmsg.NewPtrListTransactionsRequest()
			r.StateFilters = []string{"Bogus"}
			return r
		}},

		{name: "elect preferred leaders", req: electLeadersReq(0, topic, partitions(0, 1))},
		{name: "elect unclean leaders", req: electLeadersReq(1, topic, partitions(0)), versions: newest},
		{name: "elect leaders, unknown topic", req: electLeadersReq(0, missing, partitions(0))},
		{name: "list partition reassignments", req: func(s *diffSide, v int16) kmsg.Request {
			r := kmsg.NewPtrListPartitionReassignmentsRequest()
			r.TimeoutMillis = 10000
			r.Topics = []kmsg.ListPartitionReassignmentsRequestTopic{{Topic: topic, Partitions: partitions(0, 1)}}
			return r
		}},
		{name: "reassign to the same replica", req: alterReassignmentsReq(topic, 0, []int32{1})},
		{name: "reassign to an unknown broker", req: alterReassignmentsReq(topic, 0, []int32{7})},
		{name: "cancel a reassignment none started", req: alterReassignmentsReq(topic, 1, nil)},
		{name: "reassign an unknown topic", req: alterReassignmentsReq(missing, 0, []int32{1})},

		{name: "update an unknown feature, validate only", req: func(s *diffSide, v int16) kmsg.Request {
			r := kmsg.NewPtrUpdateFeaturesRequest()
			r.TimeoutMillis, r.ValidateOnly = 10000, true
			r.FeatureUpdates = []kmsg.UpdateFeaturesRequestFeatureUpdate{{Feature: "no.such.feature", MaxVersionLevel: 1, UpgradeType: 1}}
			return r
		}},

		{name: "describe quotas of a user with none", req: describeQuotasReq(user)},
		{name: "set a user's quota", req: alterQuotasReq(user, "producer_byte_rate", 1024, false)},
		{name: "set an unknown quota", req: alterQuotasReq(user, "no_such_quota", 1, false)},
		{name: "describe the user's quota", req: describeQuotasReq(user),
			until: func(resp kmsg.Response) bool { return len(resp.(*kmsg.DescribeClientQuotasResponse).Entries) > 0 }},
		{name: "remove the user's quota", req: alterQuotasReq(user, "producer_byte_rate", 0, true), versions: newest},

		{name: "describe SCRAM credentials of an unknown user", req: describeSCRAMReq(user)},
		{name: "upsert SCRAM credentials with too few iterations", req: upsertSCRAMReq(user, 1, 1000)},
		{name: "upsert SCRAM credentials, unknown mechanism", req: upsertSCRAMReq(user, 9, 8192)},
		{name: "upsert SCRAM credentials", req: upsertSCRAMReq(user, 1, 8192), versions: newest},
		{name: "describe SCRAM credentials", req: describeSCRAMReq(user),
			until: func(resp kmsg.Response) bool {
				r := resp.(*kmsg.DescribeUserSCRAMCredentialsResponse)
				return len(r.Results) == 1 && r.Results[0].ErrorCode == 0
			}},
		{name: "describe the metadata quorum", req: func(s *diffSide, v int16) kmsg.Request {
			r := kmsg.NewPtrDescribeQuorumRequest()
			r.Topics = []kmsg.DescribeQuorumRequestTopic{{Topic: "__cluster_metadata", Partitions: []kmsg.DescribeQuorumRequestTopicPartition{{Partition: 0}}}}
			return r
		}, ignore: regexp.MustCompile(`(LeaderEpoch|HighWatermark|LogEndOffset|LastFetchTimestamp|LastCaughtUpTimestamp|ReplicaDirectoryID(\.\d+)?|Listeners\..*|Nodes\..*)$`)},
		{name: "describe ACLs", req: func(s *diffSide, v int16) kmsg.Request {
			r := kmsg.NewPtrDescribeACLsRequest()
			r.ResourceType, r.ResourcePatternType = kmsg.ACLResourceTypeAny, kmsg.ACLResourcePatternTypeAny
			r.Operation, r.PermissionType = kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
			return r
		}},
		{name: "create an ACL", req: func(s *diffSide, v int16) kmsg.Request {
			r := kmsg.NewPtrCreateACLsRequest()
			r.Creations = []kmsg.CreateACLsRequestCreation{{ResourceType: kmsg.ACLResourceTypeTopic, ResourceName: topic,
				ResourcePatternType: kmsg.ACLResourcePatternTypeLiteral, Principal: "User:" + user, Host: "*",
				Operation: kmsg.ACLOperationRead, PermissionType: kmsg.ACLPermissionTypeAllow}}
			return r
		}},
		{name: "delete ACLs", req: func(s *diffSide, v int16) kmsg.Request {
			r := kmsg.NewPtrDeleteACLsRequest()
			r.Filters = []kmsg.DeleteACLsRequestFilter{{ResourceType: kmsg.ACLResourceTypeTopic, ResourceName: &topic,
				ResourcePatternType: kmsg.ACLResourcePatternTypeLiteral, Operation: kmsg.ACLOperationAny, PermissionType: kmsg.ACLPermissionTypeAny}}
			return r
		}},
		{name: "alter configs (the old API), unknown topic and invalid value", req: func(s *diffSide, v int16) kmsg.Request {
			r := kmsg.NewPtrAlterConfigsRequest()
			for _, name := range []string{missing, topic} {
				res := kmsg.NewAlterConfigsRequestResource()
				res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeTopic, name
				res.Configs = []kmsg.AlterConfigsRequestResourceConfig{{Name: "retention.ms", Value: kmsg.StringPtr("soon")}}
				r.Resources = append(r.Resources, res)
			}
			return r
		}},
		{name: "delete SCRAM credentials", req: func(s *diffSide, v int16) kmsg.Request {
			r := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
			r.Deletions = []kmsg.AlterUserSCRAMCredentialsRequestDeletion{{Name: user, Mechanism: 1}}
			return r
		}, versions: newest},
	}...)
}

// saslOnPlaintextSteps send SaslHandshake and SaslAuthenticate on a
// PLAINTEXT listener. Last of all sequences: a broker may close the
// connection after them.
func saslOnPlaintextSteps() []diffStep {
	return []diffStep{
		{name: "SASL handshake on a PLAINTEXT listener", req: func(s *diffSide, v int16) kmsg.Request {
			r := kmsg.NewPtrSASLHandshakeRequest()
			r.Mechanism = "PLAIN"
			return r
		}},
		{name: "SASL authenticate on a PLAINTEXT listener", req: func(s *diffSide, v int16) kmsg.Request {
			r := kmsg.NewPtrSASLAuthenticateRequest()
			r.SASLAuthBytes = []byte("\x00user\x00secret")
			return r
		}},
	}
}

func describeTopicPartitionsReq(edit func(*kmsg.DescribeTopicPartitionsRequest), topics ...string) func(*diffSide, int16) kmsg.Request {
	return func(_ *diffSide, v int16) kmsg.Request {
		r := kmsg.NewPtrDescribeTopicPartitionsRequest()
		r.ResponsePartitionLimit = 2000
		for _, t := range topics {
			r.Topics = append(r.Topics, kmsg.DescribeTopicPartitionsRequestTopic{Topic: t})
		}
		if edit != nil {
			edit(r)
		}
		return r
	}
}

func offsetForLeaderEpochReq(topic string, partitions []int32, epoch, current int32) func(*diffSide, int16) kmsg.Request {
	return func(_ *diffSide, v int16) kmsg.Request {
		r := kmsg.NewPtrOffsetForLeaderEpochRequest()
		r.ReplicaID = -1
		t := kmsg.NewOffsetForLeaderEpochRequestTopic()
		t.Topic = topic
		for _, p := range partitions {
			t.Partitions = append(t.Partitions, kmsg.OffsetForLeaderEpochRequestTopicPartition{Partition: p, LeaderEpoch: epoch, CurrentLeaderEpoch: current})
		}
		r.Topics = append(r.Topics, t)
		return r
	}
}

func electLeadersReq(typ int8, topic string, partitions []int32) func(*diffSide, int16) kmsg.Request {
	return func(_ *diffSide, v int16) kmsg.Request {
		r := kmsg.NewPtrElectLeadersRequest()
		r.ElectionType, r.TimeoutMillis = typ, 10000
		r.Topics = []kmsg.ElectLeadersRequestTopic{{Topic: topic, Partitions: partitions}}
		return r
	}
}

func alterReassignmentsReq(topic string, partition int32, replicas []int32) func(*diffSide, int16) kmsg.Request {
	return func(_ *diffSide, v int16) kmsg.Request {
		r := kmsg.NewPtrAlterPartitionAssignmentsRequest()
		r.TimeoutMillis = 10000
		r.Topics = []kmsg.AlterPartitionAssignmentsRequestTopic{{Topic: topic,
			Partitions: []kmsg.AlterPartitionAssignmentsRequestTopicPartition{{Partition: partition, Replicas: replicas}}}}
		return r
	}
}

func describeQuotasReq(user string) func(*diffSide, int16) kmsg.Request {
	return func(_ *diffSide, v int16) kmsg.Request {
		r := kmsg.NewPtrDescribeClientQuotasRequest()
		r.Strict = true
		r.Components = []kmsg.DescribeClientQuotasRequestComponent{{EntityType: "user", MatchType: kmsg.QuotasMatchTypeExact, Match: kmsg.StringPtr(user)}}
		return r
	}
}

func alterQuotasReq(user, key string, value float64, remove bool) func(*diffSide, int16) kmsg.Request {
	return func(_ *diffSide, v int16) kmsg.Request {
		r := kmsg.NewPtrAlterClientQuotasRequest()
		r.Entries = []kmsg.AlterClientQuotasRequestEntry{{
			Entity: []kmsg.AlterClientQuotasRequestEntryEntity{{Type: "user", Name: kmsg.StringPtr(user)}},
			Ops:    []kmsg.AlterClientQuotasRequestEntryOp{{Key: key, Value: value, Remove: remove}},
		}}
		return r
	}
}

func describeSCRAMReq(user string) func(*diffSide, int16) kmsg.Request {
	return func(_ *diffSide, v int16) kmsg.Request {
		r := kmsg.NewPtrDescribeUserSCRAMCredentialsRequest()
		r.Users = []kmsg.DescribeUserSCRAMCredentialsRequestUser{{Name: user}}
		return r
	}
}

func upsertSCRAMReq(user string, mechanism int8, iterations int32) func(*diffSide, int16) kmsg.Request {
	return func(_ *diffSide, v int16) kmsg.Request {
		r := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
		r.Upsertions = []kmsg.AlterUserSCRAMCredentialsRequestUpsertion{{Name: user, Mechanism: mechanism, Iterations: iterations,
			Salt: []byte("0123456789abcdef"), SaltedPassword: make([]byte, 32)}}
		return r
	}
}
