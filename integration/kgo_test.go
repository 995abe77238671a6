package integration

import (
	"errors"
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// produceKgo produces n records with keys and headers to topic with an
// idempotent kgo producer (the default) and returns how many went to each
// partition, checking that each partition's offsets are dense from base.
func produceKgo(t *testing.T, addr, topic string, n int, base map[int32]int64, opts ...kgo.Opt) map[int32]int64 {
	t.Helper()
	cl := newKgo(t, addr, append([]kgo.Opt{kgo.DefaultProduceTopic(topic), kgo.ProducerLinger(0)}, opts...)...)
	recs := make([]*kgo.Record, n)
	for i := range recs {
		recs[i] = &kgo.Record{
			Key:   []byte(fmt.Sprintf("key-%d", i)),
			Value: []byte(fmt.Sprintf("value %d of a few thousand", i)),
			Headers: []kgo.RecordHeader{
				{Key: "seq", Value: []byte(fmt.Sprint(i))},
				{Key: "empty", Value: nil},
			},
		}
	}
	results := cl.ProduceSync(testCtx(t), recs...)
	if err := results.FirstErr(); err != nil {
		t.Fatalf("ProduceSync: %v", err)
	}
	seen := map[int32]map[int64]bool{}
	for _, r := range results {
		if seen[r.Record.Partition] == nil {
			seen[r.Record.Partition] = map[int64]bool{}
		}
		if seen[r.Record.Partition][r.Record.Offset] {
			t.Fatalf("offset %d of partition %d given twice", r.Record.Offset, r.Record.Partition)
		}
		seen[r.Record.Partition][r.Record.Offset] = true
	}
	counts := map[int32]int64{}
	for p, offs := range seen {
		counts[p] = int64(len(offs))
		for o := base[p]; o < base[p]+int64(len(offs)); o++ {
			if !offs[o] {
				t.Fatalf("partition %d: offsets are not dense from %d: %d missing", p, base[p], o)
			}
		}
	}
	return counts
}

// topicConfig is the value of one config of topic as DescribeConfigs
// reports it.
func topicConfig(t *testing.T, adm *kadm.Client, topic, name string) string {
	t.Helper()
	rcs, err := adm.DescribeTopicConfigs(testCtx(t), topic)
	if err != nil {
		t.Fatalf("DescribeTopicConfigs: %v", err)
	}
	rc, err := rcs.On(topic, nil)
	if err != nil {
		t.Fatalf("DescribeTopicConfigs %s: %v", topic, err)
	}
	if rc.Err != nil {
		t.Fatalf("DescribeTopicConfigs %s: %v", topic, rc.Err)
	}
	for _, c := range rc.Configs {
		if c.Key == name {
			return c.MaybeValue()
		}
	}
	t.Fatalf("DescribeTopicConfigs %s: no %s", topic, name)
	return ""
}

// TestKgoProduceRestart: a topic created with kadm (3 partitions,
// retention.ms), a few thousand idempotent records with headers, end
// offsets and configs as expected; after a restart on the same data
// directory, topics, configs and end offsets are all still there, and
// producing goes on from the end offsets. In each flush mode (the default
// is async).
func TestKgoProduceRestart(t *testing.T) {
	t.Parallel()
	for _, flush := range []string{"sync", "pool", ""} {
		name := "flush=" + flush
		if flush == "" {
			name = "flush=default"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			eachBroker(t, brokerOpts{flush: flush}, func(t *testing.T, b testBroker) {
				testKgoProduceRestart(t, b, flush == "pool")
			})
		})
	}
}

