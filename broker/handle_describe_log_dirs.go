package broker

// DescribeLogDirs v0–v5, as Kafka 4's ReplicaManager.describeLogDirs.
//
// One log dir, the absolute path of the data directory, holding every
// partition. Topics null means every partition; otherwise the partitions
// asked for that exist (others are left out, as in Kafka). A partition's
// size is the bytes of its record batches from the log start offset to the
// high watermark; offset lag is 0 and no partition is a future replica.
// Total and usable bytes (v4+) are those of the data directory's file
// system (statfs), -1 if it cannot be read.
//
// Deviations from Apache Kafka:
//   - Sizes count batch bytes only (no indexes; the shared commit log's
//     entry headers are not attributed to partitions) and only what is
//     visible to consumers; Kafka counts its segment files.
//   - Computing a size walks the partition's batches (partitionSize); a
//     size kept by the partition would make it O(1).
//
// Versions: v1 nothing new for the broker; v2 flexible; v3 top-level error
// code (KIP-784); v4 total and usable bytes (KIP-827); v5 is_cordoned
// (KIP-1066, never set here).

import (
	"encoding/binary"
	"path/filepath"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"
	"golang.org/x/sys/unix"

	"github.com/kbroker/kbroker/partition"
	"github.com/kbroker/kbroker/topic"
)

func (b *Broker) handleDescribeLogDirs(c *conn, req *kmsg.DescribeLogDirsRequest) (result, error) {
	resp := req.ResponseKind().(*kmsg.DescribeLogDirsResponse)
	if !b.allowedCluster(c, opDescribe) {
		// Kafka: the error (v3+), no results.
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		return respond(resp)
	}
	dir := kmsg.NewDescribeLogDirsResponseDir()
	dir.Dir = b.cfg.DataDir
	if abs, err := filepath.Abs(b.cfg.DataDir); err == nil {
		dir.Dir = abs
	}
	if req.Version >= 4 {
		var st unix.Statfs_t
		if err := unix.Statfs(dir.Dir, &st); err == nil {
			dir.TotalBytes = int64(st.Blocks) * int64(st.Bsize)
			dir.UsableBytes = int64(st.Bavail) * int64(st.Bsize)
		} else {
			c.lg.Debug("statfs of the data directory", zap.String("dir", dir.Dir), zap.Error(err))
		}
	}
	if req.Topics == nil {
		for _, t := range b.topics.List() {
			dir.Topics = append(dir.Topics, b.logDirTopic(&t, nil))
		}
	} else {
		dir.Topics = b.logDirRequested(req.Topics)
	}
	resp.Dirs = []kmsg.DescribeLogDirsResponseDir{dir}
	return respond(resp)
}

// logDirRequested describes the requested partitions that exist, once
// each, merging topics named more than once.
func (b *Broker) logDirRequested(topics []kmsg.DescribeLogDirsRequestTopic) []kmsg.DescribeLogDirsResponseDirTopic {
	var out []kmsg.DescribeLogDirsResponseDirTopic
	at := make(map[string]int) // topic name -> index in out
	seen := make(map[string]map[int32]bool)
	for _, rt := range topics {
		t, ok := b.topics.Get(rt.Topic)
		if !ok {
			continue
		}
		if seen[t.Name] == nil {
			seen[t.Name] = make(map[int32]bool)
		}
		var want []int32
		for _, p := range rt.Partitions {
			if p >= 0 && p < t.Partitions && !seen[t.Name][p] {
				seen[t.Name][p] = true
				want = append(want, p)
			}
		}
		if len(want) == 0 {
			continue
		}
		dt := b.logDirTopic(&t, want)
		if i, ok := at[t.Name]; ok {
			out[i].Partitions = append(out[i].Partitions, dt.Partitions...)
			continue
		}
		at[t.Name] = len(out)
		out = append(out, dt)
	}
	return out
}

// logDirTopic describes the given partitions of t, all when nil.
func (b *Broker) logDirTopic(t *topic.Topic, parts []int32) kmsg.DescribeLogDirsResponseDirTopic {
	dt := kmsg.NewDescribeLogDirsResponseDirTopic()
	dt.Topic = t.Name
	if parts == nil {
		parts = make([]int32, t.Partitions)
		for i := range parts {
			parts[i] = int32(i)
		}
	}
	for _, i := range parts {
		dp := kmsg.NewDescribeLogDirsResponseDirTopicPartition()
		dp.Partition = i
		if p := b.store.Partition(partition.TopicID(t.ID), i); p != nil {
			dp.Size = b.partitionSize(p)
		}
		dt.Partitions = append(dt.Partitions, dp)
	}
	return dt
}

// sizeChunk bounds the bytes of batches held at once while a partition's
// size is summed.
const sizeChunk = 16 << 20

// partitionSize sums the sizes of a partition's visible record batches. The
// partition hands out batches as held file ranges, sizeChunk bytes at a
// time; the next offset after a chunk is read from the header of its last
// batch (base offset + last offset delta + 1).
func (b *Broker) partitionSize(p *partition.Partition) int64 {
	var total int64
	var ranges []partition.Range
	for off := p.LogStartOffset(); ; {
		res, rs, err := p.Read(off, sizeChunk, true, ranges[:0])
		if err != nil || len(rs) == 0 {
			partition.ReleaseRanges(rs)
			return total
		}
		total += res.Bytes
		next, ok := b.nextOffset(rs[len(rs)-1])
		partition.ReleaseRanges(rs)
		clear(rs) // drop the file pointers until the next read
		if !ok || next <= off || next >= res.HighWatermark {
			return total
		}
		off, ranges = next, rs
	}
}

// nextOffset reads the offset after the batch in r from its header
// (baseOffset at byte 0, lastOffsetDelta at byte 23), copying it out of
// the mapping with CopyTo so that a media error is an error, not a fault;
// r may be in the commit log or a compacted partition's clean store. r
// must still be held.
func (b *Broker) nextOffset(r partition.Range) (int64, bool) {
	var hdr [27]byte
	if r.Len < int64(len(hdr)) {
		return 0, false
	}
	if err := r.File.CopyTo(hdr[:], r.Offset); err != nil {
		return 0, false
	}
	base := int64(binary.BigEndian.Uint64(hdr[0:8]))
	delta := int64(int32(binary.BigEndian.Uint32(hdr[23:27])))
	return base + delta + 1, true
}
