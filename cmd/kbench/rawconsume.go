package main

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"net"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The rawconsume workload (--only rawconsume) consumes without a Kafka
// client, so that the broker, not the client, is what limits the rate:
// one kgo consumer spends about 13 ms decoding each 8 MiB response,
// whichever broker sent it, which holds even floor-read near Kafka on
// eight partitions (docs/BENCHMARKS.md, "Consume: what a fetch response
// holds, when it arrives, and the client's ceiling"). It is the consume
// counterpart of the raw producer (rawproduce.go).
//
// Each broker gets the same data: fillTopic writes the topic in batches
// of --consume-batch-bytes (16 KiB, the Java producer's batch.size, when
// 0). Then each of the case's connections reads its share of the
// partitions from offset 0 to the end offsets, as consumeDirect's readers
// do (readsPartition: on fewer partitions than connections, each reads
// one partition whole, and records/s counts every copy). A
// connection sends Fetch v11 without a session, which every broker kbench
// starts serves (floor-read: v4–v11), with kgo's default limits
// (rawFetchRequest), one request outstanding at a time as a real consumer
// has, and advances each partition's offset from the batch headers of the
// response: its work per response is one read of the frame and a walk
// over the batch headers, nothing per record.
type rawConsumeCase struct {
	size, partitions, conns int
}

func (c rawConsumeCase) name() string {
	return fmt.Sprintf("%d conn%s, %s × %d partition%s", c.conns, plural(c.conns), sizeName(c.size), c.partitions, plural(c.partitions))
}

// rawConsumeSizes are the record sizes and partition counts of the
// cases, each read with every count of --rawconsume-conns. The 1,000
// partitions run only when --case names them.
var rawConsumeSizes = []produceCase{{100, 1, 1}, {1024, 1, 1}, {100, 8, 1}, {1024, 8, 1}, {100, 1000, 1}, {1024, 1000, 1}}

// rawConsumeOptions are the rawconsume workload's flags.
type rawConsumeOptions struct {
	conns []int
	// crc verifies every batch's CRC-32C, as a client checking its data
	// would; off by default, since the workload compares brokers and the
	// check is the client's cost.
	crc bool
	// minTime is the least the measured passes take: whole passes are
	// added until it has passed, since a pass of a few hundred MB from
	// the page cache takes a tenth of a second, near the 10 ms tick of
	// the CPU times.
	minTime time.Duration
}

// kgo's default fetch limits, which every broker gets.
const (
	rawFetchMaxBytes     = 50 << 20
	rawFetchPartMaxBytes = 1 << 20
	rawFetchMaxWaitMs    = 5000
	rawFetchVersion      = 11
)

// rawStallLimit is how many responses in a row may leave every offset of
// a connection where it was before the read fails: a broker answering
// with only cut-off batches would otherwise be asked forever.
const rawStallLimit = 3

// runRawConsume reads the whole topic passes times, and more until
// o.minTime has passed (after one unmeasured pass), on c.conns raw
// connections and reports what runConsume reports, the client's CPU
// included.
func runRawConsume(ctx context.Context, bp *brokerProc, c rawConsumeCase, topic string, passes int, o rawConsumeOptions) (metrics, error) {
	ends, err := endOffsets(ctx, bp.addr, topic)
	if err != nil {
		return nil, err
	}
	var readers []*rawReader
	defer func() {
		for _, r := range readers {
			r.conn.Close()
		}
	}()
	for i := range int32(c.conns) {
		r := &rawReader{topic: topic, crc: o.crc, ends: make([]int64, len(ends)), offsets: make([]int64, len(ends))}
		for p := range int32(len(ends)) {
			if readsPartition(i, p, int32(c.conns), int32(len(ends))) {
				r.ends[p] = ends[p]
				r.parts = append(r.parts, p)
			}
		}
		if r.left() == 0 {
			continue
		}
		if r.conn, err = net.Dial("tcp", bp.addr); err != nil {
			return nil, err
		}
		readers = append(readers, r)
	}
	fetches := &fetchStats{}
	if _, err := rawReadAll(ctx, readers, fetches); err != nil {
		return nil, err
	}
	fetches.start()
	m := startMeasure(bp)
	var records int64
	start := time.Now()
	for pass := 0; pass < passes || time.Since(start) < o.minTime; pass++ {
		n, err := rawReadAll(ctx, readers, fetches)
		if err != nil {
			return nil, err
		}
		records += n
	}
	payload := records * int64(c.size)
	out := m.finish(payload)
	out.setRate(records, payload)
	fetches.finish(out)
	return out, nil
}

