package broker

import (
	"bytes"
	"crypto/tls"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/internal/testpki"
	"github.com/kbroker/kbroker/partition"
	"github.com/kbroker/kbroker/protocol"
)

// benchBatch encodes one uncompressed batch of n records of size bytes.
func benchBatch(n, size int) []byte {
	rb := kmsg.RecordBatch{Magic: 2, ProducerID: -1, ProducerEpoch: -1, FirstSequence: -1, LastOffsetDelta: int32(n - 1), NumRecords: int32(n)}
	for i := 0; i < n; i++ {
		r := kmsg.Record{OffsetDelta: int32(i), Value: bytes.Repeat([]byte{'x'}, size)}
		body := r.AppendTo(nil)
		r.Length = int32(len(body) - 1)
		rb.Records = r.AppendTo(rb.Records)
	}
	b := rb.AppendTo(nil)
	binary.BigEndian.PutUint32(b[8:], uint32(len(b)-12))
	binary.BigEndian.PutUint32(b[17:], crcCastagnoli(b[21:]))
	return b
}

// BenchmarkFetch measures the broker serving fetches over loopback: a raw
// client asks for up to 1 MiB from a partition of 1-record or 16-record
// batches and drains each response. threshold is the copy threshold:
// 0 sends every batch with sendfile, 1 MiB copies every batch out of the
// mapping (the read+write path).
func BenchmarkFetch(b *testing.B) {
	for _, rec := range []struct{ size, perBatch int }{{100, 1}, {1024, 1}, {100, 16}, {1024, 16}} {
		for _, threshold := range []int{0, 4 << 10, 16 << 10, 64 << 10, 1 << 20} {
			name := fmt.Sprintf("record=%dB/perBatch=%d/threshold=%d", rec.size, rec.perBatch, threshold)
			b.Run(name, func(b *testing.B) {
				srv := newTestServer(b, func(c *Config) { c.FetchCopyThreshold = threshold })
				tp, err := srv.Topics().Create("bench", 1, nil, false)
				if err != nil {
					b.Fatal(err)
				}
				p := srv.Store().Partition(partition.TopicID(tp.ID), 0)
				tmpl := benchBatch(rec.perBatch, rec.size)
				for total := 0; total < 8<<20; total += len(tmpl) {
					if _, err := p.Append(bytes.Clone(tmpl), 9, 0); err != nil {
						b.Fatal(err)
					}
				}
				end := p.HighWatermark()
				nc, err := net.Dial("tcp", srv.Addr())
				if err != nil {
					b.Fatal(err)
				}
				defer nc.Close()
				benchFetchRange(b, nc, 0, end)
			})
		}
	}
}

func crcCastagnoli(b []byte) uint32 { return crc32.Checksum(b, crc32.MakeTable(crc32.Castagnoli)) }

// BenchmarkFetchIsolation compares read_uncommitted and read_committed
// fetches (v12, up to 1 MiB, over loopback) of the same partition: 8 MiB of
// 16-record batches of 1 KiB records written by three transactional
// producers in turn, each transaction of four batches ending in a marker,
// one in three aborted. read_committed adds the aborted-transaction list.
func BenchmarkFetchIsolation(b *testing.B) {
	for _, isolation := range []int8{0, 1} {
		b.Run(fmt.Sprintf("isolation=%d", isolation), func(b *testing.B) {
			srv := newTestServer(b, nil)
			tp, err := srv.Topics().Create("bench", 1, nil, false)
			if err != nil {
				b.Fatal(err)
			}
			p := srv.Store().Partition(partition.TopicID(tp.ID), 0)
			var seqs [3]int32
			for i, total := 0, 0; total < 8<<20; i++ {
				pid := int64(i / 4 % 3)
				bb := benchBatch(16, 1024)
				bb[21+1] |= 0x10 // transactional
				binary.BigEndian.PutUint64(bb[43:], uint64(pid))
				binary.BigEndian.PutUint16(bb[51:], 0)
				binary.BigEndian.PutUint32(bb[53:], uint32(seqs[pid]))
				binary.BigEndian.PutUint32(bb[17:], crcCastagnoli(bb[21:]))
				seqs[pid] += 16
				if _, err := p.Append(bb, 9, 0); err != nil {
					b.Fatal(err)
				}
				total += len(bb)
				if i%4 == 3 {
					if _, err := p.AppendMarker(pid, 0, pid != 0, 0, 0); err != nil {
						b.Fatal(err)
					}
				}
			}
			end := p.LastStableOffset()
			nc, err := net.Dial("tcp", srv.Addr())
			if err != nil {
				b.Fatal(err)
			}
			defer nc.Close()
			benchFetchRange(b, nc, isolation, end)
		})
	}
}

