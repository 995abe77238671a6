package main

import (
	"encoding/binary"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/partition/batch"
)

// TestRawRequest: the raw workload's prebuilt request decodes as a Produce
// request to the partitions given, each with one batch that a broker
// accepts (CRC, offsets, record framing) holding the records counted.
func TestRawRequest(t *testing.T) {
	for _, c := range []struct{ size, partitions, perRequest int }{
		{1024, 1, 1024}, {1024, 3, 1024}, {100, 250, 10485}, {1024, 1, 1}, {100, 1, 1 << 20},
	} {
		var parts []int32
		for p := range c.partitions {
			parts = append(parts, int32(p*4+1))
		}
		value := randomValue(c.size)
		frame, records := buildRawRequest("t", parts, value, c.perRequest)
		if got := int(binary.BigEndian.Uint32(frame)); got != len(frame)-4 {
			t.Fatalf("size prefix %d, frame of %d", got, len(frame))
		}
		// Size, key, version, correlation id, client id, empty tags.
		body := frame[4+2+2+4+2+len("kbench-raw")+1:]
		req := kmsg.NewPtrProduceRequest()
		req.Version = rawProduceVersion
		if err := req.ReadFrom(body); err != nil {
			t.Fatalf("%+v: decode: %v", c, err)
		}
		if req.Acks != -1 || len(req.Topics) != 1 || len(req.Topics[0].Partitions) != c.partitions {
			t.Fatalf("%+v: acks %d, %d topics", c, req.Acks, len(req.Topics))
		}
		var n int64
		for i, p := range req.Topics[0].Partitions {
			if p.Partition != parts[i] {
				t.Fatalf("partition %d, want %d", p.Partition, parts[i])
			}
			info, err := batch.Validate(p.Records, batch.ValidateOptions{ProduceVersion: rawProduceVersion})
			if err != nil {
				t.Fatalf("%+v: batch refused: %v", c, err)
			}
			if !info.Walked || info.ProducerID != -1 || info.Size() > 1_000_012 {
				t.Fatalf("%+v: walked %v, producer id %d, %d bytes", c, info.Walked, info.ProducerID, info.Size())
			}
			n += int64(info.NumRecords)
		}
		if n != records {
			t.Fatalf("%+v: %d records in the request, reported %d", c, n, records)
		}
	}
}
