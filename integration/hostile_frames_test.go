package integration

// The inputs of TestHostileInput: real request frames for every API the
// broker serves at every version it serves (built with kmsg, with content
// that reaches the handlers: existing topics, record batches of every
// codec, groups, transactional ids), frames captured from kgo and kadm
// traffic, and the mutations applied to them.
//
// Every name in these frames is a "hostile" one (topics h-*, groups hg-*,
// transactional ids htx-*): no mutation of them can name the well-behaved
// clients' topic or group, so whatever the hostile requests do (delete
// topics, delete records, alter configs, commit offsets) must leave the
// good data alone because of the broker's correctness, not by luck.

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"math"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	kgzip "github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/snappy"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/internal/testenv"
	"github.com/kbroker/kbroker/partition/batch"
)

// hostileFrame is one unmutated request frame, without its size prefix.
type hostileFrame struct {
	name string
	key  int16
	body []byte
	// batchAt and batchLen locate a record batch inside body (produce
	// frames), so that mutations can change the batch and then fix its
	// CRC, reaching the validation behind the CRC check; batchLen 0: none.
	batchAt, batchLen int
}

// hostileEnv is what the frame builders put into requests.
type hostileEnv struct {
	topics   []string            // existing hostile topics (3 partitions each)
	ids      map[string][16]byte // their topic ids
	newNames []string            // topic names for CreateTopics/DeleteTopics
	groups   []string
	txnIDs   []string
	batches  []hostileBatch
}

type hostileBatch struct {
	name string
	b    []byte
}

// pickBatch picks a batch that is not a decompression bomb: bombs go only
// in the frames of bombFrames, whose number in flight the test bounds (a
// bomb costs the broker up to its 64 MiB bound of decompression CPU).
func (env *hostileEnv) pickBatch(rng *rand.Rand) []byte {
	for {
		if hb := env.batches[rng.IntN(len(env.batches))]; !strings.HasPrefix(hb.name, "bomb ") {
			return hb.b
		}
	}
}

var hostileCRCTable = crc32.MakeTable(crc32.Castagnoli)

// fixBatchCRC recomputes the CRC of the RecordBatch v2 at the start of b
// (as far as b reaches).
func fixBatchCRC(b []byte) {
	if len(b) < batch.RecordsOffset {
		return
	}
	binary.BigEndian.PutUint32(b[batch.CRCOffset:], crc32.Checksum(b[batch.AttributesOffset:], hostileCRCTable))
}

// hostileBuildBatch builds a RecordBatch v2 of n records with the given codec
// (0 none, 1 gzip, 2 snappy, 3 lz4, 4 zstd), as a producer sends it.
func hostileBuildBatch(rng *rand.Rand, codec int16, n, valueSize int, pid int64, epoch int16, seq int32) []byte {
	recs := make([]batch.KeyValue, n)
	for i := range recs {
		v := make([]byte, valueSize)
		for j := range v {
			v[j] = byte('a' + rng.IntN(4)) // compressible, not trivially
		}
		recs[i] = batch.KeyValue{Key: fmt.Appendf(nil, "k%d", i), Value: v}
	}
	b := batch.AppendBuild(nil, batch.BuildOptions{Timestamp: time.Now().UnixMilli(), ProducerID: pid, ProducerEpoch: epoch}, recs)
	binary.BigEndian.PutUint32(b[batch.BaseSequenceOffset:], uint32(seq))
	if codec != 0 {
		b = hostileRecompress(b, codec, hostileCompress(codec, b[batch.RecordsOffset:]))
	}
	fixBatchCRC(b)
	return b
}

// hostileRecompress replaces the records section of the uncompressed batch b with
// payload, marked as compressed with codec, and fixes length and CRC.
func hostileRecompress(b []byte, codec int16, payload []byte) []byte {
	out := append(append([]byte(nil), b[:batch.RecordsOffset]...), payload...)
	binary.BigEndian.PutUint32(out[batch.LengthOffset:], uint32(len(out)-batch.LogOverhead))
	attrs := binary.BigEndian.Uint16(out[batch.AttributesOffset:])
	binary.BigEndian.PutUint16(out[batch.AttributesOffset:], attrs&^7|uint16(codec))
	fixBatchCRC(out)
	return out
}

// hostileCompress encodes data with a Kafka codec as producers frame it.
func hostileCompress(codec int16, data []byte) []byte {
	var buf bytes.Buffer
	switch codec {
	case 1:
		w := kgzip.NewWriter(&buf)
		w.Write(data)
		w.Close()
	case 2:
		return snappy.Encode(nil, data)
	case 3:
		w := lz4.NewWriter(&buf)
		w.Write(data)
		w.Close()
	case 4:
		enc, _ := zstd.NewWriter(nil)
		out := enc.EncodeAll(data, nil)
		enc.Close()
		return out
	}
	return buf.Bytes()
}

// hostileBatches is the pool of record batches the produce frames carry:
// valid ones of every codec, and broken ones — a bad CRC, garbage in
// place of a compressed payload (with a matching CRC, so it reaches the
// decompressor), compressed payloads cut short, decompression bombs (a few
// KiB that expand to hundreds of MiB), and header fields out of range.
func hostileBatches(rng *rand.Rand) []hostileBatch {
	var out []hostileBatch
	add := func(name string, b []byte) { out = append(out, hostileBatch{name, b}) }
	codecs := []string{"none", "gzip", "snappy", "lz4", "zstd"}
	for c := int16(0); c <= 4; c++ {
		add("valid "+codecs[c], hostileBuildBatch(rng, c, 1+rng.IntN(20), rng.IntN(300), -1, -1, -1))
		add("idempotent "+codecs[c], hostileBuildBatch(rng, c, 5, 50, int64(rng.IntN(1000)), 0, int32(rng.IntN(10))))
		if c == 0 {
			continue
		}
		good := hostileBuildBatch(rng, c, 10, 100, -1, -1, -1)
		bad := append([]byte(nil), good...)
		bad[len(bad)/2+batch.RecordsOffset/2] ^= 0x5a
		add("bad crc "+codecs[c], bad)
		garbage := make([]byte, 64+rng.IntN(2000))
		for i := range garbage {
			garbage[i] = byte(rng.Uint32())
		}
		add("garbage "+codecs[c], hostileRecompress(good[:batch.RecordsOffset], c, garbage))
		payload := good[batch.RecordsOffset:]
		add("cut "+codecs[c], hostileRecompress(good[:batch.RecordsOffset], c, payload[:len(payload)/2]))
		flipped := append([]byte(nil), payload...)
		for range 3 {
			flipped[rng.IntN(len(flipped))] ^= byte(1 << rng.IntN(8))
		}
		add("flipped "+codecs[c], hostileRecompress(good[:batch.RecordsOffset], c, flipped))
		// A bomb: one record whose value is 200 MiB of zeros (the
		// records section is built by hand; the value never exists).
		add("bomb "+codecs[c], hostileRecompress(good[:batch.RecordsOffset], c, hostileBomb(c, bombSize)))
	}
	// Header fields out of range, CRC fixed so the checks behind it run.
	for _, f := range []struct {
		name string
		off  int
		v    uint32
	}{
		{"negative record count", batch.NumRecordsOffset, 0xffffffff},
		{"huge record count", batch.NumRecordsOffset, 0x7fffffff},
		{"huge last offset delta", batch.LastOffsetDeltaOffset, 0x7fffffff},
		{"negative length", batch.LengthOffset, 0xfffffff0},
		{"huge length", batch.LengthOffset, 0x7ffffff0},
		{"codec 7", batch.AttributesOffset - 2, 7},
		{"magic 1", batch.MagicOffset - 3, 1},
	} {
		b := hostileBuildBatch(rng, int16(rng.IntN(5)), 3, 20, -1, -1, -1)
		binary.BigEndian.PutUint32(b[f.off:], f.v)
		fixBatchCRC(b)
		add(f.name, b)
	}
	return out
}

