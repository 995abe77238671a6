package broker

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/coordlog"
	"github.com/kbroker/kbroker/internal/testenv"
	"github.com/kbroker/kbroker/topic"
)

// hangTxn opens a transaction of a fresh transactional id on tx-0 with
// one record, as a hanging transaction starts, and returns its producer.
func hangTxn(t *testing.T, w *wireConn, id string) *txnWire {
	t.Helper()
	x := &txnWire{t: t, w: w, id: id}
	testenv.WantCode(t, "init", x.init(), nil)
	for _, c := range x.addPartition(3, "tx", 0) {
		testenv.WantCode(t, "add partitions", c, nil)
	}
	pr := produceReq(9, -1, "tx", 0, txnBatch(x.pid, x.epoch, 0))
	pr.TransactionID = &x.id
	if p := producePart(t, w.do(pr)); p.ErrorCode != 0 {
		t.Fatalf("produce in the transaction: %v", kerr.ErrorForCode(p.ErrorCode))
	}
	return x
}

// TestWriteTxnMarkersAbortHanging aborts an open transaction the way the
// Java Admin's abortTransaction does: DescribeProducers for the producer,
// then WriteTxnMarkers with its epoch and coordinator epoch.
func TestWriteTxnMarkersAbortHanging(t *testing.T) {
	srv := newTestServer(t, nil)
	createTopic(t, srv, "tx", 2)
	w := dialWire(t, srv)
	x := hangTxn(t, w, "hang")
	p := srv.Store().Partitions(partitionTopicID(t, srv, "tx"))[0]
	if p.LastStableOffset() != 0 {
		t.Fatalf("LSO %d with the transaction open, want 0", p.LastStableOffset())
	}

	adm := newAdmin(t, srv)
	ctx := testCtx(t)
	described, err := adm.DescribeProducers(ctx, kadm.TopicsSet{"tx": {0: {}}})
	if err != nil {
		t.Fatal(err)
	}
	found, ok := described["tx"].Partitions[0].ActiveProducers[x.pid]
	if !ok || found.CurrentTxnStartOffset != 0 {
		t.Fatalf("DescribeProducers: %+v, want producer %d with a transaction at 0", described, x.pid)
	}
	resps, err := adm.WriteTxnMarkers(ctx, kadm.TxnMarkers{
		ProducerID: found.ProducerID, ProducerEpoch: found.ProducerEpoch,
		CoordinatorEpoch: max(found.CoordinatorEpoch, 0), Topics: kadm.TopicsSet{"tx": {0: {}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if pr := resps[x.pid].Topics["tx"].Partitions[0]; pr.Err != nil {
		t.Fatalf("abort marker: %v", pr.Err)
	}
	if p.LastStableOffset() != p.HighWatermark() || p.HighWatermark() != 2 {
		t.Fatalf("after the abort: LSO %d, HW %d, want both 2 (record and marker)", p.LastStableOffset(), p.HighWatermark())
	}
	if aborted := p.AbortedTransactions(0, p.HighWatermark(), nil); len(aborted) != 1 || aborted[0].ProducerID != x.pid {
		t.Fatalf("aborted transactions %+v, want producer %d's", aborted, x.pid)
	}
	// The coordinator still ends its transaction: its own marker finds
	// nothing open and ends nothing, as in Kafka.
	testenv.WantCode(t, "EndTxn abort after the admin's abort", x.end(3, false), nil)
}

// TestWriteTxnMarkersHigherEpochKeepsCoordinator: an admin's marker with a
// coordinator epoch above the coordinator's own (0) must not fence the
// coordinator's later markers for that producer: its next transaction
// completes, with the admin's epoch.
func TestWriteTxnMarkersHigherEpochKeepsCoordinator(t *testing.T) {
	srv := newTestServer(t, nil)
	createTopic(t, srv, "tx", 2)
	w := dialWire(t, srv)
	x := hangTxn(t, w, "admin-epoch")
	got := writeMarkers(t, w, 1, marker(x.pid, x.epoch, 7, false, "tx", 0))
	testenv.WantCode(t, "admin abort with coordinator epoch 7", got[x.pid]["tx"][0], nil)
	testenv.WantCode(t, "EndTxn abort of the hung transaction", x.end(3, false), nil)
	p := srv.Store().Partitions(partitionTopicID(t, srv, "tx"))[0]
	testenv.Eventually(t, 10*time.Second, "the coordinator's abort", func() bool { return x.describeTxn().State == "CompleteAbort" })

	// The next transaction: the coordinator's commit marker is written.
	for _, c := range x.addPartition(3, "tx", 0) {
		testenv.WantCode(t, "add partitions", c, nil)
	}
	testenv.WantCode(t, "produce", x.produceTxn(9, "tx", 0, x.epoch, 1), nil)
	testenv.WantCode(t, "EndTxn commit", x.end(3, true), nil)
	testenv.Eventually(t, 10*time.Second, "the coordinator's commit marker", func() bool {
		return x.describeTxn().State == "CompleteCommit" && p.LastStableOffset() == p.HighWatermark()
	})
	for _, v := range p.Producers() {
		if v.ProducerID == x.pid && v.CoordinatorEpoch != 7 {
			t.Fatalf("coordinator epoch after the commit: %d, want 7 (the admin's, kept)", v.CoordinatorEpoch)
		}
	}
	// A marker from an older coordinator epoch is still fenced.
	got = writeMarkers(t, w, 1, marker(x.pid, x.epoch, 3, false, "tx", 0))
	testenv.WantCode(t, "admin marker with an older coordinator epoch", got[x.pid]["tx"][0], kerr.TransactionCoordinatorFenced)
}

// writeMarkers sends one WriteTxnMarkers request and returns the codes by
// producer, topic and partition.
func writeMarkers(t *testing.T, w *wireConn, version int16, markers ...kmsg.WriteTxnMarkersRequestMarker) map[int64]map[string]map[int32]int16 {
	t.Helper()
	req := kmsg.NewPtrWriteTxnMarkersRequest()
	req.Version, req.Markers = version, markers
	resp := w.do(req).(*kmsg.WriteTxnMarkersResponse)
	got := make(map[int64]map[string]map[int32]int16)
	for _, m := range resp.Markers {
		if got[m.ProducerID] != nil {
			t.Fatalf("producer %d answered twice: %+v", m.ProducerID, resp.Markers)
		}
		got[m.ProducerID] = make(map[string]map[int32]int16)
		for _, rt := range m.Topics {
			got[m.ProducerID][rt.Topic] = make(map[int32]int16)
			for _, rp := range rt.Partitions {
				got[m.ProducerID][rt.Topic][rp.Partition] = rp.ErrorCode
			}
		}
	}
	return got
}

func marker(pid int64, epoch int16, coordEpoch int32, commit bool, name string, parts ...int32) kmsg.WriteTxnMarkersRequestMarker {
	m := kmsg.NewWriteTxnMarkersRequestMarker()
	m.ProducerID, m.ProducerEpoch, m.CoordinatorEpoch, m.Committed = pid, epoch, coordEpoch, commit
	m.Topics = []kmsg.WriteTxnMarkersRequestMarkerTopic{{Topic: name, Partitions: parts}}
	return m
}

// TestWriteTxnMarkersErrors checks Kafka's per-partition answers.
func TestWriteTxnMarkersErrors(t *testing.T) {
	srv := newTestServer(t, nil)
	createTopic(t, srv, "tx", 2)
	w := dialWire(t, srv)
	x := hangTxn(t, w, "e")

	for _, v := range []int16{1, 2} {
		if got := writeMarkers(t, w, v); len(got) != 0 {
			t.Fatalf("v%d: no markers answered %v", v, got)
		}
	}
	got := writeMarkers(t, w, 1,
		marker(x.pid, x.epoch, 0, false, "nope", 0),
		marker(x.pid, x.epoch, 0, false, "tx", 7),
		marker(x.pid, x.epoch-1, 0, false, "tx", 0),
		marker(x.pid, x.epoch, 0, false, topic.TransactionTopic, 0),
		kmsg.WriteTxnMarkersRequestMarker{ProducerID: 99}, // no partitions
	)
	if len(got) != 1 {
		t.Fatalf("answers for %d producers, want 1 (the markers of one producer merged, the empty one skipped): %v", len(got), got)
	}
	for _, c := range []struct {
		topic string
		part  int32
		want  *kerr.Error
	}{
		{"nope", 0, kerr.UnknownTopicOrPartition},
		{"tx", 7, kerr.UnknownTopicOrPartition},
		{"tx", 0, kerr.InvalidProducerEpoch},
		{topic.TransactionTopic, 0, kerr.InvalidTopicException},
	} {
		testenv.WantCode(t, c.topic, got[x.pid][c.topic][c.part], c.want)
	}

	// A newer coordinator epoch fences markers of older ones.
	got = writeMarkers(t, w, 2, marker(x.pid, x.epoch, 5, false, "tx", 0, 1))
	testenv.WantCode(t, "abort at coordinator epoch 5 (tx-0)", got[x.pid]["tx"][0], nil)
	testenv.WantCode(t, "abort at coordinator epoch 5 (tx-1)", got[x.pid]["tx"][1], nil)
	got = writeMarkers(t, w, 1, marker(x.pid, x.epoch, 4, true, "tx", 0))
	testenv.WantCode(t, "commit at coordinator epoch 4", got[x.pid]["tx"][0], kerr.TransactionCoordinatorFenced)
	// A producer the partition does not know gets its marker.
	got = writeMarkers(t, w, 1, marker(12345, 3, 0, true, "tx", 1))
	testenv.WantCode(t, "marker of an unknown producer", got[12345]["tx"][1], nil)
}

// TestWriteTxnMarkersOffsets completes a transaction's offset commit by
// writing its marker into the group's __consumer_offsets partition
// directly: the offsets become visible, as the group coordinator's
// completeTransaction makes them.
func TestWriteTxnMarkersOffsets(t *testing.T) {
	srv := newTestServer(t, nil)
	createTopic(t, srv, "tx", 1)
	w := dialWire(t, srv)
	x := &txnWire{t: t, w: w, id: "o"}
	testenv.WantCode(t, "init", x.init(), nil)
	add := kmsg.NewPtrAddOffsetsToTxnRequest()
	add.Version, add.TransactionalID, add.ProducerID, add.ProducerEpoch, add.Group = 3, x.id, x.pid, x.epoch, "g"
	testenv.WantCode(t, "AddOffsetsToTxn", w.do(add).(*kmsg.AddOffsetsToTxnResponse).ErrorCode, nil)
	commit := kmsg.NewPtrTxnOffsetCommitRequest()
	commit.Version, commit.TransactionalID, commit.Group = 3, x.id, "g"
	commit.ProducerID, commit.ProducerEpoch, commit.Generation = x.pid, x.epoch, -1
	commit.Topics = []kmsg.TxnOffsetCommitRequestTopic{{Topic: "tx", Partitions: []kmsg.TxnOffsetCommitRequestTopicPartition{{Partition: 0, Offset: 42, LeaderEpoch: -1}}}}
	testenv.WantCode(t, "TxnOffsetCommit", w.do(commit).(*kmsg.TxnOffsetCommitResponse).Topics[0].Partitions[0].ErrorCode, nil)

	offsetsTopic, ok := srv.Topics().Get(topic.GroupMetadataTopic)
	if !ok {
		t.Fatal("no __consumer_offsets after a transactional commit")
	}
	part := int32(coordlog.PartitionFor("g", int(offsetsTopic.Partitions)))
	got := writeMarkers(t, w, 1, marker(x.pid, x.epoch, 0, true, topic.GroupMetadataTopic, part))
	testenv.WantCode(t, "commit marker to __consumer_offsets", got[x.pid][topic.GroupMetadataTopic][part], nil)

	fetch := kmsg.NewPtrOffsetFetchRequest()
	fetch.Version, fetch.Group, fetch.RequireStable = 7, "g", true
	fetch.Topics = []kmsg.OffsetFetchRequestTopic{{Topic: "tx", Partitions: []int32{0}}}
	if rp := w.do(fetch).(*kmsg.OffsetFetchResponse).Topics[0].Partitions[0]; rp.ErrorCode != 0 || rp.Offset != 42 {
		t.Fatalf("offset after the marker: %+v, want 42", rp)
	}
}

// TestWriteTxnMarkersV2: a v2 marker of transaction version 2 must carry
// an epoch above its transaction's (the epoch EndTxn v5 bumped); the same
// epoch is refused while the transaction is open and passes as a retry
// once it ended. Version 0 markers keep v1's rule.
func TestWriteTxnMarkersV2(t *testing.T) {
	srv := newTestServer(t, nil)
	createTopic(t, srv, "tx", 2)
	w := dialWire(t, srv)
	x := hangTxn(t, w, "v2")
	p := srv.Store().Partitions(partitionTopicID(t, srv, "tx"))[0]
	tv := func(m kmsg.WriteTxnMarkersRequestMarker, v int8) kmsg.WriteTxnMarkersRequestMarker {
		m.TransactionVersion = v
		return m
	}
	got := writeMarkers(t, w, 2, tv(marker(x.pid, x.epoch, 0, false, "tx", 0), 2))
	testenv.WantCode(t, "TV2 marker at the transaction's epoch", got[x.pid]["tx"][0], kerr.InvalidProducerEpoch)
	if p.LastStableOffset() == p.HighWatermark() {
		t.Fatal("the refused marker ended the transaction")
	}
	got = writeMarkers(t, w, 2, tv(marker(x.pid, x.epoch+1, 0, false, "tx", 0), 2))
	testenv.WantCode(t, "TV2 marker at the bumped epoch", got[x.pid]["tx"][0], nil)
	testenv.Eventually(t, 10*time.Second, "the abort marker", func() bool { return p.LastStableOffset() == p.HighWatermark() })
	got = writeMarkers(t, w, 2, tv(marker(x.pid, x.epoch+1, 0, false, "tx", 0), 2))
	testenv.WantCode(t, "TV2 marker retried", got[x.pid]["tx"][0], nil)
	got = writeMarkers(t, w, 2, tv(marker(x.pid, x.epoch, 0, false, "tx", 0), 0))
	testenv.WantCode(t, "TV0 marker below the current epoch", got[x.pid]["tx"][0], kerr.InvalidProducerEpoch)
}

// TestWriteTxnMarkersNeedsClusterAccess: with ACLs on, WriteTxnMarkers
// needs ALTER or CLUSTER_ACTION on the cluster; without, every partition
// of every marker gets CLUSTER_AUTHORIZATION_FAILED.
func TestWriteTxnMarkersNeedsClusterAccess(t *testing.T) {
	t.Parallel()
	srv := aclServer(t, "")
	ctx := testCtx(t)
	req := kmsg.NewPtrWriteTxnMarkersRequest()
	req.Markers = []kmsg.WriteTxnMarkersRequestMarker{marker(5, 0, 0, false, "nope", 0, 1), marker(6, 0, 0, true, "nope", 2)}
	for _, c := range []struct {
		user string
		want *kerr.Error
	}{{"alice", kerr.ClusterAuthorizationFailed}, {"admin", kerr.UnknownTopicOrPartition}} {
		cl := userClient(t, srv, c.user)
		if err := cl.Ping(ctx); err != nil {
			t.Fatalf("%s: ping: %v", c.user, err)
		}
		kresp, err := cl.Broker(0).Request(ctx, req)
		if err != nil {
			t.Fatalf("%s: %v", c.user, err)
		}
		n := 0
		for _, m := range kresp.(*kmsg.WriteTxnMarkersResponse).Markers {
			for _, rt := range m.Topics {
				for _, rp := range rt.Partitions {
					n++
					testenv.WantCode(t, c.user, rp.ErrorCode, c.want)
				}
			}
		}
		if n != 3 {
			t.Fatalf("%s: %d partitions answered, want 3", c.user, n)
		}
	}
}
