package batch

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// captureBroker is the least of a Kafka broker that lets a real kgo client
// produce: ApiVersions, Metadata, InitProducerID and Produce on one topic
// with one partition. It records the Records field of every produce, so the
// tests see batches exactly as kgo builds them (including the xerial snappy
// framing of kgo's streaming compressor).
type captureBroker struct {
	ln   net.Listener
	host string
	port int32

	mu      sync.Mutex
	batches [][]byte
	wg      sync.WaitGroup
}

const captureTopic = "captured"

func newCaptureBroker(t *testing.T) *captureBroker {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	host, portStr, _ := net.SplitHostPort(ln.Addr().String())
	port, _ := strconv.Atoi(portStr)
	cb := &captureBroker{ln: ln, host: host, port: int32(port)}
	cb.wg.Add(1)
	go cb.accept()
	t.Cleanup(func() {
		ln.Close()
		cb.wg.Wait()
	})
	return cb
}

func (cb *captureBroker) accept() {
	defer cb.wg.Done()
	for {
		conn, err := cb.ln.Accept()
		if err != nil {
			return
		}
		cb.wg.Add(1)
		go func() {
			defer cb.wg.Done()
			defer conn.Close()
			_ = cb.serve(conn)
		}()
	}
}

func (cb *captureBroker) serve(conn net.Conn) error {
	for {
		var size [4]byte
		if _, err := io.ReadFull(conn, size[:]); err != nil {
			return err
		}
		buf := make([]byte, binary.BigEndian.Uint32(size[:]))
		if _, err := io.ReadFull(conn, buf); err != nil {
			return err
		}
		if len(buf) < 10 {
			return errors.New("short request")
		}
		key := int16(binary.BigEndian.Uint16(buf))
		version := int16(binary.BigEndian.Uint16(buf[2:]))
		corr := buf[4:8]
		pos := 10 + max(0, int(int16(binary.BigEndian.Uint16(buf[8:]))))
		req := kmsg.RequestForKey(key)
		if req == nil {
			return errors.New("unknown key")
		}
		req.SetVersion(version)
		if req.IsFlexible() {
			// Request header v2 ends in tagged fields; kgo sends none.
			n, used := binary.Uvarint(buf[pos:])
			if used <= 0 || n != 0 {
				return errors.New("unexpected header tags")
			}
			pos += used
		}
		if err := req.ReadFrom(buf[pos:]); err != nil {
			return err
		}
		resp := cb.handle(req)
		out := append([]byte{0, 0, 0, 0}, corr...)
		if req.IsFlexible() && key != 18 { // ApiVersions responses have no header tags
			out = append(out, 0)
		}
		out = resp.AppendTo(out)
		binary.BigEndian.PutUint32(out, uint32(len(out)-4))
		if _, err := conn.Write(out); err != nil {
			return err
		}
	}
}

func (cb *captureBroker) handle(req kmsg.Request) kmsg.Response {
	switch req := req.(type) {
	case *kmsg.ApiVersionsRequest:
		resp := req.ResponseKind().(*kmsg.ApiVersionsResponse)
		for _, k := range []kmsg.Request{kmsg.NewPtrProduceRequest(), kmsg.NewPtrMetadataRequest(), kmsg.NewPtrApiVersionsRequest(), kmsg.NewPtrInitProducerIDRequest()} {
			maxV := k.MaxVersion()
			if k.Key() == 0 {
				maxV = min(maxV, 12) // v13 names topics by id; keep names
			}
			resp.ApiKeys = append(resp.ApiKeys, kmsg.ApiVersionsResponseApiKey{ApiKey: k.Key(), MaxVersion: maxV})
		}
		return resp
	case *kmsg.MetadataRequest:
		resp := req.ResponseKind().(*kmsg.MetadataResponse)
		resp.Brokers = []kmsg.MetadataResponseBroker{{NodeID: 0, Host: cb.host, Port: cb.port}}
		resp.ControllerID = 0
		topic := kmsg.NewMetadataResponseTopic()
		topic.Topic = kmsg.StringPtr(captureTopic)
		topic.TopicID = [16]byte{1}
		p := kmsg.NewMetadataResponseTopicPartition()
		p.Leader, p.Replicas, p.ISR = 0, []int32{0}, []int32{0}
		topic.Partitions = append(topic.Partitions, p)
		resp.Topics = append(resp.Topics, topic)
		return resp
	case *kmsg.InitProducerIDRequest:
		resp := req.ResponseKind().(*kmsg.InitProducerIDResponse)
		resp.ProducerID, resp.ProducerEpoch = 4242, 0
		return resp
	case *kmsg.ProduceRequest:
		resp := req.ResponseKind().(*kmsg.ProduceResponse)
		for _, rt := range req.Topics {
			st := kmsg.NewProduceResponseTopic()
			st.Topic = rt.Topic
			for _, rp := range rt.Partitions {
				cb.mu.Lock()
				cb.batches = append(cb.batches, bytes.Clone(rp.Records))
				cb.mu.Unlock()
				sp := kmsg.NewProduceResponseTopicPartition()
				sp.Partition = rp.Partition
				st.Partitions = append(st.Partitions, sp)
			}
			resp.Topics = append(resp.Topics, st)
		}
		return resp
	}
	return req.ResponseKind()
}

// produceWithKgo produces records with a real kgo client configured with
// opts and returns the Records fields the broker received.
func produceWithKgo(t *testing.T, records []*kgo.Record, opts ...kgo.Opt) [][]byte {
	t.Helper()
	cb := newCaptureBroker(t)
	opts = append([]kgo.Opt{
		kgo.SeedBrokers(net.JoinHostPort(cb.host, strconv.Itoa(int(cb.port)))),
		kgo.DefaultProduceTopic(captureTopic),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProduceRequestTimeout(5 * time.Second),
		kgo.RecordDeliveryTimeout(10 * time.Second),
	}, opts...)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := cl.ProduceSync(ctx, records...).FirstErr(); err != nil {
		cl.Close()
		t.Fatalf("kgo produce: %v", err)
	}
	cl.Close()
	cb.mu.Lock()
	defer cb.mu.Unlock()
	return cb.batches
}

// kgoRecords makes n compressible records for produceWithKgo.
func kgoRecords(n, valueSize int) []*kgo.Record {
	// kgo measures the delivery timeout from each record's Timestamp, so
	// the timestamps must be recent.
	now := time.Now()
	rs := make([]*kgo.Record, n)
	for i := range rs {
		rs[i] = &kgo.Record{
			Key:       []byte("key-" + strconv.Itoa(i)),
			Value:     bytes.Repeat([]byte("kbroker "), valueSize/8+1)[:valueSize],
			Headers:   []kgo.RecordHeader{{Key: "trace", Value: []byte(strconv.Itoa(i))}},
			Timestamp: now.Add(time.Duration(i) * time.Millisecond),
		}
	}
	return rs
}
