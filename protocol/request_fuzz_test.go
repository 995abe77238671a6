package protocol

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// FuzzParseRequest feeds frame bodies (what follows the size prefix) to
// ParseHeader and ParseBody. Neither may panic or fail with anything but
// ErrMalformed; the kmsg decoders behind ParseBody may not panic either
// (ParseBody would turn that into an error, hiding a real bug); and a body
// that parses must survive kmsg's encoder: parse → AppendTo → parse →
// AppendTo gives the same bytes twice.
//
// Seeds: testdata/fuzz/FuzzParseRequest holds frames captured from kgo
// (TestWriteFuzzSeeds), and every request kmsg knows, at every version,
// in its default form is added here.
func FuzzParseRequest(f *testing.F) {
	for _, frame := range defaultRequestFrames() {
		f.Add(frame)
	}
	f.Fuzz(func(t *testing.T, frame []byte) {
		alloc := allocBytes(func() { checkParseRequest(t, frame) })
		// Parsing and twice re-encoding allocate in proportion to the
		// frame, never to the lengths it claims (see
		// TestParseRequestAllocations for the factor).
		if limit := uint64(256*len(frame) + 1<<20); alloc > limit {
			t.Fatalf("%d-byte frame: parse and re-encode allocated %d bytes (limit %d)", len(frame), alloc, limit)
		}
	})
}

// defaultRequestFrames is every kmsg request key at every version, with
// default content, framed as kgo frames it (kmsg.RequestFormatter), size
// prefix removed.
func defaultRequestFrames() [][]byte {
	var frames [][]byte
	rf := kmsg.NewRequestFormatter(kmsg.FormatterClientID("seed"))
	for key := int16(0); key <= 100; key++ {
		proto := kmsg.RequestForKey(key)
		if proto == nil {
			continue
		}
		for v := int16(0); v <= proto.MaxVersion(); v++ {
			req := kmsg.RequestForKey(key)
			req.SetVersion(v)
			frames = append(frames, rf.AppendRequest(nil, req, 1)[4:])
		}
	}
	return frames
}

// checkParseRequest is the fuzz property for one frame.
func checkParseRequest(t *testing.T, frame []byte) {
	h, rest, err := ParseHeader(frame)
	if err != nil {
		if !errors.Is(err, ErrMalformed) {
			t.Fatalf("ParseHeader: error %v does not wrap ErrMalformed", err)
		}
		return
	}
	proto := kmsg.RequestForKey(h.Key)
	if proto == nil || h.Version < 0 || h.Version > proto.MaxVersion() {
		return // the broker refuses it before ParseBody
	}
	req, err := ParseBody(h, rest)
	if err != nil {
		if !errors.Is(err, ErrMalformed) {
			t.Fatalf("ParseBody: error %v does not wrap ErrMalformed", err)
		}
		if strings.Contains(err.Error(), "decoder panic") {
			t.Fatalf("kmsg decoder panicked: %v", err)
		}
		return
	}
	if req.Key() != h.Key || req.GetVersion() != h.Version {
		t.Fatalf("parsed %s v%d from a header of key %d v%d", kmsg.NameForKey(req.Key()), req.GetVersion(), h.Key, h.Version)
	}

	req.SetVersion(h.Version)
	enc := req.AppendTo(nil)
	h2, rest2, err := ParseHeader(appendHeader(nil, h, req.IsFlexible(), enc))
	if err != nil {
		t.Fatalf("re-encoded header does not parse: %v", err)
	}
	req2, err := ParseBody(h2, rest2)
	if err != nil {
		t.Fatalf("%s v%d: re-encoded body does not parse: %v\nbody %x", kmsg.NameForKey(h.Key), h.Version, err, enc)
	}
	req2.SetVersion(h.Version)
	if enc2 := req2.AppendTo(nil); !bytes.Equal(enc, enc2) {
		t.Fatalf("%s v%d: encoding is not stable:\nfirst  %x\nsecond %x", kmsg.NameForKey(h.Key), h.Version, enc, enc2)
	}
}

// appendHeader frames body behind a request header as ParseHeader and
// ParseBody read it: key, version, correlation id, nullable client id,
// and an empty tagged-field section for flexible versions.
func appendHeader(dst []byte, h Header, flexible bool, body []byte) []byte {
	dst = binary.BigEndian.AppendUint16(dst, uint16(h.Key))
	dst = binary.BigEndian.AppendUint16(dst, uint16(h.Version))
	dst = binary.BigEndian.AppendUint32(dst, uint32(h.CorrelationID))
	if h.ClientID == nil {
		dst = binary.BigEndian.AppendUint16(dst, 0xffff)
	} else {
		dst = binary.BigEndian.AppendUint16(dst, uint16(len(*h.ClientID)))
		dst = append(dst, *h.ClientID...)
	}
	if flexible && !isHeaderV0(h.Key, h.Version) {
		dst = append(dst, 0)
	}
	return append(dst, body...)
}

