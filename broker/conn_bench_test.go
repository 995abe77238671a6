package broker

import (
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"syscall"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// BenchmarkProduceRequests sends produce requests (acks=1, async mode)
// over a raw connection, one at a time, and reports the bytes the whole
// process allocates per request: the broker's reading of the request
// (the client reuses its buffers). Requests of several 1 MB batches are
// what a kgo producer sends to a topic of several partitions; they are
// larger than the buffer a connection keeps between requests (1 MiB).
// A request of one 1 KiB record is the end-to-end case's: its round trip
// is mostly the connection's own cost (reading, handing over, writing).
//
//	go test -run '^$' -bench BenchmarkProduceRequests -benchtime 200x ./broker/
func BenchmarkProduceRequests(b *testing.B) {
	for _, c := range []struct{ partitions, records int }{{1, 1}, {1, 64}, {1, 1000}, {8, 1000}} {
		b.Run(fmt.Sprintf("partitions=%d/batch=%dx1KiB", c.partitions, c.records), func(b *testing.B) {
			srv := newTestServer(b, func(cfg *Config) { cfg.SegmentBytes = 128 << 20 })
			dataTopic(b, srv, "t", int32(c.partitions), nil)
			tb := plainBatch(c.records)
			tb.valueSize = 1024
			batch := tb.encode()
			req := kmsg.NewPtrProduceRequest()
			req.Version, req.Acks, req.TimeoutMillis = 9, 1, 10000
			rt := kmsg.NewProduceRequestTopic()
			rt.Topic = "t"
			for p := range c.partitions {
				rp := kmsg.NewProduceRequestTopicPartition()
				rp.Partition, rp.Records = int32(p), batch
				rt.Partitions = append(rt.Partitions, rp)
			}
			req.Topics = append(req.Topics, rt)
			frame := kmsg.NewRequestFormatter().AppendRequest(nil, req, 1)

			nc, err := net.Dial("tcp", srv.Addr())
			if err != nil {
				b.Fatal(err)
			}
			defer nc.Close()
			var size [4]byte
			resp := make([]byte, 0, 64<<10)
			roundTrip := func() {
				if _, err := nc.Write(frame); err != nil {
					b.Fatal(err)
				}
				if _, err := io.ReadFull(nc, size[:]); err != nil {
					b.Fatal(err)
				}
				resp = resp[:binary.BigEndian.Uint32(size[:])]
				if _, err := io.ReadFull(nc, resp); err != nil {
					b.Fatal(err)
				}
			}
			roundTrip() // warm-up: the connection, the first files
			b.SetBytes(int64(len(frame)))
			b.ReportAllocs()
			for b.Loop() {
				roundTrip()
			}
		})
	}
}

// BenchmarkEndToEnd is kbench's end-to-end case over loopback without the
// clients' own work: each cycle a consumer's incremental session fetch
// (max wait 5 s, which parks unless the record is already there), then a
// producer's request of one 1 KiB record (acks=1, async mode) on its own
// connection, and both answers read. It reports the process's CPU time
// per cycle (broker and the raw clients), which the broker's goroutine
// wake-ups per record show in, more steadily than the time per cycle on a
// loaded machine.
//
//	go test -run '^$' -bench BenchmarkEndToEnd -benchtime 20000x ./broker/
func BenchmarkEndToEnd(b *testing.B) {
	srv := newTestServer(b, func(cfg *Config) { cfg.SegmentBytes = 128 << 20 })
	dataTopic(b, srv, "e", 1, nil)
	tb := plainBatch(1)
	tb.valueSize = 1024
	produce := kmsg.NewRequestFormatter().AppendRequest(nil, produceReq(9, 1, "e", 0, tb.encode()), 1)
	dial := func() net.Conn {
		nc, err := net.Dial("tcp", srv.Addr())
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { nc.Close() })
		return nc
	}
	prod, cons := dial(), dial()
	buf := make([]byte, 0, 64<<10)
	read := func(nc net.Conn) []byte {
		var size [4]byte
		if _, err := io.ReadFull(nc, size[:]); err != nil {
			b.Fatal(err)
		}
		buf = buf[:binary.BigEndian.Uint32(size[:])]
		if _, err := io.ReadFull(nc, buf); err != nil {
			b.Fatal(err)
		}
		return buf
	}
	fetch := func(id, epoch int32, offset int64) {
		req := sessionFetch(srv, "e", 1, id, epoch, offset)
		req.Version, req.MinBytes, req.MaxWaitMillis = 12, 1, 5000
		if _, err := cons.Write(kmsg.NewRequestFormatter().AppendRequest(nil, req, epoch+1)); err != nil {
			b.Fatal(err)
		}
	}
	// The full fetch that opens the session, answered at once.
	open := sessionFetch(srv, "e", 1, 0, 0, 0)
	open.Version = 12
	if _, err := cons.Write(kmsg.NewRequestFormatter().AppendRequest(nil, open, 1)); err != nil {
		b.Fatal(err)
	}
	resp := kmsg.NewPtrFetchResponse()
	resp.Version = 12
	// The body follows the correlation id and the header's tags.
	if err := resp.ReadFrom(read(cons)[5:]); err != nil || resp.SessionID == 0 {
		b.Fatalf("open session: %v, session %d", err, resp.SessionID)
	}
	id := resp.SessionID
	var before, after syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &before)
	n := int32(0)
	for b.Loop() {
		n++
		fetch(id, n, int64(n-1))
		if _, err := prod.Write(produce); err != nil {
			b.Fatal(err)
		}
		read(prod)
		if len(read(cons)) < 1024 {
			b.Fatalf("fetch %d answered without the record", n)
		}
	}
	syscall.Getrusage(syscall.RUSAGE_SELF, &after)
	cpu := after.Utime.Nano() + after.Stime.Nano() - before.Utime.Nano() - before.Stime.Nano()
	b.ReportMetric(float64(cpu)/1000/float64(n), "cpu-µs/op")
}