// rawReadAll reads every reader's partitions from offset 0 to their ends,
// all readers at once, and returns the records read.
func rawReadAll(ctx context.Context, readers []*rawReader, fetches *fetchStats) (int64, error) {
	return sumEach(readers, func(_ int, r *rawReader) (int64, error) { return r.pass(ctx, fetches) })
}

// rawReader is one raw consume connection and its partitions.
type rawReader struct {
	conn  net.Conn
	topic string
	crc   bool
	parts []int32
	// ends and offsets are indexed by partition: the end offset to read
	// to (0 for other connections' partitions) and the next offset to
	// fetch.
	ends, offsets []int64
	corr          int32
	req, resp     []byte // reused from one request to the next
	fetch         kmsg.FetchRequest
}

// left is the records the reader has still to read.
func (r *rawReader) left() int64 {
	var n int64
	for _, p := range r.parts {
		n += max(r.ends[p]-r.offsets[p], 0)
	}
	return n
}

// pass reads the reader's partitions from offset 0 to their ends and
// returns the records read.
func (r *rawReader) pass(ctx context.Context, fetches *fetchStats) (int64, error) {
	stop := context.AfterFunc(ctx, func() { r.conn.SetDeadline(time.Now()) })
	defer stop()
	clear(r.offsets)
	var records int64
	stalls := 0
	for r.left() > 0 {
		if err := ctx.Err(); err != nil { // the deadline below would undo the cancel's
			return records, err
		}
		r.buildFetch()
		sent := time.Now()
		// A broker answers within max wait; a hung one fails the case.
		if err := r.conn.SetDeadline(sent.Add(rawFetchMaxWaitMs*time.Millisecond + 30*time.Second)); err != nil {
			return records, err
		}
		if _, err := r.conn.Write(r.req); err != nil {
			return records, fmt.Errorf("write fetch: %w", err)
		}
		body, err := r.readResponse()
		if err != nil {
			return records, err
		}
		fetches.add(time.Since(sent), len(body)+4)
		n, advanced, err := parseRawFetch(body, r.topic, r.offsets, r.crc)
		if err != nil {
			return records, err
		}
		records += n
		stalls++
		if advanced {
			stalls = 0
		}
		if stalls >= rawStallLimit {
			return records, fmt.Errorf("fetch %s: %d responses in a row advanced no partition (%d records left)", r.topic, stalls, r.left())
		}
	}
	return records, nil
}

// buildFetch encodes, into r.req, the next Fetch request: the partitions
// not yet read to their ends, at their offsets.
func (r *rawReader) buildFetch() {
	f := &r.fetch
	f.Default()
	f.Version = rawFetchVersion
	f.ReplicaID = -1
	f.MaxWaitMillis = rawFetchMaxWaitMs
	f.MinBytes = 1
	f.MaxBytes = rawFetchMaxBytes
	f.IsolationLevel = 0 // read_uncommitted
	f.SessionID, f.SessionEpoch = 0, -1
	t := kmsg.NewFetchRequestTopic()
	t.Topic = r.topic
	if len(f.Topics) == 1 {
		t.Partitions = f.Topics[0].Partitions[:0]
	}
	for _, p := range r.parts {
		if r.offsets[p] >= r.ends[p] {
			continue
		}
		fp := kmsg.NewFetchRequestTopicPartition()
		fp.Partition = p
		fp.FetchOffset = r.offsets[p]
		fp.PartitionMaxBytes = rawFetchPartMaxBytes
		t.Partitions = append(t.Partitions, fp)
	}
	f.Topics = append(f.Topics[:0], t)
	r.corr++
	r.req = kmsg.NewRequestFormatter(kmsg.FormatterClientID("kbench-rawconsume")).AppendRequest(r.req[:0], f, r.corr)
}

