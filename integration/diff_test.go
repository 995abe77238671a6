package integration

// Differential tests against Apache Kafka (issue 14, item 3): the same
// scripted request sequences go to a kbroker binary and to a Kafka broker,
// and the responses are compared field by field after normalising what may
// legitimately differ (throttle times, error messages, topic and cluster
// ids, hosts and ports, producer ids, member ids, record bytes).
//
// KBROKER_DIFF_KAFKA=host:port names the Kafka broker (test.sh starts one
// with scripts/kafka-ref.sh); without it TestDiffKafka skips. Each step runs
// at the oldest and the newest version both brokers serve.

import (
	"bufio"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"io"
	"net"
	"os"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/internal/testenv"
)

// diffKafkaEnv names the Kafka broker the differential tests compare with.
const diffKafkaEnv = "KBROKER_DIFF_KAFKA"

// diffIgnore are the response fields (flattened JSON paths, matched at
// their end) that legitimately differ between two brokers.
var diffIgnore = regexp.MustCompile(`(^|\.)(ThrottleMillis|ErrorMessage|TopicID(\.\d+)?|ClusterID|Host|Port|Rack|` +
	`ProducerID|MemberID|LeaderID|UnknownTags|SessionID|ClusterAuthorizedOperations|` +
	`TopicAuthorizedOperations|AuthorizedOperations|ControllerID|LogAppendTime)$`)

// servedFrom are the versions below which a key is listed in ApiVersions
// but not served: Kafka 4 lists Produce from v0 and closes the connection
// below v3 (KAFKA-18659), and kbroker does the same.
var servedFrom = map[int16]int16{int16(kmsg.Produce): 3}

// diffConn is one connection that sends a request at an exact version and
// decodes the response: kgo would pick versions itself.
type diffConn struct {
	c    net.Conn
	r    *bufio.Reader
	fmt  *kmsg.RequestFormatter
	corr int32
}

func dialDiff(t *testing.T, addr string) *diffConn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	t.Cleanup(func() { c.Close() })
	return &diffConn{c: c, r: bufio.NewReader(c), fmt: kmsg.NewRequestFormatter(kmsg.FormatterClientID("kbroker-diff"))}
}

// do sends req at version v and returns the decoded response.
func (d *diffConn) do(req kmsg.Request, v int16) (kmsg.Response, error) {
	req.SetVersion(v)
	d.corr++
	if err := d.c.SetDeadline(time.Now().Add(20 * time.Second)); err != nil {
		return nil, err
	}
	if _, err := d.c.Write(d.fmt.AppendRequest(nil, req, d.corr)); err != nil {
		return nil, fmt.Errorf("write %s v%d: %w", kmsg.NameForKey(req.Key()), v, err)
	}
	var size [4]byte
	if _, err := io.ReadFull(d.r, size[:]); err != nil {
		return nil, fmt.Errorf("read %s v%d: %w", kmsg.NameForKey(req.Key()), v, err)
	}
	n := binary.BigEndian.Uint32(size[:])
	if n < 4 || n > 64<<20 {
		return nil, fmt.Errorf("%s v%d: response size %d", kmsg.NameForKey(req.Key()), v, n)
	}
	buf := make([]byte, n)
	if _, err := io.ReadFull(d.r, buf); err != nil {
		return nil, err
	}
	if corr := int32(binary.BigEndian.Uint32(buf)); corr != d.corr {
		return nil, fmt.Errorf("correlation id %d, want %d", corr, d.corr)
	}
	buf = buf[4:]
	resp := req.ResponseKind()
	resp.SetVersion(v)
	// A flexible response header ends in tagged fields, except ApiVersions'.
	if resp.IsFlexible() && req.Key() != int16(kmsg.ApiVersions) {
		var err error
		if buf, err = skipTags(buf); err != nil {
			return nil, err
		}
	}
	if err := resp.ReadFrom(buf); err != nil {
		return nil, fmt.Errorf("decode %s v%d: %w", kmsg.NameForKey(req.Key()), v, err)
	}
	return resp, nil
}