// BenchmarkParkedFetches parks 500 fetches (max_wait 30 s, each on its own
// connection, on an idle partition) and reports the process's CPU time
// per second while they wait: parked fetches block on channels, so it
// should be near zero. Run with -benchtime 1x.
func BenchmarkParkedFetches(b *testing.B) {
	const parked = 500
	srv := newTestServer(b, nil)
	if _, err := srv.Topics().Create("idle", 1, nil, false); err != nil {
		b.Fatal(err)
	}
	req := kmsg.NewPtrFetchRequest()
	req.Version, req.ReplicaID, req.MaxBytes, req.MinBytes, req.MaxWaitMillis, req.SessionEpoch = 12, -1, 1<<20, 1, 30000, -1
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = "idle"
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.PartitionMaxBytes, rp.CurrentLeaderEpoch = 1<<20, -1
	rt.Partitions = []kmsg.FetchRequestTopicPartition{rp}
	req.Topics = []kmsg.FetchRequestTopic{rt}
	frame := requestFrame(req, 12, 1)
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for i := 0; i < parked; i++ {
		nc, err := net.Dial("tcp", srv.Addr())
		if err != nil {
			b.Fatal(err)
		}
		conns = append(conns, nc)
		if _, err := nc.Write(frame); err != nil {
			b.Fatal(err)
		}
	}
	time.Sleep(500 * time.Millisecond) // let them all park
	var before, after syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &before)
	start := time.Now()
	for b.Loop() {
		time.Sleep(2 * time.Second)
	}
	syscall.Getrusage(syscall.RUSAGE_SELF, &after)
	cpu := time.Duration(after.Utime.Nano()+after.Stime.Nano()-before.Utime.Nano()-before.Stime.Nano()) * time.Nanosecond
	b.ReportMetric(float64(cpu.Microseconds())/1000/time.Since(start).Seconds(), "cpu-ms/s")
	b.ReportMetric(parked, "parked")
}

// BenchmarkFetchTLS compares fetches of 16-record batches of 1 KiB records
// (up to 1 MiB per response, over loopback) on a PLAINTEXT listener
// (sendfile, default copy threshold) and on an SSL listener (every range
// copied out of the mapping, then encrypted by crypto/tls; the client
// decrypts, as a real one would).
func BenchmarkFetchTLS(b *testing.B) {
	p := testpki.New(b)
	for _, listener := range []string{"PLAINTEXT", "SSL"} {
		b.Run("listener="+listener, func(b *testing.B) {
			srv, _ := tlsServer(b, p, "none", nil)
			tp, err := srv.Topics().Create("bench", 1, nil, false)
			if err != nil {
				b.Fatal(err)
			}
			part := srv.Store().Partition(partition.TopicID(tp.ID), 0)
			tmpl := benchBatch(16, 1024)
			for total := 0; total < 8<<20; total += len(tmpl) {
				if _, err := part.Append(bytes.Clone(tmpl), 9, 0); err != nil {
					b.Fatal(err)
				}
			}
			end := part.HighWatermark()
			nc, err := net.Dial("tcp", srv.ListenerAddr(listener))
			if err != nil {
				b.Fatal(err)
			}
			defer nc.Close()
			if listener == "SSL" {
				tc := tls.Client(nc, &tls.Config{RootCAs: p.Pool, ServerName: "127.0.0.1"})
				if err := tc.Handshake(); err != nil {
					b.Fatal(err)
				}
				nc = tc
			}
			benchFetchRange(b, nc, 0, end)
		})
	}
}

// BenchmarkFetchSession measures one incremental fetch (KIP-227, v12, no
// wait) of a session over 1,000 partitions, of which changed got one
// record each since the previous fetch; the client names those with
// their new offsets, as consumers do. The appends are not timed. A
// session's cost should follow changed, not the session's size;
// readAll=true reads every partition of the session, as fetches did
// before sessions skipped the idle ones, for comparison.
func BenchmarkFetchSession(b *testing.B) {
	const parts = 1000
	for _, readAll := range []bool{false, true} {
		for _, changed := range []int{0, 1, 10, 100, 1000} {
			benchFetchSession(b, parts, changed, readAll)
		}
	}
}

