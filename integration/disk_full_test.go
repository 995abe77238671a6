package integration

// A real full disk: the broker binary's data directory on a 64 MiB tmpfs
// that the test mounts (root or CAP_SYS_ADMIN; skipped elsewhere), with
// 1 MiB commit-log files (the smallest log.segment.bytes).

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/partition/batch"
)

// startBinaryIn is startBinary with the data directory dir.
func startBinaryIn(t *testing.T, dir string, args ...string) *binaryBroker {
	t.Helper()
	b := &binaryBroker{path: kbrokerBinary(t), args: args, dir: dir, logs: &lockedBuffer{}}
	t.Cleanup(func() {
		b.stop(t)
		if t.Failed() {
			t.Logf("log of kbroker %s:\n%s", strings.Join(b.args, " "), b.logs)
		}
	})
	b.start(t)
	return b
}

// mountTmpfs mounts a tmpfs of size bytes on a new temporary directory,
// unmounted at cleanup, or skips the test where mounting is not allowed.
// Call it before starting a broker on it: cleanups run last first, so the
// broker is stopped before the unmount.
func mountTmpfs(t *testing.T, size int64) string {
	t.Helper()
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, fmt.Sprintf("size=%d", size)); err != nil {
		t.Skipf("cannot mount a tmpfs for a full disk (needs root or CAP_SYS_ADMIN): %v", err)
	}
	t.Cleanup(func() {
		if err := syscall.Unmount(dir, 0); err != nil {
			t.Errorf("unmount %s: %v", dir, err)
		}
	})
	return dir
}

// fsFreeBytes is the space left on the filesystem holding dir.
func fsFreeBytes(dir string) int64 {
	var st syscall.Statfs_t
	if syscall.Statfs(dir, &st) != nil {
		return -1
	}
	return int64(st.Bavail) * st.Bsize
}

// rawProducer is a raw connection for produce requests whose error codes the
// test must see (a client would retry KAFKA_STORAGE_ERROR).
type rawProducer struct {
	nc   net.Conn
	br   *bufio.Reader
	corr int32
}

func dialRawProducer(t *testing.T, addr string) *rawProducer {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	return &rawProducer{nc: nc, br: bufio.NewReader(nc)}
}

// produce sends one batch of n records of size bytes each (acks=-1) to
// partition 0 of topic and returns the error code and base offset.
func (w *rawProducer) produce(t *testing.T, topic string, n, size, id int) (int16, int64, [][]byte) {
	t.Helper()
	var values [][]byte
	recs := make([]batch.KeyValue, n)
	for i := range recs {
		v := bytes.Repeat(fmt.Appendf(nil, "%s batch %d record %d;", topic, id, i), 1+size/10)[:size]
		values = append(values, v)
		recs[i] = batch.KeyValue{Key: fmt.Appendf(nil, "%d-%d", id, i), Value: v}
	}
	req := kmsg.NewPtrProduceRequest()
	req.Acks, req.TimeoutMillis = -1, 10000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Records = batch.AppendBuild(nil, batch.BuildOptions{Timestamp: time.Now().UnixMilli(), ProducerID: -1, ProducerEpoch: -1}, recs)
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	w.corr++
	body := hostileFrameOf(req, 9, w.corr, "disk-full")
	w.nc.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := w.nc.Write(append(binary.BigEndian.AppendUint32(nil, uint32(len(body))), body...)); err != nil {
		t.Fatalf("produce to %s: %v", topic, err)
	}
	var hdr [4]byte
	if _, err := io.ReadFull(w.br, hdr[:]); err != nil {
		t.Fatalf("produce to %s: read answer: %v", topic, err)
	}
	b := make([]byte, binary.BigEndian.Uint32(hdr[:]))
	if _, err := io.ReadFull(w.br, b); err != nil {
		t.Fatalf("produce to %s: read answer: %v", topic, err)
	}
	resp := kmsg.NewPtrProduceResponse()
	resp.Version = 9
	rest := b[4:]
	// v9 is flexible: skip the response header's tagged fields (none).
	if len(rest) == 0 || rest[0] != 0 {
		t.Fatalf("produce to %s: unexpected response header", topic)
	}
	if err := resp.ReadFrom(rest[1:]); err != nil {
		t.Fatalf("produce to %s: decode answer: %v", topic, err)
	}
	p := resp.Topics[0].Partitions[0]
	return p.ErrorCode, p.BaseOffset, values
}