// skipTags skips a tagged-field section.
func skipTags(b []byte) ([]byte, error) {
	count, n := binary.Uvarint(b)
	if n <= 0 {
		return nil, fmt.Errorf("bad tag count")
	}
	b = b[n:]
	for range count {
		_, n := binary.Uvarint(b)
		if n <= 0 {
			return nil, fmt.Errorf("bad tag")
		}
		b = b[n:]
		size, n := binary.Uvarint(b)
		if n <= 0 || uint64(len(b)-n) < size {
			return nil, fmt.Errorf("bad tag size")
		}
		b = b[n+int(size):]
	}
	return b, nil
}

// diffSide is one broker under comparison and what a sequence learned from
// it (ids that differ between the brokers by design).
type diffSide struct {
	name     string
	conn     *diffConn
	versions map[int16][2]int16 // key → min, max

	producerID int64
	epoch      int16
	memberID   string
	generation int32
	topicIDs   map[string][16]byte // from CreateTopics responses
	// fetchSession is the id of the fetch session a step opened.
	fetchSession int32
	// sent records each API key's versions sent to this side.
	sent map[int16]map[int16]bool
}

// flatten turns a response into path → value, for field-by-field
// comparison, leaving out diffIgnore's fields and those of ignore.
func flatten(t *testing.T, resp kmsg.Response, ignore *regexp.Regexp) map[string]string {
	t.Helper()
	raw, err := json.Marshal(resp)
	if err != nil {
		t.Fatal(err)
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	var walk func(path string, v any)
	walk = func(path string, v any) {
		switch x := v.(type) {
		case map[string]any:
			for k, e := range x {
				walk(strings.TrimPrefix(path+"."+k, "."), e)
			}
		case []any:
			for i, e := range x {
				walk(fmt.Sprintf("%s.%d", path, i), e)
			}
			if len(x) == 0 {
				out[path] = "[]"
			}
		default:
			if diffIgnore.MatchString(path) || (ignore != nil && ignore.MatchString(path)) {
				return
			}
			if b64, ok := x.(string); ok && (strings.HasSuffix(path, "RecordBatches") || strings.HasSuffix(path, ".Records")) {
				raw, err := base64.StdEncoding.DecodeString(b64)
				if err != nil {
					t.Fatalf("%s: %v", path, err)
				}
				out[path] = describeBatches(raw)
				return
			}
			out[path] = fmt.Sprint(x)
		}
	}
	walk("", v)
	return out
}

// describeBatches renders fetched record batches for comparison: each
// batch's offsets, record count, attributes, producer epoch and sequence,
// and for data batches with client timestamps also the timestamps and a
// checksum of the records. Left out is what differs between two brokers
// by design: the partition leader epoch, the CRC (it covers the producer
// id), producer ids, and the broker's own timestamps (LogAppendTime,
// control batches). A trailing partial batch is shown by its size.
func describeBatches(b []byte) string {
	const header = 61
	var out []string
	for len(b) > 0 {
		if len(b) < 12 {
			out = append(out, fmt.Sprintf("partial %d bytes", len(b)))
			break
		}
		n := 12 + int(binary.BigEndian.Uint32(b[8:]))
		if n < header || n > len(b) {
			out = append(out, fmt.Sprintf("partial %d of %d bytes", len(b), n))
			break
		}
		batch := b[:n]
		b = b[n:]
		base := int64(binary.BigEndian.Uint64(batch))
		attrs := binary.BigEndian.Uint16(batch[21:])
		last := int32(binary.BigEndian.Uint32(batch[23:]))
		epoch := int16(binary.BigEndian.Uint16(batch[51:]))
		seq := int32(binary.BigEndian.Uint32(batch[53:]))
		count := int32(binary.BigEndian.Uint32(batch[57:]))
		d := fmt.Sprintf("offsets %d-%d records %d attrs %#x epoch %d seq %d", base, base+int64(last), count, attrs, epoch, seq)
		if attrs&(0x08|0x20) == 0 { // CreateTime data
			d += fmt.Sprintf(" ts %d-%d records crc %08x", int64(binary.BigEndian.Uint64(batch[27:])),
				int64(binary.BigEndian.Uint64(batch[35:])), crc32.ChecksumIEEE(batch[header:]))
		}
		out = append(out, d)
	}
	return strings.Join(out, "; ")
}

// newest is a step's versions when only the newest both brokers serve
// matters.
func newest(lo, hi int16) []int16 { return []int16{hi} }

// oldest is a step's versions when only the oldest both brokers serve
// matters (the newest is sent by another step).
func oldest(lo, hi int16) []int16 { return []int16{lo} }

// atVersion is a step's versions when only v is sent.
func atVersion(v int16) func(lo, hi int16) []int16 {
	return func(lo, hi int16) []int16 { return []int16{v} }
}

// diffStep is one request of a sequence, sent to both brokers.
type diffStep struct {
	name string
	// req builds the request for a side at version v.
	req func(s *diffSide, v int16) kmsg.Request
	// versions overrides "oldest and newest common version".
	versions func(lo, hi int16) []int16
	// after records what the response taught (ids) on the side.
	after func(s *diffSide, resp kmsg.Response)
	// ignore are more fields that may differ in this step, with the reason.
	ignore *regexp.Regexp
	// known is a difference the README lists: the step checks that it is
	// still there, so that a fix shows up.
	known string
	// normalize, if set, rewrites a response before comparison (to put
	// lists whose order carries no meaning in one order).
	normalize func(resp kmsg.Response)
	// until, if set, repeats the request on each side (for at most 15 s)
	// until it holds: Kafka applies topic creation and deletion to its
	// metadata asynchronously, kbroker at once.
	until func(resp kmsg.Response) bool
}

// awaitCoordinator is a step that waits until FindCoordinator for key
// (keyType 0 a group, 1 a transactional id) answers without error on each
// side: a fresh Kafka creates __consumer_offsets or __transaction_state
// at the first FindCoordinator and answers COORDINATOR_NOT_AVAILABLE until
// it has loaded it, as clients expect; kbroker creates it before answering.
func awaitCoordinator(key string, keyType int8) diffStep {
	return diffStep{
		name: fmt.Sprintf("await the coordinator of %s", key),
		req: func(_ *diffSide, v int16) kmsg.Request {
			r := kmsg.NewPtrFindCoordinatorRequest()
			r.CoordinatorKey, r.CoordinatorKeys, r.CoordinatorType = key, []string{key}, keyType
			return r
		},
		versions: newest,
		ignore:   regexp.MustCompile(`NodeID$`),
		until: func(resp kmsg.Response) bool {
			r := resp.(*kmsg.FindCoordinatorResponse)
			if r.ErrorCode != 0 {
				return false
			}
			for _, c := range r.Coordinators {
				if c.ErrorCode != 0 {
					return false
				}
			}
			return true
		},
	}
}

// coordinatorNotReady are the codes of a coordinator still loading.
func coordinatorNotReady(code int16) bool {
	return code == kerr.CoordinatorLoadInProgress.Code || code == kerr.CoordinatorNotAvailable.Code ||
		code == kerr.NotCoordinator.Code
}

// awaitGroupLoaded waits until the coordinator of group answers
// DescribeGroups with something else than "not ready": Kafka's
// FindCoordinator names the coordinator before it has loaded the group's
// partition of __consumer_offsets.
func awaitGroupLoaded(group string) diffStep {
	return diffStep{
		name: "await the loaded coordinator of " + group,
		req: func(_ *diffSide, v int16) kmsg.Request {
			r := kmsg.NewPtrDescribeGroupsRequest()
			r.Groups = []string{group}
			return r
		},
		versions: newest,
		until: func(resp kmsg.Response) bool {
			r := resp.(*kmsg.DescribeGroupsResponse)
			return len(r.Groups) == 1 && !coordinatorNotReady(r.Groups[0].ErrorCode)
		},
	}
}

// awaitTxnLoaded is awaitGroupLoaded for a transactional id's partition of
// __transaction_state.
func awaitTxnLoaded(id string) diffStep {
	return diffStep{
		name: "await the loaded coordinator of " + id,
		req: func(_ *diffSide, v int16) kmsg.Request {
			r := kmsg.NewPtrDescribeTransactionsRequest()
			r.TransactionalIDs = []string{id}
			return r
		},
		versions: newest,
		until: func(resp kmsg.Response) bool {
			r := resp.(*kmsg.DescribeTransactionsResponse)
			return len(r.TransactionStates) == 1 && !coordinatorNotReady(r.TransactionStates[0].ErrorCode)
		},
	}
}

// awaitTopic is a step that waits until topic has n partitions with a
// leader (n 0: until it is unknown) on each side, then compares.
func awaitTopic(topic string, n int) diffStep {
	return diffStep{
		name:     fmt.Sprintf("await %s with %d partitions", topic, n),
		req:      metadataReq(false, topic),
		versions: newest,
		until: func(resp kmsg.Response) bool {
			r := resp.(*kmsg.MetadataResponse)
			if len(r.Topics) != 1 {
				return false
			}
			t := r.Topics[0]
			if n == 0 {
				return t.ErrorCode == kerr.UnknownTopicOrPartition.Code
			}
			if t.ErrorCode != 0 || len(t.Partitions) != n {
				return false
			}
			for _, p := range t.Partitions {
				if p.ErrorCode != 0 || p.Leader < 0 {
					return false
				}
			}
			return true
		},
	}
}

// TestDiffKafka runs diffSequences against a kbroker binary and the Kafka
// broker in KBROKER_DIFF_KAFKA and fails on every unexplained difference.
func TestDiffKafka(t *testing.T) {
	kafka := testenv.Addr(t, diffKafkaEnv)
	if kafka == "" {
		t.Skipf("%s=host:port of an Apache Kafka broker (scripts/kafka-ref.sh start) runs the differential tests", diffKafkaEnv)
	}
	kb := startBinary(t, "--config", diffConfig(t))
	sides := []*diffSide{
		{name: "kbroker", conn: dialDiff(t, kb.Addr()), topicIDs: map[string][16]byte{}},
		{name: "kafka", conn: dialDiff(t, kafka), topicIDs: map[string][16]byte{}},
	}
	listed := make([]map[int16][2]int16, len(sides))
	for i, s := range sides {
		resp, err := s.conn.do(kmsg.NewPtrApiVersionsRequest(), 0)
		if err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		s.versions, listed[i] = map[int16][2]int16{}, map[int16][2]int16{}
		for _, k := range resp.(*kmsg.ApiVersionsResponse).ApiKeys {
			listed[i][k.ApiKey] = [2]int16{k.MinVersion, k.MaxVersion}
			s.versions[k.ApiKey] = [2]int16{max(k.MinVersion, servedFrom[k.ApiKey]), k.MaxVersion}
		}
	}
	checkAPIVersions(t, listed[0], listed[1])
	run := fmt.Sprintf("d%d", time.Now().UnixNano()%1e9) // fresh names on a reused Kafka
	seqs, ran := diffSequences(run), 0
	for _, seq := range seqs {
		t.Run(seq.name, func(t *testing.T) {
			ran++
			for _, st := range seq.steps {
				runDiffStep(t, sides, st)
			}
		})
	}
	// Item 3 of issue 14: every API at its oldest and newest version.
	if ran == len(seqs) && !t.Failed() {
		for _, s := range unsentVersions(sides[0], sides[1]) {
			t.Errorf("no step sends %s", s)
		}
	}
}

// runDiffStep sends st to every side at each version and compares.
func runDiffStep(t *testing.T, sides []*diffSide, st diffStep) {
	t.Helper()
	probe := *sides[0] // a builder may count on the side (share session epochs)
	key := st.req(&probe, 0).Key()
	lo, hi := int16(-1), int16(-1)
	for i, s := range sides {
		r, ok := s.versions[key]
		if !ok {
			t.Errorf("%s: %s does not serve %s", st.name, s.name, kmsg.NameForKey(key))
			return
		}
		if i == 0 || r[0] > lo {
			lo = r[0]
		}
		if i == 0 || r[1] < hi {
			hi = r[1]
		}
	}
	// kmsg may know fewer versions than a newer broker.
	if max := kmsg.RequestForKey(key).MaxVersion(); hi > max {
		hi = max
	}
	versions := []int16{lo, hi}
	if lo == hi {
		versions = versions[:1]
	}
	if st.versions != nil {
		versions = st.versions(lo, hi)
	}
	for _, v := range versions {
		got := make([]map[string]string, len(sides))
		for i, s := range sides {
			s.recordSent(key, v)
			resp := doDiff(t, s, st, v)
			if st.after != nil {
				st.after(s, resp)
			}
			if st.normalize != nil {
				st.normalize(resp)
			}
			if r, ok := resp.(*kmsg.CreateTopicsResponse); ok {
				for _, rt := range r.Topics {
					if rt.ErrorCode == 0 {
						s.topicIDs[rt.Topic] = rt.TopicID
					}
				}
			}
			got[i] = flatten(t, resp, st.ignore)
		}
		diffs := compareFlat(got[0], got[1])
		var codes []string
		for k, c := range got[0] {
			if strings.HasSuffix(k, "ErrorCode") && c != "0" {
				codes = append(codes, errName(k, c, c))
			}
		}
		sort.Strings(codes)
		t.Logf("%s v%d (%s): errors%s", st.name, v, kmsg.NameForKey(key), strings.Join(codes, ""))
		switch {
		case st.known != "" && len(diffs) == 0:
			t.Errorf("%s v%d: known difference (%s) is gone: update the step and README", st.name, v, st.known)
		case st.known != "":
			t.Logf("%s v%d: known difference (%s): %s", st.name, v, st.known, strings.Join(diffs, "; "))
		case len(diffs) > 0:
			t.Errorf("%s v%d (%s): kbroker and kafka differ:\n  %s", st.name, v, kmsg.NameForKey(key), strings.Join(diffs, "\n  "))
		}
	}
}

// doDiff sends st's request at v to s, repeated while st.until does not
// hold (at most 15 s).
func doDiff(t *testing.T, s *diffSide, st diffStep, v int16) kmsg.Response {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		resp, err := s.conn.do(st.req(s, v), v)
		if err != nil {
			t.Fatalf("%s v%d on %s: %v", st.name, v, s.name, err)
		}
		if st.until == nil || st.until(resp) {
			return resp
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s v%d on %s: not within 15 s", st.name, v, s.name)
		}
		time.Sleep(50 * time.Millisecond) // polling the other broker's metadata, not synchronising ours
	}
}