// TestParseRequestAllocations: parsing a frame allocates in proportion to
// the frame, however large the lengths inside it claim to be. The
// decoders size arrays from counts read off the wire, so each seed is
// also tried with every 4-byte and 1-byte position set to large values.
func TestParseRequestAllocations(t *testing.T) {
	if testing.Short() {
		t.Skip("slow under -short")
	}
	frames := append(defaultRequestFrames(), readSeedCorpus(t)...)
	var worst float64
	var worstName string
	for _, frame := range frames {
		for _, m := range mutateLengths(frame) {
			alloc := allocBytes(func() {
				if h, rest, err := ParseHeader(m); err == nil {
					if kmsg.RequestForKey(h.Key) != nil && h.Version >= 0 && h.Version <= kmsg.RequestForKey(h.Key).MaxVersion() {
						ParseBody(h, rest)
					}
				}
			})
			// A decoded struct is bigger than its wire form (a
			// one-byte empty array becomes a slice header, a string
			// a string header), so allow a generous factor plus a
			// constant for the request struct itself.
			limit := uint64(64*len(m) + 64<<10)
			if alloc > limit {
				h, _, _ := ParseHeader(m)
				t.Errorf("%s v%d: %d-byte frame allocated %d bytes (limit %d)", kmsg.NameForKey(h.Key), h.Version, len(m), alloc, limit)
			}
			if r := float64(alloc) / float64(len(m)); r > worst {
				h, _, _ := ParseHeader(m)
				worst, worstName = r, kmsg.NameForKey(h.Key)
			}
		}
	}
	t.Logf("worst allocation per frame byte: %.1f (%s)", worst, worstName)
}

// mutateLengths returns frame and copies of it with one 4-byte field or
// one byte (a varint, a compact length) set to a large value.
func mutateLengths(frame []byte) [][]byte {
	out := [][]byte{frame}
	for i := 10; i+4 <= len(frame) && i < 200; i++ {
		m := bytes.Clone(frame)
		binary.BigEndian.PutUint32(m[i:], 0x7fffffff)
		out = append(out, m)
		m = bytes.Clone(frame)
		m[i] = 0xfe
		out = append(out, m)
	}
	return out
}

// allocBytes is how many bytes f allocates on the heap.
func allocBytes(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// readSeedCorpus reads the captured frames in testdata/fuzz/FuzzParseRequest.
func readSeedCorpus(t testing.TB) [][]byte {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(seedDir, "*"))
	if err != nil {
		t.Fatal(err)
	}
	var frames [][]byte
	for _, name := range names {
		data, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		frame, err := parseCorpusFile(data)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		frames = append(frames, frame)
	}
	return frames
}

// parseCorpusFile decodes a one-value corpus file of go's fuzzing format:
// "go test fuzz v1" and a line []byte("...") with a Go-quoted string.
func parseCorpusFile(data []byte) ([]byte, error) {
	rest, ok := bytes.CutPrefix(data, []byte("go test fuzz v1\n"))
	if !ok {
		return nil, errors.New("not a go fuzz corpus file")
	}
	rest = bytes.TrimSpace(rest)
	quoted, ok := bytes.CutPrefix(rest, []byte("[]byte("))
	if !ok || !bytes.HasSuffix(quoted, []byte(")")) {
		return nil, errors.New("want one []byte value")
	}
	s, err := strconv.Unquote(string(quoted[:len(quoted)-1]))
	if err != nil {
		return nil, err
	}
	return []byte(s), nil
}

// produceFrame is a Produce request frame body (no size prefix) at
// version v, with one uncompressed batch of n records of size bytes each.
func produceFrame(v int16, n, size int) []byte {
	var records []byte
	for i := range n {
		r := kmsg.NewRecord()
		r.OffsetDelta = int32(i)
		r.Key = []byte(fmt.Sprintf("key-%d", i))
		r.Value = bytes.Repeat([]byte{'v'}, size)
		r.Headers = []kmsg.Header{{Key: "trace", Value: []byte("abc")}}
		records = r.AppendTo(records)
	}
	batch := kmsg.NewRecordBatch()
	batch.Magic, batch.NumRecords, batch.LastOffsetDelta = 2, int32(n), int32(n-1)
	batch.ProducerID, batch.FirstSequence = 1, 0
	batch.Records = records
	raw := batch.AppendTo(nil)
	binary.BigEndian.PutUint32(raw[8:], uint32(len(raw)-12)) // batch length

	req := kmsg.NewPtrProduceRequest()
	req.SetVersion(v)
	req.Acks, req.TimeoutMillis = -1, 5000
	t := kmsg.NewProduceRequestTopic()
	t.Topic = "orders"
	p := kmsg.NewProduceRequestTopicPartition()
	p.Records = raw
	t.Partitions = append(t.Partitions, p)
	req.Topics = append(req.Topics, t)
	return kmsg.NewRequestFormatter(kmsg.FormatterClientID("bench")).AppendRequest(nil, req, 1)[4:]
}

// BenchmarkParseRequest measures header and body decoding of a Produce
// request (the batch bytes alias the frame, so its size barely matters).
func BenchmarkParseRequest(b *testing.B) {
	for _, bc := range []struct {
		version int16
		n, size int
	}{{9, 1, 100}, {9, 100, 100}, {9, 16, 1 << 10}, {13, 100, 100}} {
		frame := produceFrame(bc.version, bc.n, bc.size)
		b.Run(fmt.Sprintf("produce-v%d/batch=%dx%dB", bc.version, bc.n, bc.size), func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(frame)))
			for b.Loop() {
				h, rest, err := ParseHeader(frame)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := ParseBody(h, rest); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestProduceFrameParses keeps the benchmark's frame honest.
func TestProduceFrameParses(t *testing.T) {
	h, rest, err := ParseHeader(produceFrame(9, 3, 10))
	if err != nil {
		t.Fatal(err)
	}
	req, err := ParseBody(h, rest)
	if err != nil {
		t.Fatal(err)
	}
	raw := req.(*kmsg.ProduceRequest).Topics[0].Partitions[0].Records
	var batch kmsg.RecordBatch
	if err := batch.ReadFrom(raw); err != nil || batch.NumRecords != 3 || int(batch.Length) != len(raw)-12 {
		t.Fatalf("batch %+v: %v", batch, err)
	}
}