func benchFetchSession(b *testing.B, parts, changed int, readAll bool) {
	b.Run(fmt.Sprintf("partitions=%d/changed=%d/readAll=%v", parts, changed, readAll), func(b *testing.B) {
		srv := newTestServer(b, nil)
		tp, err := srv.Topics().Create("bench", int32(parts), nil, false)
		if err != nil {
			b.Fatal(err)
		}
		nc, err := net.Dial("tcp", srv.Addr())
		if err != nil {
			b.Fatal(err)
		}
		defer nc.Close()
		roundTrip := func(req *kmsg.FetchRequest, corr int32) []byte {
			if _, err := nc.Write(requestFrame(req, 12, corr)); err != nil {
				b.Fatal(err)
			}
			n, err := protocol.ReadSize(nc, 1<<30)
			if err != nil {
				b.Fatal(err)
			}
			buf := make([]byte, n)
			if _, err := io.ReadFull(nc, buf); err != nil {
				b.Fatal(err)
			}
			return buf
		}
		// One record in every partition first, so that the timed fetches
		// do not share the machine with the creation of queue files.
		ps := srv.Store().Partitions(partition.TopicID(tp.ID))
		batch := benchBatch(1, 100)
		offsets := make([]int64, parts)
		for i, p := range ps {
			if _, err := p.Append(bytes.Clone(batch), 9, 0); err != nil {
				b.Fatal(err)
			}
			offsets[i] = 1
		}
		newReq := func(id, epoch int32, named []int32) *kmsg.FetchRequest {
			req := kmsg.NewPtrFetchRequest()
			req.Version, req.ReplicaID, req.MaxBytes, req.SessionID, req.SessionEpoch = 12, -1, 64<<20, id, epoch
			rt := kmsg.NewFetchRequestTopic()
			rt.Topic = "bench"
			for _, p := range named {
				rp := kmsg.NewFetchRequestTopicPartition()
				rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes, rp.CurrentLeaderEpoch = p, offsets[p], 1<<20, -1
				rt.Partitions = append(rt.Partitions, rp)
			}
			if len(rt.Partitions) > 0 {
				req.Topics = []kmsg.FetchRequestTopic{rt}
			}
			return req
		}
		all := make([]int32, parts)
		for i := range all {
			all[i] = int32(i)
		}
		body := roundTrip(newReq(0, 0, all), 0)
		resp := kmsg.NewPtrFetchResponse()
		resp.Version = 12
		if err := resp.ReadFrom(body[5:]); err != nil || resp.SessionID == 0 {
			b.Fatalf("open session: %v, session %d", err, resp.SessionID)
		}
		id, epoch := resp.SessionID, int32(1)
		if readAll {
			s := srv.sessions.get(id)
			s.mu.Lock()
			s.readAll = true
			s.mu.Unlock()
		}
		var named []int32
		next := 0
		for b.Loop() {
			b.StopTimer()
			var touched []int32
			for range changed {
				p := int32(next % parts)
				next++
				if _, err := ps[p].Append(bytes.Clone(batch), 9, 0); err != nil {
					b.Fatal(err)
				}
				touched = append(touched, p)
			}
			req := newReq(id, epoch, named)
			epoch++
			b.StartTimer()
			roundTrip(req, epoch)
			b.StopTimer()
			for _, p := range touched {
				offsets[p]++
			}
			named = touched
			b.StartTimer()
		}
	})
}

// benchFetchRange times v12 fetches of partition 0 of topic "bench" on nc
// (no session, up to 1 MiB each, at offsets spread over the first half of
// end), reading each answer whole, and reports the bytes served per fetch.
func benchFetchRange(b *testing.B, nc net.Conn, isolation int8, end int64) {
	req := kmsg.NewPtrFetchRequest()
	req.Version, req.ReplicaID, req.MaxBytes, req.SessionEpoch, req.IsolationLevel = 12, -1, 1<<20, -1, isolation
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = "bench"
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.PartitionMaxBytes, rp.CurrentLeaderEpoch = 1<<20, -1
	rt.Partitions = []kmsg.FetchRequestTopicPartition{rp}
	req.Topics = []kmsg.FetchRequestTopic{rt}
	var served int64
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		req.Topics[0].Partitions[0].FetchOffset = int64(i*97) % (end / 2)
		if _, err := nc.Write(requestFrame(req, 12, int32(i))); err != nil {
			b.Fatal(err)
		}
		n, err := protocol.ReadSize(nc, 1<<30)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := io.CopyN(io.Discard, nc, int64(n)); err != nil {
			b.Fatal(err)
		}
		served += int64(n)
	}
	b.SetBytes(served / int64(b.N))
}
