package main

import (
	"encoding/binary"
	"net"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/partition/batch"
)

// floor-read is the consume floor: the least a broker can do to serve
// the consume and end-to-end workloads. It takes produce requests as
// floor-null does, but keeps each partition's batches in memory, back to
// back in large chunks, their base offsets stamped once on arrival: the
// batches of a fetch response are prebuilt, and answering one is a
// binary search for the first batch and one writev(2) of the response
// framing and the batches' bytes. No file, no index on disk, no
// validation, no page cache, no per-record work: what is left is what
// the kgo consumer, loopback TCP and copying the bytes into the socket
// cost. It serves ListOffsets and Fetch (versions 4–11, topics by name,
// no fetch sessions) besides floor-null's APIs, and no consumer groups:
// the consume cases it runs are the direct ones.

// memChunkMin and memChunkMax bound the chunks a partition's batches are
// copied into: the first is small (a topic of 1,000 partitions holds
// little in each), each next one twice the last up to the largest.
const (
	memChunkMin = 1 << 20
	memChunkMax = 64 << 20
)

// memStore holds the partitions' batches of a floor-read.
type memStore struct {
	mu    sync.Mutex
	parts map[floorPartition]*memLog
	// changed is closed and replaced whenever batches arrive, waking
	// the fetches waiting for them.
	changed chan struct{}
	quit    chan struct{}
	// waiting counts the fetches waiting for batches (for tests).
	waiting atomic.Int32
}

// memLog is one partition's batches. Chunks are never reallocated once
// made, so a fetch may write bytes it found under the lock after letting
// go of it.
type memLog struct {
	chunks [][]byte
	index  []memBatch
	next   int64
}

// memBatch is one batch: its offsets and where its bytes are.
type memBatch struct {
	base, last int64
	chunk      int32
	off, n     int32
}

func newMemStore() *memStore {
	return &memStore{parts: map[floorPartition]*memLog{}, changed: make(chan struct{}), quit: make(chan struct{})}
}

// append copies records (one or more batches, already checked by
// floorServer.store) into tp's log with base offsets from base on.
func (m *memStore) append(tp floorPartition, records []byte, base int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	l := m.parts[tp]
	if l == nil {
		l = &memLog{}
		m.parts[tp] = l
	}
	for b := records; len(b) > 0; {
		h, _ := batch.ParseHeader(b)
		n := h.Size()
		c := len(l.chunks) - 1
		if c < 0 || cap(l.chunks[c])-len(l.chunks[c]) < n {
			size := memChunkMin
			if c >= 0 {
				size = min(2*cap(l.chunks[c]), memChunkMax)
			}
			l.chunks = append(l.chunks, make([]byte, 0, max(size, n)))
			c++
		}
		off := len(l.chunks[c])
		l.chunks[c] = append(l.chunks[c], b[:n]...)
		binary.BigEndian.PutUint64(l.chunks[c][off:], uint64(base))
		last := base + int64(h.LastOffsetDelta)
		l.index = append(l.index, memBatch{base: base, last: last, chunk: int32(c), off: int32(off), n: int32(n)})
		base = last + 1
		l.next = base
		b = b[n:]
	}
	close(m.changed)
	m.changed = make(chan struct{})
}

// stop ends the fetches waiting for batches.
func (m *memStore) stop() { close(m.quit) }

// end is tp's next offset.
func (m *memStore) end(tp floorPartition) int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	if l := m.parts[tp]; l != nil {
		return l.next
	}
	return 0
}

// read appends to dst the byte ranges of tp's whole batches from the one
// holding offset, at most maxBytes of them (but one batch at least if
// atLeastOne: Kafka's rule for the first partition with data), and
// returns them, their size and tp's next offset; ok is false if offset
// is out of range. Batches next to each other in a chunk make one range.
func (m *memStore) read(dst [][]byte, tp floorPartition, offset int64, maxBytes int, atLeastOne bool) ([][]byte, int, int64, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	l := m.parts[tp]
	if l == nil {
		return dst, 0, 0, offset == 0
	}
	if offset < 0 || offset > l.next {
		return dst, 0, l.next, false
	}
	i := sort.Search(len(l.index), func(i int) bool { return l.index[i].last >= offset })
	total, lastChunk, lastEnd := 0, int32(-1), int32(0)
	for ; i < len(l.index); i++ {
		e := l.index[i]
		if total+int(e.n) > maxBytes && (total > 0 || !atLeastOne) {
			break
		}
		if e.chunk == lastChunk && e.off == lastEnd {
			k := len(dst) - 1
			dst[k] = dst[k][:len(dst[k])+int(e.n)]
		} else {
			dst = append(dst, l.chunks[e.chunk][e.off:e.off+e.n])
		}
		lastChunk, lastEnd = e.chunk, e.off+e.n
		total += int(e.n)
	}
	return dst, total, l.next, true
}

// wait returns a channel closed when batches next arrive.
func (m *memStore) wait() <-chan struct{} {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.changed
}

