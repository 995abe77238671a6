package broker

// WriteTxnMarkers v1–v2 (KIP-98; v1 flexible, KIP-482; v2 the marker's
// TransactionVersion, KIP-890 part 2). v0 is not served, as Kafka 4.4 does
// not (its oldest version is 1).
//
// In Kafka the transaction coordinator sends this to partition leaders to
// end a transaction; clients send it too: the Java Admin's
// abortTransaction and kafka-transactions.sh abort (KIP-664) write an ABORT
// marker into a partition whose transaction hangs (open on the partition,
// unknown to the coordinator), with the producer id, epoch and coordinator
// epoch that DescribeProducers reported. This broker's coordinator writes
// its markers in-process, so here the key serves those admin calls.
//
// As Kafka's KafkaApis.handleWriteTxnMarkersRequest: each marker is written
// to each of its partitions and the response waits until every marker is
// durable (acks=all). Per partition: a missing topic or partition is
// UNKNOWN_TOPIC_OR_PARTITION; a producer epoch below the partition's
// current one for that producer is INVALID_PRODUCER_EPOCH; a coordinator
// epoch below the one of the producer's last marker is
// TRANSACTION_COORDINATOR_FENCED (ProducerAppendInfo.appendEndTxnMarker). A
// producer without state or without an open transaction still gets its
// marker, which ends nothing, as in Kafka. A __consumer_offsets partition
// gets its marker through the offsets store, which also makes the
// transaction's offsets visible or drops them (Kafka's
// GroupCoordinator.completeTransaction); the coordinator-not-ready errors
// of that path become NOT_LEADER_OR_FOLLOWER as in Kafka. The response has
// one entry per producer id, the results of markers of the same producer
// merged, as Kafka's WriteTxnMarkersResponse builds it.
//
// v2 markers carry the transaction version of their transaction
// (TransactionVersion; v1 markers are version 0). A marker of version 2
// (transactions v2) ends a transaction whose epoch EndTxn bumped: its epoch
// must be above the producer's epoch at the partition, so a marker with
// the same epoch as an open transaction is INVALID_PRODUCER_EPOCH, unless
// no transaction is open there (a retry of a marker already written) or
// the epoch is 32767 (ProducerAppendInfo.checkProducerEpoch). The
// coordinator's own markers carry version 2 for transactions v2 too.
//
// With ACLs on, the request needs ALTER or CLUSTER_ACTION on the cluster
// (the partitions of every marker get CLUSTER_AUTHORIZATION_FAILED
// otherwise), as in Kafka, where the Admin's abortTransaction needs ALTER
// and the coordinators' own requests CLUSTER_ACTION.
//
// Deviation: a marker for __transaction_state is refused with
// INVALID_TOPIC_EXCEPTION: that log belongs to the transaction
// coordinator, which never writes transactional data there, so a marker
// could end nothing and would only go around the coordinator's own log
// writer.

import (
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"github.com/kbroker/kbroker/partition"
	"github.com/kbroker/kbroker/topic"
)

// markerTarget is one partition of one marker of a WriteTxnMarkers request
// and the error code it ends with.
type markerTarget struct {
	marker int // index in the request's markers
	topic  string
	index  int32
	code   int16
}