// bombSize is what a decompression bomb expands to: above the broker's
// bound on decompressed batches (64 MiB by default).
const bombSize = 80 << 20

// hostileBomb compresses the records section of one record with a value of n
// zero bytes (n a multiple of 1 MiB) without compressing n bytes: gzip
// members, lz4 frames and zstd frames may be concatenated, so the section
// is the record's header, then one compressed MiB of zeros repeated, then
// the record's end, each compressed on its own.
func hostileBomb(codec int16, n int) []byte {
	var rec []byte
	size := 3 + hostileVarintLen(-1) + hostileVarintLen(int64(n)) + n + 1 // attrs, ts delta, offset delta, null key, value, no headers
	rec = binary.AppendVarint(rec, int64(size))
	rec = append(rec, 0, 0, 0)
	rec = binary.AppendVarint(rec, -1)
	rec = binary.AppendVarint(rec, int64(n))
	if codec == 2 {
		// Raw snappy has no concatenation (and expands at most ~21x),
		// but a block declares its length first: a few bytes that
		// declare 60 MiB (within the bound) are allocated for before
		// the block fails to decode.
		return append(binary.AppendUvarint(nil, 60<<20), 0x0c, 'j', 'u', 'n', 'k')
	}
	zeros := hostileCompress(codec, make([]byte, 1<<20))
	out := hostileCompress(codec, rec)
	for range n >> 20 {
		out = append(out, zeros...)
	}
	return append(out, hostileCompress(codec, []byte{0})...)
}

func hostileVarintLen(v int64) int {
	var b [binary.MaxVarintLen64]byte
	return binary.PutVarint(b[:], v)
}

// hostileFrameOf encodes req at version as a frame body (header and request,
// without the size prefix), as kgo frames it.
func hostileFrameOf(req kmsg.Request, version int16, corr int32, clientID string) []byte {
	req.SetVersion(version)
	rf := kmsg.NewRequestFormatter(kmsg.FormatterClientID(clientID))
	return rf.AppendRequest(nil, req, corr)[4:]
}

