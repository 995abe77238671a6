package integration

import (
	"cmp"
	"math"
	"regexp"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// txnEdgeSteps are the edge and error paths of transactions and
// idempotent producers: InitProducerId with a transaction timeout out of
// bounds, an empty transactional id, and KIP-360 requests that carry an
// existing producer id and epoch (the bump, its retry, a stale or future
// epoch, another producer id, only one of the two, with a transaction
// open, and after the transaction timeout); AddPartitionsToTxn v0
// and v3 of an unknown topic, a negative partition, the same partition
// twice, an id never initialized; AddOffsetsToTxn of an empty and an
// unknown group; TxnOffsetCommit v3+ against a classic group's member
// (wrong generation, unknown member, unknown instance id), with a stale
// producer epoch and for an unknown topic; EndTxn at a stale epoch at
// every version, of another producer id, and a commit after the
// transaction timeout aborted the transaction; idempotent Produce with a
// duplicate of an older retained batch, one no longer retained, an epoch
// the client bumped (KIP-360) with and without a sequence gap, a batch
// whose sequences wrap past int32 max, and a new producer whose first
// sequence is not 0.
func txnEdgeSteps(run string) []diffStep {
	topic, idemTopic := "te-"+run, "tei-"+run
	id, slow, never, group := "te-"+run, "tes-"+run, "ten-"+run, "teg-"+run
	empty := ""

	// Each side's producers by name (the side keeps only one).
	type producer struct {
		id    int64
		epoch int16
	}
	producers := map[*diffSide]map[string]producer{}
	get := func(s *diffSide, name string) producer { return producers[s][name] }
	// remember keeps a successful InitProducerId's answer as name.
	remember := func(name string) func(*diffSide, kmsg.Response) {
		return func(s *diffSide, resp kmsg.Response) {
			r := resp.(*kmsg.InitProducerIDResponse)
			if r.ErrorCode != 0 {
				return
			}
			if producers[s] == nil {
				producers[s] = map[string]producer{}
			}
			producers[s][name] = producer{r.ProducerID, r.ProducerEpoch}
		}
	}
	initOK := func(resp kmsg.Response) bool { return resp.(*kmsg.InitProducerIDResponse).ErrorCode == 0 }
	// initReq is InitProducerId of txnID (nil: idempotent) with the
	// timeout, naming the producer id and epoch who gives (v3+).
	none := func(*diffSide) (int64, int16) { return -1, -1 }
	initReq := func(txnID *string, timeoutMs int32, who func(*diffSide) (int64, int16)) func(*diffSide, int16) kmsg.Request {
		return func(s *diffSide, v int16) kmsg.Request {
			r := kmsg.NewPtrInitProducerIDRequest()
			r.TransactionalID, r.TransactionTimeoutMillis = txnID, timeoutMs
			r.ProducerID, r.ProducerEpoch = who(s)
			return r
		}
	}
	// named is producer name's id with its epoch moved by delta.
	named := func(name string, delta int16) func(*diffSide) (int64, int16) {
		return func(s *diffSide) (int64, int16) { p := get(s, name); return p.id, p.epoch + delta }
	}
	v3Up := func(lo, hi int16) []int16 { return []int16{max(lo, 3), hi} }

	// addReq is AddPartitionsToTxn v0–v3 of txnID for producer name.
	addReq := func(txnID, name string, topics map[string][]int32) func(*diffSide, int16) kmsg.Request {
		return func(s *diffSide, v int16) kmsg.Request {
			r := kmsg.NewPtrAddPartitionsToTxnRequest()
			p := get(s, name)
			r.TransactionalID, r.ProducerID, r.ProducerEpoch = txnID, p.id, p.epoch
			for _, t := range slices.Sorted(func(yield func(string) bool) {
				for t := range topics {
					if !yield(t) {
						return
					}
				}
			}) {
				r.Topics = append(r.Topics, kmsg.AddPartitionsToTxnRequestTopic{Topic: t, Partitions: topics[t]})
			}
			return r
		}
	}
	// Kafka answers v0–v3 from a map: topics and partitions in its order.
	sortAdd := func(resp kmsg.Response) {
		r := resp.(*kmsg.AddPartitionsToTxnResponse)
		slices.SortFunc(r.Topics, func(a, b kmsg.AddPartitionsToTxnResponseTopic) int { return cmp.Compare(a.Topic, b.Topic) })
		for _, t := range r.Topics {
			slices.SortFunc(t.Partitions, func(a, b kmsg.AddPartitionsToTxnResponseTopicPartition) int {
				return cmp.Compare(a.Partition, b.Partition)
			})
		}
	}
	v0And3 := func(lo, hi int16) []int16 { return []int16{lo, 3} }

	addOffsets := func(g string) func(*diffSide, int16) kmsg.Request {
		return func(s *diffSide, v int16) kmsg.Request {
			r := kmsg.NewPtrAddOffsetsToTxnRequest()
			p := get(s, "tx")
			r.TransactionalID, r.ProducerID, r.ProducerEpoch, r.Group = id, p.id, p.epoch, g
			return r
		}
	}

	// txnCommit is TxnOffsetCommit of offset 1 of t's partition 0 for
	// group in transaction id, as member (with generation and instance)
	// and at the producer's epoch moved by epochDelta.
	type member struct {
		who        func(*diffSide) string
		genDelta   int32
		instance   *string
		noGroupGen bool // generation -1
	}
	ownMember := func(s *diffSide) string { return s.memberID }
	txnCommit := func(t string, m member, epochDelta int16) func(*diffSide, int16) kmsg.Request {
		return func(s *diffSide, v int16) kmsg.Request {
			r := kmsg.NewPtrTxnOffsetCommitRequest()
			p := get(s, "tx")
			r.TransactionalID, r.Group, r.ProducerID, r.ProducerEpoch = id, group, p.id, p.epoch+epochDelta
			r.Generation = -1
			if !m.noGroupGen {
				r.Generation = s.generation + m.genDelta
			}
			if m.who != nil {
				r.MemberID = m.who(s)
			}
			r.InstanceID = m.instance
			rt := kmsg.NewTxnOffsetCommitRequestTopic()
			rt.Topic, rt.TopicID = t, s.topicIDs[t]
			rp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
			rp.Partition, rp.Offset, rp.LeaderEpoch = 0, 1, -1
			rt.Partitions = append(rt.Partitions, rp)
			r.Topics = append(r.Topics, rt)
			return r
		}
	}

	// endReq is EndTxn of txnID by producer name, its id replaced by pid
	// if pid >= 0, at its epoch moved by epochDelta.
	endReq := func(txnID, name string, pid int64, epochDelta int16, commit bool) func(*diffSide, int16) kmsg.Request {
		return func(s *diffSide, v int16) kmsg.Request {
			r := kmsg.NewPtrEndTxnRequest()
			p := get(s, name)
			if pid >= 0 {
				p.id = pid
			}
			r.TransactionalID, r.ProducerID, r.ProducerEpoch, r.Commit = txnID, p.id, p.epoch+epochDelta, commit
			return r
		}
	}
	describe := func(txnID string) func(*diffSide, int16) kmsg.Request {
		return func(s *diffSide, v int16) kmsg.Request {
			r := kmsg.NewPtrDescribeTransactionsRequest()
			r.TransactionalIDs = []string{txnID}
			return r
		}
	}

	// idem is an idempotent batch of producer name at its epoch moved by
	// epochDelta, from sequence seq.
	idem := func(name string, epochDelta int16, seq int32, values ...string) func(*diffSide, int16) kmsg.Request {
		return produceReq(idemTopic, 0, -1, func(s *diffSide) []byte {
			p := get(s, name)
			return diffBatch(p.id, p.epoch+epochDelta, seq, false, values...)
		})
	}
	produced := func(resp kmsg.Response) bool {
		return resp.(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode != kerr.NotLeaderForPartition.Code
	}

	steps := append(createAndAwait(topic, 2), createAndAwait(idemTopic, 1)...)
	steps = append(steps, awaitGroupReady(group)...)
	for _, txnID := range []string{id, slow, never} {
		steps = append(steps, awaitCoordinator(txnID, 1), awaitTxnLoaded(txnID))
	}
	return append(steps, []diffStep{
		// InitProducerId's checks before any state.
		{name: "init with a timeout above transaction.max.timeout.ms", req: initReq(&id, 60001, none)},
		{name: "init with a zero timeout", req: initReq(&id, 0, none)},
		{name: "init with a negative timeout", req: initReq(&id, -1, none)},
		{name: "init of an empty transactional id", req: initReq(&empty, 10000, none)},
		{name: "init idempotent with a timeout above the maximum", req: initReq(nil, 60001, none), versions: newest, until: initOK},
		{name: "init", req: initReq(&id, 10000, none), after: remember("tx"), versions: newest, until: initOK},
		// KIP-360: the producer names its id and epoch.
		{name: "init v3+ with the producer's id and epoch bumps", req: initReq(&id, 10000, named("tx", 0)), after: remember("tx"), versions: v3Up},
		{name: "init v3+ retried with the epoch before the bump", req: initReq(&id, 10000, named("tx", -1)), versions: v3Up},
		{name: "init v3+ with a stale epoch", req: initReq(&id, 10000, named("tx", -2)), versions: v3Up},
		{name: "init v3+ with a future epoch", req: initReq(&id, 10000, named("tx", 5)), versions: v3Up},
		{name: "init v3+ with another producer id", req: initReq(&id, 10000, func(s *diffSide) (int64, int16) {
			return get(s, "tx").id + 424242, get(s, "tx").epoch
		}), versions: v3Up},
		{name: "init v3+ with an epoch but no producer id", req: initReq(&id, 10000, func(s *diffSide) (int64, int16) {
			return -1, get(s, "tx").epoch
		}), versions: v3Up},
		{name: "init v3+ idempotent with an id and epoch", req: initReq(nil, 10000, named("tx", 0)), versions: v3Up},

		// AddPartitionsToTxn v0–v3: all or nothing.
		{name: "add an unknown topic with a known one", req: addReq(id, "tx", map[string][]int32{topic: {0}, "nope-" + run: {0}}),
			versions: v0And3, normalize: sortAdd},
		{name: "add a negative partition", req: addReq(id, "tx", map[string][]int32{topic: {0, -1}}), versions: v0And3, normalize: sortAdd},
		{name: "add partitions of an id never initialized", req: addReq(never, "tx", map[string][]int32{topic: {0}}),
			versions: v0And3, normalize: sortAdd},
		{name: "add the same partition twice", req: addReq(id, "tx", map[string][]int32{topic: {1, 1}}), versions: atVersion(3), normalize: sortAdd},

		// AddOffsetsToTxn: any group name will do.
		{name: "add offsets of an empty group", req: addOffsets("")},
		{name: "add offsets of a group nobody joined", req: addOffsets("teng-" + run)},
		{name: "add offsets", req: addOffsets(group), versions: newest},

		// TxnOffsetCommit v3+ against a classic group's member.
		{name: "join", req: joinReq(group, ""), versions: newest,
			after: func(s *diffSide, resp kmsg.Response) { s.memberID = resp.(*kmsg.JoinGroupResponse).MemberID }},
		{name: "join with the member id", req: func(s *diffSide, v int16) kmsg.Request { return joinReq(group, s.memberID)(s, v) },
			versions: newest, ignore: memberIDs,
			after: func(s *diffSide, resp kmsg.Response) { s.generation = resp.(*kmsg.JoinGroupResponse).Generation }},
		{name: "sync as the leader", req: leaderSyncReq(group, topic), versions: newest},
		{name: "txn offset commit at a wrong generation", req: txnCommit(topic, member{who: ownMember, genDelta: 1}, 0), versions: v3Up},
		{name: "txn offset commit by an unknown member", req: txnCommit(topic, member{who: func(*diffSide) string { return "nobody" }}, 0),
			versions: v3Up},
		{name: "txn offset commit with an unknown instance id", req: txnCommit(topic, member{who: ownMember, instance: kmsg.StringPtr("inst")}, 0),
			versions: v3Up},
		{name: "txn offset commit without a member", req: txnCommit(topic, member{noGroupGen: true}, 0), versions: v3Up},
		{name: "txn offset commit at the member's generation", req: txnCommit(topic, member{who: ownMember}, 0), versions: v3Up},
		{name: "txn offset commit with a stale producer epoch", req: txnCommit(topic, member{noGroupGen: true}, -1)},
		// v6+ names the topic by id (txnV2Steps has an unknown id).
		{name: "txn offset commit of an unknown topic", req: txnCommit("nope-"+run, member{noGroupGen: true}, 0),
			versions: func(lo, hi int16) []int16 { return []int16{lo, 5} }},

		// EndTxn.
		{name: "end txn at a stale epoch", req: endReq(id, "tx", -1, -1, true),
			versions: func(lo, hi int16) []int16 { return []int16{0, 1, 2, 3, 4, hi} }},
		{name: "end txn of another producer id", req: endReq(id, "tx", 424242, 0, true)},
		{name: "abort v4", req: endReq(id, "tx", -1, 0, false), versions: atVersion(4), until: notConcurrentTxn},
		{name: "abort v4 retried", req: endReq(id, "tx", -1, 0, false), versions: atVersion(4), until: notConcurrentTxn},
		{name: "commit v4 after the abort", req: endReq(id, "tx", -1, 0, true), versions: atVersion(4), until: notConcurrentTxn},
		// KIP-360 with a transaction open: the coordinator aborts it
		// with a bumped epoch (CONCURRENT_TRANSACTIONS meanwhile), after
		// which the producer's epoch passes for a retry and gets the
		// bumped one (transaction.version 2 ends the fence so).
		{name: "add partitions again", req: addReq(id, "tx", map[string][]int32{topic: {0}}), versions: atVersion(3)},
		{name: "init v3+ with the producer's epoch, a transaction open", req: initReq(&id, 10000, named("tx", 0)), after: remember("tx"),
			versions: newest, until: func(resp kmsg.Response) bool {
				return resp.(*kmsg.InitProducerIDResponse).ErrorCode != kerr.ConcurrentTransactions.Code
			}},
		{name: "describe after the fence", req: describe(id), versions: newest, ignore: regexp.MustCompile(`StartTimestamp$`)},

		// A transaction the coordinator aborts at its timeout (1 s; both
		// brokers check every 500 ms) fences its producer.
		{name: "init with a 1 s timeout", req: initReq(&slow, 1000, none), after: remember("slow"), versions: newest, until: initOK},
		{name: "add partitions, then wait", req: addReq(slow, "slow", map[string][]int32{topic: {1}}), versions: atVersion(3)},
		{name: "describe the timed-out transaction", req: describe(slow), versions: newest,
			// When each broker's check ran.
			ignore: regexp.MustCompile(`StartTimestamp$`),
			until: func(resp kmsg.Response) bool {
				return resp.(*kmsg.DescribeTransactionsResponse).TransactionStates[0].State == "CompleteAbort"
			}},
		{name: "commit after the timeout", req: endReq(slow, "slow", -1, 0, true),
			versions: func(lo, hi int16) []int16 { return []int16{lo, 4, hi} }},
		{name: "abort after the timeout", req: endReq(slow, "slow", -1, 0, false), versions: atVersion(4)},
		{name: "init v3+ at the epoch before the timeout", req: initReq(&slow, 1000, named("slow", 0)), versions: v3Up},

		// Idempotent Produce.
		{name: "init an idempotent producer", req: initReq(nil, 10000, none), after: remember("idem"), versions: newest, until: initOK},
		{name: "produce seq 0-1", req: idem("idem", 0, 0, "a", "b"), versions: newest, until: produced},
		{name: "produce seq 2", req: idem("idem", 0, 2, "c"), versions: newest},
		{name: "produce seq 3", req: idem("idem", 0, 3, "d"), versions: newest},
		{name: "produce seq 4", req: idem("idem", 0, 4, "e"), versions: newest},
		{name: "produce seq 5", req: idem("idem", 0, 5, "f"), versions: newest},
		{name: "produce seq 6", req: idem("idem", 0, 6, "g"), versions: newest},
		{name: "duplicate of an older retained batch", req: idem("idem", 0, 3, "d")},
		{name: "duplicate of a batch no longer retained", req: idem("idem", 0, 0, "a", "b")},
		{name: "a bumped epoch not from sequence 0", req: idem("idem", 1, 7, "h")},
		{name: "a bumped epoch from sequence 0", req: idem("idem", 1, 0, "h"), versions: newest},
		{name: "a sequence gap in the bumped epoch", req: idem("idem", 1, 2, "i")},
		{name: "the old epoch after the bump", req: idem("idem", 0, 7, "i")},
		{name: "init a producer to wrap", req: initReq(nil, 10000, none), after: remember("wrap"), versions: newest, until: initOK},
		{name: "produce sequences wrapping past int32 max", req: idem("wrap", 0, math.MaxInt32-1, "w1", "w2", "w3"), versions: newest},
		{name: "produce after the wrap", req: idem("wrap", 0, 1, "w4"), versions: newest},
		{name: "produce sequence int32 max after the wrap", req: idem("wrap", 0, math.MaxInt32, "w5")},
		{name: "init a fresh producer", req: initReq(nil, 10000, none), after: remember("fresh"), versions: newest, until: initOK},
		{name: "a new producer's first sequence 5", req: idem("fresh", 0, 5, "n")},
		{name: "a new producer's next sequence", req: idem("fresh", 0, 6, "n2"), versions: newest},
		{name: "fetch what was written", req: fetchReq(idemTopic, 0, 0)},
	}...)
}
