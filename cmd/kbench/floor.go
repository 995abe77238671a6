package main

import (
	"bufio"
	"crypto/rand"
	"errors"
	"fmt"
	"maps"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/partition/batch"
	"github.com/kbroker/kbroker/protocol"
)

// The floor kinds are the least a broker can do for the produce workload,
// served by "kbench serve" like the others, so that what the client,
// loopback TCP and the page cache cost on their own is measured with the
// same method as the brokers (docs/BENCHMARKS.md, "The floor"):
//
//   - floor-null reads every request, decodes it with kmsg and answers
//     Produce with offsets, storing nothing;
//   - floor-write also writes each partition's record batches to a file
//     of its own with write(2): the page cache and nothing else (no
//     validation, no index, no flush).
//
// They answer ApiVersions, Metadata, CreateTopics, InitProducerId and
// Produce, one request at a time per connection, and nothing else: they
// serve only the produce workload.
type floorServer struct {
	ln    net.Listener
	dir   string // floor-write: where partition files go; "" stores nothing
	host  string
	port  int32
	wg    sync.WaitGroup
	mu    sync.Mutex
	conns map[net.Conn]struct{}
	// topics, files and next are guarded by mu.
	topics map[string]floorTopic
	files  map[floorPartition]*os.File
	next   map[floorPartition]int64
	pid    int64
	// mem keeps the batches in memory and serves them (floor-read, the
	// consume floor: floor_read.go); nil for the produce floors.
	mem *memStore
	// versions are the APIs and versions served.
	versions map[int16][2]int16
}

type floorTopic struct {
	id         [16]byte
	partitions int32
}

type floorPartition struct {
	topic     string
	partition int32
}

// floorVersions are the versions the floor serves: what kgo needs, with
// Metadata and Produce kept below the topic-id versions.
var floorVersions = map[int16][2]int16{
	18: {0, kmsg.NewPtrApiVersionsRequest().MaxVersion()},
	3:  {0, 12}, // Metadata
	19: {0, 7},  // CreateTopics
	22: {0, 4},  // InitProducerId
	0:  {3, 11}, // Produce
}

// floorReadVersions are floor-read's: floorVersions, ListOffsets and
// Fetch up to the last version that names topics and is not flexible.
var floorReadVersions = map[int16][2]int16{
	2: {1, 5},  // ListOffsets
	1: {4, 11}, // Fetch
}

// startFloor listens on listen and serves until stop.
func startFloor(listen, dir string) (*floorServer, error) { return startFloorMode(listen, dir, false) }

// startFloorRead starts floor-read, the consume floor.
func startFloorRead(listen string) (*floorServer, error) { return startFloorMode(listen, "", true) }

func startFloorMode(listen, dir string, mem bool) (*floorServer, error) {
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return nil, err
	}
	host, portText, _ := net.SplitHostPort(ln.Addr().String())
	port, _ := strconv.Atoi(portText)
	s := &floorServer{ln: ln, dir: dir, host: host, port: int32(port), conns: map[net.Conn]struct{}{},
		topics: map[string]floorTopic{}, files: map[floorPartition]*os.File{}, next: map[floorPartition]int64{},
		versions: floorVersions}
	if mem {
		s.mem = newMemStore()
		s.versions = maps.Clone(floorVersions)
		maps.Copy(s.versions, floorReadVersions)
	}
	s.wg.Add(1)
	go s.accept()
	return s, nil
}

// addr is the address the floor listens on.
func (s *floorServer) addr() string { return s.ln.Addr().String() }

func (s *floorServer) accept() {
	defer s.wg.Done()
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return
		}
		s.mu.Lock()
		s.conns[c] = struct{}{}
		s.mu.Unlock()
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			s.serve(c)
			s.mu.Lock()
			delete(s.conns, c)
			s.mu.Unlock()
			c.Close()
		}()
	}
}

