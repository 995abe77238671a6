package partition

import (
	"encoding/binary"
	"errors"
	"hash/crc32"
	"testing"

	"github.com/klauspost/compress/zstd"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/partition/batch"
)

// zstdBomb is a zstd batch of one record whose value is size zero bytes:
// a few hundred bytes that decompress to size.
func zstdBomb(t *testing.T, size int) []byte {
	t.Helper()
	r := kmsg.Record{Key: []byte("k"), Value: make([]byte, size)}
	body := r.AppendTo(nil)
	r.Length = int32(len(body) - 1)
	enc, err := zstd.NewWriter(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer enc.Close()
	rb := kmsg.RecordBatch{Magic: 2, Attributes: int16(batch.CodecZstd), ProducerID: -1, ProducerEpoch: -1, FirstSequence: -1,
		FirstTimestamp: 1, MaxTimestamp: 1, NumRecords: 1, Records: enc.EncodeAll(r.AppendTo(nil), nil)}
	b := rb.AppendTo(nil)
	binary.BigEndian.PutUint32(b[8:], uint32(len(b)-12))
	binary.BigEndian.PutUint32(b[17:], crc32.Checksum(b[21:], crc32.MakeTable(crc32.Castagnoli)))
	return b
}

// TestAppendManyDecompressBudget: a Produce request of many small
// decompression bombs, each within the per-batch bound, costs the broker
// at most the request's decompression budget, not one bound per batch
// (TestHostileInput once kept a connection decompressing for minutes
// after the attack, and its Shutdown waiting for it): the batches past the
// budget are MESSAGE_TOO_LARGE without being decompressed.
func TestAppendManyDecompressBudget(t *testing.T) {
	t.Parallel()
	cfg := testStoreConfig(t, FlushAsync)
	cfg.FullValidation = true
	s := openStore(t, cfg, spec(0, 2))
	ps := s.Partitions(topicID(0))
	const size, n = 4 << 20, 40
	bomb := zstdBomb(t, size)
	if len(bomb) > 4<<10 {
		t.Fatalf("bomb of %d bytes, want a few hundred", len(bomb))
	}
	var bt Batch
	for i := range n {
		bt.Add(ps[i%len(ps)], bomb)
	}
	// The bombs are small: the budget is the floor, one batch's bound.
	if got := requestDecompressBudget(bt.Items); got != batch.DefaultMaxDecompressedBytes {
		t.Fatalf("budget %d, want %d", got, batch.DefaultMaxDecompressedBytes)
	}
	bt.AppendMany(s, 9, 1)
	accepted := 0
	for i, it := range bt.Items {
		switch {
		case it.Err == nil:
			accepted++
		case !errors.Is(it.Err, kerr.MessageTooLarge):
			t.Fatalf("item %d: got %v, want nil or MESSAGE_TOO_LARGE", i, it.Err)
		}
	}
	if most := batch.DefaultMaxDecompressedBytes / size; accepted == 0 || accepted > most {
		t.Fatalf("%d of %d bombs accepted, want 1 to %d", accepted, n, most)
	}
}

// TestStopDecompressions: once the store stops decompressions (the
// broker's Shutdown), a produced batch that needs a large decompression
// is refused with the retriable NOT_LEADER_OR_FOLLOWER instead of waiting
// its turn for the slot of large decompressions; a small one still goes
// in.
func TestStopDecompressions(t *testing.T) {
	t.Parallel()
	cfg := testStoreConfig(t, FlushAsync)
	cfg.FullValidation = true
	s := openStore(t, cfg, spec(0, 1))
	p := s.Partition(topicID(0), 0)
	s.StopDecompressions()
	_, err := p.Append(zstdBomb(t, 4<<20), 9, 0)
	if !errors.Is(err, kerr.NotLeaderForPartition) {
		t.Fatalf("a large decompression after the stop: %v, want NOT_LEADER_OR_FOLLOWER", err)
	}
	if _, err := p.Append(zstdBomb(t, 1000), 9, 0); err != nil {
		t.Fatalf("a small batch after the stop: %v", err)
	}
}
