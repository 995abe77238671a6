package protocol

import (
	"bufio"
	"crypto/sha256"
	"errors"
	"io"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// fakeBroker is just enough of a Kafka broker for a kgo client to send its
// usual requests: it answers ApiVersions, Metadata, CreateTopics,
// InitProducerId, Produce, ListOffsets and FindCoordinator with plausible
// content and everything else with the default response of the request's
// kind, framed by AppendResponse. Every frame it receives is kept, which
// is how the FuzzParseRequest seeds are captured and how the tests see
// that kgo reads AppendResponse's frames.
type fakeBroker struct {
	t    testing.TB
	ln   net.Listener
	host string
	port int32
	wg   sync.WaitGroup

	mu struct {
		sync.Mutex
		frames [][]byte
		seen   map[[32]byte]bool
		topics map[string]*fakeTopic
		conns  map[net.Conn]struct{}
		closed bool
	}
}

type fakeTopic struct {
	id         [16]byte
	partitions int32
	next       map[int32]int64 // next offset per partition
}

func newFakeBroker(t testing.TB) *fakeBroker {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	fb := &fakeBroker{t: t, ln: ln}
	fb.mu.seen = map[[32]byte]bool{}
	fb.mu.topics = map[string]*fakeTopic{}
	fb.mu.conns = map[net.Conn]struct{}{}
	host, port, _ := net.SplitHostPort(ln.Addr().String())
	p, _ := strconv.Atoi(port)
	fb.host, fb.port = host, int32(p)
	fb.wg.Add(1)
	go fb.accept()
	t.Cleanup(fb.close)
	return fb
}

func (fb *fakeBroker) addr() string { return fb.ln.Addr().String() }

func (fb *fakeBroker) close() {
	fb.ln.Close()
	fb.mu.Lock()
	fb.mu.closed = true
	for c := range fb.mu.conns {
		c.Close()
	}
	fb.mu.Unlock()
	fb.wg.Wait()
}

// received returns every distinct frame body received, in arrival order.
func (fb *fakeBroker) received() [][]byte {
	fb.mu.Lock()
	defer fb.mu.Unlock()
	return append([][]byte(nil), fb.mu.frames...)
}

func (fb *fakeBroker) accept() {
	defer fb.wg.Done()
	for {
		c, err := fb.ln.Accept()
		if err != nil {
			return
		}
		fb.mu.Lock()
		if fb.mu.closed {
			fb.mu.Unlock()
			c.Close()
			return
		}
		fb.mu.conns[c] = struct{}{}
		fb.wg.Add(1)
		fb.mu.Unlock()
		go func() {
			defer fb.wg.Done()
			defer c.Close()
			if err := fb.serve(c); err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
				fb.t.Logf("fake broker: %v", err)
			}
		}()
	}
}

// serve answers the requests of one connection in order.
func (fb *fakeBroker) serve(c net.Conn) error {
	br := bufio.NewReader(c)
	var buf, out []byte
	for {
		n, err := ReadSize(br, DefaultMaxRequestBytes)
		if err != nil {
			return err
		}
		if buf, err = ReadBody(br, n, buf[:0]); err != nil {
			return err
		}
		fb.record(buf)
		h, rest, err := ParseHeader(buf)
		if err != nil {
			return err
		}
		req, err := ParseBody(h, rest)
		if err != nil {
			return err
		}
		resp := fb.respond(req)
		if resp == nil {
			continue // acks=0
		}
		out = AppendResponse(out[:0], h.CorrelationID, resp)
		if _, err := c.Write(out); err != nil {
			return err
		}
	}
}

func (fb *fakeBroker) record(frame []byte) {
	sum := sha256.Sum256(frame)
	fb.mu.Lock()
	defer fb.mu.Unlock()
	if len(fb.mu.frames) < 10000 && !fb.mu.seen[sum] {
		fb.mu.seen[sum] = true
		fb.mu.frames = append(fb.mu.frames, append([]byte(nil), frame...))
	}
}

