package partition

import (
	"encoding/binary"
	"fmt"
	"sync/atomic"
	"testing"

	klog "github.com/kbroker/kbroker/log"
)

// benchStore is an async store with topics of n partitions in b's temp dir.
func benchStore(b *testing.B, parts int32) *Store {
	b.Helper()
	cfg := Config{
		Dir:       b.TempDir(),
		Log:       klog.Config{FileSize: 128 << 20},
		FlushMode: FlushAsync,
	}
	s, _, err := Open(cfg, []TopicSpec{{ID: topicID(1), Name: "bench", Partitions: parts, Config: DefaultTopicConfig()}})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	return s
}

// BenchmarkPartitionAppend measures Partition.Append (validation, offset
// assignment, commit-log append, consume-queue entry) of 16 KiB
// uncompressed batches of 16 records, async mode, into 1 and 64 partitions
// from GOMAXPROCS goroutines.
func BenchmarkPartitionAppend(b *testing.B) {
	for _, parts := range []int32{1, 64} {
		b.Run(fmt.Sprintf("partitions=%d/batch=16KiB", parts), func(b *testing.B) {
			s := benchStore(b, parts)
			tmpl := testBatch{pid: -1, values: values(16, 1000), baseTs: 1}.encode()
			b.SetBytes(int64(len(tmpl)))
			b.ReportAllocs()
			var next atomic.Int64
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				buf := append([]byte(nil), tmpl...)
				for pb.Next() {
					p := s.Partition(topicID(1), int32(next.Add(1)%int64(parts)))
					// Stamp wrote the base offset into buf; a producer sends 0.
					binary.BigEndian.PutUint64(buf, 0)
					if _, err := p.Append(buf, 9, 1); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}

// BenchmarkPartitionRead measures Partition.Read of up to 1 MiB from a
// random offset of a partition holding 4096 batches of 1 KiB, including
// holding and releasing the file ranges.
func BenchmarkPartitionRead(b *testing.B) {
	for _, limit := range []int64{16 << 10, 1 << 20} {
		b.Run(fmt.Sprintf("maxBytes=%dKiB", limit>>10), func(b *testing.B) {
			s := benchStore(b, 1)
			p := s.Partition(topicID(1), 0)
			tmpl := testBatch{pid: -1, values: values(4, 230), baseTs: 1}.encode()
			for i := 0; i < 4096; i++ {
				buf := append([]byte(nil), tmpl...)
				if _, err := p.Append(buf, 9, 1); err != nil {
					b.Fatal(err)
				}
			}
			end := p.HighWatermark()
			dst := make([]Range, 0, 2048)
			b.ReportAllocs()
			b.ResetTimer()
			var bytes int64
			for i := 0; b.Loop(); i++ {
				res, rs, err := p.Read(int64(i*7919)%end, limit, true, dst[:0])
				if err != nil {
					b.Fatal(err)
				}
				bytes += res.Bytes
				ReleaseRanges(rs)
			}
			b.ReportMetric(float64(bytes)/float64(b.N), "bytes/read")
		})
	}
}

// BenchmarkPartitionReadCommitted is BenchmarkPartitionRead for
// read_committed: a partition of 4096 batches of 1 KiB where three
// transactional producers take turns, each transaction of four batches
// ending in a marker, one in three aborted; each read also lists the
// aborted transactions of its range.
func BenchmarkPartitionReadCommitted(b *testing.B) {
	for _, limit := range []int64{16 << 10, 1 << 20} {
		b.Run(fmt.Sprintf("maxBytes=%dKiB", limit>>10), func(b *testing.B) {
			s := benchStore(b, 1)
			p := s.Partition(topicID(1), 0)
			seqs := [3]int32{}
			for i := 0; i < 4096; i++ {
				pid := int64(i / 4 % 3)
				buf := testBatch{pid: pid, seq: seqs[pid], txn: true, values: values(4, 230), baseTs: 1}.encode()
				seqs[pid] += 4
				if _, err := p.Append(buf, 9, 1); err != nil {
					b.Fatal(err)
				}
				if i%4 == 3 {
					if _, err := p.AppendMarker(pid, 0, pid != 0, 0, 1); err != nil {
						b.Fatal(err)
					}
				}
			}
			end := p.LastStableOffset()
			dst := make([]Range, 0, 2048)
			abs := make([]AbortedTxn, 0, 1024)
			b.ReportAllocs()
			b.ResetTimer()
			var bytes, aborts int64
			for i := 0; b.Loop(); i++ {
				off := int64(i*7919) % end
				res, rs, err := p.ReadCommitted(off, limit, true, dst[:0])
				if err != nil {
					b.Fatal(err)
				}
				aborts += int64(len(p.AbortedTransactions(off, res.NextOffset, abs[:0])))
				bytes += res.Bytes
				ReleaseRanges(rs)
			}
			b.ReportMetric(float64(bytes)/float64(b.N), "bytes/read")
			b.ReportMetric(float64(aborts)/float64(b.N), "aborts/read")
		})
	}
}
