package integration

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kbroker/kbroker/internal/testenv"
)

// compactConfigs are the topic configs of the acceptance example
// (what Kafka's own tests set to make the cleaner act at once).
func compactConfigs(policy string) map[string]*string {
	s := func(v string) *string { return &v }
	return map[string]*string{
		"cleanup.policy":            s(policy),
		"segment.ms":                s("100"),
		"min.cleanable.dirty.ratio": s("0.01"),
		"min.compaction.lag.ms":     s("0"),
		"delete.retention.ms":       s("2000"),
	}
}

// compactProps are the broker settings of the acceptance example.
var compactProps = map[string]string{"log.cleaner.backoff.ms": "1000"}

func createCompactedTopic(t *testing.T, addr, topic, policy string) {
	t.Helper()
	resp, err := newAdmin(t, addr).CreateTopic(testCtx(t), 1, 1, compactConfigs(policy), topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		t.Fatalf("create %s: %v", topic, err)
	}
}

// readCompacted reads partition 0 of topic from the start to its end
// offset with kgo and returns the last value of every key (nil for a
// tombstone) and the number of records read.
func readCompacted(t *testing.T, addr, topic string) (map[string][]byte, int) {
	t.Helper()
	ctx := testCtx(t)
	end := endOffsets(t, newAdmin(t, addr), topic)[0]
	last := map[string][]byte{}
	if end == 0 {
		return last, 0
	}
	cl := newKgo(t, addr, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}))
	defer cl.Close()
	n := 0
	prev := int64(-1)
	for prev < end-1 {
		fs := cl.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			t.Fatalf("poll %s: %v", topic, err)
		}
		for _, r := range fs.Records() {
			if r.Offset <= prev {
				t.Fatalf("offset %d after %d", r.Offset, prev)
			}
			prev = r.Offset
			last[string(r.Key)] = r.Value
			n++
		}
	}
	return last, n
}

// awaitCompacted polls (every 250 ms, at most a minute) until cond holds
// for what a reader from the start sees. The polling watches the
// cleaner's background progress; nothing is synchronised by sleeping.
func awaitCompacted(t *testing.T, addr, topic, what string, cond func(last map[string][]byte, n int) bool) (map[string][]byte, int) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		last, n := readCompacted(t, addr, topic)
		if cond(last, n) {
			return last, n
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within a minute (%d records read)", what, n)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// TestCompactionAcceptance is the acceptance example: with
// segment.ms=100, min.cleanable.dirty.ratio=0.01, min.compaction.lag.ms=0,
// delete.retention.ms=2000 and log.cleaner.backoff.ms=1000, a partition of
// 100,000 updates over 1,000 keys, a tenth of the keys then deleted, is
// cleaned to about one record per live key within a minute, and its
// tombstones are gone a few seconds later.
func TestCompactionAcceptance(t *testing.T) {
	t.Parallel()
	eachBroker(t, brokerOpts{props: compactProps}, func(t *testing.T, b testBroker) {
		const keys, updates = 1000, 100_000
		topic := topicName(t)
		createCompactedTopic(t, b.Addr(), topic, "compact")
		cl := newKgo(t, b.Addr(), kgo.DefaultProduceTopic(topic), kgo.ProducerLinger(5*time.Millisecond))
		ctx := testCtx(t)
		want := map[string]string{}
		recs := make([]*kgo.Record, 0, 1000)
		flush := func() {
			if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
				t.Fatalf("produce: %v", err)
			}
			recs = recs[:0]
		}
		for i := range updates {
			k := fmt.Sprintf("key-%04d", i%keys)
			v := fmt.Sprintf("value-%d", i)
			want[k] = v
			recs = append(recs, &kgo.Record{Key: []byte(k), Value: []byte(v)})
			if len(recs) == cap(recs) {
				flush()
			}
		}
		for k := range keys / 10 {
			key := fmt.Sprintf("key-%04d", k*10)
			delete(want, key)
			recs = append(recs, &kgo.Record{Key: []byte(key)}) // tombstone
		}
		flush()
		recs = append(recs, &kgo.Record{Key: []byte("end"), Value: []byte("end")})
		flush()
		want["end"] = "end"
		start := time.Now()

		check := func(last map[string][]byte) {
			t.Helper()
			for k, v := range want {
				if string(last[k]) != v {
					t.Fatalf("key %s reads %q, want %q", k, last[k], v)
				}
			}
			for k, v := range last {
				if _, live := want[k]; !live && v != nil {
					t.Fatalf("deleted key %s reads %q", k, v)
				}
			}
		}
		last, n := awaitCompacted(t, b.Addr(), topic, "cleaned to one record per key", func(_ map[string][]byte, n int) bool {
			return n <= keys+1+keys/100 // each key once (tombstones included), the last batch, 1% slack
		})
		check(last)
		t.Logf("cleaned: %d records of %d after %v", n, updates+keys/10+1, time.Since(start).Round(time.Millisecond))
		last, n = awaitCompacted(t, b.Addr(), topic, "tombstones removed", func(last map[string][]byte, n int) bool {
			for _, v := range last {
				if v == nil {
					return false
				}
			}
			return true
		})
		check(last)
		if len(last) != len(want) {
			t.Fatalf("%d keys read, want %d", len(last), len(want))
		}
		t.Logf("tombstones removed: %d records after %v", n, time.Since(start).Round(time.Millisecond))
	})
}