// compareFlat lists the paths where a (kbroker) and b (kafka) differ. A
// null array and an empty one count as equal: clients read both as empty.
func compareFlat(a, b map[string]string) []string {
	var out []string
	for k, va := range a {
		if vb, ok := b[k]; !ok {
			out = append(out, fmt.Sprintf("%s: kbroker %s, kafka has none", k, va))
		} else if va != vb && !(emptyish(va) && emptyish(vb)) {
			out = append(out, fmt.Sprintf("%s: kbroker %s, kafka %s%s", k, va, vb, errName(k, va, vb)))
		}
	}
	for k, vb := range b {
		if _, ok := a[k]; !ok {
			out = append(out, fmt.Sprintf("%s: kafka %s, kbroker has none", k, vb))
		}
	}
	sort.Strings(out)
	return out
}

func emptyish(v string) bool { return v == "<nil>" || v == "[]" }

// errName spells error codes out.
func errName(path, a, b string) string {
	if !strings.HasSuffix(path, "ErrorCode") {
		return ""
	}
	var ca, cb int16
	fmt.Sscan(a, &ca)
	fmt.Sscan(b, &cb)
	return fmt.Sprintf(" (%v vs %v)", kerr.ErrorForCode(ca), kerr.ErrorForCode(cb))
}

