package broker

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap/zaptest"

	"github.com/kbroker/kbroker/internal/testenv"
	"github.com/kbroker/kbroker/internal/testpki"
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
	n, err := residentMapped(dir)
	if errors.Is(err, os.ErrNotExist) {
		t.Skipf("no smaps: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// residentMapped is mappingRSS for any goroutine.
func residentMapped(dir string) (int64, error) {
	sizes, err := testenv.MappingSizes(func(h []string) bool { return len(h) >= 6 && strings.HasPrefix(h[5], dir) }, "Rss")
	return sizes["Rss"], err
}

// smallPages turns kbroker.log.huge.pages off, for tests of which ranges
// go from the mapping and which with sendfile, and of what mapping them
// costs in resident memory, in 4 KiB pages: with huge pages, ranges near
// the tail go from the mapping whatever their size
// (TestFetchTailFromHugePageMapping).
func smallPages(c *Config) { c.LogHugePages = false }

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
	srv, err := StartInProcess(dir, func(c *Config) { c.FlushMode = mode; smallPages(c) }, WithLogger(zaptest.NewLogger(t)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	il := fillInterleaved(t, srv, "il", 96)
	before := mappingRSS(t, dir)
	copiedBefore := srv.Stats().CopiedBytes
	cl := newClient(t, srv)
	for !il.check(t, rawFetch(t, cl, il.request())) {
	}
	if copied := srv.Stats().CopiedBytes - copiedBefore; copied != il.small {
		t.Errorf("%d bytes written from the mapping, want the %d of the batches under the threshold", copied, il.small)
	}
	// Without unmapping, the resident pages would stay grown by about
	// what was read from the mapping (small, over 5 MiB); the sent spans
	// are unmapped within about sentSpanAge. The pages at the edges of a
	// span may stay mapped (fault-around maps up to 64 KiB around a
	// fault). With pool buffers the commit service writes appends into
	// the mapping itself, at its own pace, so the growth is not the
	// fetch's alone.
	var after int64
	if mode != "pool" {
		testenv.Eventually(t, 20*time.Second, "the sent pages unmapped", func() bool {
			after = mappingRSS(t, dir)
			return after-before <= il.small/8
		})
	}
	after = mappingRSS(t, dir)
	t.Logf("read %d KiB from the mapping; its resident pages %d → %d KiB", il.small>>10, before>>10, after>>10)
}

// TestFetchMappedSlowReader: responses written from the mapping reach a
// client that reads them a few hundred bytes at a time whole and in
// order: the socket fills again and again in
// the middle of a writev of mapped ranges, and each send resumes exactly
// where the last stopped.
func TestFetchMappedSlowReader(t *testing.T) {
	t.Parallel()
	srv := newTestServer(t, smallPages)
	il := fillInterleaved(t, srv, "slow", 96)
	copiedBefore := srv.Stats().CopiedBytes
	c := dialRaw(t, srv)
	// A receive window far smaller than a response, yet above the
	// loopback MSS (64 KiB): below it, the corked sender waits for the
	// zero-window probe timer instead of the reader.
	if err := c.nc.(*net.TCPConn).SetReadBuffer(256 << 10); err != nil {
		t.Fatal(err)
	}
	c.br = bufio.NewReader(trickle{c.nc, 700})
	for {
		req := il.request()
		req.MaxBytes = 64 << 20
		for i := range req.Topics[0].Partitions {
			req.Topics[0].Partitions[i].PartitionMaxBytes = 4 << 20
		}
		if il.check(t, c.recv(req, c.send(req), 30*time.Second).(*kmsg.FetchResponse)) {
			break
		}
	}
	if copied := srv.Stats().CopiedBytes - copiedBefore; copied != il.small {
		t.Errorf("%d bytes written from the mapping, want the %d of the batches under the threshold", copied, il.small)
	}
}

// TestFetchMappedPeerGone: a client that asks for a large response, reads
// its first bytes and resets the connection fails the broker's send of
// mapped ranges half-way. The broker closes the connection, drops the
// pages it mapped for the response and serves the next client every byte.
func TestFetchMappedPeerGone(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	srv, err := StartInProcess(dir, smallPages, WithLogger(zaptest.NewLogger(t)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	il := fillInterleaved(t, srv, "gone", 96)
	before := mappingRSS(t, dir)
	copiedBefore := srv.Stats().CopiedBytes
	for range 3 {
		c := dialRaw(t, srv)
		nc := c.nc.(*net.TCPConn)
		req := il.request()
		req.MaxBytes = 64 << 20
		for i := range req.Topics[0].Partitions {
			req.Topics[0].Partitions[i].PartitionMaxBytes = 4 << 20
		}
		c.send(req)
		// The first bytes in hand, the broker is writing the response.
		if _, err := io.ReadFull(nc, make([]byte, 64<<10)); err != nil {
			t.Fatal(err)
		}
		nc.SetLinger(0) // close with a reset: the broker's next write fails
		nc.Close()
		testenv.Eventually(t, 10*time.Second, "the broker closed the reset connection", func() bool {
			return srv.Stats().OpenConnections == 0
		})
	}
	if srv.Stats().CopiedBytes == copiedBefore {
		t.Fatal("no response was written from the mapping")
	}
	// Fault-around may leave up to 64 KiB mapped at either edge of a
	// response's span; without the unmap the growth stays megabytes.
	var after int64
	testenv.Eventually(t, 20*time.Second, "the pages of the failed responses unmapped", func() bool {
		after = mappingRSS(t, dir)
		return after-before <= 512<<10
	})
	t.Logf("resident pages of the mappings %d → %d KiB", before>>10, after>>10)
	cl := newClient(t, srv)
	for !il.check(t, rawFetch(t, cl, il.request())) {
	}
}

// interleaved is a topic of 8 partitions whose batches interleave in the
// commit log, and how far a reader of all of them has got.
type interleaved struct {
	name    string
	id      [16]byte
	batches int
	// small is the bytes of the batches under the copy threshold: those
	// a response writes from the mapping.
	small int64
	next  []int64 // next offset per partition
	got   []int   // batches read per partition
	// only lists the partitions the reader reads; nil is all of them.
	only []int32
	// partMax is each partition's PartitionMaxBytes; 0 is 512 KiB.
	partMax int32
}

// parts lists the partitions the reader reads.
func (il *interleaved) parts() []int32 {
	if il.only != nil {
		return il.only
	}
	all := make([]int32, interleavedParts)
	for p := range all {
		all[p] = int32(p)
	}
	return all
}

// reader is a reader of partitions of il's topic from their starts.
func (il *interleaved) reader(parts ...int32) *interleaved {
	return &interleaved{name: il.name, id: il.id, batches: il.batches, small: il.small,
		next: make([]int64, interleavedParts), got: make([]int, interleavedParts), only: parts}
}

const interleavedParts = 8

// fillInterleaved creates the topic name and appends batches batches to
// each partition in turn.
func fillInterleaved(t *testing.T, srv *InProcess, name string, batches int) *interleaved {
	t.Helper()
	tp, err := srv.Topics().Create(name, interleavedParts, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	il := &interleaved{name: name, id: tp.ID, batches: batches,
		next: make([]int64, interleavedParts), got: make([]int, interleavedParts)}
	for k := 0; k < batches; k++ {
		for p := 0; p < interleavedParts; p++ {
			b := valueBatch(p, k, il.records(k), 1024)
			if len(b) < defaultFetchCopyThreshold {
				il.small += int64(len(b))
			}
			if _, err := srv.Store().Partition(partition.TopicID(tp.ID), int32(p)).Append(b, 9, 0); err != nil {
				t.Fatal(err)
			}
		}
	}
	return il
}

// records is the record count of batch k: mostly 8 KiB batches (8
// records of 1 KiB), every 16th one 32 KiB, above the 16 KiB threshold.
func (il *interleaved) records(k int) int {
	if k%16 == 15 {
		return 32
	}
	return 8
}

// request asks for every partition from where the reader is.
func (il *interleaved) request() *kmsg.FetchRequest {
	req := kmsg.NewPtrFetchRequest()
	req.Version = 12
	req.ReplicaID = -1
	req.MaxBytes = 4 << 20
	req.SessionEpoch = -1
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic, rt.TopicID = il.name, il.id // kgo may send v13+, where topics go by id
	partMax := il.partMax
	if partMax == 0 {
		partMax = 512 << 10
	}
	for _, p := range il.parts() {
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes, rp.CurrentLeaderEpoch = p, il.next[p], partMax, -1
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	return req
}

// check verifies every batch and record value of resp against what
// fillInterleaved wrote, advances the reader, and reports whether it has
// read everything.
func (il *interleaved) check(t *testing.T, resp *kmsg.FetchResponse) (done bool) {
	t.Helper()
	complete := 0
	for _, rp := range resp.Topics[0].Partitions {
		if rp.ErrorCode != 0 {
			t.Fatalf("partition %d: error %d", rp.Partition, rp.ErrorCode)
		}
		p := int(rp.Partition)
		for b := rp.RecordBatches; len(b) > 0; {
			var rb kmsg.RecordBatch
			if err := rb.ReadFrom(b); err != nil {
				t.Fatalf("partition %d at %d: %v", p, il.next[p], err)
			}
			b = b[12+rb.Length:]
			if rb.FirstOffset != il.next[p] || int(rb.NumRecords) != il.records(il.got[p]) {
				t.Fatalf("partition %d: batch at offset %d of %d records, want offset %d of %d",
					p, rb.FirstOffset, rb.NumRecords, il.next[p], il.records(il.got[p]))
			}
			rs := rb.Records // uncompressed
			for i := 0; i < int(rb.NumRecords); i++ {
				var r kmsg.Record
				if err := r.ReadFrom(rs); err != nil {
					t.Fatalf("partition %d batch %d record %d: %v", p, il.got[p], i, err)
				}
				rs = rs[r.Length+int32(varintLen(int64(r.Length))):]
				if want := recordValue(p, il.got[p], i, 1024); !bytes.Equal(r.Value, want) {
					t.Fatalf("partition %d batch %d record %d: value %.20q…, want %.20q…", p, il.got[p], i, r.Value, want)
				}
			}
			il.next[p] += int64(rb.NumRecords)
			il.got[p]++
		}
		if il.got[p] == il.batches {
			complete++
		}
	}
	return complete == len(il.parts())
}

// trickle reads at most n bytes at a time from r.
type trickle struct {
	r io.Reader
	n int
}

func (t trickle) Read(b []byte) (int, error) { return t.r.Read(b[:min(len(b), t.n)]) }

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

// TestFetchTailFromHugePageMapping: with the commit log mapped for huge
// pages (kbroker.log.huge.pages) and its page cache filled ahead, a fetch
// of the newest batches, a small one and one above the copy threshold, is
// written from the mapping: a pread or sendfile there would act on the
// readahead marks of the filled pages, and zero-fill the next readahead
// window past the write position while the consumer waits
// (log/huge_pages.go). Without the setting the small batch is read with
// pread and the large one goes with sendfile. On TLS, where every range is
// copied, the copy is made from the mapping, not with pread.
func TestFetchTailFromHugePageMapping(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		huge, tls bool
	}{{"huge", true, false}, {"off", false, false}, {"huge-tls", true, true}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			huge := tc.huge
			edit := func(c *Config) {
				c.LogHugePages = huge
				c.LogAllocateAhead = 1 << 20 // grown, and the appends measured, every 512 KiB
			}
			var srv *InProcess
			var cl *kgo.Client
			if tc.tls {
				pki := testpki.New(t)
				srv, _ = tlsServer(t, pki, "none", edit)
				cl = tlsClient(t, srv, "SSL", &tls.Config{RootCAs: pki.Pool})
			} else {
				srv = newTestServer(t, edit)
				cl = newClient(t, srv)
			}
			tp, err := srv.Topics().Create("tail", 1, nil, false)
			if err != nil {
				t.Fatal(err)
			}
			p := srv.Store().Partition(partition.TopicID(tp.ID), 0)
			appendBatch := func(b []byte) int64 {
				t.Helper()
				r, err := p.Append(b, 9, 0)
				if err != nil {
					t.Fatal(err)
				}
				return r.BaseOffset
			}
			// Batches of 32 KiB make the allocator fill the page cache
			// ahead of the appends; go on until the appends reach it.
			clog := srv.Store().CommitLog()
			filled := func() bool {
				files := clog.Files()
				if len(files) == 0 {
					return false
				}
				f := files[len(files)-1]
				return f.ReadaheadMarked(f.WrotePosition() - 1)
			}
			deadline := time.Now().Add(20 * time.Second)
			for k := 0; k < 2048 && !filled() && time.Now().Before(deadline); k++ {
				appendBatch(valueBatch(0, k, 32, 1024))
			}
			if huge && !filled() {
				t.Skip("nothing filled ahead of 64 MiB of appends: no huge folios in this page cache?")
			}
			small, large := valueBatch(0, 0, 4, 1024), valueBatch(0, 1, 32, 1024)
			from := appendBatch(small)
			appendBatch(large)
			pending := func() int {
				srv.sent.mu.Lock()
				defer srv.sent.mu.Unlock()
				return len(srv.sent.mu.spans)
			}
			before, copied := pending(), srv.Stats().CopiedBytes
			resp := rawFetch(t, cl, fetchReq(srv, 12, "tail", from, 1<<20, 1<<20))
			got := resp.Topics[0].Partitions[0].RecordBatches
			if len(got) < len(small) || !bytes.Equal(got[8:len(small)], small[8:]) || !bytes.Equal(got[len(small)+8:], large[8:]) {
				t.Fatalf("fetched %d bytes, want the %d of the newest batches", len(got), len(small)+len(large))
			}
			// The rest went with sendfile (its counter is the process's,
			// shared with the other tests).
			want := int64(len(small))
			if huge || tc.tls {
				want += int64(len(large))
			}
			if n := srv.Stats().CopiedBytes - copied; n != want {
				t.Errorf("%d bytes copied, want %d", n, want)
			}
			// The broker hands the response's spans to the set after the
			// last byte is written, so possibly after the client read it.
			if huge {
				testenv.Eventually(t, 10*time.Second, "the response's spans pending unmapping", func() bool { return pending() > before })
			} else if pending() > before {
				t.Error("response written from the mapping, want pread and sendfile")
			}
		})
	}
}