// listOffsets answers ListOffsets: earliest (-2) is 0, latest (-1) and
// anything else the partition's end.
func (s *floorServer) listOffsets(req *kmsg.ListOffsetsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.ListOffsetsResponse)
	for _, t := range req.Topics {
		rt := kmsg.NewListOffsetsResponseTopic()
		rt.Topic = t.Topic
		s.mu.Lock()
		ft, ok := s.topics[t.Topic]
		s.mu.Unlock()
		for _, p := range t.Partitions {
			rp := kmsg.NewListOffsetsResponseTopicPartition()
			rp.Partition, rp.Timestamp, rp.LeaderEpoch = p.Partition, -1, 0
			switch {
			case !ok || p.Partition < 0 || p.Partition >= ft.partitions:
				rp.ErrorCode = kerr.UnknownTopicOrPartition.Code
			case p.Timestamp == -2:
				rp.Offset = 0
			default:
				rp.Offset = s.mem.end(floorPartition{t.Topic, p.Partition})
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

// fetchConn is a connection's reusable fetch state.
type fetchConn struct {
	head   []byte   // the response's framing, all of it
	ranges [][]byte // batch bytes, in order
	parts  []fetchPart
	iov    net.Buffers
}

// fetchPart is where one partition's framing ends in head and which of
// ranges follow it.
type fetchPart struct {
	headEnd          int
	rangeLo, rangeHi int
}

// fetch answers a Fetch request (v4–v11) on c: it waits up to the
// request's MaxWaitMillis while fewer than MinBytes are there, then writes
// the response with one writev.
func (s *floorServer) fetch(c net.Conn, fc *fetchConn, version int16, correlationID int32, req *kmsg.FetchRequest) error {
	var deadline *time.Timer
	for {
		changed := s.mem.wait()
		total := s.buildFetch(fc, version, correlationID, req)
		if total >= int(max(req.MinBytes, 1)) || req.MaxWaitMillis <= 0 {
			break
		}
		if deadline == nil {
			deadline = time.NewTimer(time.Duration(req.MaxWaitMillis) * time.Millisecond)
			defer deadline.Stop()
		}
		s.mem.waiting.Add(1)
		select {
		case <-changed:
			s.mem.waiting.Add(-1)
			continue
		case <-deadline.C:
		case <-s.mem.quit:
			s.mem.waiting.Add(-1)
			return net.ErrClosed
		}
		s.mem.waiting.Add(-1)
		s.buildFetch(fc, version, correlationID, req)
		break
	}
	fc.iov = fc.iov[:0]
	prev := 0
	for _, p := range fc.parts {
		fc.iov = append(fc.iov, fc.head[prev:p.headEnd])
		fc.iov = append(fc.iov, fc.ranges[p.rangeLo:p.rangeHi]...)
		prev = p.headEnd
	}
	if prev < len(fc.head) {
		fc.iov = append(fc.iov, fc.head[prev:])
	}
	iov := fc.iov // WriteTo consumes its receiver
	_, err := iov.WriteTo(c)
	clear(fc.ranges)
	return err
}

// buildFetch lays the response out in fc and returns the record bytes
// it carries.
func (s *floorServer) buildFetch(fc *fetchConn, version int16, correlationID int32, req *kmsg.FetchRequest) int {
	be := binary.BigEndian
	h := append(fc.head[:0], 0, 0, 0, 0) // size, set at the end
	h = be.AppendUint32(h, uint32(correlationID))
	h = be.AppendUint32(h, 0) // throttle
	if version >= 7 {
		h = be.AppendUint16(h, 0) // error code
		h = be.AppendUint32(h, 0) // session id: none
	}
	h = be.AppendUint32(h, uint32(len(req.Topics)))
	clear(fc.ranges)
	fc.ranges, fc.parts = fc.ranges[:0], fc.parts[:0]
	left := int(req.MaxBytes)
	if left <= 0 {
		left = 1 << 30
	}
	records := 0
	for _, t := range req.Topics {
		h = be.AppendUint16(h, uint16(len(t.Topic)))
		h = append(h, t.Topic...)
		h = be.AppendUint32(h, uint32(len(t.Partitions)))
		s.mu.Lock()
		ft, known := s.topics[t.Topic]
		s.mu.Unlock()
		for _, p := range t.Partitions {
			h = be.AppendUint32(h, uint32(p.Partition))
			tp := floorPartition{t.Topic, p.Partition}
			lo := len(fc.ranges)
			var code int16
			var n int
			var end int64
			if !known || p.Partition < 0 || p.Partition >= ft.partitions {
				code = kerr.UnknownTopicOrPartition.Code
			} else {
				var ok bool
				limit := min(int(p.PartitionMaxBytes), left)
				fc.ranges, n, end, ok = s.mem.read(fc.ranges, tp, p.FetchOffset, limit, records == 0)
				if !ok {
					code = kerr.OffsetOutOfRange.Code
				}
			}
			left -= n
			records += n
			h = be.AppendUint16(h, uint16(code))
			h = be.AppendUint64(h, uint64(end)) // high watermark
			h = be.AppendUint64(h, uint64(end)) // last stable offset
			if version >= 5 {
				h = be.AppendUint64(h, 0) // log start offset
			}
			h = be.AppendUint32(h, 0xFFFFFFFF) // aborted transactions: null
			if version >= 11 {
				h = be.AppendUint32(h, 0xFFFFFFFF) // preferred read replica: -1
			}
			h = be.AppendUint32(h, uint32(n))
			fc.parts = append(fc.parts, fetchPart{headEnd: len(h), rangeLo: lo, rangeHi: len(fc.ranges)})
		}
	}
	be.PutUint32(h, uint32(len(h)-4+records))
	fc.head = h
	return records
}