// hostileRequest returns a request of key with content from env, or the
// empty request of that key where no builder exists.
func hostileRequest(key int16, env *hostileEnv, rng *rand.Rand) kmsg.Request {
	pick := func(s []string) string { return s[rng.IntN(len(s))] }
	topic := func() string { return pick(env.topics) }
	part := func() int32 { return int32(rng.IntN(4)) } // 3 exist: one is unknown
	offset := func() int64 { return []int64{0, 1, 5, -1, -2, math.MaxInt64, 1 << 40}[rng.IntN(7)] }
	group := func() string { return pick(env.groups) }
	txnID := func() string { return pick(env.txnIDs) }
	pidOf := func() int64 { return int64(rng.IntN(4000)) - 1 }
	consumerMeta := func() []byte {
		m := kmsg.NewConsumerMemberMetadata()
		m.Version = int16(rng.IntN(4))
		m.Topics = []string{topic(), topic()}
		return m.AppendTo(nil)
	}
	consumerAssignment := func() []byte {
		a := kmsg.NewConsumerMemberAssignment()
		at := kmsg.NewConsumerMemberAssignmentTopic()
		at.Topic, at.Partitions = topic(), []int32{0, 1, 2}
		a.Topics = append(a.Topics, at)
		return a.AppendTo(nil)
	}
	switch key {
	case 0: // Produce
		r := kmsg.NewPtrProduceRequest()
		r.Acks = []int16{-1, 1, 0, 1, -1}[rng.IntN(5)]
		r.TimeoutMillis = 5000
		if rng.IntN(6) == 0 {
			r.TransactionID = kmsg.StringPtr(txnID())
		}
		for range 1 + rng.IntN(2) {
			t := kmsg.NewProduceRequestTopic()
			t.Topic = topic()
			t.TopicID = env.ids[t.Topic]
			for range 1 + rng.IntN(2) {
				p := kmsg.NewProduceRequestTopicPartition()
				p.Partition = part()
				p.Records = env.pickBatch(rng)
				t.Partitions = append(t.Partitions, p)
			}
			r.Topics = append(r.Topics, t)
		}
		return r
	case 1: // Fetch
		r := kmsg.NewPtrFetchRequest()
		r.ReplicaID = -1
		r.MaxWaitMillis = int32(rng.IntN(300))
		r.MinBytes = int32(rng.IntN(2))
		r.MaxBytes = []int32{1 << 20, 50 << 20, math.MaxInt32, 0}[rng.IntN(4)]
		r.IsolationLevel = int8(rng.IntN(2))
		if rng.IntN(3) == 0 {
			r.SessionID, r.SessionEpoch = int32(rng.IntN(5)), int32(rng.IntN(3))-1
		}
		for range 1 + rng.IntN(2) {
			t := kmsg.NewFetchRequestTopic()
			t.Topic = topic()
			t.TopicID = env.ids[t.Topic]
			for range 1 + rng.IntN(3) {
				p := kmsg.NewFetchRequestTopicPartition()
				p.Partition = part()
				p.FetchOffset = offset()
				p.PartitionMaxBytes = []int32{1 << 20, math.MaxInt32, 1}[rng.IntN(3)]
				p.CurrentLeaderEpoch = int32(rng.IntN(2)) - 1
				t.Partitions = append(t.Partitions, p)
			}
			r.Topics = append(r.Topics, t)
		}
		if rng.IntN(4) == 0 {
			ft := kmsg.NewFetchRequestForgottenTopic()
			ft.Topic = topic()
			ft.TopicID = env.ids[ft.Topic]
			ft.Partitions = []int32{0, 7}
			r.ForgottenTopics = append(r.ForgottenTopics, ft)
		}
		return r
	case 2: // ListOffsets
		r := kmsg.NewPtrListOffsetsRequest()
		r.ReplicaID = -1
		r.IsolationLevel = int8(rng.IntN(2))
		t := kmsg.NewListOffsetsRequestTopic()
		t.Topic = topic()
		for range 1 + rng.IntN(3) {
			p := kmsg.NewListOffsetsRequestTopicPartition()
			p.Partition = part()
			p.CurrentLeaderEpoch = -1
			// Latest, earliest, max timestamp, local log start, and
			// real timestamps (these read batches, decompressing them).
			p.Timestamp = []int64{-1, -2, -3, -4, -5, 0, time.Now().UnixMilli() - 1000, time.Now().UnixMilli() + 1e6}[rng.IntN(8)]
			p.MaxNumOffsets = 1
			t.Partitions = append(t.Partitions, p)
		}
		r.Topics = append(r.Topics, t)
		return r
	case 3: // Metadata
		r := kmsg.NewPtrMetadataRequest()
		if rng.IntN(3) > 0 {
			for range 1 + rng.IntN(3) {
				mt := kmsg.NewMetadataRequestTopic()
				name := topic()
				if rng.IntN(3) == 0 {
					name = pick(env.newNames) // auto-created
				}
				mt.Topic = kmsg.StringPtr(name)
				r.Topics = append(r.Topics, mt)
			}
		}
		r.AllowAutoTopicCreation = rng.IntN(2) == 0
		r.IncludeTopicAuthorizedOperations = rng.IntN(2) == 0
		return r
	case 8: // OffsetCommit
		r := kmsg.NewPtrOffsetCommitRequest()
		r.Group = group()
		r.Generation = int32(rng.IntN(3)) - 1
		r.RetentionTimeMillis = -1
		t := kmsg.NewOffsetCommitRequestTopic()
		t.Topic = topic()
		t.TopicID = env.ids[t.Topic]
		p := kmsg.NewOffsetCommitRequestTopicPartition()
		p.Partition, p.Offset, p.Metadata = part(), offset(), kmsg.StringPtr("meta")
		t.Partitions = append(t.Partitions, p)
		r.Topics = append(r.Topics, t)
		return r
	case 9: // OffsetFetch
		r := kmsg.NewPtrOffsetFetchRequest()
		r.Group = group()
		g := kmsg.NewOffsetFetchRequestGroup()
		g.Group = r.Group
		if rng.IntN(2) == 0 {
			t := kmsg.NewOffsetFetchRequestTopic()
			t.Topic, t.Partitions = topic(), []int32{0, 1}
			r.Topics = append(r.Topics, t)
			gt := kmsg.NewOffsetFetchRequestGroupTopic()
			gt.Topic, gt.Partitions = t.Topic, t.Partitions
			g.Topics = append(g.Topics, gt)
		}
		r.Groups = append(r.Groups, g)
		r.RequireStable = rng.IntN(2) == 0
		return r
	case 10: // FindCoordinator
		r := kmsg.NewPtrFindCoordinatorRequest()
		r.CoordinatorType = int8(rng.IntN(2))
		if r.CoordinatorType == 0 {
			r.CoordinatorKey = group()
		} else {
			r.CoordinatorKey = txnID()
		}
		r.CoordinatorKeys = []string{r.CoordinatorKey}
		return r
	case 11: // JoinGroup
		r := kmsg.NewPtrJoinGroupRequest()
		r.Group = group()
		r.SessionTimeoutMillis = int32(6000 + rng.IntN(6000))
		r.RebalanceTimeoutMillis = int32(500 + rng.IntN(2000))
		if rng.IntN(2) == 0 {
			r.MemberID = fmt.Sprintf("member-%d", rng.IntN(5))
		}
		if rng.IntN(4) == 0 {
			r.InstanceID = kmsg.StringPtr(fmt.Sprintf("instance-%d", rng.IntN(3)))
		}
		r.ProtocolType = "consumer"
		for _, name := range []string{"range", "cooperative-sticky"}[:1+rng.IntN(2)] {
			p := kmsg.NewJoinGroupRequestProtocol()
			p.Name, p.Metadata = name, consumerMeta()
			r.Protocols = append(r.Protocols, p)
		}
		return r
	case 12: // Heartbeat
		r := kmsg.NewPtrHeartbeatRequest()
		r.Group, r.Generation, r.MemberID = group(), int32(rng.IntN(4)), fmt.Sprintf("member-%d", rng.IntN(5))
		return r
	case 13: // LeaveGroup
		r := kmsg.NewPtrLeaveGroupRequest()
		r.Group, r.MemberID = group(), fmt.Sprintf("member-%d", rng.IntN(5))
		m := kmsg.NewLeaveGroupRequestMember()
		m.MemberID = r.MemberID
		r.Members = append(r.Members, m)
		return r
	case 14: // SyncGroup
		r := kmsg.NewPtrSyncGroupRequest()
		r.Group, r.Generation, r.MemberID = group(), int32(rng.IntN(4)), fmt.Sprintf("member-%d", rng.IntN(5))
		r.ProtocolType, r.Protocol = kmsg.StringPtr("consumer"), kmsg.StringPtr("range")
		a := kmsg.NewSyncGroupRequestGroupAssignment()
		a.MemberID, a.MemberAssignment = r.MemberID, consumerAssignment()
		r.GroupAssignment = append(r.GroupAssignment, a)
		return r
	case 15: // DescribeGroups
		r := kmsg.NewPtrDescribeGroupsRequest()
		r.Groups = []string{group(), group()}
		return r
	case 19: // CreateTopics
		r := kmsg.NewPtrCreateTopicsRequest()
		r.TimeoutMillis = 5000
		r.ValidateOnly = rng.IntN(4) == 0
		t := kmsg.NewCreateTopicsRequestTopic()
		t.Topic = pick(env.newNames)
		t.NumPartitions = []int32{1, 2, 3, -1}[rng.IntN(4)]
		t.ReplicationFactor = []int16{1, -1}[rng.IntN(2)]
		for _, c := range [][2]string{{"retention.ms", "60000"}, {"message.timestamp.after.max.ms", "3600000"}, {"cleanup.policy", "compact"}, {"max.message.bytes", "100"}, {"segment.bytes", "x"}}[:rng.IntN(3)] {
			cf := kmsg.NewCreateTopicsRequestTopicConfig()
			cf.Name, cf.Value = c[0], kmsg.StringPtr(c[1])
			t.Configs = append(t.Configs, cf)
		}
		r.Topics = append(r.Topics, t)
		return r
	case 20: // DeleteTopics
		r := kmsg.NewPtrDeleteTopicsRequest()
		r.TimeoutMillis = 5000
		name := pick(env.newNames)
		r.TopicNames = []string{name}
		dt := kmsg.NewDeleteTopicsRequestTopic()
		dt.Topic = kmsg.StringPtr(name)
		r.Topics = append(r.Topics, dt)
		return r
	case 21: // DeleteRecords
		r := kmsg.NewPtrDeleteRecordsRequest()
		r.TimeoutMillis = 5000
		t := kmsg.NewDeleteRecordsRequestTopic()
		t.Topic = topic()
		p := kmsg.NewDeleteRecordsRequestTopicPartition()
		p.Partition, p.Offset = part(), []int64{-1, 0, 3, 1 << 50}[rng.IntN(4)]
		t.Partitions = append(t.Partitions, p)
		r.Topics = append(r.Topics, t)
		return r
	case 22: // InitProducerID
		r := kmsg.NewPtrInitProducerIDRequest()
		if rng.IntN(2) == 0 {
			r.TransactionalID = kmsg.StringPtr(txnID())
		}
		r.TransactionTimeoutMillis = int32(1000 + rng.IntN(10000))
		r.ProducerID, r.ProducerEpoch = -1, -1
		return r
	case 23: // OffsetForLeaderEpoch
		r := kmsg.NewPtrOffsetForLeaderEpochRequest()
		r.ReplicaID = -1
		t := kmsg.NewOffsetForLeaderEpochRequestTopic()
		t.Topic = topic()
		p := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
		p.Partition, p.CurrentLeaderEpoch, p.LeaderEpoch = part(), -1, int32(rng.IntN(3))-1
		t.Partitions = append(t.Partitions, p)
		r.Topics = append(r.Topics, t)
		return r
	case 24: // AddPartitionsToTxn
		r := kmsg.NewPtrAddPartitionsToTxnRequest()
		r.TransactionalID, r.ProducerID, r.ProducerEpoch = txnID(), pidOf(), int16(rng.IntN(3))
		t := kmsg.NewAddPartitionsToTxnRequestTopic()
		t.Topic, t.Partitions = topic(), []int32{part()}
		r.Topics = append(r.Topics, t)
		return r
	case 25: // AddOffsetsToTxn
		r := kmsg.NewPtrAddOffsetsToTxnRequest()
		r.TransactionalID, r.ProducerID, r.ProducerEpoch, r.Group = txnID(), pidOf(), int16(rng.IntN(3)), group()
		return r
	case 26: // EndTxn
		r := kmsg.NewPtrEndTxnRequest()
		r.TransactionalID, r.ProducerID, r.ProducerEpoch, r.Commit = txnID(), pidOf(), int16(rng.IntN(3)), rng.IntN(2) == 0
		return r
	case 27: // WriteTxnMarkers
		r := kmsg.NewPtrWriteTxnMarkersRequest()
		for range rng.IntN(3) {
			m := kmsg.NewWriteTxnMarkersRequestMarker()
			m.ProducerID, m.ProducerEpoch, m.Committed = pidOf(), int16(rng.IntN(3)), rng.IntN(2) == 0
			m.CoordinatorEpoch = int32(rng.IntN(3)) - 1
			t := kmsg.NewWriteTxnMarkersRequestMarkerTopic()
			t.Topic, t.Partitions = pick(append([]string{"__consumer_offsets", "__transaction_state"}, env.topics...)), []int32{part(), part()}
			m.Topics = append(m.Topics, t)
			r.Markers = append(r.Markers, m)
		}
		return r
	case 28: // TxnOffsetCommit
		r := kmsg.NewPtrTxnOffsetCommitRequest()
		r.TransactionalID, r.Group, r.ProducerID, r.ProducerEpoch = txnID(), group(), pidOf(), int16(rng.IntN(3))
		r.Generation = -1
		t := kmsg.NewTxnOffsetCommitRequestTopic()
		t.Topic = topic()
		p := kmsg.NewTxnOffsetCommitRequestTopicPartition()
		p.Partition, p.Offset = part(), offset()
		t.Partitions = append(t.Partitions, p)
		r.Topics = append(r.Topics, t)
		return r
	case 32: // DescribeConfigs
		r := kmsg.NewPtrDescribeConfigsRequest()
		res := kmsg.NewDescribeConfigsRequestResource()
		if rng.IntN(3) == 0 {
			res.ResourceType, res.ResourceName = []kmsg.ConfigResourceType{kmsg.ConfigResourceTypeBroker, kmsg.ConfigResourceTypeGroupConfig}[rng.IntN(2)], "0"
		} else {
			res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeTopic, topic()
		}
		if rng.IntN(2) == 0 {
			res.ConfigNames = []string{"retention.ms", "nope"}
		}
		r.Resources = append(r.Resources, res)
		r.IncludeSynonyms, r.IncludeDocumentation = rng.IntN(2) == 0, rng.IntN(2) == 0
		return r
	case 33: // AlterConfigs
		r := kmsg.NewPtrAlterConfigsRequest()
		res := kmsg.NewAlterConfigsRequestResource()
		res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeTopic, pick(env.newNames)
		if rng.IntN(4) == 0 {
			res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeBroker, "0"
		}
		c := kmsg.NewAlterConfigsRequestResourceConfig()
		c.Name, c.Value = pick([]string{"retention.ms", "retention.bytes", "max.message.bytes", "message.timestamp.type"}), kmsg.StringPtr(pick([]string{"1000", "-1", "LogAppendTime", "x"}))
		res.Configs = append(res.Configs, c)
		r.Resources = append(r.Resources, res)
		r.ValidateOnly = rng.IntN(2) == 0
		return r
	case 35: // DescribeLogDirs
		r := kmsg.NewPtrDescribeLogDirsRequest()
		if rng.IntN(2) == 0 {
			t := kmsg.NewDescribeLogDirsRequestTopic()
			t.Topic, t.Partitions = topic(), []int32{0, 1, 2, 9}
			r.Topics = append(r.Topics, t)
		}
		return r
	case 37: // CreatePartitions
		r := kmsg.NewPtrCreatePartitionsRequest()
		r.TimeoutMillis = 5000
		t := kmsg.NewCreatePartitionsRequestTopic()
		t.Topic, t.Count = pick(env.newNames), int32(2+rng.IntN(4))
		r.Topics = append(r.Topics, t)
		r.ValidateOnly = rng.IntN(3) == 0
		return r
	case 42: // DeleteGroups
		r := kmsg.NewPtrDeleteGroupsRequest()
		r.Groups = []string{group()}
		return r
	case 44: // IncrementalAlterConfigs
		r := kmsg.NewPtrIncrementalAlterConfigsRequest()
		res := kmsg.NewIncrementalAlterConfigsRequestResource()
		res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeTopic, pick(env.newNames)
		c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		c.Name, c.Op, c.Value = "retention.ms", kmsg.IncrementalAlterConfigOp(rng.IntN(4)), kmsg.StringPtr("120000")
		if rng.IntN(4) == 0 { // a group's KIP-848 configs
			res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeGroupConfig, pick([]string{group(), ""})
			c.Name = pick([]string{"consumer.session.timeout.ms", "consumer.heartbeat.interval.ms", "share.session.timeout.ms", "share.auto.offset.reset"})
			c.Value = kmsg.StringPtr(pick([]string{"45000", "0", "x", "5000"}))
		}
		res.Configs = append(res.Configs, c)
		r.Resources = append(r.Resources, res)
		r.ValidateOnly = rng.IntN(2) == 0
		return r
	case 47: // OffsetDelete
		r := kmsg.NewPtrOffsetDeleteRequest()
		r.Group = group()
		t := kmsg.NewOffsetDeleteRequestTopic()
		t.Topic = topic()
		p := kmsg.NewOffsetDeleteRequestTopicPartition()
		p.Partition = part()
		t.Partitions = append(t.Partitions, p)
		r.Topics = append(r.Topics, t)
		return r
	case 61: // DescribeProducers
		r := kmsg.NewPtrDescribeProducersRequest()
		t := kmsg.NewDescribeProducersRequestTopic()
		t.Topic, t.Partitions = topic(), []int32{0, 1, 2, 5}
		r.Topics = append(r.Topics, t)
		return r
	case 65: // DescribeTransactions
		r := kmsg.NewPtrDescribeTransactionsRequest()
		r.TransactionalIDs = []string{txnID(), txnID()}
		return r
	case 68: // ConsumerGroupHeartbeat (KIP-848)
		r := kmsg.NewPtrConsumerGroupHeartbeatRequest()
		r.Group = group()
		r.MemberID = fmt.Sprintf("member-%d", rng.IntN(5))
		r.MemberEpoch = []int32{0, -1, -2, 1, 7}[rng.IntN(5)]
		r.RebalanceTimeoutMillis = int32(1000 + rng.IntN(5000))
		r.SubscribedTopicNames = []string{topic(), topic()}
		if rng.IntN(3) == 0 {
			r.SubscribedTopicRegex = kmsg.StringPtr([]string{"h-.*", "(", "h-[0-9]+"}[rng.IntN(3)])
		}
		if rng.IntN(3) == 0 {
			r.ServerAssignor = kmsg.StringPtr([]string{"uniform", "range", "nope"}[rng.IntN(3)])
		}
		return r
	case 69: // ConsumerGroupDescribe
		r := kmsg.NewPtrConsumerGroupDescribeRequest()
		r.Groups = []string{group(), group()}
		return r
	case 43: // ElectLeaders
		r := kmsg.NewPtrElectLeadersRequest()
		r.ElectionType, r.TimeoutMillis = int8(rng.IntN(4))-1, 5000
		if rng.IntN(3) > 0 {
			t := kmsg.NewElectLeadersRequestTopic()
			t.Topic, t.Partitions = topic(), []int32{part(), part()}
			r.Topics = append(r.Topics, t)
		}
		return r
	case 45: // AlterPartitionReassignments
		r := kmsg.NewPtrAlterPartitionAssignmentsRequest()
		r.TimeoutMillis, r.AllowReplicationFactorChange = 5000, rng.IntN(2) == 0
		t := kmsg.NewAlterPartitionAssignmentsRequestTopic()
		t.Topic = topic()
		p := kmsg.NewAlterPartitionAssignmentsRequestTopicPartition()
		p.Partition = part()
		p.Replicas = [][]int32{nil, {}, {0}, {0, 0}, {1, 0}, {-1}}[rng.IntN(6)]
		t.Partitions = append(t.Partitions, p)
		r.Topics = append(r.Topics, t)
		return r
	case 46: // ListPartitionReassignments
		r := kmsg.NewPtrListPartitionReassignmentsRequest()
		if rng.IntN(2) == 0 {
			t := kmsg.NewListPartitionReassignmentsRequestTopic()
			t.Topic, t.Partitions = topic(), []int32{part()}
			r.Topics = append(r.Topics, t)
		}
		return r
	case 48: // DescribeClientQuotas
		r := kmsg.NewPtrDescribeClientQuotasRequest()
		r.Strict = rng.IntN(2) == 0
		for range rng.IntN(3) {
			c := kmsg.NewDescribeClientQuotasRequestComponent()
			c.EntityType = pick([]string{"user", "client-id", "ip", "", "group"})
			c.MatchType = kmsg.QuotasMatchType(rng.IntN(4))
			if rng.IntN(2) == 0 {
				c.Match = kmsg.StringPtr(pick([]string{"alice", "", "10.0.0.1"}))
			}
			r.Components = append(r.Components, c)
		}
		return r
	case 49: // AlterClientQuotas
		r := kmsg.NewPtrAlterClientQuotasRequest()
		r.ValidateOnly = rng.IntN(2) == 0
		e := kmsg.NewAlterClientQuotasRequestEntry()
		for range rng.IntN(3) {
			en := kmsg.NewAlterClientQuotasRequestEntryEntity()
			en.Type = pick([]string{"user", "client-id", "ip", "group"})
			if rng.IntN(3) > 0 {
				en.Name = kmsg.StringPtr(pick([]string{"alice", "", "10.0.0.1", "h-0"}))
			}
			e.Entity = append(e.Entity, en)
		}
		op := kmsg.NewAlterClientQuotasRequestEntryOp()
		op.Key = pick([]string{"producer_byte_rate", "request_percentage", "connection_creation_rate", "nope"})
		op.Value = []float64{1, 0, -1, 1.5, math.Inf(1), math.NaN(), 1e300}[rng.IntN(7)]
		op.Remove = rng.IntN(4) == 0
		e.Ops = append(e.Ops, op)
		r.Entries = append(r.Entries, e)
		return r
	case 55: // DescribeQuorum
		r := kmsg.NewPtrDescribeQuorumRequest()
		t := kmsg.NewDescribeQuorumRequestTopic()
		t.Topic = pick([]string{"__cluster_metadata", topic()})
		for range rng.IntN(3) {
			p := kmsg.NewDescribeQuorumRequestTopicPartition()
			p.Partition = part() - 1
			t.Partitions = append(t.Partitions, p)
		}
		r.Topics = append(r.Topics, t)
		return r
	case 57: // UpdateFeatures
		r := kmsg.NewPtrUpdateFeaturesRequest()
		// Validate-only (v1+): a real change to group.version 0 would
		// turn the consumer protocol off for the rest of the run.
		r.TimeoutMillis, r.ValidateOnly = 5000, true
		u := kmsg.NewUpdateFeaturesRequestFeatureUpdate()
		u.Feature = pick([]string{"metadata.version", "group.version", "eligible.leader.replicas.version", "transaction.version", "share.version", "nope"})
		u.MaxVersionLevel, u.UpgradeType, u.AllowDowngrade = int16(rng.IntN(30))-2, int8(rng.IntN(5)), rng.IntN(2) == 0
		if (u.Feature == "group.version" || u.Feature == "share.version") && u.MaxVersionLevel == 0 {
			u.MaxVersionLevel = 1 // v0 has no validate-only: never turn the protocol off
		}
		r.FeatureUpdates = append(r.FeatureUpdates, u)
		return r
	case 75: // DescribeTopicPartitions
		r := kmsg.NewPtrDescribeTopicPartitionsRequest()
		r.ResponsePartitionLimit = int32(rng.IntN(5)) - 1
		for range rng.IntN(3) {
			t := kmsg.NewDescribeTopicPartitionsRequestTopic()
			t.Topic = topic()
			r.Topics = append(r.Topics, t)
		}
		if rng.IntN(2) == 0 {
			r.Cursor = &kmsg.DescribeTopicPartitionsRequestCursor{Topic: topic(), Partition: int32(rng.IntN(5)) - 1}
		}
		return r
	case 76: // ShareGroupHeartbeat (KIP-932)
		r := kmsg.NewPtrShareGroupHeartbeatRequest()
		r.GroupID = group()
		r.MemberID = pick([]string{"member-0", "member-1", ""})
		r.MemberEpoch = []int32{0, -1, -2, 1, 7}[rng.IntN(5)]
		if rng.IntN(4) > 0 {
			r.SubscribedTopicNames = []string{topic(), topic()}
		}
		if rng.IntN(4) == 0 {
			r.RackID = kmsg.StringPtr(pick([]string{"", "r1"}))
		}
		return r
	case 77: // ShareGroupDescribe
		r := kmsg.NewPtrShareGroupDescribeRequest()
		r.GroupIDs = []string{group(), group()}
		return r
	case 78: // ShareFetch
		r := kmsg.NewPtrShareFetchRequest()
		r.GroupID, r.MemberID = kmsg.StringPtr(group()), kmsg.StringPtr(pick([]string{"member-0", "member-1", ""}))
		r.ShareSessionEpoch = []int32{0, -1, 1, 2, 99}[rng.IntN(5)]
		r.MaxWaitMillis, r.MinBytes, r.MaxBytes = int32(rng.IntN(200)), int32(rng.IntN(2)), int32(rng.IntN(1<<20))-10
		r.MaxRecords, r.BatchSize, r.ShareAcquireMode, r.IsRenewAck = int32(rng.IntN(600))-50, 500, int8(rng.IntN(3)), rng.IntN(2) == 0
		t := kmsg.NewShareFetchRequestTopic()
		t.TopicID = env.ids[topic()]
		p := kmsg.NewShareFetchRequestTopicPartition()
		p.Partition, p.PartitionMaxBytes = part(), int32(rng.IntN(1<<16))
		if rng.IntN(2) == 0 {
			first := int64(rng.IntN(20)) - 2
			p.AcknowledgementBatches = append(p.AcknowledgementBatches, kmsg.ShareFetchRequestTopicPartitionAcknowledgementBatch{
				FirstOffset: first, LastOffset: first + int64(rng.IntN(5)) - 1, AcknowledgeTypes: []int8{int8(rng.IntN(7)) - 1}})
		}
		t.Partitions = append(t.Partitions, p)
		r.Topics = append(r.Topics, t)
		if rng.IntN(3) == 0 {
			r.ForgottenTopicsData = append(r.ForgottenTopicsData, kmsg.ShareFetchRequestForgottenTopicsData{TopicID: t.TopicID, Partitions: []int32{part()}})
		}
		return r
	case 79: // ShareAcknowledge
		r := kmsg.NewPtrShareAcknowledgeRequest()
		r.GroupID, r.MemberID = kmsg.StringPtr(group()), kmsg.StringPtr(pick([]string{"member-0", ""}))
		r.ShareSessionEpoch, r.IsRenewAck = []int32{0, -1, 1, 3}[rng.IntN(4)], rng.IntN(2) == 0
		t := kmsg.NewShareAcknowledgeRequestTopic()
		t.TopicID = env.ids[topic()]
		p := kmsg.NewShareAcknowledgeRequestTopicPartition()
		p.Partition = part()
		first := int64(rng.IntN(20)) - 2
		p.AcknowledgementBatches = append(p.AcknowledgementBatches, kmsg.ShareAcknowledgeRequestTopicPartitionAcknowledgementBatch{
			FirstOffset: first, LastOffset: first + int64(rng.IntN(5)) - 1, AcknowledgeTypes: []int8{1, 2, 3, 4, 9}[:1+rng.IntN(5)]})
		t.Partitions = append(t.Partitions, p)
		r.Topics = append(r.Topics, t)
		return r
	case 90: // DescribeShareGroupOffsets
		r := kmsg.NewPtrDescribeShareGroupOffsetsRequest()
		g := kmsg.NewDescribeShareGroupOffsetsRequestGroup()
		g.GroupID = group()
		if rng.IntN(2) == 0 {
			g.Topics = []kmsg.DescribeShareGroupOffsetsRequestGroupTopic{{Topic: topic(), Partitions: []int32{part(), part()}}}
		}
		r.Groups = append(r.Groups, g)
		return r
	case 91: // AlterShareGroupOffsets
		r := kmsg.NewPtrAlterShareGroupOffsetsRequest()
		r.GroupID = group()
		r.Topics = []kmsg.AlterShareGroupOffsetsRequestTopic{{Topic: topic(), Partitions: []kmsg.AlterShareGroupOffsetsRequestTopicPartition{
			{Partition: part(), StartOffset: []int64{-1, 0, 5, 1 << 40}[rng.IntN(4)]}}}}
		return r
	case 92: // DeleteShareGroupOffsets
		r := kmsg.NewPtrDeleteShareGroupOffsetsRequest()
		r.GroupID = group()
		r.Topics = []kmsg.DeleteShareGroupOffsetsRequestTopic{{Topic: topic()}}
		return r
	case 66: // ListTransactions
		r := kmsg.NewPtrListTransactionsRequest()
		if rng.IntN(2) == 0 {
			r.StateFilters = []string{"Ongoing"}
			r.ProducerIDFilters = []int64{pidOf()}
		}
		return r
	}
	return kmsg.RequestForKey(key)
}

