package protocol

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/kbroker/kbroker/internal/testenv"
)

// seedDir is where go test reads FuzzParseRequest's corpus.
const seedDir = "testdata/fuzz/FuzzParseRequest"

// maxSeedsPerAPI bounds how many distinct frames of one API key and
// version are kept (Metadata, Fetch and Heartbeat repeat with small
// differences); Produce keeps one per compression codec and acks setting.
func maxSeedsPerAPI(key int16) int {
	if key == 0 {
		return 8
	}
	return 3
}

// TestWriteFuzzSeeds captures the FuzzParseRequest seed corpus: a kgo
// client talks to fakeBroker (creating a topic, producing idempotently
// with every compression codec, listing offsets, describing and altering
// configs, committing and fetching group offsets, a transactional
// producer, a consumer...) and every distinct frame it sent is written to
// testdata/fuzz/FuzzParseRequest as kgo-<API>-v<version>-<n>. Run it by
// hand after a franz-go upgrade:
//
//	KBROKER_WRITE_FUZZ_SEEDS=1 go test -run TestWriteFuzzSeeds ./protocol/
func TestWriteFuzzSeeds(t *testing.T) {
	if !testenv.Flag(t, "KBROKER_WRITE_FUZZ_SEEDS") {
		t.Skip("set KBROKER_WRITE_FUZZ_SEEDS=1 to capture the seed corpus")
	}
	// The newest versions, then those of Kafka 2.0 (before flexible
	// versions, KIP-482), so both encodings are seeded.
	var frames [][]byte
	for _, maxVersions := range []*kversion.Versions{nil, kversion.V2_0_0()} {
		fb := newFakeBroker(t)
		driveKgo(t, fb.addr(), maxVersions)
		frames = append(frames, fb.received()...)
		fb.close()
	}

	old, _ := filepath.Glob(filepath.Join(seedDir, "kgo-*"))
	for _, name := range old {
		if err := os.Remove(name); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(seedDir, 0o755); err != nil {
		t.Fatal(err)
	}
	perVersion := map[string]int{}
	written := 0
	for _, frame := range frames {
		h, _, err := ParseHeader(frame)
		if err != nil {
			t.Fatalf("captured frame with a bad header: %v", err)
		}
		base := fmt.Sprintf("kgo-%s-v%d", kmsg.NameForKey(h.Key), h.Version)
		if perVersion[base] >= maxSeedsPerAPI(h.Key) {
			continue
		}
		name := fmt.Sprintf("%s-%d", base, perVersion[base])
		perVersion[base]++
		data := fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n", frame)
		if err := os.WriteFile(filepath.Join(seedDir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
		written++
	}
	var kinds []string
	for k, n := range perVersion {
		kinds = append(kinds, fmt.Sprintf("%s×%d", k[len("kgo-"):], n))
	}
	slices.Sort(kinds)
	t.Logf("wrote %d seeds from %d distinct frames: %s", written, len(frames), strings.Join(kinds, " "))
}

// driveKgo makes kgo send a broad set of requests to addr. Errors are
// ignored: the fake broker's answers need not satisfy every call, only
// make kgo send the request.
func driveKgo(t *testing.T, addr string, maxVersions *kversion.Versions) {
	t.Helper()
	base := []kgo.Opt{
		kgo.SeedBrokers(addr),
		kgo.ClientID("kgo-seeds"),
		kgo.RetryTimeout(2 * time.Second),
		kgo.RequestRetries(1),
		kgo.MetadataMinAge(50 * time.Millisecond),
	}
	if maxVersions != nil {
		base = append(base, kgo.MaxVersions(maxVersions))
	}
	client := func(opts ...kgo.Opt) *kgo.Client {
		cl, err := kgo.NewClient(append(append([]kgo.Opt(nil), base...), opts...)...)
		if err != nil {
			t.Fatal(err)
		}
		return cl
	}
	step := func(name string, f func(ctx context.Context)) {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		f(ctx)
		t.Logf("step %s done", name)
	}

	admCl := client()
	defer admCl.Close()
	adm := kadm.NewClient(admCl)
	const topic = "seeds"
	retention := "3600000"
	step("create topics", func(ctx context.Context) {
		adm.CreateTopics(ctx, 3, 1, map[string]*string{"retention.ms": &retention}, topic)
		adm.CreateTopics(ctx, -1, -1, nil, "seeds-defaults")
	})

	codecs := []kgo.CompressionCodec{
		kgo.NoCompression(), kgo.GzipCompression(), kgo.SnappyCompression(), kgo.Lz4Compression(), kgo.ZstdCompression(),
	}
	for _, codec := range codecs {
		step("produce", func(ctx context.Context) {
			cl := client(kgo.DefaultProduceTopic(topic), kgo.ProducerBatchCompression(codec), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
			defer cl.Close()
			var recs []*kgo.Record
			for i := range 20 {
				recs = append(recs, &kgo.Record{
					Key:     []byte(fmt.Sprintf("key-%d", i)),
					Value:   []byte(strings.Repeat(fmt.Sprintf("value %d ", i), 1+i%4)),
					Headers: []kgo.RecordHeader{{Key: "h", Value: []byte("v")}, {Key: "trace", Value: nil}},
				})
			}
			cl.ProduceSync(ctx, recs...)
		})
	}
	step("produce acks=1 and acks=0, not idempotent", func(ctx context.Context) {
		for _, acks := range []kgo.Acks{kgo.LeaderAck(), kgo.NoAck()} {
			cl := client(kgo.DefaultProduceTopic(topic), kgo.DisableIdempotentWrite(), kgo.RequiredAcks(acks))
			cl.ProduceSync(ctx, &kgo.Record{Value: []byte("plain")})
			cl.Close()
		}
	})
	step("offsets", func(ctx context.Context) {
		adm.ListEndOffsets(ctx, topic)
		adm.ListStartOffsets(ctx, topic)
		adm.ListOffsetsAfterMilli(ctx, time.Now().Add(-time.Hour).UnixMilli(), topic)
		adm.ListMaxTimestampOffsets(ctx, topic)
	})
	step("configs", func(ctx context.Context) {
		adm.DescribeTopicConfigs(ctx, topic)
		adm.DescribeBrokerConfigs(ctx)
		v := "1048576"
		adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "max.message.bytes", Value: &v}}, topic)
		adm.AlterTopicConfigsState(ctx, []kadm.AlterConfig{{Name: "retention.ms", Value: &retention}}, topic)
	})
	step("cluster", func(ctx context.Context) {
		adm.Metadata(ctx)
		adm.ListTopics(ctx)
		admCl.Request(ctx, kmsg.NewPtrDescribeClusterRequest())
		adm.DescribeAllLogDirs(ctx, nil)
		adm.ApiVersions(ctx)
	})
	step("partitions and records", func(ctx context.Context) {
		adm.CreatePartitions(ctx, 2, topic)
		adm.DeleteRecords(ctx, kadm.Offsets{topic: {0: {At: 1}}})
		adm.OffsetForLeaderEpoch(ctx, kadm.OffsetForLeaderEpochRequest{topic: {0: 0}})
	})
	step("groups", func(ctx context.Context) {
		offs := kadm.Offsets{}
		offs.Add(kadm.Offset{Topic: topic, Partition: 0, At: 5, LeaderEpoch: -1})
		adm.CommitOffsets(ctx, "seed-group", offs)
		adm.FetchOffsets(ctx, "seed-group")
		adm.ListGroups(ctx)
		adm.DescribeGroups(ctx, "seed-group")
		adm.DeleteGroups(ctx, "seed-group")
	})
	step("consume", func(ctx context.Context) {
		cl := client(kgo.ConsumeTopics(topic), kgo.FetchMaxWait(100*time.Millisecond))
		defer cl.Close()
		pctx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		cl.PollFetches(pctx)
	})
	step("group consume", func(ctx context.Context) {
		cl := client(kgo.ConsumeTopics(topic), kgo.ConsumerGroup("seed-group"),
			kgo.SessionTimeout(6*time.Second), kgo.RebalanceTimeout(2*time.Second), kgo.HeartbeatInterval(100*time.Millisecond),
			kgo.FetchMaxWait(100*time.Millisecond))
		defer cl.Close()
		pctx, cancel := context.WithTimeout(ctx, 1500*time.Millisecond)
		defer cancel()
		cl.PollFetches(pctx)
	})
	step("transaction", func(ctx context.Context) {
		cl := client(kgo.DefaultProduceTopic(topic), kgo.TransactionalID("seed-txn"), kgo.TransactionTimeout(5*time.Second))
		defer cl.Close()
		if err := cl.BeginTransaction(); err != nil {
			return
		}
		cl.ProduceSync(ctx, &kgo.Record{Value: []byte("in a transaction")})
		cl.EndTransaction(ctx, kgo.TryCommit)
	})
	step("delete topics", func(ctx context.Context) {
		adm.DeleteTopics(ctx, "seeds-defaults")
	})
}
