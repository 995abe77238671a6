package broker

// ListOffsets v1–v11. v0 (the old offsets-array form) is not served: Kafka 4
// removed it (KIP-896), and every client in CLIENT-VERSIONS.md sends v1+.
//
// Per version: v1 one offset and its timestamp (KIP-79); v2 IsolationLevel
// (KIP-98); v4 CurrentLeaderEpoch and LeaderEpoch (KIP-320); v5
// OFFSET_NOT_AVAILABLE (KIP-207, never needed on one node); v6 flexible;
// v7 MAX_TIMESTAMP -3 (KIP-734); v8 EARLIEST_LOCAL -4 (KIP-405); v9
// LATEST_TIERED -5 (KIP-1005); v10 TimeoutMillis (KIP-1075, for remote
// lookups; unused); v11 EARLIEST_PENDING_UPLOAD -6 (KIP-1023).
//
// Each partition is answered by partition.Partition.OffsetForTime: -1 the
// high watermark, -2 the log start offset, -3 the record with the largest
// timestamp, a timestamp ≥ 0 the first record at or after it, all among
// visible records (below the high watermark). READ_COMMITTED (v2+) uses
// OffsetForTimeCommitted instead: -1 is the last stable offset and only
// records below it count (Kafka's Partition.fetchOffsetForTimestamp with
// lastFetchableOffset). Without tiered storage, as in Kafka's
// UnifiedLog.fetchOffsetByTimestamp, -4 is the log start offset and -5 and
// -6 answer offset -1 with timestamp -1 and leader epoch -1. A special
// timestamp the request's version does not know, or any other negative one,
// is UNSUPPORTED_VERSION (ReplicaManager's
// isListOffsetsTimestampUnsupported); a partition named twice, or an
// isolation level other than 0 and 1, is INVALID_REQUEST (Kafka's
// duplicatePartitions), answered once: as Kafka, the answer names each
// partition once and each topic once (mergeListOffsets). The leader epoch is always 0: LeaderEpoch is 0
// whenever an offset is found, and a CurrentLeaderEpoch above 0 is
// UNKNOWN_LEADER_EPOCH, below -1 FENCED_LEADER_EPOCH
// (Partition.checkCurrentLeaderEpoch). ReplicaID is not checked (one node,
// no followers).

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"github.com/kbroker/kbroker/partition"
)

// earliestPendingUploadTimestamp is ListOffsetsRequest.EARLIEST_PENDING_UPLOAD_TIMESTAMP
// (KIP-1023, v11+).
const earliestPendingUploadTimestamp = -6

func (b *Broker) handleListOffsets(c *conn, req *kmsg.ListOffsetsRequest) (result, error) {
	resp := req.ResponseKind().(*kmsg.ListOffsetsResponse)
	n := 0
	for i := range req.Topics {
		n += len(req.Topics[i].Partitions)
	}
	parts := make([]kmsg.ListOffsetsResponseTopicPartition, n)
	resp.Topics = make([]kmsg.ListOffsetsResponseTopic, len(req.Topics))
	dups := listOffsetsDuplicates(req)
	badIsolation := req.Version >= 2 && req.IsolationLevel != 0 && req.IsolationLevel != 1
	committed := req.Version >= 2 && req.IsolationLevel == 1
	k := 0
	for i := range req.Topics {
		rt, st := &req.Topics[i], &resp.Topics[i]
		st.Topic = rt.Topic
		st.Partitions = parts[k : k+len(rt.Partitions) : k+len(rt.Partitions)]
		k += len(rt.Partitions)
		t, known := b.topics.Get(rt.Topic)
		denied := !b.allowed(c, opDescribe, resTopic, rt.Topic)
		for j := range rt.Partitions {
			rp, sp := &rt.Partitions[j], &st.Partitions[j]
			sp.Default()
			sp.Partition = rp.Partition
			code, injected := c.injected(rt.Topic, rp.Partition)
			switch {
			case injected:
				sp.ErrorCode = code
			case denied:
				sp.ErrorCode = kerr.TopicAuthorizationFailed.Code
			case badIsolation:
				sp.ErrorCode = kerr.InvalidRequest.Code
			case dups != nil && dups[listOffsetsKey{rt.Topic, rp.Partition}]:
				sp.ErrorCode = kerr.InvalidRequest.Code
			case listOffsetsTimestampUnsupported(rp.Timestamp, req.Version):
				sp.ErrorCode = kerr.UnsupportedVersion.Code
			case !known:
				sp.ErrorCode = kerr.UnknownTopicOrPartition.Code
			case b.nodes != nil:
				b.listOffsetNode(c, sp, t.ID, rp, req.Version, committed)
			default:
				b.listOffset(sp, b.store.Partition(partition.TopicID(t.ID), rp.Partition), rp, req.Version, committed)
			}
		}
	}
	if dups != nil || listOffsetsTopicsRepeat(req) {
		resp.Topics = mergeListOffsets(resp.Topics)
	}
	return respond(resp)
}

// mergeListOffsets answers each topic once and each of its partitions
// once, as Kafka does: it collects the answers in a map by partition and
// groups them by topic (ReplicaManager.fetchOffset). A partition named
// twice is INVALID_REQUEST at each naming, so its answers are the same and
// mergeRepeated's keeping the last changes nothing. Malformed requests
// only: it allocates.
func mergeListOffsets(topics []kmsg.ListOffsetsResponseTopic) []kmsg.ListOffsetsResponseTopic {
	return mergeRepeated(topics,
		func(t *kmsg.ListOffsetsResponseTopic) string { return t.Topic },
		func(t *kmsg.ListOffsetsResponseTopic) *[]kmsg.ListOffsetsResponseTopicPartition { return &t.Partitions },
		func(p *kmsg.ListOffsetsResponseTopicPartition) int32 { return p.Partition })
}