// hostileAPI is one entry of the broker's ApiVersions answer.
type hostileAPI struct{ key, min, max int16 }

// buildBaseFrames builds variants frames per served API and version, plus
// requests the broker does not serve (unknown keys, versions below the
// minimum), which must close only their connection.
func buildBaseFrames(rng *rand.Rand, env *hostileEnv, apis []hostileAPI, variants int) []hostileFrame {
	var out []hostileFrame
	for _, a := range apis {
		for v := a.min; v <= a.max; v++ {
			for range variants {
				req := hostileRequest(a.key, env, rng)
				body := hostileFrameOf(req, v, rng.Int32(), pickClientID(rng))
				f := hostileFrame{name: fmt.Sprintf("%s v%d", kmsg.NameForKey(a.key), v), key: a.key, body: body}
				if pr, ok := req.(*kmsg.ProduceRequest); ok {
					rec := pr.Topics[0].Partitions[0].Records
					if i := bytes.Index(body, rec); i >= 0 {
						f.batchAt, f.batchLen = i, len(rec)
					}
				}
				out = append(out, f)
			}
		}
		if a.min > 0 {
			req := hostileRequest(a.key, env, rng)
			out = append(out, hostileFrame{name: fmt.Sprintf("%s v%d (below min)", kmsg.NameForKey(a.key), a.min-1), key: a.key, body: hostileFrameOf(req, a.min-1, 1, "old")})
		}
	}
	served := map[int16]bool{}
	for _, a := range apis {
		served[a.key] = true
	}
	for _, key := range []int16{4, 5, 6, 7, 17, 57, 68, 69, 80} {
		req := kmsg.RequestForKey(key)
		if req == nil || served[key] {
			continue
		}
		out = append(out, hostileFrame{name: fmt.Sprintf("%s (not served)", kmsg.NameForKey(key)), key: key, body: hostileFrameOf(req, 0, 1, "nope")})
	}
	return out
}