// readResponse reads one response frame into r.resp, checks its
// correlation id and returns its body (v11's header is the correlation
// id alone).
func (r *rawReader) readResponse() ([]byte, error) {
	var size [4]byte
	if _, err := io.ReadFull(r.conn, size[:]); err != nil {
		return nil, fmt.Errorf("read fetch response: %w", err)
	}
	// A response holds at most MaxBytes of records, but Kafka may exceed
	// it by a first batch (KIP-74); batches here are at most 1 MB.
	l := int(binary.BigEndian.Uint32(size[:]))
	if l < 4 || l > rawFetchMaxBytes+8<<20 {
		return nil, fmt.Errorf("fetch response of %d bytes", l)
	}
	if cap(r.resp) < l {
		r.resp = make([]byte, l)
	}
	r.resp = r.resp[:l]
	if _, err := io.ReadFull(r.conn, r.resp); err != nil {
		return nil, fmt.Errorf("read fetch response: %w", err)
	}
	if corr := int32(binary.BigEndian.Uint32(r.resp)); corr != r.corr {
		return nil, fmt.Errorf("response to request %d, want %d", corr, r.corr)
	}
	return r.resp[4:], nil
}

// errShortFetch is a Fetch response that ends inside its framing.
var errShortFetch = errors.New("fetch response cut short")

// fetchReader reads the big-endian fields of a response body, failing
// once with errShortFetch if the body ends early.
type fetchReader struct {
	b   []byte
	err error
}

func (fr *fetchReader) take(n int) []byte {
	if fr.err != nil || n < 0 || n > len(fr.b) {
		fr.err = errShortFetch
		return nil
	}
	out := fr.b[:n]
	fr.b = fr.b[n:]
	return out
}

func (fr *fetchReader) int16() int16 {
	if b := fr.take(2); b != nil {
		return int16(binary.BigEndian.Uint16(b))
	}
	return 0
}

func (fr *fetchReader) int32() int32 {
	if b := fr.take(4); b != nil {
		return int32(binary.BigEndian.Uint32(b))
	}
	return 0
}

// bytes reads an int32 length and that many bytes; -1 (null) is empty.
func (fr *fetchReader) bytes() []byte {
	n := fr.int32()
	if n == -1 {
		return nil
	}
	return fr.take(int(n))
}

// parseRawFetch walks a Fetch v11 response body for topic: it fails on
// any error code, and for each partition's records counts those at or
// above the partition's offset in offsets and moves the offset past the
// last whole batch. It returns the records counted and whether any offset
// moved. A last batch cut off by the size limits is left for the next
// fetch; a batch below the offset (Kafka answers from the start of the
// batch that holds it) is skipped, and of a batch that starts below it
// only the records from it on count. The topics read here are never
// compacted, so a batch's offsets are contiguous and the record count of
// a partly wanted batch follows from its offsets. With crc, every whole
// batch's CRC-32C is checked.
func parseRawFetch(body []byte, topic string, offsets []int64, crc bool) (records int64, advanced bool, err error) {
	fr := &fetchReader{b: body}
	fr.take(4) // throttle time
	if code := fr.int16(); code != 0 {
		return 0, false, fmt.Errorf("fetch %s: %w", topic, kerr.ErrorForCode(code))
	}
	fr.take(4) // session id
	for range fr.int32() {
		name := string(fr.take(int(fr.int16())))
		for range fr.int32() {
			p := fr.int32()
			code := fr.int16()
			fr.take(8 + 8 + 8) // high watermark, last stable offset, log start offset
			if aborted := fr.int32(); aborted > 0 {
				fr.take(int(aborted) * 16)
			}
			fr.take(4) // preferred read replica
			recs := fr.bytes()
			if fr.err != nil {
				return records, advanced, fmt.Errorf("fetch %s: %w", topic, fr.err)
			}
			if name != topic || p < 0 || int(p) >= len(offsets) {
				return records, advanced, fmt.Errorf("fetch %s: response for %s[%d], not asked for", topic, name, p)
			}
			if code != 0 {
				return records, advanced, fmt.Errorf("fetch %s[%d] at offset %d: %w", topic, p, offsets[p], kerr.ErrorForCode(code))
			}
			n, next, err := walkBatches(recs, offsets[p], crc)
			if err != nil {
				return records, advanced, fmt.Errorf("fetch %s[%d] at offset %d: %w", topic, p, offsets[p], err)
			}
			records += n
			advanced = advanced || next != offsets[p]
			offsets[p] = next
		}
	}
	if fr.err != nil {
		return records, advanced, fmt.Errorf("fetch %s: %w", topic, fr.err)
	}
	return records, advanced, nil
}

