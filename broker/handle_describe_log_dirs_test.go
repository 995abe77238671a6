package broker

import (
	"encoding/binary"
	"hash/crc32"
	"path/filepath"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/partition"
)

// logDirsBatch encodes an uncompressed magic-2 record batch of one record
// per value, as a non-idempotent producer sends it.
func logDirsBatch(values ...string) []byte {
	var recs []byte
	for i, v := range values {
		var body []byte
		body = append(body, 0)                     // attributes
		body = binary.AppendVarint(body, 0)        // timestamp delta
		body = binary.AppendVarint(body, int64(i)) // offset delta
		body = binary.AppendVarint(body, -1)       // null key
		body = binary.AppendVarint(body, int64(len(v)))
		body = append(body, v...)
		body = binary.AppendVarint(body, 0) // no headers
		recs = binary.AppendVarint(recs, int64(len(body)))
		recs = append(recs, body...)
	}
	now := time.Now().UnixMilli()
	b := binary.BigEndian.AppendUint64(nil, 0) // base offset
	b = binary.BigEndian.AppendUint32(b, 0)    // length, below
	b = binary.BigEndian.AppendUint32(b, 0)    // partition leader epoch
	b = append(b, 2)                           // magic
	b = binary.BigEndian.AppendUint32(b, 0)    // crc, below
	b = binary.BigEndian.AppendUint16(b, 0)    // attributes
	b = binary.BigEndian.AppendUint32(b, uint32(len(values)-1))
	b = binary.BigEndian.AppendUint64(b, uint64(now))
	b = binary.BigEndian.AppendUint64(b, uint64(now))
	b = binary.BigEndian.AppendUint64(b, ^uint64(0)) // producer id -1
	b = binary.BigEndian.AppendUint16(b, 0xffff)     // producer epoch -1
	b = binary.BigEndian.AppendUint32(b, 0xffffffff) // base sequence -1
	b = binary.BigEndian.AppendUint32(b, uint32(len(values)))
	b = append(b, recs...)
	binary.BigEndian.PutUint32(b[8:], uint32(len(b)-12))
	binary.BigEndian.PutUint32(b[17:], crc32.Checksum(b[21:], crc32.MakeTable(crc32.Castagnoli)))
	return b
}

// appendBatches writes n batches to one partition and returns their total
// size.
func appendBatches(t *testing.T, srv *InProcess, name string, index int32, n int) int64 {
	t.Helper()
	tp, _ := srv.Topics().Get(name)
	p := srv.Store().Partition(partition.TopicID(tp.ID), index)
	var total int64
	for i := range n {
		b := logDirsBatch("value", string(rune('a'+i%26)))
		total += int64(len(b))
		if _, err := p.Append(b, 9, time.Now().UnixMilli()); err != nil {
			t.Fatal(err)
		}
	}
	return total
}