func pickClientID(rng *rand.Rand) string {
	return []string{"hostile", "", "kgo", string(make([]byte, 300))}[rng.IntN(4)]
}

// recordingDialer wraps kgo's connections and keeps every request frame
// they write: real client traffic for the corpus.
type recordingDialer struct {
	mu     sync.Mutex
	frames [][]byte
}

func (d *recordingDialer) dial(ctx context.Context, network, host string) (net.Conn, error) {
	var nd net.Dialer
	nc, err := nd.DialContext(ctx, network, host)
	if err != nil {
		return nil, err
	}
	return &recordingConn{Conn: nc, d: d}, nil
}

func (d *recordingDialer) take() [][]byte {
	d.mu.Lock()
	defer d.mu.Unlock()
	f := d.frames
	d.frames = nil
	return f
}

type recordingConn struct {
	net.Conn
	d   *recordingDialer
	buf []byte
}

func (c *recordingConn) Write(p []byte) (int, error) {
	c.buf = append(c.buf, p...)
	for len(c.buf) >= 4 {
		n := int(binary.BigEndian.Uint32(c.buf))
		if len(c.buf) < 4+n {
			break
		}
		c.d.mu.Lock()
		c.d.frames = append(c.d.frames, append([]byte(nil), c.buf[4:4+n]...))
		c.d.mu.Unlock()
		c.buf = c.buf[4+n:]
	}
	return c.Conn.Write(p)
}