// testKgoProduceRestart is TestKgoProduceRestart on one broker. lags: the
// high watermark trails acknowledged appends (pool mode acknowledges once
// a batch is in the pool buffer, and makes it visible when the commit
// service has written it, every 200 ms), so the end offsets are awaited
// rather than expected at once.
func testKgoProduceRestart(t *testing.T, b testBroker, lags bool) {
	const records = 3000
	topic := topicName(t)
	adm := newAdmin(t, b.Addr())
	retention := "3600000"
	created, err := adm.CreateTopic(testCtx(t), 3, 1, map[string]*string{"retention.ms": &retention}, topic)
	if err != nil || created.Err != nil {
		t.Fatalf("CreateTopic: %v %v", err, created.Err)
	}
	counts := produceKgo(t, b.Addr(), topic, records, nil)
	var total int64
	for _, c := range counts {
		total += c
	}
	if total != records || len(counts) != 3 {
		t.Fatalf("produced %d records to %d partitions, want %d to 3", total, len(counts), records)
	}
	if lags {
		awaitEndOffsets(t, adm, topic, counts)
	}
	checkEndOffsets(t, adm, topic, counts)
	if got := topicConfig(t, adm, topic, "retention.ms"); got != retention {
		t.Fatalf("retention.ms %q, want %q", got, retention)
	}

	b.Restart(t)

	adm = newAdmin(t, b.Addr())
	topics, err := adm.ListTopics(testCtx(t))
	if err != nil {
		t.Fatalf("ListTopics after restart: %v", err)
	}
	td, ok := topics[topic]
	if !ok || td.Err != nil || len(td.Partitions) != 3 {
		t.Fatalf("after restart, topic %s: %+v (found %v)", topic, td, ok)
	}
	if got := topicConfig(t, adm, topic, "retention.ms"); got != retention {
		t.Fatalf("after restart, retention.ms %q, want %q", got, retention)
	}
	checkEndOffsets(t, adm, topic, counts)

	// A new idempotent producer appends after what survived.
	more := produceKgo(t, b.Addr(), topic, 300, counts)
	want := map[int32]int64{}
	for p, c := range counts {
		want[p] = c + more[p]
	}
	if lags {
		awaitEndOffsets(t, adm, topic, want)
	}
	checkEndOffsets(t, adm, topic, want)
}

// TestKgoAutoCreate: producing to a missing topic, with a client that
// allows auto-creation (kgo does not by default), creates it with
// num.partitions partitions (here 2).
func TestKgoAutoCreate(t *testing.T) {
	t.Parallel()
	eachBroker(t, brokerOpts{partitions: 2}, func(t *testing.T, b testBroker) {
		topic := topicName(t)
		counts := produceKgo(t, b.Addr(), topic, 100, nil, kgo.AllowAutoTopicCreation())
		adm := newAdmin(t, b.Addr())
		td, err := adm.ListTopics(testCtx(t), topic)
		if err != nil {
			t.Fatal(err)
		}
		if got := len(td[topic].Partitions); got != 2 {
			t.Fatalf("auto-created topic has %d partitions, want 2", got)
		}
		want := map[int32]int64{0: 0, 1: 0}
		for p, c := range counts {
			want[p] = c
		}
		checkEndOffsets(t, adm, topic, want)
	})
}

// TestKgoAutoCreateOff: with auto-creation off, producing to a missing
// topic fails with UNKNOWN_TOPIC_OR_PARTITION and creates nothing, even
// when the client allows auto-creation.
func TestKgoAutoCreateOff(t *testing.T) {
	t.Parallel()
	eachBroker(t, brokerOpts{noAutoCreate: true}, func(t *testing.T, b testBroker) {
		topic := topicName(t)
		cl := newKgo(t, b.Addr(), kgo.DefaultProduceTopic(topic), kgo.UnknownTopicRetries(1), kgo.AllowAutoTopicCreation())
		err := cl.ProduceSync(testCtx(t), &kgo.Record{Value: []byte("nowhere")}).FirstErr()
		if !errors.Is(err, kerr.UnknownTopicOrPartition) {
			t.Fatalf("produce to a missing topic: got %v, want UNKNOWN_TOPIC_OR_PARTITION", err)
		}
		topics, err := newAdmin(t, b.Addr()).ListTopics(testCtx(t))
		if err != nil {
			t.Fatal(err)
		}
		if topics.Has(topic) {
			t.Fatalf("topic %s was created with auto-creation off", topic)
		}
	})
}
