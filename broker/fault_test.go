package broker

import (
	"bufio"
	"encoding/binary"
	"errors"
	"io"
	"math/rand"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/fault"
)

// addRule adds a fault rule or fails the test.
func addRule(t *testing.T, srv *InProcess, r fault.Rule) int64 {
	t.Helper()
	id, err := srv.Faults().Add(r)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// ruleStatus is the status of rule id.
func ruleStatus(t *testing.T, srv *InProcess, id int64) fault.Status {
	t.Helper()
	for _, s := range srv.Faults().List() {
		if s.ID == id {
			return s
		}
	}
	t.Fatalf("no rule %d", id)
	return fault.Status{}
}

// A producer retries an injected NOT_LEADER_OR_FOLLOWER and the record is
// written once.
func TestFaultProducerRetriesNotLeader(t *testing.T) {
	t.Parallel()
	srv := newTestServer(t, nil)
	createTopic(t, srv, "orders", 1)
	id := addRule(t, srv, fault.Rule{API: "Produce", Topic: "orders", Times: 1, Error: "NOT_LEADER_OR_FOLLOWER"})
	cl := newClient(t, srv, kgo.DefaultProduceTopic("orders"), kgo.MetadataMinAge(50*time.Millisecond)) // kgo waits that long to re-ask for metadata after NOT_LEADER_OR_FOLLOWER
	if err := cl.ProduceSync(testCtx(t), kgo.StringRecord("once")).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}
	if st := ruleStatus(t, srv, id); st.Hits != 1 || st.Matched != 2 {
		t.Fatalf("rule: hits %d matched %d, want 1 and 2 (the failed try and the retry)", st.Hits, st.Matched)
	}
	offs, err := newAdmin(t, srv).ListEndOffsets(testCtx(t), "orders")
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := offs.Lookup("orders", 0); o.Offset != 1 {
		t.Fatalf("end offset %d, want 1: the failed try wrote nothing", o.Offset)
	}
}