// hostileMutator changes a frame body; it may return a new slice.
type hostileMutator struct {
	name string
	fn   func(rng *rand.Rand, f *hostileFrame, b []byte, corpus []hostileFrame) []byte
}

var hostileInts32 = []uint32{0, 1, 0xffffffff, 0xfffffffe, 0x7fffffff, 0x80000000, 0x10000000, 1 << 20, 0xffff, 0x7fff, 100 << 20}
var hostileInts16 = []uint16{0, 1, 0xffff, 0xfffe, 0x7fff, 0x8000, 0xff}

// hostileMutators are the ways a frame is broken. Offsets below 10 hit the
// header (key, version, correlation id, client id length).
var hostileMutators = []hostileMutator{
	{"bit flips", func(rng *rand.Rand, _ *hostileFrame, b []byte, _ []hostileFrame) []byte {
		for range 1 + rng.IntN(8) {
			b[rng.IntN(len(b))] ^= 1 << rng.IntN(8)
		}
		return b
	}},
	{"interesting byte", func(rng *rand.Rand, _ *hostileFrame, b []byte, _ []hostileFrame) []byte {
		b[rng.IntN(len(b))] = []byte{0, 0xff, 0x7f, 0x80, 1}[rng.IntN(5)]
		return b
	}},
	{"int32 length or count", func(rng *rand.Rand, _ *hostileFrame, b []byte, _ []hostileFrame) []byte {
		if len(b) >= 4 {
			binary.BigEndian.PutUint32(b[rng.IntN(len(b)-3):], hostileInts32[rng.IntN(len(hostileInts32))])
		}
		return b
	}},
	{"int16 length", func(rng *rand.Rand, _ *hostileFrame, b []byte, _ []hostileFrame) []byte {
		if len(b) >= 2 {
			binary.BigEndian.PutUint16(b[rng.IntN(len(b)-1):], hostileInts16[rng.IntN(len(hostileInts16))])
		}
		return b
	}},
	{"huge uvarint", func(rng *rand.Rand, _ *hostileFrame, b []byte, _ []hostileFrame) []byte {
		// A compact length or count (flexible versions) of ~2^31 or more.
		i := rng.IntN(len(b))
		v := []byte{0xff, 0xff, 0xff, 0xff, 0x0f}[:2+rng.IntN(4)]
		return append(b[:i:i], append(v, b[i:]...)...)
	}},
	{"truncate", func(rng *rand.Rand, _ *hostileFrame, b []byte, _ []hostileFrame) []byte {
		return b[:rng.IntN(len(b))]
	}},
	{"append garbage", func(rng *rand.Rand, _ *hostileFrame, b []byte, _ []hostileFrame) []byte {
		for range 1 + rng.IntN(64) {
			b = append(b, byte(rng.Uint32()))
		}
		return b
	}},
	{"wrong version", func(rng *rand.Rand, _ *hostileFrame, b []byte, _ []hostileFrame) []byte {
		if len(b) >= 4 {
			binary.BigEndian.PutUint16(b[2:], uint16(rng.IntN(20)-2))
		}
		return b
	}},
	{"wrong api key", func(rng *rand.Rand, _ *hostileFrame, b []byte, _ []hostileFrame) []byte {
		if len(b) >= 2 {
			binary.BigEndian.PutUint16(b, uint16(rng.IntN(75)-1))
		}
		return b
	}},
	{"splice", func(rng *rand.Rand, _ *hostileFrame, b []byte, corpus []hostileFrame) []byte {
		o := corpus[rng.IntN(len(corpus))].body
		i, j := rng.IntN(len(b)), rng.IntN(len(o))
		return append(b[:i:i], o[j:]...)
	}},
	{"repeat chunk", func(rng *rand.Rand, _ *hostileFrame, b []byte, _ []hostileFrame) []byte {
		i := rng.IntN(len(b))
		j := i + rng.IntN(min(len(b)-i, 64)+1)
		return append(b[:j:j], append(append([]byte(nil), b[i:j]...), b[j:]...)...)
	}},
	{"batch mutated, crc fixed", func(rng *rand.Rand, f *hostileFrame, b []byte, _ []hostileFrame) []byte {
		if f.batchLen < batch.RecordsOffset || f.batchAt+f.batchLen > len(b) {
			b[rng.IntN(len(b))] ^= 0xff
			return b
		}
		bb := b[f.batchAt : f.batchAt+f.batchLen]
		for range 1 + rng.IntN(4) {
			i := batch.AttributesOffset + rng.IntN(len(bb)-batch.AttributesOffset)
			if rng.IntN(2) == 0 {
				bb[i] ^= 1 << rng.IntN(8)
			} else if i+4 <= len(bb) {
				binary.BigEndian.PutUint32(bb[i:], hostileInts32[rng.IntN(len(hostileInts32))])
			}
		}
		fixBatchCRC(bb)
		return b
	}},
}