// crc32c is the table of the record batches' checksum.
var crc32c = crc32.MakeTable(crc32.Castagnoli)

// recordBatchHeader is the size of a v2 record batch's header, up to its
// first record.
const recordBatchHeader = 61

// walkBatches counts the records at or above offset in the whole batches
// of recs (see parseRawFetch) and returns them with the next offset to
// fetch.
func walkBatches(recs []byte, offset int64, crc bool) (int64, int64, error) {
	be := binary.BigEndian
	var records int64
	for len(recs) >= 12 {
		base := int64(be.Uint64(recs))
		size := 12 + int64(be.Uint32(recs[8:]))
		if size < recordBatchHeader {
			return records, offset, fmt.Errorf("batch at %d of %d bytes", base, size)
		}
		if size > int64(len(recs)) {
			break // cut off by the size limits: fetched again next time
		}
		batch := recs[:size]
		recs = recs[size:]
		if batch[16] != 2 {
			return records, offset, fmt.Errorf("batch at %d has magic %d", base, batch[16])
		}
		if crc && crc32.Checksum(batch[21:], crc32c) != be.Uint32(batch[17:]) {
			return records, offset, fmt.Errorf("batch at %d: CRC mismatch", base)
		}
		last := base + int64(be.Uint32(batch[23:]))
		if last < offset {
			continue
		}
		const control = 0x20 // attributes: a transaction marker, no records
		if be.Uint16(batch[21:])&control == 0 {
			n := int64(be.Uint32(batch[57:]))
			if base < offset {
				n = min(n, last-offset+1)
			}
			records += n
		}
		offset = last + 1
	}
	return records, offset, nil
}

// rawConsumeCases fills the topics of the rawconsume cases that match on
// each broker of the round (once a topic) and reads them.
func (b *bench) rawConsumeCases(ctx context.Context, order []*brokerProc, tag string, round int, match func(string) bool) error {
	batchBytes := b.o.consumeBatch
	if batchBytes == 0 {
		batchBytes = 16 << 10
	}
	filled := map[string]bool{}
	for _, pc := range rawConsumeSizes {
		for _, conns := range b.o.rawConsume.conns {
			c := rawConsumeCase{pc.size, pc.partitions, conns}
			if !match(c.name()) || pc.partitions >= 1000 && b.o.caseFilter == "" {
				continue
			}
			topic := fmt.Sprintf("rawconsume-%d-%d-%d-%s", pc.size, pc.partitions, batchBytes, tag)
			for _, bp := range order {
				if !filled[bp.spec.name+topic] {
					fmt.Fprintf(b.log, "round %d/%d filling %s on %s\n", round, b.o.rounds, topic, bp.spec.name)
					if err := fillTopic(ctx, bp.addr, pc, topic, b.o.produceMB*1e6, batchBytes); err != nil {
						return fmt.Errorf("rawconsume %s on %s: %w", c.name(), bp.spec.name, err)
					}
					filled[bp.spec.name+topic] = true
				}
				m, err := b.measure(bp, "rawconsume", c.name(), round, func() (metrics, error) {
					return runRawConsume(ctx, bp, c, topic, b.o.consumePasses, b.o.rawConsume)
				})
				if err != nil {
					return err
				}
				b.record("rawconsume", c.name(), bp, round, m, "records_s", "mb_s", "broker_cpu", "client_cpu", "fetch_kb")
			}
		}
	}
	return nil
}
