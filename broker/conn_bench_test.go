package broker

import (
	"encoding/binary"
	"fmt"
	"io"
	"net"
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