// bombFrames are produce requests (with size prefix) whose one batch is a
// decompression bomb, to the hostile topics (whose timestamp checks make
// the broker decompress what they are sent).
func bombFrames(rng *rand.Rand, env *hostileEnv, apis []hostileAPI) [][]byte {
	var produce hostileAPI
	for _, a := range apis {
		if a.key == 0 {
			produce = a
		}
	}
	var out [][]byte
	for _, hb := range env.batches {
		if !strings.HasPrefix(hb.name, "bomb ") {
			continue
		}
		for v := produce.min; v <= produce.max; v++ {
			r := kmsg.NewPtrProduceRequest()
			r.Acks, r.TimeoutMillis = 1, 5000
			t := kmsg.NewProduceRequestTopic()
			t.Topic = env.topics[rng.IntN(len(env.topics))]
			t.TopicID = env.ids[t.Topic]
			p := kmsg.NewProduceRequestTopicPartition()
			p.Records = hb.b
			t.Partitions = append(t.Partitions, p)
			r.Topics = append(r.Topics, t)
			body := hostileFrameOf(r, v, rng.Int32(), "bomber")
			out = append(out, append(binary.BigEndian.AppendUint32(nil, uint32(len(body))), body...))
		}
	}
	return out
}

// TestHostileWriteCorpus writes testdata/hostile/*.bin, the inputs sent
// first by TestHostileInput: each once found a bug or stands for a class
// of attack worth keeping (run with KBROKER_WRITE_HOSTILE_CORPUS=1 to
// rewrite them).
func TestHostileWriteCorpus(t *testing.T) {
	if !testenv.Flag(t, "KBROKER_WRITE_HOSTILE_CORPUS") {
		t.Skip("set KBROKER_WRITE_HOSTILE_CORPUS=1 to rewrite testdata/hostile")
	}
	rng := rand.New(rand.NewPCG(1, 1))
	framed := func(body []byte) []byte {
		return append(binary.BigEndian.AppendUint32(nil, uint32(len(body))), body...)
	}
	produce := func(records []byte) []byte {
		r := kmsg.NewPtrProduceRequest()
		r.Acks, r.TimeoutMillis = 1, 5000
		tp := kmsg.NewProduceRequestTopic()
		tp.Topic = "h-0"
		p := kmsg.NewProduceRequestTopicPartition()
		p.Records = records
		tp.Partitions = append(tp.Partitions, p)
		r.Topics = append(r.Topics, tp)
		return framed(hostileFrameOf(r, 9, 1, "corpus"))
	}
	good := hostileBuildBatch(rng, 0, 10, 100, -1, -1, -1)
	fetch := kmsg.NewPtrFetchRequest()
	fetch.ReplicaID, fetch.MaxBytes = -1, 1<<20
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic = "h-0"
	ft.Partitions = append(ft.Partitions, kmsg.NewFetchRequestTopicPartition())
	fetch.Topics = append(fetch.Topics, ft)
	fetchHugeCount := framed(hostileFrameOf(fetch, 11, 1, "corpus"))
	// The topics array count (int32, after the header, replica id,
	// max wait, min bytes, max bytes, isolation level, session id and
	// epoch) claims 2^31-1 topics.
	i := bytes.Index(fetchHugeCount, []byte{0, 0, 0, 1, 0, 3, 'h', '-', '0'})
	binary.BigEndian.PutUint32(fetchHugeCount[i:], 0x7fffffff)
	files := map[string][]byte{
		// A few KiB of zstd (concatenated frames) that expand to 80 MiB:
		// each connection once allocated the whole bound for it.
		"produce-zstd-bomb.bin": produce(hostileRecompress(good[:batch.RecordsOffset], 4, hostileBomb(4, bombSize))),
		// A raw snappy block of a few bytes that declares 60 MiB: the
		// length is allocated before the block is decoded.
		"produce-snappy-declares-60mib.bin": produce(hostileRecompress(good[:batch.RecordsOffset], 2, append(binary.AppendUvarint(nil, 60<<20), 0x0c, 'j', 'u', 'n', 'k'))),
		// Garbage where the gzip payload should be, with a valid CRC.
		"produce-gzip-garbage.bin": produce(hostileRecompress(good[:batch.RecordsOffset], 1, bytes.Repeat([]byte{0x1f, 0x8b, 8, 0, 0xff}, 40))),
		// A frame claiming 100 MiB (socket.request.max.bytes is 2 MiB
		// in the test) and one claiming exactly the limit, then EOF.
		"size-100mib.bin":            append(binary.BigEndian.AppendUint32(nil, 100<<20), hostileFrameOf(kmsg.NewPtrMetadataRequest(), 12, 1, "corpus")...),
		"size-at-limit-then-eof.bin": append(binary.BigEndian.AppendUint32(nil, hostileMaxRequest), hostileFrameOf(kmsg.NewPtrMetadataRequest(), 12, 1, "corpus")...),
		"size-negative.bin":          append([]byte{0xff, 0xff, 0xff, 0xf0}, hostileFrameOf(kmsg.NewPtrApiVersionsRequest(), 3, 1, "corpus")...),
		"fetch-topics-count-2g.bin":  fetchHugeCount,
	}
	dir := filepath.Join("testdata", "hostile")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: %d bytes", name, len(b))
	}
}