// TestCompactionClients produces to a compacted topic with sarama and
// kcat (librdkafka) and reads it back with both after the cleaner
// rewrote it (gaps, partly emptied batches), to the end.
func TestCompactionClients(t *testing.T) {
	t.Parallel()
	eachBroker(t, brokerOpts{props: compactProps}, func(t *testing.T, b testBroker) {
		topic := topicName(t)
		createCompactedTopic(t, b.Addr(), topic, "compact,delete")
		want := map[string]string{}

		v36 := sarama.V3_6_0_0
		cfg := saramaConfig(&v36, true)
		cfg.Producer.Partitioner = sarama.NewManualPartitioner
		producer, err := sarama.NewSyncProducer([]string{b.Addr()}, cfg)
		if err != nil {
			t.Fatal(err)
		}
		var msgs []*sarama.ProducerMessage
		for i := range 2000 {
			k, v := fmt.Sprintf("k%02d", i%40), fmt.Sprintf("sarama-%d", i)
			want[k] = v
			msgs = append(msgs, &sarama.ProducerMessage{Topic: topic, Partition: 0, Key: sarama.StringEncoder(k), Value: sarama.StringEncoder(v)})
		}
		if err := producer.SendMessages(msgs); err != nil {
			t.Fatalf("sarama produce: %v", err)
		}
		// A keyless record is refused with INVALID_RECORD.
		_, _, err = producer.SendMessage(&sarama.ProducerMessage{Topic: topic, Partition: 0, Value: sarama.StringEncoder("no key")})
		if !errors.Is(err, sarama.ErrInvalidRecord) {
			t.Fatalf("sarama keyless produce: %v, want INVALID_RECORD", err)
		}
		producer.Close()

		haveKcat := true
		if _, err := exec.LookPath("kcat"); err != nil && os.Getenv("CI") == "" {
			haveKcat = false
			t.Log("kcat not on PATH: its part is skipped")
		} else {
			var lines strings.Builder
			for i := range 200 {
				k, v := fmt.Sprintf("k%02d", i%40), fmt.Sprintf("kcat-%d", i)
				want[k] = v
				fmt.Fprintf(&lines, "%s:%s\n", k, v)
			}
			runKcat(t, lines.String(), append([]string{"-b", b.Addr(), "-P", "-t", topic, "-p", "0", "-K", ":"}, kcatOpts...)...)
		}
		cl := newKgo(t, b.Addr(), kgo.DefaultProduceTopic(topic))
		if err := cl.ProduceSync(testCtx(t), &kgo.Record{Key: []byte("end"), Value: []byte("end")}).FirstErr(); err != nil {
			t.Fatal(err)
		}
		want["end"] = "end"
		awaitCompacted(t, b.Addr(), topic, "cleaned", func(_ map[string][]byte, n int) bool { return n <= 41 })

		// sarama reads it to the end.
		consumer, err := sarama.NewConsumer([]string{b.Addr()}, cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer consumer.Close()
		pc, err := consumer.ConsumePartition(topic, 0, sarama.OffsetOldest)
		if err != nil {
			t.Fatal(err)
		}
		defer pc.Close()
		got := map[string]string{}
		end := endOffsets(t, newAdmin(t, b.Addr()), topic)[0]
		timeout := time.After(30 * time.Second)
		for done := false; !done; {
			select {
			case m := <-pc.Messages():
				got[string(m.Key)] = string(m.Value)
				done = m.Offset >= end-1
			case err := <-pc.Errors():
				t.Fatalf("sarama consume: %v", err)
			case <-timeout:
				t.Fatalf("sarama did not reach offset %d; read %d keys", end-1, len(got))
			}
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("sarama read %v, want %v", got, want)
		}
		if !haveKcat {
			return
		}
		out := runKcat(t, "", append([]string{"-b", b.Addr(), "-C", "-t", topic, "-p", "0", "-o", "beginning", "-e", "-f", "%k=%s\n"}, kcatOpts...)...)
		got = map[string]string{}
		for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			k, v, _ := strings.Cut(line, "=")
			got[k] = v
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("kcat read %v, want %v", got, want)
		}
	})
}