func (b *Broker) handleWriteTxnMarkers(c *conn, req *kmsg.WriteTxnMarkersRequest) (result, error) {
	resp := req.ResponseKind().(*kmsg.WriteTxnMarkersResponse)
	var targets []markerTarget
	for i := range req.Markers {
		for _, rt := range req.Markers[i].Topics {
			for _, idx := range rt.Partitions {
				targets = append(targets, markerTarget{marker: i, topic: rt.Topic, index: idx})
			}
		}
	}
	if len(targets) == 0 {
		fillMarkerResponse(resp, req, targets)
		return respond(resp)
	}
	if !b.allowedCluster(c, opAlter) && !b.allowedCluster(c, opClusterAction) {
		for i := range targets {
			targets[i].code = kerr.ClusterAuthorizationFailed.Code
		}
		fillMarkerResponse(resp, req, targets)
		return respond(resp)
	}
	ready := make(chan struct{})
	var mu sync.Mutex
	left := len(targets)
	finish := func(i int, err error) {
		code := errorCode(err)
		if code == kerr.UnknownServerError.Code {
			b.lg.Error("write txn marker", zap.String("topic", targets[i].topic), zap.Int32("partition", targets[i].index), zap.Error(err))
		}
		mu.Lock()
		targets[i].code = code
		left--
		last := left == 0
		mu.Unlock()
		if last {
			fillMarkerResponse(resp, req, targets)
			close(ready)
		}
	}
	for i := range targets {
		m := &req.Markers[targets[i].marker]
		b.writeOneMarker(m, targets[i].topic, targets[i].index, func(err error) { finish(i, err) })
	}
	return result{resp: resp, ready: ready}, nil
}

// writeOneMarker writes marker m to one partition and calls done once it
// is durable or has failed.
func (b *Broker) writeOneMarker(m *kmsg.WriteTxnMarkersRequestMarker, name string, index int32, done func(error)) {
	t, ok := b.topics.Get(name)
	if !ok {
		done(kerr.UnknownTopicOrPartition)
		return
	}
	p := b.store.Partition(partition.TopicID(t.ID), index)
	switch {
	case p == nil:
		done(kerr.UnknownTopicOrPartition)
	case name == topic.TransactionTopic:
		done(kerr.InvalidTopicException)
	case name == topic.GroupMetadataTopic:
		store, err := b.committedOffsets()
		if err != nil {
			done(kerr.NotLeaderForPartition)
			return
		}
		store.CompleteTxnTV([]int32{index}, m.ProducerID, m.ProducerEpoch, m.CoordinatorEpoch, m.Committed, m.TransactionVersion, func(err error) {
			if errors.Is(err, kerr.CoordinatorNotAvailable) || errors.Is(err, kerr.CoordinatorLoadInProgress) || errors.Is(err, kerr.NotCoordinator) {
				err = kerr.NotLeaderForPartition
			}
			done(err)
		})
	default:
		res, err := p.AppendMarkerTV(m.ProducerID, m.ProducerEpoch, m.Committed, m.CoordinatorEpoch, m.TransactionVersion, time.Now().UnixMilli())
		if err != nil {
			done(err)
			return
		}
		b.store.SubmitDurable(res.End, done)
	}
}

// fillMarkerResponse builds the response from the targets' codes: one
// entry per producer id in request order, topics and partitions in the
// order the markers named them. A marker without partitions gets no entry,
// as in Kafka, which skips it.
func fillMarkerResponse(resp *kmsg.WriteTxnMarkersResponse, req *kmsg.WriteTxnMarkersRequest, targets []markerTarget) {
	byProducer := make(map[int64]int)
	for _, tg := range targets {
		pid := req.Markers[tg.marker].ProducerID
		mi, ok := byProducer[pid]
		if !ok {
			mi = len(resp.Markers)
			byProducer[pid] = mi
			rm := kmsg.NewWriteTxnMarkersResponseMarker()
			rm.ProducerID = pid
			resp.Markers = append(resp.Markers, rm)
		}
		rm := &resp.Markers[mi]
		ti := slices.IndexFunc(rm.Topics, func(rt kmsg.WriteTxnMarkersResponseMarkerTopic) bool { return rt.Topic == tg.topic })
		if ti < 0 {
			rt := kmsg.NewWriteTxnMarkersResponseMarkerTopic()
			rt.Topic = tg.topic
			rm.Topics = append(rm.Topics, rt)
			ti = len(rm.Topics) - 1
		}
		rp := kmsg.NewWriteTxnMarkersResponseMarkerTopicPartition()
		rp.Partition, rp.ErrorCode = tg.index, tg.code
		rm.Topics[ti].Partitions = append(rm.Topics[ti].Partitions, rp)
	}
}
