package broker

import (
	"bytes"
	"context"
	"fmt"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"go.uber.org/zap/zaptest"

	"github.com/kbroker/kbroker/partition/batch"
)

// diskFullRec is an acknowledged record: where it went and what it holds.
type diskFullRec struct {
	offset int64
	value  []byte
}

// produceBatch sends one batch of n 16 KiB records (acks=-1) and returns
// the error code and base offset; acknowledged records are appended to
// acked.
func produceBatch(t *testing.T, w *wireConn, topic string, n, id int, acked *[]diskFullRec) int16 {
	t.Helper()
	recs := make([]batch.KeyValue, n)
	for i := range recs {
		v := bytes.Repeat(fmt.Appendf(nil, "batch %d record %d;", id, i), 1+(16<<10)/20)
		recs[i] = batch.KeyValue{Key: fmt.Appendf(nil, "%d-%d", id, i), Value: v}
	}
	b := batch.AppendBuild(nil, batch.BuildOptions{Timestamp: time.Now().UnixMilli(), ProducerID: -1, ProducerEpoch: -1}, recs)
	sp := producePart(t, w.do(produceReq(9, -1, topic, 0, b)))
	if sp.ErrorCode == 0 {
		for i, r := range recs {
			*acked = append(*acked, diskFullRec{sp.BaseOffset + int64(i), r.Value})
		}
	}
	return sp.ErrorCode
}

// checkRecords reads partition 0 of topic from the start and compares it
// with acked: every acknowledged record at its offset, nothing else.
func checkRecords(t *testing.T, srv *InProcess, topic string, acked []diskFullRec) {
	t.Helper()
	cl := newClient(t, srv, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}),
		kgo.FetchMaxWait(100*time.Millisecond))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var got []*kgo.Record
	for len(got) < len(acked) {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read %d of %d acknowledged records", len(got), len(acked))
		}
		fs.EachError(func(_ string, _ int32, err error) { t.Fatalf("fetch: %v", err) })
		got = append(got, fs.Records()...)
	}
	for i, a := range acked {
		if got[i].Offset != a.offset || !bytes.Equal(got[i].Value, a.value) {
			t.Fatalf("record %d: offset %d (%d bytes), acknowledged at offset %d", i, got[i].Offset, len(got[i].Value), a.offset)
		}
	}
	if hw := fs0HighWatermark(t, srv, topic); hw != int64(len(acked)) {
		t.Fatalf("high watermark %d, %d records acknowledged: failed produces must not take offsets", hw, len(acked))
	}
}

func fs0HighWatermark(t *testing.T, srv *InProcess, topic string) int64 {
	t.Helper()
	return latestOffset(t, dialWire(t, srv), topic, 0)
}

// TestDiskFullAllocation: the commit log's allocation hook makes creating
// the next commit-log file fail with ENOSPC, as a full disk does. Producing
// goes on into the files already allocated (the current one and the one
// prepared ahead), then every produce gets KAFKA_STORAGE_ERROR, and the
// broker stays up and serves fetches. Once space is back (the hook
// cleared) the next produce allocates the file and succeeds: a failed
// allocation is not sticky, no restart is needed. Every acknowledged
// record is there, at consecutive offsets (refused batches take none),
// and still is after a restart.
func TestDiskFullAllocation(t *testing.T) {
	var full atomic.Bool
	var refused atomic.Int64
	hook := func(path string, size int64) error {
		if full.Load() {
			refused.Add(1)
			return fmt.Errorf("simulated full disk: %w", syscall.ENOSPC)
		}
		return nil
	}
	dir := t.TempDir()
	edit := func(c *Config) { c.SegmentBytes = 1 << 20 }
	start := func(hook func(string, int64) error) *InProcess {
		srv, err := StartInProcess(dir, edit, WithLogger(zaptest.NewLogger(t)), func(b *Broker) { b.allocHook = hook })
		if err != nil {
			t.Fatal(err)
		}
		return srv
	}
	srv := start(hook)
	defer func() { srv.Close() }()
	const topic = "disk-full"
	dataTopic(t, srv, topic, 1, nil)
	w := dialWire(t, srv)

	var acked []diskFullRec
	id := 0
	for range 40 { // 2.5 MiB: three 1 MiB files
		if code := produceBatch(t, w, topic, 4, id, &acked); code != 0 {
			t.Fatalf("produce before the disk is full: %v", kerr.ErrorForCode(code))
		}
		id++
	}

	full.Store(true)
	var code int16
	accepted := 0
	for ; accepted < 200; accepted++ {
		if code = produceBatch(t, w, topic, 4, id, &acked); code != 0 {
			break
		}
		id++
	}
	if code != kerr.KafkaStorageError.Code {
		t.Fatalf("produce on a full disk: got %v after %d batches, want KAFKA_STORAGE_ERROR", kerr.ErrorForCode(code), accepted)
	}
	if refused.Load() == 0 {
		t.Fatal("the allocation hook refused nothing")
	}
	t.Logf("disk full: %d batches went into the files allocated ahead, then KAFKA_STORAGE_ERROR (%d allocations refused)", accepted, refused.Load())
	for range 3 {
		if code := produceBatch(t, w, topic, 4, id, &acked); code != kerr.KafkaStorageError.Code {
			t.Fatalf("produce while the disk stays full: %v, want KAFKA_STORAGE_ERROR", kerr.ErrorForCode(code))
		}
		id++
	}
	// Reads go on meanwhile.
	checkRecords(t, srv, topic, acked)

	// Space is back: producing resumes at once, without a restart.
	full.Store(false)
	for range 60 { // into new files
		if code := produceBatch(t, w, topic, 4, id, &acked); code != 0 {
			t.Fatalf("produce once space is back: %v", kerr.ErrorForCode(code))
		}
		id++
	}
	checkRecords(t, srv, topic, acked)

	if err := srv.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	srv = start(nil)
	checkRecords(t, srv, topic, acked)
	t.Logf("%d acknowledged records intact after the disk was full and after a restart", len(acked))
}
