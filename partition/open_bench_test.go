package partition

import (
	"encoding/binary"
	"fmt"
	"testing"
)

// openBenchTopics is the shape of issue 15's start-up target: 2,000
// topics of 5 partitions, each partition with one batch.
const openBenchTopics, openBenchParts = 2000, 5

// openBenchSpecs are the topics of BenchmarkStoreOpen.
func openBenchSpecs() []TopicSpec {
	specs := make([]TopicSpec, openBenchTopics)
	for i := range specs {
		var id TopicID
		id[0] = 0xcd
		binary.BigEndian.PutUint32(id[12:], uint32(i))
		specs[i] = TopicSpec{ID: id, Name: fmt.Sprintf("t%d", i), Partitions: openBenchParts, Config: DefaultTopicConfig()}
	}
	return specs
}

// writeOpenBench fills a store of openBenchSpecs with one batch per
// partition and stops it cleanly (crash false) or as a kill -9 would.
func writeOpenBench(b *testing.B, cfg Config, crash bool) {
	b.Helper()
	specs := openBenchSpecs()
	s, _, err := Open(cfg, specs)
	if err != nil {
		b.Fatal(err)
	}
	rec := testBatch{values: [][]byte{make([]byte, 100)}, pid: -1}.encode()
	for _, t := range specs {
		for i := range t.Partitions {
			if _, err := s.Partition(t.ID, i).Append(append([]byte(nil), rec...), 9, 1000); err != nil {
				b.Fatal(err)
			}
		}
	}
	if !crash {
		if err := s.Close(); err != nil {
			b.Fatal(err)
		}
		return
	}
	// A checkpoint before the crash, as the periodic one would have taken.
	if err := s.Checkpoint(); err != nil {
		b.Fatal(err)
	}
	crashStore(s)
}

// BenchmarkStoreOpen times Open of 10,000 partitions that each hold one
// batch, after a clean stop and after a crash (issue 15: at most 1 s and
// 3 s for the whole broker start-up). Each iteration opens the same
// directory again; after a crash only the first open recovers, so the
// crash case recreates the crash before each iteration.
func BenchmarkStoreOpen(b *testing.B) {
	for _, crash := range []bool{false, true} {
		name := "clean"
		if crash {
			name = "crash"
		}
		b.Run(name, func(b *testing.B) {
			cfg := testStoreConfig(b, FlushAsync)
			cfg.ConsumeQueueEntries = 0
			cfg.Log.FileSize = 128 << 20
			writeOpenBench(b, cfg, crash)
			specs := openBenchSpecs()
			b.ResetTimer()
			for range b.N {
				s, _, err := Open(cfg, specs)
				if err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				if crash {
					crashStore(s)
				} else if err := s.Close(); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
			}
		})
	}
}
