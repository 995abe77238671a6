package batch

import (
	"math"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestParseHeaderMatchesKmsg(t *testing.T) {
	t.Parallel()
	b := buildBatch(t, spec{codec: CodecZstd, records: testRecords(7, 10), baseTs: 123, idem: true, pid: 77, epoch: 5, seq: 1000, attrs: AttrTransactional,
		edit: func(rb *kmsg.RecordBatch) { rb.PartitionLeaderEpoch = 42 }})
	h, err := ParseHeader(b)
	wantBatchErr(t, err, nil)
	var rb kmsg.RecordBatch
	if err := rb.ReadFrom(b); err != nil {
		t.Fatal(err)
	}
	got := Header{
		BaseOffset: rb.FirstOffset, Length: rb.Length, PartitionLeaderEpoch: rb.PartitionLeaderEpoch, Magic: rb.Magic,
		CRC: uint32(rb.CRC), Attributes: rb.Attributes, LastOffsetDelta: rb.LastOffsetDelta, BaseTimestamp: rb.FirstTimestamp,
		MaxTimestamp: rb.MaxTimestamp, ProducerID: rb.ProducerID, ProducerEpoch: rb.ProducerEpoch, BaseSequence: rb.FirstSequence,
		NumRecords: rb.NumRecords,
	}
	if h != got {
		t.Fatalf("got %+v, want %+v", h, got)
	}
	if h.Compression() != CodecZstd || !h.IsTransactional() || h.IsControl() || h.TimestampType() != CreateTime || !h.HasProducerID() {
		t.Fatalf("attribute helpers disagree with %#x", h.Attributes)
	}
	if h.Size() != len(b) {
		t.Fatalf("size: got %d, want %d", h.Size(), len(b))
	}
	if got := h.NextOffset(100); got != 107 {
		t.Fatalf("next offset: got %d, want 107", got)
	}
	if got := h.LastSequence(); got != 1006 {
		t.Fatalf("last sequence: got %d, want 1006", got)
	}
}

func TestParseHeaderShort(t *testing.T) {
	t.Parallel()
	for _, n := range []int{0, 1, 12, HeaderSize - 1} {
		_, err := ParseHeader(make([]byte, n))
		wantBatchErr(t, err, kerr.CorruptMessage)
	}
	if _, err := ParseHeader(make([]byte, HeaderSize)); err != nil {
		t.Fatal(err)
	}
}

// TestLastSequence follows Kafka's DefaultRecordBatch.incrementSequence:
// sequences wrap from MaxInt32 to 0.
func TestLastSequence(t *testing.T) {
	t.Parallel()
	tests := []struct {
		base, delta, want int32
	}{
		{0, 0, 0},
		{0, 4, 4},
		{math.MaxInt32, 0, math.MaxInt32},
		{math.MaxInt32, 1, 0},
		{math.MaxInt32 - 1, 3, 1},
		{math.MaxInt32 - 2, 2, math.MaxInt32},
		{NoSequence, 5, NoSequence},
	}
	for _, tc := range tests {
		h := Header{BaseSequence: tc.base, LastOffsetDelta: tc.delta}
		if got := h.LastSequence(); got != tc.want {
			t.Errorf("LastSequence(%d+%d): got %d, want %d", tc.base, tc.delta, got, tc.want)
		}
	}
}

func TestAttributeHelpers(t *testing.T) {
	t.Parallel()
	h := Header{Attributes: int16(CodecLZ4) | AttrTimestampType | AttrControl | AttrDeleteHorizon | 0x100}
	if h.Compression() != CodecLZ4 || h.TimestampType() != LogAppendTime || !h.IsControl() || h.IsTransactional() || !h.HasDeleteHorizon() {
		t.Fatalf("helpers disagree with %#x", h.Attributes)
	}
	if !h.HasProducerID() {
		t.Fatal("producer id 0 reported as absent; only -1 (and below) is none")
	}
	if (&Header{ProducerID: -1}).HasProducerID() {
		t.Fatal("producer id -1 reported as present")
	}
	for c, want := range map[Codec]string{CodecNone: "none", CodecGzip: "gzip", CodecSnappy: "snappy", CodecLZ4: "lz4", CodecZstd: "zstd", 6: "codec(6)"} {
		if c.String() != want {
			t.Errorf("Codec(%d).String(): got %q, want %q", c, c.String(), want)
		}
	}
}

// TestVarints pins the decoding to Kafka's ByteUtils.readVarint/readVarlong.
func TestVarints(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   []byte
		want int32
		n    int
	}{
		{[]byte{0x00}, 0, 1},
		{[]byte{0x01}, -1, 1},
		{[]byte{0x02}, 1, 1},
		{[]byte{0xfe, 0xff, 0xff, 0xff, 0x0f}, math.MaxInt32, 5},
		{[]byte{0xff, 0xff, 0xff, 0xff, 0x0f}, math.MinInt32, 5},
		// Java keeps only the low 32 bits of a fifth byte.
		{[]byte{0xfe, 0xff, 0xff, 0xff, 0x7f}, math.MaxInt32, 5},
		{[]byte{0x80, 0x80, 0x80, 0x80, 0x80, 0x00}, 0, errVarintTooLong},
		{[]byte{0x80}, 0, 0},
		{nil, 0, 0},
	}
	for _, tc := range tests {
		got, n := readVarint(tc.in)
		if got != tc.want || n != tc.n {
			t.Errorf("readVarint(%x): got %d,%d want %d,%d", tc.in, got, n, tc.want, tc.n)
		}
	}
	long := []byte{0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}
	if got, n := readVarlong(long); got != math.MaxInt64 || n != 10 {
		t.Errorf("readVarlong(max): got %d,%d", got, n)
	}
	if _, n := readVarlong(append(long[:9:9], 0x80, 0x01)); n != errVarintTooLong {
		t.Errorf("readVarlong(11 bytes): got n=%d", n)
	}
}
