package broker

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap/zaptest"

	"github.com/kbroker/kbroker/partition"
)

// valueBatch encodes one uncompressed batch of n records whose values are
// size bytes, each filled with a label of partition p, batch k and record
// i, so that a reader can tell any misplaced byte.
func valueBatch(p, k, n, size int) []byte {
	rb := kmsg.RecordBatch{Magic: 2, ProducerID: -1, ProducerEpoch: -1, FirstSequence: -1, LastOffsetDelta: int32(n - 1), NumRecords: int32(n)}
	for i := 0; i < n; i++ {
		r := kmsg.Record{OffsetDelta: int32(i), Value: recordValue(p, k, i, size)}
		body := r.AppendTo(nil)
		r.Length = int32(len(body) - 1)
		rb.Records = r.AppendTo(rb.Records)
	}
	b := rb.AppendTo(nil)
	binary.BigEndian.PutUint32(b[8:], uint32(len(b)-12))
	binary.BigEndian.PutUint32(b[17:], crcCastagnoli(b[21:]))
	return b
}

// recordValue is record i of batch k of partition p (valueBatch).
func recordValue(p, k, i, size int) []byte {
	label := fmt.Sprintf("p%d-b%d-r%d;", p, k, i)
	return bytes.Repeat([]byte(label), size/len(label)+1)[:size]
}

// mappingRSS sums the resident memory (Rss in /proc/self/smaps) of the
// process's mappings of files under dir: the broker's commit-log pages.
func mappingRSS(t *testing.T, dir string) int64 {
	t.Helper()
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		t.Skipf("no smaps: %v", err)
	}
	defer f.Close()
	var total int64
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) == 0 {
			continue
		}
		if strings.Contains(fields[0], "-") && !strings.HasSuffix(fields[0], ":") {
			// A mapping's first line: address range, perms, offset,
			// device, inode, path.
			in = len(fields) >= 6 && strings.HasPrefix(fields[5], dir)
			continue
		}
		if in && fields[0] == "Rss:" && len(fields) >= 2 {
			kb, err := strconv.ParseInt(fields[1], 10, 64)
			if err != nil {
				t.Fatalf("smaps Rss %q: %v", sc.Text(), err)
			}
			total += kb << 10
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return total
}

// TestFetchInterleavedFromMapping: one consumer of 8 partitions whose
// batches interleave in the commit log, most under the copy threshold
// (written from the mapping), some above it (sendfile), gets every record
// in order with the right bytes, and the pages the responses were written
// from do not stay in the broker's resident memory. With flush mode pool,
// appends reach the files through pool buffers that the commit service
// writes back: the mapping must show what a fetch returns.
func TestFetchInterleavedFromMapping(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"async", "pool"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			testFetchInterleavedFromMapping(t, mode)
		})
	}
}

func testFetchInterleavedFromMapping(t *testing.T, mode string) {
	dir := t.TempDir()
	srv, err := StartInProcess(dir, func(c *Config) { c.FlushMode = mode }, WithLogger(zaptest.NewLogger(t)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	const parts, batches = 8, 96
	tp, err := srv.Topics().Create("il", parts, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	// size of batch k's records: mostly 8 KiB batches (8 records of 1 KiB),
	// every 16th one 32 KiB, above the 16 KiB threshold.
	recs := func(k int) int {
		if k%16 == 15 {
			return 32
		}
		return 8
	}
	var small int64
	for k := 0; k < batches; k++ {
		for p := 0; p < parts; p++ {
			b := valueBatch(p, k, recs(k), 1024)
			if len(b) < defaultFetchCopyThreshold {
				small += int64(len(b))
			}
			if _, err := srv.Store().Partition(partition.TopicID(tp.ID), int32(p)).Append(b, 9, 0); err != nil {
				t.Fatal(err)
			}
		}
	}
	before := mappingRSS(t, dir)
	copiedBefore := srv.Stats().CopiedBytes
	cl := newClient(t, srv)
	next := make([]int64, parts) // next offset per partition
	got := make([]int, parts)    // batches read per partition
	for done := 0; done < parts; {
		req := kmsg.NewPtrFetchRequest()
		req.Version = 12
		req.ReplicaID = -1
		req.MaxBytes = 4 << 20
		req.SessionEpoch = -1
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic, rt.TopicID = "il", tp.ID // kgo may send v13+, where topics go by id
		for p := 0; p < parts; p++ {
			rp := kmsg.NewFetchRequestTopicPartition()
			rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes, rp.CurrentLeaderEpoch = int32(p), next[p], 512<<10, -1
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
		resp := rawFetch(t, cl, req)
		done = 0
		for _, rp := range resp.Topics[0].Partitions {
			if rp.ErrorCode != 0 {
				t.Fatalf("partition %d: error %d", rp.Partition, rp.ErrorCode)
			}
			p := int(rp.Partition)
			for b := rp.RecordBatches; len(b) > 0; {
				var rb kmsg.RecordBatch
				if err := rb.ReadFrom(b); err != nil {
					t.Fatalf("partition %d at %d: %v", p, next[p], err)
				}
				b = b[12+rb.Length:]
				if rb.FirstOffset != next[p] || int(rb.NumRecords) != recs(got[p]) {
					t.Fatalf("partition %d: batch at offset %d of %d records, want offset %d of %d",
						p, rb.FirstOffset, rb.NumRecords, next[p], recs(got[p]))
				}
				rs := rb.Records // uncompressed
				for i := 0; i < int(rb.NumRecords); i++ {
					var r kmsg.Record
					if err := r.ReadFrom(rs); err != nil {
						t.Fatalf("partition %d batch %d record %d: %v", p, got[p], i, err)
					}
					rs = rs[r.Length+int32(varintLen(int64(r.Length))):]
					if want := recordValue(p, got[p], i, 1024); !bytes.Equal(r.Value, want) {
						t.Fatalf("partition %d batch %d record %d: value %.20q…, want %.20q…", p, got[p], i, r.Value, want)
					}
				}
				next[p] += int64(rb.NumRecords)
				got[p]++
			}
			if got[p] == batches {
				done++
			}
		}
	}
	if copied := srv.Stats().CopiedBytes - copiedBefore; copied != small {
		t.Errorf("%d bytes written from the mapping, want the %d of the batches under the threshold", copied, small)
	}
	// Without unmapping, the resident pages would grow by about what was
	// read from the mapping (small, over 5 MiB); the pages at the edges of
	// a response's span may stay mapped (fault-around maps up to 64 KiB
	// around a fault).
	after := mappingRSS(t, dir)
	// With pool buffers the commit service writes appends into the mapping
	// itself, at its own pace, so the growth is not the fetch's alone.
	if grown := after - before; mode != "pool" && grown > small/8 {
		t.Errorf("commit-log mappings grew by %d KiB resident after reading %d KiB from them (%d → %d KiB)",
			grown>>10, small>>10, before>>10, after>>10)
	}
	t.Logf("read %d KiB from the mapping; its resident pages %d → %d KiB", small>>10, before>>10, after>>10)
}

// varintLen is the length of x as a zig-zag varint.
func varintLen(x int64) int {
	u := uint64(x<<1) ^ uint64(x>>63)
	n := 1
	for u >= 0x80 {
		u >>= 7
		n++
	}
	return n
}