// respond builds the answer to req.
func (fb *fakeBroker) respond(req kmsg.Request) kmsg.Response {
	fb.mu.Lock()
	defer fb.mu.Unlock()
	switch r := req.(type) {
	case *kmsg.ApiVersionsRequest:
		resp := r.ResponseKind().(*kmsg.ApiVersionsResponse)
		for key := int16(0); key <= 100; key++ {
			kr := kmsg.RequestForKey(key)
			if kr == nil {
				continue
			}
			k := kmsg.NewApiVersionsResponseApiKey()
			k.ApiKey, k.MaxVersion = key, kr.MaxVersion()
			resp.ApiKeys = append(resp.ApiKeys, k)
		}
		return resp
	case *kmsg.MetadataRequest:
		return fb.metadataLocked(r)
	case *kmsg.CreateTopicsRequest:
		resp := r.ResponseKind().(*kmsg.CreateTopicsResponse)
		for _, rt := range r.Topics {
			n := rt.NumPartitions
			if n <= 0 {
				n = 1
			}
			tp := fb.topicLocked(rt.Topic, n)
			t := kmsg.NewCreateTopicsResponseTopic()
			t.Topic, t.TopicID, t.NumPartitions, t.ReplicationFactor = rt.Topic, tp.id, tp.partitions, 1
			resp.Topics = append(resp.Topics, t)
		}
		return resp
	case *kmsg.InitProducerIDRequest:
		resp := r.ResponseKind().(*kmsg.InitProducerIDResponse)
		resp.ProducerID, resp.ProducerEpoch = 1, 0
		return resp
	case *kmsg.ProduceRequest:
		if r.Acks == 0 {
			return nil
		}
		resp := r.ResponseKind().(*kmsg.ProduceResponse)
		for _, rt := range r.Topics {
			t := kmsg.NewProduceResponseTopic()
			t.Topic, t.TopicID = rt.Topic, rt.TopicID
			tp := fb.topicByLocked(rt.Topic, rt.TopicID)
			for _, rp := range rt.Partitions {
				p := kmsg.NewProduceResponseTopicPartition()
				p.Partition = rp.Partition
				if tp != nil {
					p.BaseOffset = tp.next[rp.Partition]
					tp.next[rp.Partition] += int64(batchRecords(rp.Records))
				}
				t.Partitions = append(t.Partitions, p)
			}
			resp.Topics = append(resp.Topics, t)
		}
		return resp
	case *kmsg.ListOffsetsRequest:
		resp := r.ResponseKind().(*kmsg.ListOffsetsResponse)
		for _, rt := range r.Topics {
			t := kmsg.NewListOffsetsResponseTopic()
			t.Topic = rt.Topic
			tp := fb.mu.topics[rt.Topic]
			for _, rp := range rt.Partitions {
				p := kmsg.NewListOffsetsResponseTopicPartition()
				p.Partition, p.Offset, p.Timestamp = rp.Partition, 0, -1
				if rp.Timestamp == -1 && tp != nil {
					p.Offset = tp.next[rp.Partition]
				}
				t.Partitions = append(t.Partitions, p)
			}
			resp.Topics = append(resp.Topics, t)
		}
		return resp
	case *kmsg.JoinGroupRequest:
		resp := r.ResponseKind().(*kmsg.JoinGroupResponse)
		resp.Generation, resp.MemberID, resp.LeaderID = 1, "member-1", "member-1"
		resp.ProtocolType = kmsg.StringPtr(r.ProtocolType)
		if len(r.Protocols) > 0 {
			resp.Protocol = kmsg.StringPtr(r.Protocols[0].Name)
			m := kmsg.NewJoinGroupResponseMember()
			m.MemberID, m.ProtocolMetadata = "member-1", r.Protocols[0].Metadata
			resp.Members = append(resp.Members, m)
		}
		return resp
	case *kmsg.SyncGroupRequest:
		resp := r.ResponseKind().(*kmsg.SyncGroupResponse)
		resp.ProtocolType, resp.Protocol = r.ProtocolType, r.Protocol
		for _, a := range r.GroupAssignment {
			if a.MemberID == r.MemberID {
				resp.MemberAssignment = a.MemberAssignment
			}
		}
		return resp
	case *kmsg.FetchRequest:
		// An empty answer at once would make the consumer spin: wait a
		// little, as a broker waits up to MaxWaitMillis for data.
		fb.mu.Unlock()
		time.Sleep(min(time.Duration(r.MaxWaitMillis)*time.Millisecond, 50*time.Millisecond))
		fb.mu.Lock()
		return req.ResponseKind()
	case *kmsg.FindCoordinatorRequest:
		resp := r.ResponseKind().(*kmsg.FindCoordinatorResponse)
		resp.NodeID, resp.Host, resp.Port = 0, fb.host, fb.port
		for _, key := range r.CoordinatorKeys {
			c := kmsg.NewFindCoordinatorResponseCoordinator()
			c.Key, c.NodeID, c.Host, c.Port = key, 0, fb.host, fb.port
			resp.Coordinators = append(resp.Coordinators, c)
		}
		return resp
	}
	return req.ResponseKind()
}

func (fb *fakeBroker) metadataLocked(r *kmsg.MetadataRequest) *kmsg.MetadataResponse {
	resp := r.ResponseKind().(*kmsg.MetadataResponse)
	b := kmsg.NewMetadataResponseBroker()
	b.NodeID, b.Host, b.Port = 0, fb.host, fb.port
	resp.Brokers = append(resp.Brokers, b)
	resp.ControllerID = 0
	cluster := "fake-cluster"
	resp.ClusterID = &cluster
	var names []string
	if r.Topics == nil {
		for name := range fb.mu.topics {
			names = append(names, name)
		}
	}
	for _, rt := range r.Topics {
		if rt.Topic != nil {
			names = append(names, *rt.Topic)
		}
	}
	for _, name := range names {
		tp := fb.topicLocked(name, 1) // auto-create
		t := kmsg.NewMetadataResponseTopic()
		t.Topic, t.TopicID = kmsg.StringPtr(name), tp.id
		for i := int32(0); i < tp.partitions; i++ {
			p := kmsg.NewMetadataResponseTopicPartition()
			p.Partition, p.Leader, p.Replicas, p.ISR = i, 0, []int32{0}, []int32{0}
			t.Partitions = append(t.Partitions, p)
		}
		resp.Topics = append(resp.Topics, t)
	}
	return resp
}

// topicLocked returns the topic, creating it with n partitions if needed.
func (fb *fakeBroker) topicLocked(name string, n int32) *fakeTopic {
	if tp := fb.mu.topics[name]; tp != nil {
		return tp
	}
	tp := &fakeTopic{partitions: n, next: map[int32]int64{}}
	copy(tp.id[:], sum16(name)) // deterministic, never zero
	fb.mu.topics[name] = tp
	return tp
}

func sum16(s string) []byte { h := sha256.Sum256([]byte(s)); return h[:16] }

func (fb *fakeBroker) topicByLocked(name string, id [16]byte) *fakeTopic {
	if tp := fb.mu.topics[name]; tp != nil {
		return tp
	}
	for _, tp := range fb.mu.topics {
		if tp.id == id {
			return tp
		}
	}
	return nil
}

// batchRecords is the record count of a v2 record batch (0 if unreadable).
func batchRecords(b []byte) int32 {
	var batch kmsg.RecordBatch
	if err := batch.ReadFrom(b); err != nil {
		return 0
	}
	return batch.NumRecords
}