// diffConfig writes kbroker's settings for the comparison: Kafka's node id
// (1, as scripts/kafka-ref.sh sets it) and the settings of externalProps.
func diffConfig(t *testing.T) string {
	t.Helper()
	var b strings.Builder
	b.WriteString("node.id=1\n")
	keys := make([]string, 0, len(externalProps))
	for k := range externalProps {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(&b, "%s=%s\n", k, externalProps[k])
	}
	path := t.TempDir() + "/server.properties"
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// diffBatch is a magic-2 record batch of values: with a producer id, epoch
// and first sequence if pid >= 0, transactional if txn. Timestamps are
// fixed so both brokers store the same batch.
func diffBatch(pid int64, epoch int16, seq int32, txn bool, values ...string) []byte {
	return batchSpec{pid: pid, epoch: epoch, seq: seq, txn: txn, ts: 1700000000000}.encode(values...)
}

// batchSpec is what a test batch carries besides its values.
type batchSpec struct {
	pid   int64 // < 0: no producer id
	epoch int16
	seq   int32
	txn   bool
	ts    int64  // every record's timestamp
	key   []byte // every record's key; nil for none
}

// encode is the magic-2 batch of values (short ones: each record's length
// must fit one varint byte).
func (b batchSpec) encode(values ...string) []byte {
	var recs []byte
	for i, v := range values {
		r := kmsg.Record{OffsetDelta: int32(i), Key: b.key, Value: []byte(v)}
		r.Length = int32(len(r.AppendTo(nil)) - 1) // Length itself is one varint byte here
		recs = r.AppendTo(recs)
	}
	rb := kmsg.RecordBatch{
		Magic: 2, LastOffsetDelta: int32(len(values) - 1), FirstTimestamp: b.ts, MaxTimestamp: b.ts,
		ProducerID: b.pid, ProducerEpoch: b.epoch, FirstSequence: b.seq, NumRecords: int32(len(values)),
		Records: recs, PartitionLeaderEpoch: -1,
	}
	if b.pid < 0 {
		rb.ProducerID, rb.ProducerEpoch, rb.FirstSequence = -1, -1, -1
	}
	if b.txn {
		rb.Attributes = 0x10
	}
	out := rb.AppendTo(nil)
	binary.BigEndian.PutUint32(out[8:], uint32(len(out)-12))
	binary.BigEndian.PutUint32(out[17:], crc32.Checksum(out[21:], crc32.MakeTable(crc32.Castagnoli)))
	return out
}

// TestDiffCompare: the comparison reports a changed error code and a
// missing partition, and passes topic ids, throttle times and a null array
// against an empty one.
func TestDiffCompare(t *testing.T) {
	mk := func(code int16, throttle int32, parts int, aborted bool) *kmsg.FetchResponse {
		r := kmsg.NewPtrFetchResponse()
		r.SetVersion(13)
		r.ThrottleMillis = throttle
		tp := kmsg.NewFetchResponseTopic()
		tp.Topic, tp.TopicID = "t", [16]byte{byte(throttle)}
		for i := range parts {
			p := kmsg.NewFetchResponseTopicPartition()
			p.Partition, p.ErrorCode, p.HighWatermark = int32(i), code, 3
			if aborted {
				p.AbortedTransactions = []kmsg.FetchResponseTopicPartitionAbortedTransaction{}
			}
			tp.Partitions = append(tp.Partitions, p)
		}
		r.Topics = append(r.Topics, tp)
		return r
	}
	same := compareFlat(flatten(t, mk(1, 5, 2, false), nil), flatten(t, mk(1, 9, 2, true), nil))
	if len(same) != 0 {
		t.Errorf("normalised responses differ: %v", same)
	}
	diffs := compareFlat(flatten(t, mk(1, 0, 2, false), nil), flatten(t, mk(3, 0, 1, false), nil))
	joined := strings.Join(diffs, "\n")
	for _, want := range []string{"Topics.0.Partitions.0.ErrorCode: kbroker 1, kafka 3 (OFFSET_OUT_OF_RANGE", "Topics.0.Partitions.1.HighWatermark: kbroker 3, kafka has none"} {
		if !strings.Contains(joined, want) {
			t.Errorf("diffs %q lack %q", joined, want)
		}
	}
}

// recordSent notes that key was sent at v.
func (s *diffSide) recordSent(key, v int16) {
	if s.sent == nil {
		s.sent = map[int16]map[int16]bool{}
	}
	if s.sent[key] == nil {
		s.sent[key] = map[int16]bool{}
	}
	s.sent[key][v] = true
}

// unsentVersions lists, for every API both sides serve, the oldest and
// newest common version (capped at what kmsg encodes) that no step sent.
func unsentVersions(kb, kafka *diffSide) []string {
	var out []string
	for key, r := range kb.versions {
		o, ok := kafka.versions[key]
		if !ok {
			continue
		}
		lo, hi := max(r[0], o[0]), min(r[1], o[1])
		if req := kmsg.RequestForKey(key); req == nil {
			continue
		} else if hi > req.MaxVersion() {
			hi = req.MaxVersion()
		}
		if lo > hi {
			continue
		}
		for _, v := range []int16{lo, hi} {
			if !kb.sent[key][v] {
				out = append(out, fmt.Sprintf("%s v%d", kmsg.NameForKey(key), v))
			}
		}
	}
	sort.Strings(out)
	return slices.Compact(out)
}