func (s *floorServer) stop() error {
	s.ln.Close()
	if s.mem != nil {
		s.mem.stop()
	}
	s.mu.Lock()
	for c := range s.conns {
		c.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
	var errs []error
	for _, f := range s.files {
		errs = append(errs, f.Close())
	}
	return errors.Join(errs...)
}

// serve answers one connection's requests in order until it closes.
func (s *floorServer) serve(c net.Conn) {
	r := bufio.NewReaderSize(c, 64<<10)
	var buf, out []byte
	var fc fetchConn
	for {
		n, err := protocol.ReadSize(r, protocol.DefaultMaxRequestBytes)
		if err != nil {
			return
		}
		if buf, err = protocol.ReadBody(r, n, buf); err != nil {
			return
		}
		h, rest, err := protocol.ParseHeader(buf)
		if err != nil {
			return
		}
		v, ok := s.versions[h.Key]
		if !ok || h.Version < v[0] || h.Version > v[1] {
			return // kgo asks only for what ApiVersions offered
		}
		req, err := protocol.ParseBody(h, rest)
		if err != nil {
			return
		}
		if f, ok := req.(*kmsg.FetchRequest); ok {
			if err := s.fetch(c, &fc, h.Version, h.CorrelationID, f); err != nil {
				return
			}
			continue
		}
		resp := s.handle(req)
		if resp == nil {
			continue // acks=0
		}
		resp.SetVersion(h.Version)
		out = protocol.AppendResponse(out[:0], h.CorrelationID, resp)
		if _, err := c.Write(out); err != nil {
			return
		}
	}
}

func (s *floorServer) handle(req kmsg.Request) kmsg.Response {
	switch req := req.(type) {
	case *kmsg.ApiVersionsRequest:
		resp := req.ResponseKind().(*kmsg.ApiVersionsResponse)
		for key, v := range s.versions {
			k := kmsg.NewApiVersionsResponseApiKey()
			k.ApiKey, k.MinVersion, k.MaxVersion = key, v[0], v[1]
			resp.ApiKeys = append(resp.ApiKeys, k)
		}
		return resp
	case *kmsg.MetadataRequest:
		return s.metadata(req)
	case *kmsg.CreateTopicsRequest:
		resp := req.ResponseKind().(*kmsg.CreateTopicsResponse)
		s.mu.Lock()
		defer s.mu.Unlock()
		for _, t := range req.Topics {
			rt := kmsg.NewCreateTopicsResponseTopic()
			rt.Topic, rt.NumPartitions, rt.ReplicationFactor = t.Topic, t.NumPartitions, 1
			if rt.NumPartitions < 1 {
				rt.NumPartitions = 1
			}
			if _, ok := s.topics[t.Topic]; ok {
				rt.ErrorCode = kerr.TopicAlreadyExists.Code
			} else {
				ft := floorTopic{partitions: rt.NumPartitions}
				_, _ = rand.Read(ft.id[:])
				s.topics[t.Topic] = ft
				rt.TopicID = ft.id
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp
	case *kmsg.InitProducerIDRequest:
		resp := req.ResponseKind().(*kmsg.InitProducerIDResponse)
		s.mu.Lock()
		s.pid++
		resp.ProducerID = s.pid
		s.mu.Unlock()
		return resp
	case *kmsg.ProduceRequest:
		return s.produce(req)
	case *kmsg.ListOffsetsRequest:
		return s.listOffsets(req)
	}
	return nil
}

func (s *floorServer) metadata(req *kmsg.MetadataRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.MetadataResponse)
	b := kmsg.NewMetadataResponseBroker()
	b.NodeID, b.Host, b.Port = 0, s.host, s.port
	resp.Brokers = append(resp.Brokers, b)
	resp.ControllerID = 0
	s.mu.Lock()
	defer s.mu.Unlock()
	var names []string
	if req.Topics == nil {
		for name := range s.topics {
			names = append(names, name)
		}
	}
	for _, t := range req.Topics {
		if t.Topic != nil {
			names = append(names, *t.Topic)
		}
	}
	for _, name := range names {
		rt := kmsg.NewMetadataResponseTopic()
		rt.Topic = kmsg.StringPtr(name)
		ft, ok := s.topics[name]
		if !ok {
			rt.ErrorCode = kerr.UnknownTopicOrPartition.Code
			resp.Topics = append(resp.Topics, rt)
			continue
		}
		rt.TopicID = ft.id
		for p := range ft.partitions {
			rp := kmsg.NewMetadataResponseTopicPartition()
			rp.Partition, rp.Leader, rp.Replicas, rp.ISR = p, 0, []int32{0}, []int32{0}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

// produce assigns offsets batch by batch from each batch's last offset
// delta and, for floor-write, appends the batches to the partition's file.
func (s *floorServer) produce(req *kmsg.ProduceRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.ProduceResponse)
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, t := range req.Topics {
		rt := kmsg.NewProduceResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewProduceResponseTopicPartition()
			rp.Partition = p.Partition
			rp.LogAppendTime = -1
			if err := s.store(t.Topic, p.Partition, p.Records, &rp); err != nil {
				rp.ErrorCode = kerr.KafkaStorageError.Code
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	if req.Acks == 0 {
		return nil
	}
	return resp
}

func (s *floorServer) store(topic string, partition int32, records []byte, rp *kmsg.ProduceResponseTopicPartition) error {
	ft, ok := s.topics[topic]
	if !ok || partition < 0 || partition >= ft.partitions {
		rp.ErrorCode = kerr.UnknownTopicOrPartition.Code
		return nil
	}
	tp := floorPartition{topic, partition}
	rp.BaseOffset = s.next[tp]
	for b := records; len(b) > 0; {
		h, err := batch.ParseHeader(b)
		if err != nil || h.Size() < batch.HeaderSize || h.Size() > len(b) {
			rp.ErrorCode = kerr.CorruptMessage.Code
			return nil
		}
		s.next[tp] += int64(h.LastOffsetDelta) + 1
		b = b[h.Size():]
	}
	if s.mem != nil {
		s.mem.append(tp, records, rp.BaseOffset)
	}
	if s.dir == "" {
		return nil
	}
	f := s.files[tp]
	if f == nil {
		var err error
		f, err = os.OpenFile(filepath.Join(s.dir, fmt.Sprintf("%x-%d", ft.id, partition)), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return err
		}
		s.files[tp] = f
	}
	_, err := f.Write(records)
	return err
}
