package partition

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/flush"
	klog "github.com/kbroker/kbroker/log"
)

// testBatch describes a batch built with franz-go's own encoders.
type testBatch struct {
	values   [][]byte
	baseTs   int64   // CreateTime of the first record
	tsDeltas []int64 // per record, default i
	pid      int64   // -1: not idempotent
	epoch    int16
	seq      int32
	txn      bool // transactional (needs a pid)
}

// encode returns the batch bytes as a producer sends them (base offset 0).
func (tb testBatch) encode() []byte {
	rb := kmsg.RecordBatch{
		Magic:          2,
		ProducerID:     tb.pid,
		ProducerEpoch:  tb.epoch,
		FirstSequence:  tb.seq,
		FirstTimestamp: tb.baseTs,
	}
	if tb.pid < 0 {
		rb.ProducerEpoch, rb.FirstSequence = -1, -1
	}
	if tb.txn {
		rb.Attributes |= 0x10
	}
	var recs []byte
	maxTs := tb.baseTs
	for i, v := range tb.values {
		d := int64(i)
		if tb.tsDeltas != nil {
			d = tb.tsDeltas[i]
		}
		maxTs = max(maxTs, tb.baseTs+d)
		r := kmsg.Record{TimestampDelta64: d, OffsetDelta: int32(i), Key: fmt.Appendf(nil, "k%d", i), Value: v}
		body := r.AppendTo(nil)
		r.Length = int32(len(body) - 1)
		recs = r.AppendTo(recs)
	}
	rb.LastOffsetDelta = int32(len(tb.values) - 1)
	rb.MaxTimestamp = maxTs
	rb.NumRecords = int32(len(tb.values))
	rb.Records = recs
	b := rb.AppendTo(nil)
	binary.BigEndian.PutUint32(b[8:], uint32(len(b)-12))
	binary.BigEndian.PutUint32(b[17:], crc32.Checksum(b[21:], crc32.MakeTable(crc32.Castagnoli)))
	return b
}

// decodedRecord is one record read back from a fetch.
type decodedRecord struct {
	offset int64
	ts     int64
	value  []byte
}

// readRecords reads every visible record of p from offset, through Read
// and the held file ranges, decoding the batches with kmsg.
func readRecords(t testing.TB, p *Partition, offset int64) ([]decodedRecord, ReadResult) {
	t.Helper()
	res, ranges, err := p.Read(offset, 1<<40, true, nil)
	if err != nil {
		t.Fatalf("read %s-%d at %d: %v", p.topic, p.index, offset, err)
	}
	defer ReleaseRanges(ranges)
	return decodeRanges(t, ranges), res
}

// decodeRanges decodes every record of the batches in ranges with kmsg,
// control records included.
func decodeRanges(t testing.TB, ranges []Range) []decodedRecord {
	t.Helper()
	var out []decodedRecord
	for _, r := range ranges {
		b := make([]byte, r.Len)
		if err := r.File.CopyTo(b, r.Offset); err != nil {
			t.Fatalf("range bytes: %v", err)
		}
		var rb kmsg.RecordBatch
		if err := rb.ReadFrom(bytes.Clone(b)); err != nil {
			t.Fatalf("decode batch: %v", err)
		}
		if got := crc32.Checksum(b[21:], crc32.MakeTable(crc32.Castagnoli)); uint32(rb.CRC) != got {
			t.Fatalf("batch at %d: crc %08x, computed %08x", rb.FirstOffset, uint32(rb.CRC), got)
		}
		recs := rb.Records
		for i := int32(0); i < rb.NumRecords; i++ {
			var rec kmsg.Record
			if err := rec.ReadFrom(recs); err != nil {
				t.Fatalf("decode record: %v", err)
			}
			n := recordWireLen(recs)
			recs = recs[n:]
			ts := rb.FirstTimestamp + rec.TimestampDelta64
			if rb.Attributes&0x08 != 0 {
				ts = rb.MaxTimestamp
			}
			out = append(out, decodedRecord{offset: rb.FirstOffset + int64(rec.OffsetDelta), ts: ts, value: bytes.Clone(rec.Value)})
		}
	}
	return out
}

// recordWireLen is the length of the record at the start of b, its length
// varint included.
func recordWireLen(b []byte) int {
	l, n := binary.Varint(b)
	return int(l) + n
}

// testStoreConfig is a small store in a fresh directory.
func testStoreConfig(t testing.TB, mode FlushMode) Config {
	t.Helper()
	return Config{
		Dir:                    t.TempDir(),
		Log:                    klog.Config{FileSize: 64 << 10, Warm: klog.WarmNone},
		FlushMode:              mode,
		ConsumeQueueEntries:    16,
		CheckpointInterval:     time.Hour,
		RetentionCheckInterval: time.Hour,
	}
}

// idleFlushServices keeps cfg's pool commit and async flush services from
// running on their own for an hour (two pool buffers), so that a test
// decides what reaches the files, with Sync, and what a crash loses.
func idleFlushServices(cfg *Config) {
	cfg.Log.PoolBuffers = 2
	cfg.FlushRealTime = flush.FlushRealTimeConfig{Interval: time.Hour, LeastPages: 1 << 20, ThoroughInterval: time.Hour}
	cfg.CommitRealTime = flush.CommitRealTimeConfig{Interval: time.Hour, LeastPages: 1 << 20, ThoroughInterval: time.Hour}
}

// topicID makes a recognisable topic id.
func topicID(n byte) TopicID {
	var id TopicID
	id[0], id[15] = 0xab, n
	return id
}

func crcOf(b []byte) uint32 { return crc32.Checksum(b, crc32.MakeTable(crc32.Castagnoli)) }

// crashStore stops s as a SIGKILL would: no checkpoint, no clean close;
// what was written stays in the page cache.
func crashStore(s *Store) {
	s.closed.Store(true)
	close(s.stop)
	s.wg.Wait()
	if s.committer != nil {
		s.committer.Abandon() // what the pool buffers hold is lost
	}
	if s.groupCommit != nil {
		s.groupCommit.Close()
	}
	if s.flusher != nil {
		s.flusher.Close()
	}
	s.clog.Abandon()
	s.closePartitions()
}