// The 3rd Produce to a topic's partition fails on that partition only;
// its other partition in the same request is written.
func TestFaultThirdProduceFailsOnePartition(t *testing.T) {
	t.Parallel()
	srv := newTestServer(t, nil)
	x := createTopic(t, srv, "x", 2)
	addRule(t, srv, fault.Rule{API: "Produce", Topic: "x", Partition: ptr[int32](0), After: 2, Times: 1, Error: "NOT_LEADER_OR_FOLLOWER"})
	cl := newClient(t, srv)
	for i := range 4 {
		req := kmsg.NewPtrProduceRequest()
		req.Acks, req.TimeoutMillis = -1, 5000
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic, rt.TopicID = "x", [16]byte(x.ID) // v13+ names topics by id
		for p := range int32(2) {
			rp := kmsg.NewProduceRequestTopicPartition()
			rp.Partition, rp.Records = p, plainBatch(1).encode()
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(testCtx(t), cl)
		if err != nil {
			t.Fatal(err)
		}
		for _, sp := range resp.Topics[0].Partitions {
			want := int16(0)
			if i == 2 && sp.Partition == 0 {
				want = kerr.NotLeaderForPartition.Code
			}
			if sp.ErrorCode != want {
				t.Errorf("produce %d partition %d: error %d, want %d", i+1, sp.Partition, sp.ErrorCode, want)
			}
		}
	}
	offs, err := newAdmin(t, srv).ListEndOffsets(testCtx(t), "x")
	if err != nil {
		t.Fatal(err)
	}
	for p, want := range []int64{3, 4} {
		if o, _ := offs.Lookup("x", int32(p)); o.Offset != want {
			t.Errorf("partition %d ends at %d, want %d", p, o.Offset, want)
		}
	}
}

// A consumer goes on after an injected fetch error, and a group API
// answers an injected error without being handled.
func TestFaultFetchAndCoordinatorErrors(t *testing.T) {
	t.Parallel()
	srv := newTestServer(t, nil)
	createTopic(t, srv, "f", 1)
	prod := newClient(t, srv, kgo.DefaultProduceTopic("f"))
	if err := prod.ProduceSync(testCtx(t), kgo.StringRecord("a")).FirstErr(); err != nil {
		t.Fatal(err)
	}
	fetchRule := addRule(t, srv, fault.Rule{API: "Fetch", Topic: "f", Times: 2, Error: "NOT_LEADER_OR_FOLLOWER"})
	cons := newClient(t, srv, kgo.ConsumeTopics("f"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.MetadataMinAge(50*time.Millisecond))
	fs := cons.PollFetches(testCtx(t))
	if err := fs.Err0(); err != nil {
		t.Fatalf("poll: %v", err)
	}
	if n := len(fs.Records()); n != 1 {
		t.Fatalf("got %d records, want 1", n)
	}
	if st := ruleStatus(t, srv, fetchRule); st.Hits != 2 {
		t.Fatalf("fetch rule hits %d, want 2", st.Hits)
	}

	addRule(t, srv, fault.Rule{API: "FindCoordinator", Group: "g", Times: 1, Error: "COORDINATOR_NOT_AVAILABLE"})
	req := kmsg.NewPtrFindCoordinatorRequest()
	req.CoordinatorKey = "g"
	req.CoordinatorKeys = []string{"g"}
	for i, want := range []int16{kerr.CoordinatorNotAvailable.Code, 0} {
		resp, err := req.RequestWith(testCtx(t), newClient(t, srv))
		if err != nil {
			t.Fatal(err)
		}
		if got := resp.Coordinators[0].ErrorCode; got != want {
			t.Fatalf("find coordinator %d: error %d, want %d", i+1, got, want)
		}
	}
}

// rawConn dials srv and returns the connection with a reader.
func faultConn(t *testing.T, srv *InProcess) (*net.TCPConn, *bufio.Reader) {
	t.Helper()
	nc, err := net.DialTimeout("tcp", srv.Addr(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	nc.SetDeadline(time.Now().Add(20 * time.Second))
	return nc.(*net.TCPConn), bufio.NewReader(nc)
}

// readCorrelation reads one response frame and returns its correlation id.
func readCorrelation(t *testing.T, br *bufio.Reader) (int32, error) {
	t.Helper()
	var hdr [8]byte
	if _, err := io.ReadFull(br, hdr[:]); err != nil {
		return 0, err
	}
	size := binary.BigEndian.Uint32(hdr[:4])
	if _, err := io.CopyN(io.Discard, br, int64(size)-4); err != nil {
		return 0, err
	}
	return int32(binary.BigEndian.Uint32(hdr[4:])), nil
}

func TestFaultCloseBeforeAndAfter(t *testing.T) {
	t.Parallel()
	srv := newTestServer(t, nil)
	apiVersions := kmsg.NewPtrApiVersionsRequest()
	for _, tc := range []struct {
		close string
		want  []int32 // correlation ids answered before the close
	}{
		{fault.CloseBefore, []int32{1}},
		{fault.CloseAfter, []int32{1, 2}},
	} {
		t.Run(tc.close, func(t *testing.T) {
			id := addRule(t, srv, fault.Rule{API: "ApiVersions", After: 1, Times: 1, Close: tc.close})
			defer srv.Faults().Remove(id)
			nc, br := faultConn(t, srv)
			for corr := int32(1); corr <= 3; corr++ {
				if _, err := nc.Write(requestFrame(apiVersions, 3, corr)); err != nil {
					break // the broker may already have closed
				}
			}
			var got []int32
			for {
				corr, err := readCorrelation(t, br)
				if err != nil {
					if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) && !isReset(err) {
						t.Fatalf("read: %v", err)
					}
					break
				}
				got = append(got, corr)
			}
			if len(got) != len(tc.want) || got[len(got)-1] != tc.want[len(tc.want)-1] {
				t.Fatalf("answered %v, want %v then a close", got, tc.want)
			}
		})
	}
}

// A swallowed request leaves the connection unanswered: nothing after it
// is answered either, until the client closes its side.
func TestFaultSwallow(t *testing.T) {
	t.Parallel()
	srv := newTestServer(t, nil)
	id := addRule(t, srv, fault.Rule{API: "ApiVersions", After: 1, Times: 1, Swallow: true})
	nc, br := faultConn(t, srv)
	apiVersions := kmsg.NewPtrApiVersionsRequest()
	for corr := int32(1); corr <= 3; corr++ {
		if _, err := nc.Write(requestFrame(apiVersions, 3, corr)); err != nil {
			t.Fatal(err)
		}
	}
	if corr, err := readCorrelation(t, br); err != nil || corr != 1 {
		t.Fatalf("first answer: %d, %v", corr, err)
	}
	nc.CloseWrite() // the client gives up
	if corr, err := readCorrelation(t, br); !errors.Is(err, io.EOF) {
		t.Fatalf("after the swallowed request: answer %d, %v; want EOF", corr, err)
	}
	if st := ruleStatus(t, srv, id); st.Hits != 1 {
		t.Fatalf("hits %d, want 1", st.Hits)
	}
	// Other connections are served.
	if _, err := newAdmin(t, srv).ListTopics(testCtx(t)); err != nil {
		t.Fatal(err)
	}
}

// Delay and throttle slow the answer down by at least what they say.
func TestFaultDelayAndThrottle(t *testing.T) {
	t.Parallel()
	srv := newTestServer(t, nil)
	createTopic(t, srv, "slow", 1)
	prod := newClient(t, srv, kgo.DefaultProduceTopic("slow"))
	value := make([]byte, 64<<10)
	rand.Read(value) // incompressible: the client compresses
	if err := prod.ProduceSync(testCtx(t), &kgo.Record{Value: value}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	addRule(t, srv, fault.Rule{API: "Metadata", Times: 1, DelayMs: 300})
	start := time.Now()
	if _, err := newAdmin(t, srv).ListTopics(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took < 300*time.Millisecond {
		t.Fatalf("delayed metadata took %v, want at least 300ms", took)
	}
	// 64 KiB at 128 KiB/s: at least 0.4 s for the slices after the first.
	addRule(t, srv, fault.Rule{API: "Fetch", Topic: "slow", ThrottleBytesPerSec: 128 << 10})
	cons := newClient(t, srv, kgo.ConsumeTopics("slow"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	start = time.Now()
	fs := cons.PollFetches(testCtx(t))
	if err := fs.Err0(); err != nil {
		t.Fatal(err)
	}
	if len(fs.Records()) != 1 || len(fs.Records()[0].Value) != len(value) {
		t.Fatalf("got %d records, want the one of %d bytes", len(fs.Records()), len(value))
	}
	if took := time.Since(start); took < 400*time.Millisecond {
		t.Fatalf("throttled fetch took %v, want at least 400ms", took)
	}
}

// A rule naming a partition fails that partition in Metadata.
func TestFaultMetadataPartition(t *testing.T) {
	t.Parallel()
	srv := newTestServer(t, nil)
	createTopic(t, srv, "m", 2)
	addRule(t, srv, fault.Rule{API: "Metadata", Topic: "m", Partition: ptr[int32](1), Times: 1, Error: "LEADER_NOT_AVAILABLE"})
	req := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr("m")
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(testCtx(t), newClient(t, srv))
	if err != nil {
		t.Fatal(err)
	}
	mt := resp.Topics[0]
	if mt.ErrorCode != 0 {
		t.Fatalf("topic error %d, want 0", mt.ErrorCode)
	}
	for _, p := range mt.Partitions {
		want := int16(0)
		if p.Partition == 1 {
			want = kerr.LeaderNotAvailable.Code
		}
		if p.ErrorCode != want {
			t.Errorf("partition %d: error %d, want %d", p.Partition, p.ErrorCode, want)
		}
	}
}

func ptr[T any](v T) *T { return &v }

// A rule on a topic matches incremental fetches (KIP-227), which do not
// repeat the session's partitions whose offsets did not move.
func TestFaultMatchesIncrementalFetch(t *testing.T) {
	t.Parallel()
	srv := newTestServer(t, nil)
	inc := createTopic(t, srv, "inc", 1)
	cl := newClient(t, srv)
	fetch := func(sessionID, epoch int32, withTopic bool) *kmsg.FetchResponse {
		t.Helper()
		req := kmsg.NewPtrFetchRequest()
		req.ReplicaID, req.MaxBytes, req.SessionID, req.SessionEpoch = -1, 1<<20, sessionID, epoch
		if withTopic {
			rt := kmsg.NewFetchRequestTopic()
			rt.Topic, rt.TopicID = "inc", [16]byte(inc.ID)
			rp := kmsg.NewFetchRequestTopicPartition()
			rp.PartitionMaxBytes, rp.CurrentLeaderEpoch = 1<<20, -1
			rt.Partitions = append(rt.Partitions, rp)
			req.Topics = append(req.Topics, rt)
		}
		resp, err := req.RequestWith(testCtx(t), cl)
		if err != nil {
			t.Fatal(err)
		}
		if resp.ErrorCode != 0 {
			t.Fatalf("fetch: error %d", resp.ErrorCode)
		}
		return resp
	}
	full := fetch(0, 0, true)
	if full.SessionID == 0 {
		t.Fatal("no fetch session made")
	}
	addRule(t, srv, fault.Rule{API: "Fetch", Topic: "inc", Times: 1, Error: "NOT_LEADER_OR_FOLLOWER"})
	resp := fetch(full.SessionID, 1, false) // names no topic: nothing changed
	if len(resp.Topics) != 1 || resp.Topics[0].Partitions[0].ErrorCode != kerr.NotLeaderForPartition.Code {
		t.Fatalf("incremental fetch answered %+v, want NOT_LEADER_OR_FOLLOWER for inc-0", resp.Topics)
	}
	if st := srv.Faults().List(); st[0].Hits != 1 {
		t.Fatalf("rule hits %d, want 1", st[0].Hits)
	}
}