// TestDiskFullTmpfs fills a 64 MiB tmpfs under the broker binary: the
// commit-log files are fallocated before they are mapped, so running out
// of space is an error at allocation (KAFKA_STORAGE_ERROR), never a SIGBUS
// on a store into an unbacked page. A topic created once the disk is full
// gets KAFKA_STORAGE_ERROR too. A restart on the full disk is clean.
// Deleting the topic that filled the disk
// frees its consume queue at once and its commit-log files at the next
// retention check; producing then resumes, on every topic, without a
// restart. Every acknowledged record is intact, and after a restart too.
func TestDiskFullTmpfs(t *testing.T) {
	t.Parallel()
	mnt := mountTmpfs(t, 64<<20)
	dir := filepath.Join(mnt, "data")
	o := brokerOpts{props: map[string]string{"log.retention.check.interval.ms": "200"}}
	o.check(t)
	b := startBinaryIn(t, dir, append(o.args(t), "--segment-bytes", "1048576")...)
	adm := newAdmin(t, b.Addr())
	for _, topic := range []string{"good", "hog"} {
		if _, err := adm.CreateTopic(testCtx(t), 1, 1, nil, topic); err != nil {
			t.Fatal(err)
		}
	}
	w := dialRawProducer(t, b.Addr())
	type rec struct {
		offset int64
		value  []byte
	}
	var acked []rec
	produceGood := func(id int) int16 {
		code, base, values := w.produce(t, "good", 4, 4<<10, id)
		if code == 0 {
			for i, v := range values {
				acked = append(acked, rec{base + int64(i), v})
			}
		}
		return code
	}
	// hog writes first (30 MiB), good after it, then hog until the disk
	// is full: deleting hog then frees its consume queue at once and, at
	// the next retention check, the commit-log files before good's first
	// entry (files are deleted oldest first).
	hogged, code := 0, int16(0)
	for ; hogged < 480; hogged++ {
		if code, _, _ = w.produce(t, "hog", 4, 16<<10, hogged); code != 0 {
			t.Fatalf("produce to hog: %v", kerr.ErrorForCode(code))
		}
	}
	id := 0
	for range 50 {
		if code := produceGood(id); code != 0 {
			t.Fatalf("produce to good: %v", kerr.ErrorForCode(code))
		}
		id++
	}
	for ; hogged < 2000; hogged++ {
		if code, _, _ = w.produce(t, "hog", 4, 16<<10, hogged); code != 0 {
			break
		}
	}
	if code != kerr.KafkaStorageError.Code {
		t.Fatalf("filling the disk: %v after %d batches of 64 KiB, want KAFKA_STORAGE_ERROR", kerr.ErrorForCode(code), hogged)
	}
	free := fsFreeBytes(mnt)
	t.Logf("disk full after %d batches of 64 KiB to hog (%s left): KAFKA_STORAGE_ERROR", hogged, fmtMiB(free))
	if code, _, _ := w.produce(t, "good", 4, 16<<10, id); code != kerr.KafkaStorageError.Code {
		t.Errorf("produce to good on the full disk: %v, want KAFKA_STORAGE_ERROR", kerr.ErrorForCode(code))
	}
	// A topic created now: its first produce needs a consume-queue file
	// (one page) and room in the commit log's allocated part. Creating it
	// writes the topic registry, which itself fails when the last
	// allocation left no byte free; either outcome is an answer. So is
	// the produce: KAFKA_STORAGE_ERROR, or success when its few KiB still
	// fit (files take disk as they fill, so a small batch may).
	lateCreated := true
	if res, err := adm.CreateTopic(testCtx(t), 1, 1, nil, "late"); err != nil || res.Err != nil {
		lateCreated = false
		t.Logf("create topic late on the full disk: %v %v", err, res.Err)
	}
	if code, _, _ := w.produce(t, "late", 1, 1<<10, 0); lateCreated && code != kerr.KafkaStorageError.Code && code != 0 {
		t.Errorf("first produce to a topic created on the full disk: %v, want KAFKA_STORAGE_ERROR or success", kerr.ErrorForCode(code))
	} else if lateCreated {
		t.Logf("first produce of 1 KiB to a topic created on the full disk: %v", kerr.ErrorForCode(code))
	} else if !lateCreated && code != kerr.UnknownTopicOrPartition.Code {
		t.Errorf("produce to a topic whose creation failed: %v, want UNKNOWN_TOPIC_OR_PARTITION", kerr.ErrorForCode(code))
	}
	select {
	case <-b.exited:
		t.Fatalf("the broker died on the full disk: %v", b.err)
	default:
	}
	checkGood := func(when string) {
		t.Helper()
		cl := newKgo(t, b.Addr(), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"good": {0: kgo.NewOffset().AtStart()}}), kgo.FetchMaxWait(100*time.Millisecond))
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		var got []*kgo.Record
		for len(got) < len(acked) {
			fs := cl.PollFetches(ctx)
			if ctx.Err() != nil {
				t.Fatalf("%s: read %d of %d acknowledged records of good", when, len(got), len(acked))
			}
			got = append(got, fs.Records()...)
		}
		for i, a := range acked {
			if got[i].Offset != a.offset || !bytes.Equal(got[i].Value, a.value) {
				t.Fatalf("%s: record %d of good is at offset %d, acknowledged at %d (or its value differs)", when, i, got[i].Offset, a.offset)
			}
		}
		cl.Close()
	}
	checkGood("disk full")

	// A restart on the full disk is clean: the stop flushes and
	// checkpoints, the start needs no space, everything is readable and
	// produce still gets KAFKA_STORAGE_ERROR.
	b.Restart(t)
	w = dialRawProducer(t, b.Addr())
	adm = newAdmin(t, b.Addr())
	checkGood("after a restart on the full disk")
	if code, _, _ := w.produce(t, "good", 4, 16<<10, id); code != kerr.KafkaStorageError.Code {
		t.Errorf("produce to good after a restart on the full disk: %v, want KAFKA_STORAGE_ERROR", kerr.ErrorForCode(code))
	}

	// Free space: delete hog. Producing resumes once retention has
	// deleted the commit-log files that only hog needed.
	if _, err := adm.DeleteTopics(testCtx(t), "hog"); err != nil {
		t.Fatalf("delete topic hog on the full disk: %v", err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		code := produceGood(id)
		id++
		if code == 0 {
			break
		}
		if code != kerr.KafkaStorageError.Code || time.Now().After(deadline) {
			t.Fatalf("produce to good after deleting hog: %v (%s free)", kerr.ErrorForCode(code), fmtMiB(fsFreeBytes(mnt)))
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("after deleting hog: %s free, producing resumed", fmtMiB(fsFreeBytes(mnt)))
	// Retention deletes the files before good's first entry.
	for fsFreeBytes(mnt) < 32<<20 {
		if time.Now().After(deadline) {
			t.Fatalf("retention freed no commit-log files of the deleted topic within 30 s: %s free", fmtMiB(fsFreeBytes(mnt)))
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("after the retention check: %s free", fmtMiB(fsFreeBytes(mnt)))
	for range 50 {
		if code := produceGood(id); code != 0 {
			t.Fatalf("produce to good after space was freed: %v", kerr.ErrorForCode(code))
		}
		id++
	}
	if !lateCreated {
		if _, err := adm.CreateTopic(testCtx(t), 1, 1, nil, "late"); err != nil {
			t.Fatalf("create topic late after space was freed: %v", err)
		}
	}
	if code, _, _ := w.produce(t, "late", 1, 1<<10, 1); code != 0 {
		t.Errorf("produce to late after space was freed: %v", kerr.ErrorForCode(code))
	}
	checkGood("after freeing space")

	b.Restart(t)
	w = dialRawProducer(t, b.Addr())
	checkGood("after a restart")
	if code := produceGood(id); code != 0 {
		t.Fatalf("produce to good after the restart: %v", kerr.ErrorForCode(code))
	}
	if code, _, _ := w.produce(t, "late", 1, 1<<10, 2); code != 0 {
		t.Errorf("produce to late after the restart: %v", kerr.ErrorForCode(code))
	}
	logs := b.logs.String()
	for _, l := range brokerLogProblems(logs) {
		t.Errorf("broker log: %s", l)
	}
	warned := strings.Count(logs, "produce refused: storage error")
	if warned == 0 {
		t.Error("the broker logged no warning for the produce requests refused on the full disk")
	}
	t.Logf("%d acknowledged records of good intact; %d storage-error warnings logged", len(acked), warned)
}