// listOffsetsTopicsRepeat reports whether a ListOffsets request names a
// topic twice (allocating nothing for up to 32 topics).
func listOffsetsTopicsRepeat(req *kmsg.ListOffsetsRequest) bool {
	if len(req.Topics) <= 32 {
		for i := range req.Topics {
			for j := range i {
				if req.Topics[i].Topic == req.Topics[j].Topic {
					return true
				}
			}
		}
		return false
	}
	seen := make(map[string]bool, len(req.Topics))
	for i := range req.Topics {
		if seen[req.Topics[i].Topic] {
			return true
		}
		seen[req.Topics[i].Topic] = true
	}
	return false
}

// listOffset answers one partition; p may be nil (no such partition).
// committed is isolation level READ_COMMITTED.
func (b *Broker) listOffset(sp *kmsg.ListOffsetsResponseTopicPartition, p *partition.Partition, rp *kmsg.ListOffsetsRequestTopicPartition, version int16, committed bool) {
	if p == nil {
		sp.ErrorCode = kerr.UnknownTopicOrPartition.Code
		return
	}
	if version >= 4 {
		if code := currentLeaderEpochCode(rp.CurrentLeaderEpoch, 0); code != 0 {
			sp.ErrorCode = code
			return
		}
	}
	if rp.Timestamp == earliestPendingUploadTimestamp {
		return // no tiered storage: offset, timestamp and epoch -1
	}
	var offset, ts int64
	var err error
	if committed {
		offset, ts, err = p.OffsetForTimeCommitted(rp.Timestamp)
	} else {
		offset, ts, err = p.OffsetForTime(rp.Timestamp)
	}
	if err != nil {
		sp.ErrorCode = errorCode(err)
		if sp.ErrorCode == kerr.UnknownServerError.Code {
			b.lg.Error("list offsets", zap.String("topic", p.Topic()), zap.Int32("partition", p.Index()), zap.Error(err))
		}
		return
	}
	sp.Offset, sp.Timestamp = offset, ts
	if offset >= 0 {
		sp.LeaderEpoch = 0
	}
}

// listOffsetsTimestampUnsupported is Kafka's
// ReplicaManager.isListOffsetsTimestampUnsupported: a negative timestamp
// must be a special one that the request's version knows.
func listOffsetsTimestampUnsupported(ts int64, version int16) bool {
	if ts >= 0 {
		return false
	}
	var minVersion int16
	switch ts {
	case partition.LatestTimestamp, partition.EarliestTimestamp:
		minVersion = 1
	case partition.MaxTimestamp:
		minVersion = 7
	case partition.EarliestLocalTimestamp:
		minVersion = 8
	case partition.LatestTieredTimestamp:
		minVersion = 9
	case earliestPendingUploadTimestamp:
		minVersion = 11
	default:
		return true
	}
	return version < minVersion
}

// currentLeaderEpochCode is Kafka's Partition.checkCurrentLeaderEpoch
// against the partition's leader epoch (0 but in a simulated cluster):
// -1 skips the check, an older epoch is fenced, a newer one is unknown.
func currentLeaderEpochCode(current, epoch int32) int16 {
	switch {
	case current == -1 || current == epoch:
		return 0
	case current < epoch:
		return kerr.FencedLeaderEpoch.Code
	default:
		return kerr.UnknownLeaderEpoch.Code
	}
}

// listOffsetsKey names a partition in duplicate checks.
type listOffsetsKey struct {
	topic     string
	partition int32
}

// listOffsetsDuplicates returns the partitions a ListOffsets request names
// more than once, or nil when there are none (the common case allocates
// nothing for up to 32 partitions).
func listOffsetsDuplicates(req *kmsg.ListOffsetsRequest) map[listOffsetsKey]bool {
	n := 0
	for i := range req.Topics {
		n += len(req.Topics[i].Partitions)
	}
	if n <= 32 {
		found := false
		for i := range req.Topics {
			for j := range req.Topics[i].Partitions {
				if listOffsetsCount(req, req.Topics[i].Topic, req.Topics[i].Partitions[j].Partition) > 1 {
					found = true
				}
			}
		}
		if !found {
			return nil
		}
	}
	seen := make(map[listOffsetsKey]int, n)
	for i := range req.Topics {
		for j := range req.Topics[i].Partitions {
			seen[listOffsetsKey{req.Topics[i].Topic, req.Topics[i].Partitions[j].Partition}]++
		}
	}
	var dups map[listOffsetsKey]bool
	for tp, count := range seen {
		if count > 1 {
			if dups == nil {
				dups = map[listOffsetsKey]bool{}
			}
			dups[tp] = true
		}
	}
	return dups
}

// listOffsetsCount counts how often a request names one partition.
func listOffsetsCount(req *kmsg.ListOffsetsRequest, name string, p int32) int {
	count := 0
	for i := range req.Topics {
		if req.Topics[i].Topic != name {
			continue
		}
		for j := range req.Topics[i].Partitions {
			if req.Topics[i].Partitions[j].Partition == p {
				count++
			}
		}
	}
	return count
}