// TestCompactionKill9 kills the binary with SIGKILL while a producer
// writes keyed updates and the cleaner runs every few milliseconds, then
// restarts it, several times (KBROKER_COMPACTION_KILLS, 4 by default):
// after each restart every key reads the last value acknowledged for it
// (or a later one that was written but not acknowledged), offsets
// increase, and the partition reads to its end.
func TestCompactionKill9(t *testing.T) {
	t.Parallel()
	kills := testenv.Count(t, "KBROKER_COMPACTION_KILLS", 4)
	b := startBinary(t, "--flush", "sync", "--config", writeProps(t, map[string]string{"log.cleaner.backoff.ms": "5"}))
	topic := topicName(t)
	createCompactedTopic(t, b.Addr(), topic, "compact")
	acked := map[string]int{}   // key → highest acknowledged sequence
	written := map[string]int{} // key → highest sequence produced
	seq := 0
	for round := 1; round <= kills; round++ {
		cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.DefaultProduceTopic(topic),
			kgo.RecordRetries(1), kgo.RequestTimeoutOverhead(2*time.Second), kgo.ProducerLinger(0))
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		var mu sync.Mutex // guards acked against late callbacks
		go func() {
			defer close(done)
			for ctx.Err() == nil {
				seq++
				k := fmt.Sprintf("key-%02d", rand.IntN(30))
				written[k] = max(written[k], seq)
				s := seq
				cl.Produce(ctx, &kgo.Record{Key: []byte(k), Value: []byte(strconv.Itoa(s))}, func(_ *kgo.Record, err error) {
					if err == nil {
						mu.Lock()
						acked[k] = max(acked[k], s)
						mu.Unlock()
					}
				})
				if seq%200 == 0 {
					time.Sleep(time.Millisecond) // let passes run between bursts
				}
			}
		}()
		time.Sleep(time.Duration(300+rand.IntN(700)) * time.Millisecond) // how long the broker lives
		b.kill9(t, fmt.Sprintf("round %d", round), 10*time.Second)
		cancel()
		<-done
		cl.Close()
		b.start(t)
		mu.Lock()
		last, n := readCompacted(t, b.Addr(), topic)
		for k, s := range acked {
			got, err := strconv.Atoi(string(last[k]))
			if err != nil || got < s || got > written[k] {
				t.Fatalf("round %d: key %s reads %q; acknowledged up to %d, written up to %d", round, k, last[k], s, written[k])
			}
		}
		mu.Unlock()
		t.Logf("round %d: %d keys verified, %d records read", round, len(acked), n)
	}
}

// writeProps writes a properties file for the binary's --config.
func writeProps(t *testing.T, props map[string]string) string {
	t.Helper()
	return brokerOpts{props: props}.args(t)[1]
}
