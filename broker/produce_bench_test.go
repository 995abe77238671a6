package broker

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"
)

// BenchmarkProduceMultiPartition sends produce requests as an idempotent
// kgo producer does to a topic of several partitions: one request carries
// one batch for each partition (v13, topic by id, acks=-1 in async mode),
// each batch a few dozen 100 B or 1 KiB records with the next sequence
// number. The request is sent over a raw connection and its response read,
// one at a time, so that the allocations counted are the broker's (the
// client reuses its buffers). "allocMB/GB" is what the whole process
// allocated per GB of record batches produced, the figure issue 18 bounds
// at 10.
//
//	go test -run '^$' -bench BenchmarkProduceMultiPartition -benchtime 2000x ./broker/
func BenchmarkProduceMultiPartition(b *testing.B) {
	for _, c := range []struct{ partitions, records, valueSize int }{
		{1, 64, 100}, {8, 64, 100}, {64, 16, 100}, {8, 16, 1024}, {64, 4, 1024},
		// A quarter of 1,000 partitions, as one of kbench raw's four connections sends them.
		{250, 4, 1024},
	} {
		name := fmt.Sprintf("partitions=%d/batch=%dx%dB", c.partitions, c.records, c.valueSize)
		b.Run(name, func(b *testing.B) {
			srv := newQuietServer(b, func(cfg *Config) { cfg.SegmentBytes = 128 << 20 })
			tp := dataTopic(b, srv, "t", int32(c.partitions), nil)
			w := dialWire(b, srv)
			ipr := w.do(kmsg.NewPtrInitProducerIDRequest()).(*kmsg.InitProducerIDResponse)
			if ipr.ErrorCode != 0 {
				b.Fatalf("init producer id: error %d", ipr.ErrorCode)
			}
			tb := plainBatch(c.records)
			tb.valueSize = c.valueSize
			tb.producerID, tb.producerEpoch, tb.baseSequence = ipr.ProducerID, ipr.ProducerEpoch, 0
			one := tb.encode()

			req := kmsg.NewPtrProduceRequest()
			req.Version, req.Acks, req.TimeoutMillis = 13, -1, 10000
			rt := kmsg.NewProduceRequestTopic()
			rt.TopicID = tp.ID
			for p := range c.partitions {
				rp := kmsg.NewProduceRequestTopicPartition()
				rp.Partition, rp.Records = int32(p), one
				rt.Partitions = append(rt.Partitions, rp)
			}
			req.Topics = append(req.Topics, rt)
			frame := kmsg.NewRequestFormatter(kmsg.FormatterClientID("kgo")).AppendRequest(nil, req, 1)
			// Where each batch sits in the frame, to give it the next
			// sequence number before each send.
			var at []int
			for off := 0; len(at) < c.partitions; {
				i := bytes.Index(frame[off:], one)
				if i < 0 {
					b.Fatal("batch not found in the request frame")
				}
				at = append(at, off+i)
				off += i + len(one)
			}
			crcTable := crc32.MakeTable(crc32.Castagnoli)
			seq := int32(0)
			nc := w.nc
			var size [4]byte
			resp := make([]byte, 0, 64<<10)
			roundTrip := func() {
				for _, i := range at {
					bb := frame[i : i+len(one)]
					binary.BigEndian.PutUint32(bb[53:], uint32(seq))
					binary.BigEndian.PutUint32(bb[17:], crc32.Checksum(bb[21:], crcTable))
				}
				seq += int32(c.records)
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
			for range 20 {
				roundTrip() // warm-up: the connection, producer state, the first files
			}
			checkProduced(b, resp)
			payload := int64(len(one) * c.partitions)
			b.SetBytes(payload)
			b.ReportAllocs()
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			cpu0 := processCPU(b)
			for b.Loop() {
				roundTrip()
			}
			cpu := processCPU(b) - cpu0
			runtime.ReadMemStats(&after)
			// CPU time (broker and client, user and system) is less
			// sensitive than wall time to a loaded machine.
			b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-µs/op")
			checkProduced(b, resp)
			b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/1e6/(float64(payload)*float64(b.N)/1e9), "allocMB/GB")
		})
	}
}

// processCPU is the process's user and system time so far.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// newQuietServer is newTestServer logging at Info: a benchmark counts
// allocations, and the per-request Debug lines of the test logger would be
// most of them.
func newQuietServer(b *testing.B, edit func(*Config)) *InProcess {
	b.Helper()
	ip, err := StartInProcess(b.TempDir(), edit, WithLogger(zaptest.NewLogger(b, zaptest.Level(zap.InfoLevel))))
	if err != nil {
		b.Fatalf("start broker: %v", err)
	}
	b.Cleanup(func() {
		if err := ip.Close(); err != nil {
			b.Errorf("close broker: %v", err)
		}
	})
	return ip
}

// checkProduced fails the benchmark unless frame (a produce response
// without its size: correlation id, tags, body) has no partition error.
func checkProduced(b *testing.B, frame []byte) {
	b.Helper()
	resp := kmsg.NewPtrProduceResponse()
	resp.Version = 13
	if err := resp.ReadFrom(frame[5:]); err != nil { // correlation id, empty header tags
		b.Fatal(err)
	}
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if p.ErrorCode != 0 {
				b.Fatalf("partition %d: error %d", p.Partition, p.ErrorCode)
			}
		}
	}
}
