package main

import (
	"encoding/binary"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/partition/batch"
)

// TestRawRequest: the raw workload's prebuilt requests decode as Produce
// requests that, together, have one batch for every partition given, each
// batch one that a broker accepts (CRC, offsets, record framing), with the
// records counted; spread over all partitions by default, or of a given
// size in requests of a given size.
func TestRawRequest(t *testing.T) {
	for _, c := range []struct{ size, partitions, perRequest, perBatch, wantReqs int }{
		{1024, 1, 1024, 0, 1}, {1024, 3, 1024, 0, 1}, {100, 250, 10485, 0, 1}, {1024, 1, 1, 0, 1}, {100, 1, 1 << 20, 0, 1},
		// 16 KiB batches of 1 KiB records, 1 MiB requests: 64 partitions
		// a request.
		{1024, 250, 1024, 16, 4}, {1024, 1, 1024, 16, 1}, {1024, 64, 1024, 16, 1}, {1024, 65, 1024, 16, 2},
		// Batches larger than requests: one a request; larger than 1 MB:
		// cut to 1 MB.
		{1024, 3, 1, 16, 3}, {1024, 2, 1 << 20, 1 << 20, 1},
	} {
		var parts []int32
		for p := range c.partitions {
			parts = append(parts, int32(p*4+1))
		}
		value := randomValue(c.size)
		frames, records := buildRawRequests("t", parts, value, c.perRequest, c.perBatch)
		if len(frames) != c.wantReqs || len(records) != len(frames) {
			t.Fatalf("%+v: %d requests (%d record counts), want %d", c, len(frames), len(records), c.wantReqs)
		}
		var seen []int32
		for k, frame := range frames {
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
			if req.Acks != -1 || len(req.Topics) != 1 {
				t.Fatalf("%+v: acks %d, %d topics", c, req.Acks, len(req.Topics))
			}
			var n int64
			for _, p := range req.Topics[0].Partitions {
				seen = append(seen, p.Partition)
				info, err := batch.Validate(p.Records, batch.ValidateOptions{ProduceVersion: rawProduceVersion})
				if err != nil {
					t.Fatalf("%+v: batch refused: %v", c, err)
				}
				if !info.Walked || info.ProducerID != -1 || info.Size() > 1_000_012 {
					t.Fatalf("%+v: walked %v, producer id %d, %d bytes", c, info.Walked, info.ProducerID, info.Size())
				}
				if c.perBatch > 0 && int(info.NumRecords) != min(c.perBatch, (maxRawBatchBytes-61)/(c.size+16)) {
					t.Fatalf("%+v: a batch of %d records", c, info.NumRecords)
				}
				n += int64(info.NumRecords)
			}
			if n != records[k] {
				t.Fatalf("%+v: %d records in request %d, reported %d", c, n, k, records[k])
			}
		}
		if !slices.Equal(seen, parts) {
			t.Fatalf("%+v: requests carry partitions %v, want %v", c, seen, parts)
		}
	}
}
