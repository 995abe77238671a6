package integration

import (
	"regexp"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// configEdgeSteps are the corners of topic configs and of OffsetFetch's
// stable-offset rule beyond the "configs" and "topics" sequences:
// DescribeConfigs of a topic with overrides at every version with and
// without synonyms and documentation, named keys (one unknown, one twice,
// an empty list), a topic and an unknown one in one request, the broker
// with named keys; CreateTopics validate-only with configs (the answer's
// configs at v5+), invalid values of known configs, values Kafka's parsers
// accept in other spellings, compaction configs on a deleting topic;
// IncrementalAlterConfigs APPEND and SUBTRACT on a list and on other
// configs, DELETE of an unset config, malformed operations and
// validate-only; OffsetFetch with and without require_stable while a
// transaction holds offsets of the group's partitions, after it commits
// and after another one aborts.
func configEdgeSteps(run string) []diffStep {
	topic, missing, group, txnID := "ce-"+run, "missing-ce-"+run, "ceg-"+run, "cetx-"+run
	overrides := map[string]string{"retention.ms": "3600000", "max.message.bytes": "5000", "cleanup.policy": "delete"}
	every := func(lo, hi int16) []int16 {
		var vs []int16
		for v := lo; v <= hi; v++ {
			vs = append(vs, v)
		}
		return vs
	}
	resource := func(typ kmsg.ConfigResourceType, name string, keys ...string) kmsg.DescribeConfigsRequestResource {
		r := kmsg.NewDescribeConfigsRequestResource()
		r.ResourceType, r.ResourceName, r.ConfigNames = typ, name, keys
		return r
	}
	describe := func(synonyms, docs bool, res ...kmsg.DescribeConfigsRequestResource) func(*diffSide, int16) kmsg.Request {
		return func(*diffSide, int16) kmsg.Request {
			r := kmsg.NewPtrDescribeConfigsRequest()
			r.IncludeSynonyms, r.IncludeDocumentation = synonyms, docs
			r.Resources = res
			return r
		}
	}
	topicRes := func(keys ...string) kmsg.DescribeConfigsRequestResource {
		return resource(kmsg.ConfigResourceTypeTopic, topic, keys...)
	}
	// normalizeDescribed leaves out of a topic's configs, as the "every
	// topic config" step does, segment.bytes (kbroker reports its commit
	// log's files, README) and min.insync.replicas (Kafka's storage format
	// sets it as a dynamic cluster default); it compares documentation by
	// its presence only (kbroker's is its own, with what kbroker does with
	// the config) and puts the configs in name order (Kafka answers named
	// ones in request order).
	normalizeDescribed := func(resp kmsg.Response) {
		r := resp.(*kmsg.DescribeConfigsResponse)
		for i := range r.Resources {
			res := &r.Resources[i]
			res.Configs = slices.DeleteFunc(res.Configs, func(c kmsg.DescribeConfigsResponseResourceConfig) bool {
				return c.Name == "segment.bytes" || c.Name == "min.insync.replicas"
			})
			for j := range res.Configs {
				if res.Configs[j].Documentation != nil {
					res.Configs[j].Documentation = kmsg.StringPtr("present")
				}
			}
		}
		sortConfigs(resp)
	}
	// normalizeCreated leaves the same two out of CreateTopics' configs.
	normalizeCreated := func(resp kmsg.Response) {
		for i := range resp.(*kmsg.CreateTopicsResponse).Topics {
			t := &resp.(*kmsg.CreateTopicsResponse).Topics[i]
			t.Configs = slices.DeleteFunc(t.Configs, func(c kmsg.CreateTopicsResponseTopicConfig) bool {
				return c.Name == "segment.bytes" || c.Name == "min.insync.replicas"
			})
		}
	}
	// createEach creates (or validates) one topic per config, each with
	// that config set.
	createEach := func(validateOnly bool, configs ...[2]string) func(*diffSide, int16) kmsg.Request {
		names := make([]string, len(configs))
		for i := range configs {
			names[i] = "cex-" + run + "-" + string(rune('a'+i))
		}
		return createTopicsWith(func(r *kmsg.CreateTopicsRequest) {
			r.ValidateOnly = validateOnly
			for i, kv := range configs {
				r.Topics[i].Configs = []kmsg.CreateTopicsRequestTopicConfig{{Name: kv[0], Value: kmsg.StringPtr(kv[1])}}
			}
		}, names...)
	}
	createWith := func(validateOnly bool, configs ...kmsg.CreateTopicsRequestTopicConfig) func(*diffSide, int16) kmsg.Request {
		return createTopicsWith(func(r *kmsg.CreateTopicsRequest) {
			r.ValidateOnly, r.Topics[0].Configs = validateOnly, configs
		}, "cey-"+run)
	}
	alterTopics := func(validateOnly bool, names []string, ops ...kmsg.IncrementalAlterConfigsRequestResourceConfig) func(*diffSide, int16) kmsg.Request {
		return func(*diffSide, int16) kmsg.Request {
			r := kmsg.NewPtrIncrementalAlterConfigsRequest()
			r.ValidateOnly = validateOnly
			for _, n := range names {
				res := kmsg.NewIncrementalAlterConfigsRequestResource()
				res.ResourceType, res.ResourceName, res.Configs = kmsg.ConfigResourceTypeTopic, n, ops
				r.Resources = append(r.Resources, res)
			}
			return r
		}
	}
	alter := func(validateOnly bool, ops ...kmsg.IncrementalAlterConfigsRequestResourceConfig) func(*diffSide, int16) kmsg.Request {
		return alterTopics(validateOnly, []string{topic}, ops...)
	}
	op := func(name string, o kmsg.IncrementalAlterConfigOp, value *string) kmsg.IncrementalAlterConfigsRequestResourceConfig {
		return kmsg.IncrementalAlterConfigsRequestResourceConfig{Name: name, Op: o, Value: value}
	}
	set, del, appendTo, subtract := kmsg.IncrementalAlterConfigOpSet, kmsg.IncrementalAlterConfigOpDelete,
		kmsg.IncrementalAlterConfigOpAppend, kmsg.IncrementalAlterConfigOpSubtract
	str := kmsg.StringPtr
	// policyIs waits until the topic's cleanup.policy reads want on each
	// side: Kafka applies an alter to its metadata asynchronously.
	policyIs := func(want string) diffStep {
		return diffStep{name: "cleanup.policy is " + want, req: describe(true, false, topicRes("cleanup.policy")), versions: newest,
			until: func(resp kmsg.Response) bool {
				for _, c := range resp.(*kmsg.DescribeConfigsResponse).Resources[0].Configs {
					if c.Name == "cleanup.policy" {
						return c.Value != nil && *c.Value == want
					}
				}
				return false
			}}
	}

	steps := []diffStep{
		{name: "create with overrides", req: createTopicsReq(topic, 2, overrides, false), versions: newest, normalize: normalizeCreated},
		awaitTopic(topic, 2),
	}
	for _, syn := range []bool{false, true} {
		for _, doc := range []bool{false, true} {
			name := "describe every config"
			if syn {
				name += ", synonyms"
			}
			if doc {
				name += ", documentation"
			}
			steps = append(steps, diffStep{name: name, req: describe(syn, doc, topicRes()), versions: every, normalize: normalizeDescribed})
		}
	}
	steps = append(steps, []diffStep{
		{name: "describe named keys, one unknown, one twice", req: describe(true, true,
			topicRes("retention.ms", "no.such.config", "cleanup.policy", "segment.ms", "retention.ms", "max.decompressed.message.bytes")),
			versions: every, normalize: normalizeDescribed},
		{name: "describe an empty list of keys", req: describe(false, false, topicRes([]string{}...)), normalize: normalizeDescribed},
		{name: "describe a topic and an unknown topic", req: describe(false, false, topicRes("retention.ms"),
			resource(kmsg.ConfigResourceTypeTopic, missing, "retention.ms"))},
		{name: "describe the same topic twice and an empty name", req: describe(false, false, topicRes("max.message.bytes"),
			topicRes("cleanup.policy"), resource(kmsg.ConfigResourceTypeTopic, "", "retention.ms"))},
		// Settings both brokers have and treat alike; kbroker's broker
		// configs carry no documentation (handle_describe_configs.go).
		{name: "describe the broker, named keys", req: describe(true, true, resource(kmsg.ConfigResourceTypeBroker, "1",
			"message.max.bytes", "log.cleanup.policy", "compression.type", "log.retention.bytes", "no.such.config")),
			versions: every, normalize: sortConfigs, ignore: regexp.MustCompile(`Documentation$`)},

		{name: "create validate-only with configs", req: createTopicsReq("cev-"+run, 1,
			map[string]string{"retention.ms": "1000", "cleanup.policy": "compact", "max.message.bytes": "100"}, true),
			normalize: normalizeCreated},
		{name: "create with invalid values of known configs", req: createEach(false,
			[2]string{"cleanup.policy", "shred"}, [2]string{"min.cleanable.dirty.ratio", "2"},
			[2]string{"message.timestamp.type", "Wrong"}, [2]string{"compression.type", "brotli"},
			[2]string{"max.message.bytes", "-5"}, [2]string{"retention.ms", "-7"},
			[2]string{"segment.bytes", "1000"}, [2]string{"max.message.bytes", "3000000000"},
			[2]string{"retention.ms", "1e3"}, [2]string{"unclean.leader.election.enable", "yes"},
			[2]string{"remote.storage.enable", "true"}, [2]string{"compression.gzip.level", "10"})},
		{name: "create validate-only, other spellings", req: createEach(true,
			[2]string{"retention.ms", " 1000 "}, [2]string{"cleanup.policy", "compact, delete"},
			[2]string{"compression.type", "ZSTD"}, [2]string{"unclean.leader.election.enable", "TRUE"},
			[2]string{"min.cleanable.dirty.ratio", "0.25"}, [2]string{"cleanup.policy", ""},
			[2]string{"message.timestamp.type", "createtime"}, [2]string{"cleanup.policy", "Delete"}),
			normalize: normalizeCreated},
		{name: "create validate-only, compaction configs on a deleting topic", req: createEach(true,
			[2]string{"min.compaction.lag.ms", "1000"}, [2]string{"delete.retention.ms", "1000"},
			[2]string{"max.compaction.lag.ms", "1"}, [2]string{"min.cleanable.dirty.ratio", "0.9"}),
			normalize: normalizeCreated},
		{name: "create, compaction lags in conflict", req: createWith(true,
			kmsg.CreateTopicsRequestTopicConfig{Name: "min.compaction.lag.ms", Value: str("5000")},
			kmsg.CreateTopicsRequestTopicConfig{Name: "max.compaction.lag.ms", Value: str("1000")})},
		{name: "create, a config with a null value", req: createWith(true,
			kmsg.CreateTopicsRequestTopicConfig{Name: "retention.ms", Value: nil})},
		{name: "create, a config twice", req: createWith(true,
			kmsg.CreateTopicsRequestTopicConfig{Name: "retention.ms", Value: str("1000")},
			kmsg.CreateTopicsRequestTopicConfig{Name: "retention.ms", Value: str("2000")}), normalize: normalizeCreated},

		{name: "append compact to cleanup.policy", req: alter(false, op("cleanup.policy", appendTo, str("compact")))},
		policyIs("delete,compact"),
		{name: "subtract delete from cleanup.policy", req: alter(false, op("cleanup.policy", subtract, str("delete")))},
		policyIs("compact"),
		{name: "subtract an entry not there", req: alter(false, op("cleanup.policy", subtract, str("delete")))},
		{name: "append an invalid entry", req: alter(false, op("cleanup.policy", appendTo, str("shred")))},
		{name: "append to a non-list config", req: alter(false, op("retention.ms", appendTo, str("5")))},
		{name: "subtract from a non-list config", req: alter(false, op("max.message.bytes", subtract, str("5000")))},
		{name: "append to an unknown config", req: alter(false, op("no.such.config", appendTo, str("x")))},
		{name: "delete a config not set", req: alter(false, op("segment.ms", del, nil))},
		{name: "delete with a value", req: alter(false, op("segment.jitter.ms", del, str("5")))},
		{name: "a config twice", req: alter(false, op("retention.ms", set, str("1000")), op("retention.ms", del, nil))},
		// Kafka's controller looks the operation up as null and fails.
		{name: "an unknown operation", req: alter(false, op("retention.ms", 7, str("1000"))),
			known: "an unknown IncrementalAlterConfigs operation on a topic is INVALID_REQUEST; Kafka 4.4 answers UNKNOWN_SERVER_ERROR"},
		{name: "set to null", req: alter(false, op("retention.ms", set, nil))},
		{name: "the topic twice", req: alterTopics(true, []string{topic, topic}, op("retention.ms", set, str("1000")))},
		{name: "validate-only, an unknown topic", req: alterTopics(true, []string{missing}, op("retention.ms", set, str("1000")))},
		{name: "validate-only set", req: alter(true, op("cleanup.policy", set, str("delete")))},
		{name: "validate-only append", req: alter(true, op("cleanup.policy", appendTo, str("delete")))},
		{name: "validate-only subtract the last entry", req: alter(true, op("cleanup.policy", subtract, str("compact")))},
		{name: "validate-only append several, one twice", req: alter(true, op("cleanup.policy", appendTo, str("delete,compact,delete")))},
		{name: "validate-only append nothing", req: alter(true, op("cleanup.policy", appendTo, str("")))},
		policyIs("compact"),
		{name: "describe after the alters", req: describe(true, false, topicRes()), versions: newest, normalize: normalizeDescribed},
	}...)
	return append(steps, stableOffsetSteps(topic, group, txnID)...)
}

// stableOffsetSteps are OffsetFetch's stable-offset rule on topic (two
// partitions, created before): a plain commit to partition 0, then a
// transaction commits offsets of both partitions, and OffsetFetch with
// require_stable (v7+) answers UNSTABLE_OFFSET_COMMIT for them (without
// listing partition 1, which has no committed offset, when all of the
// group's offsets are asked) until the transaction ends; without
// require_stable the committed offsets show. Then a second transaction
// aborts and leaves the first one's offsets.
func stableOffsetSteps(topic, group, txnID string) []diffStep {
	// fetch asks for partitions 0 and 1 of the topic (all of the group's
	// offsets if all), with require_stable if stable, and at v8+ for a
	// second group with no offsets.
	fetch := func(stable, all bool) func(*diffSide, int16) kmsg.Request {
		return func(s *diffSide, v int16) kmsg.Request {
			r := kmsg.NewPtrOffsetFetchRequest()
			r.Group, r.RequireStable = group, stable
			g := kmsg.NewOffsetFetchRequestGroup()
			g.Group = group
			if !all {
				r.Topics = []kmsg.OffsetFetchRequestTopic{{Topic: topic, Partitions: []int32{0, 1}}}
				g.Topics = []kmsg.OffsetFetchRequestGroupTopic{{Topic: topic, TopicID: s.topicIDs[topic], Partitions: []int32{0, 1}}}
			}
			other := kmsg.NewOffsetFetchRequestGroup()
			other.Group = group + "-other"
			r.Groups = append(r.Groups, g, other)
			return r
		}
	}
	// commitTxn commits offset to both partitions in the transaction.
	commitTxn := func(offset int64) func(*diffSide, int16) kmsg.Request {
		return func(s *diffSide, v int16) kmsg.Request {
			r := txnOffsetCommitReq(txnID, group, topic, false)(s, v).(*kmsg.TxnOffsetCommitRequest)
			r.Topics[0].Partitions = []kmsg.TxnOffsetCommitRequestTopicPartition{
				{Partition: 0, Offset: offset, LeaderEpoch: -1}, {Partition: 1, Offset: offset, LeaderEpoch: -1},
			}
			return r
		}
	}
	// v7, the first with require_stable and the last of one group per
	// request, and the newest.
	stableForms := func(lo, hi int16) []int16 { return []int16{7, hi} }
	// settled holds once no partition is UNSTABLE_OFFSET_COMMIT: Kafka
	// writes a transaction's markers after EndTxn answers.
	settled := func(resp kmsg.Response) bool {
		r := resp.(*kmsg.OffsetFetchResponse)
		for _, t := range r.Topics {
			for _, p := range t.Partitions {
				if p.ErrorCode == kerr.UnstableOffsetCommit.Code {
					return false
				}
			}
		}
		for _, g := range r.Groups {
			for _, t := range g.Topics {
				for _, p := range t.Partitions {
					if p.ErrorCode == kerr.UnstableOffsetCommit.Code {
						return false
					}
				}
			}
		}
		return true
	}
	noMember := func(*diffSide) (string, int32) { return "", -1 }
	steps := append(awaitGroupReady(group), awaitCoordinator(txnID, 1), awaitTxnLoaded(txnID),
		diffStep{name: "init", req: initProducerIDReq(&txnID), after: rememberProducer, versions: newest,
			until: func(resp kmsg.Response) bool { return resp.(*kmsg.InitProducerIDResponse).ErrorCode == 0 }})
	return append(steps, []diffStep{
		{name: "commit offset 5 outside a transaction", req: offsetCommitReq(group, topic, noMember, nil, 0, 5), versions: newest},
		{name: "add offsets", req: addOffsetsReq(txnID, group, 0), versions: newest},
		{name: "txn offset commit of both partitions", req: commitTxn(1), versions: oldest},
		{name: "fetch, stable required, pending", req: fetch(true, false), versions: stableForms},
		{name: "fetch all, stable required, pending", req: fetch(true, true), versions: stableForms},
		{name: "fetch, stable not required, pending", req: fetch(false, false)},
		{name: "fetch all, stable not required, pending", req: fetch(false, true), versions: newest},
		{name: "commit the transaction", req: endTxnReq(txnID, true, 0), versions: newest,
			after: rememberEndTxnEpoch, until: notConcurrentTxn},
		{name: "fetch, stable required, committed", req: fetch(true, false), versions: stableForms, until: settled},
		{name: "fetch all, stable required, committed", req: fetch(true, true), versions: stableForms, until: settled},
		{name: "fetch, stable not required, committed", req: fetch(false, false)},

		{name: "add offsets again", req: addOffsetsReq(txnID, group, 0), versions: newest, until: func(resp kmsg.Response) bool {
			return resp.(*kmsg.AddOffsetsToTxnResponse).ErrorCode != kerr.ConcurrentTransactions.Code
		}},
		{name: "txn offset commit to abort", req: commitTxn(9), versions: newest},
		{name: "fetch, stable required, pending again", req: fetch(true, false), versions: newest},
		{name: "abort the transaction", req: endTxnReq(txnID, false, 0), versions: newest,
			after: rememberEndTxnEpoch, until: notConcurrentTxn},
		{name: "fetch, stable required, aborted", req: fetch(true, false), versions: stableForms, until: settled},
	}...)
}