func TestDescribeLogDirsWithKadm(t *testing.T) {
	srv := newTestServer(t, nil)
	mustCreate(t, srv, "a", 2)
	mustCreate(t, srv, "b", 1)
	sizeA0 := appendBatches(t, srv, "a", 0, 3)
	sizeB0 := appendBatches(t, srv, "b", 0, 1)
	adm := newAdmin(t, srv)
	all, err := adm.DescribeAllLogDirs(testCtx(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	dirs := all[0]
	if len(all) != 1 || len(dirs) != 1 {
		t.Fatalf("%+v", all)
	}
	abs, _ := filepath.Abs(srv.Config().DataDir)
	d, ok := dirs[abs]
	if !ok || d.Err != nil {
		t.Fatalf("dir %q not described: %+v", abs, dirs)
	}
	if d.TotalBytes <= 0 || d.UsableBytes <= 0 || d.UsableBytes > d.TotalBytes {
		t.Fatalf("total %d usable %d", d.TotalBytes, d.UsableBytes)
	}
	want := map[string]map[int32]int64{"a": {0: sizeA0, 1: 0}, "b": {0: sizeB0}}
	for name, ps := range want {
		for i, size := range ps {
			p, ok := d.Topics[name][i]
			if !ok || p.Size != size || p.OffsetLag != 0 || p.IsFuture {
				t.Fatalf("%s-%d: %+v, want size %d", name, i, p, size)
			}
		}
	}
	if d.Size() != sizeA0+sizeB0 {
		t.Fatalf("dir size %d", d.Size())
	}

	// Only what was asked for.
	var s kadm.TopicsSet
	s.Add("a", 1)
	some, err := adm.DescribeAllLogDirs(testCtx(t), s)
	if err != nil {
		t.Fatal(err)
	}
	if got := some[0][abs].Topics; len(got) != 1 || len(got["a"]) != 1 || got["a"][1].Size != 0 {
		t.Fatalf("%+v", got)
	}

	// Partitions that do not exist are left out, as in Kafka.
	req := kmsg.NewPtrDescribeLogDirsRequest()
	req.Version = 4
	for _, rt := range []struct {
		name  string
		parts []int32
	}{{"a", []int32{0, 7, 0}}, {"missing", []int32{0}}, {"a", []int32{-1, 1}}} {
		dt := kmsg.NewDescribeLogDirsRequestTopic()
		dt.Topic, dt.Partitions = rt.name, rt.parts
		req.Topics = append(req.Topics, dt)
	}
	resp := adminRequest[*kmsg.DescribeLogDirsResponse](t, srv, req)
	if ts := resp.Dirs[0].Topics; len(ts) != 1 || ts[0].Topic != "a" || len(ts[0].Partitions) != 2 ||
		ts[0].Partitions[0].Partition != 0 || ts[0].Partitions[0].Size != sizeA0 || ts[0].Partitions[1].Partition != 1 {
		t.Fatalf("%+v", ts)
	}
}

// TestDescribeLogDirsPartitionSize checks the size walk across several
// chunks of held ranges and after the log start offset moved.
func TestDescribeLogDirsPartitionSize(t *testing.T) {
	srv := newTestServer(t, nil)
	mustCreate(t, srv, "a", 1)
	tp, _ := srv.Topics().Get("a")
	p := srv.Store().Partition(partition.TopicID(tp.ID), 0)
	var total int64
	big := make([]byte, 512<<10)
	for i := range 40 { // 20 MiB: more than one sizeChunk
		big[0] = byte(i)
		b := logDirsBatch(string(big))
		total += int64(len(b))
		if _, err := p.Append(b, 9, time.Now().UnixMilli()); err != nil {
			t.Fatal(err)
		}
	}
	if got := srv.partitionSize(p); got != total {
		t.Fatalf("size %d, want %d", got, total)
	}
	if _, err := p.DeleteRecords(10); err != nil {
		t.Fatal(err)
	}
	if got, want := srv.partitionSize(p), total*30/40; got != want {
		t.Fatalf("after DeleteRecords: size %d, want %d", got, want)
	}
}

func TestDescribeLogDirsOldVersion(t *testing.T) {
	srv := newTestServer(t, nil)
	mustCreate(t, srv, "a", 1)
	req := kmsg.NewPtrDescribeLogDirsRequest()
	req.Version = 1
	resp := adminRequest[*kmsg.DescribeLogDirsResponse](t, srv, req)
	if len(resp.Dirs) != 1 || resp.Dirs[0].TotalBytes != -1 || len(resp.Dirs[0].Topics) != 1 {
		t.Fatalf("%+v", resp.Dirs)
	}
	// An empty list (not null) asks for nothing.
	req.Topics = []kmsg.DescribeLogDirsRequestTopic{}
	resp = adminRequest[*kmsg.DescribeLogDirsResponse](t, srv, req)
	if len(resp.Dirs) != 1 || len(resp.Dirs[0].Topics) != 0 {
		t.Fatalf("%+v", resp.Dirs)
	}
}

func TestDescribeLogDirsRoundTrip(t *testing.T) {
	srv := newTestServer(t, nil)
	mustCreate(t, srv, "a", 3)
	appendBatches(t, srv, "a", 1, 2)
	checkRoundTrip(t, srv, func(int16) kmsg.Request { return kmsg.NewPtrDescribeLogDirsRequest() })
	checkRoundTrip(t, srv, func(int16) kmsg.Request {
		req := kmsg.NewPtrDescribeLogDirsRequest()
		rt := kmsg.NewDescribeLogDirsRequestTopic()
		rt.Topic, rt.Partitions = "a", []int32{2, 1, 1, 9}
		req.Topics = append(req.Topics, rt, rt)
		return req
	})
}
