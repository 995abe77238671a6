package integration

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kbroker/kbroker/internal/testenv"
)

// crashAck is a record the broker acknowledged: where it said it put it.
type crashAck struct {
	round     int
	partition int32
	offset    int64
	value     string
}

// crashWait bounds every wait of TestBinaryCrashKill9.
const crashWait = 30 * time.Second

// TestBinaryCrashKill9: the binary in sync flush mode is killed with
// SIGKILL while an idempotent kgo producer (acks=all) writes to a topic
// with 3 partitions as fast as it can, then started again on the same data
// directory (recovering after the crash), N times (KBROKER_BINARY_KILLS, 5
// by default). After each restart a consumer reads every partition from
// the start: every record acknowledged in any round is at its acknowledged
// partition and offset with its value, offsets are dense from 0, no value
// appears twice, and ListOffsets' end offsets are the counts read.
func TestBinaryCrashKill9(t *testing.T) {
	t.Parallel()
	kills := testenv.Count(t, "KBROKER_BINARY_KILLS", 5)
	start := time.Now()
	b := startBinary(t, "--flush", "sync")
	topic := topicName(t)
	created, err := newAdmin(t, b.Addr()).CreateTopic(testCtx(t), 3, 1, nil, topic)
	if err == nil {
		err = created.Err
	}
	if err != nil {
		t.Fatalf("CreateTopic %s: %v", topic, err)
	}

	var acked []crashAck
	verified := 0
	for round := 1; round <= kills; round++ {
		acks, attempted := crashProduceAndKill(t, b, topic, round)
		acked = append(acked, acks...)
		t.Logf("round %d: killed the broker after %d records acknowledged of %d produced", round, len(acks), attempted)

		restart := time.Now()
		b.start(t)
		t.Logf("round %d: restarted after the kill in %v", round, time.Since(restart).Round(time.Millisecond))
		verified = crashVerify(t, b.Addr(), topic, round, acked)
		if t.Failed() {
			return
		}
	}
	t.Logf("%d kills done; %d acknowledged records verified, %d records read after the last restart, in %v",
		kills, len(acked), verified, time.Since(start).Round(time.Millisecond))
}

// crashProduceAndKill produces to topic on b until it has killed b with
// SIGKILL, a random 200–800 ms after the first acknowledgement, and
// returns the acknowledged records and how many were produced.
func crashProduceAndKill(t *testing.T, b *binaryBroker, topic string, round int) ([]crashAck, int) {
	t.Helper()
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(b.Addr()),
		kgo.DefaultProduceTopic(topic),
		kgo.RecordDeliveryTimeout(5*time.Second),
		kgo.RequestTimeoutOverhead(3*time.Second),
		kgo.RetryTimeout(3*time.Second),
		kgo.ProduceRequestTimeout(3*time.Second),
		kgo.ProducerLinger(0),
		kgo.MaxBufferedRecords(2000),
	)
	if err != nil {
		t.Fatal(err)
	}
	closed := false
	defer func() {
		if !closed {
			cl.Close()
		}
	}()

	var (
		mu       sync.Mutex
		acks     []crashAck
		firstAck = make(chan struct{})
		pending  sync.WaitGroup // one per Produce call until its promise
	)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	producerDone := make(chan int, 1)
	go func() {
		n := 0
		for ctx.Err() == nil {
			value := fmt.Sprintf("r-%d-%d", round, n)
			n++
			pending.Add(1)
			cl.Produce(ctx, &kgo.Record{Value: []byte(value)}, func(r *kgo.Record, err error) {
				defer pending.Done()
				if err != nil {
					return
				}
				mu.Lock()
				defer mu.Unlock()
				if len(acks) == 0 {
					close(firstAck)
				}
				acks = append(acks, crashAck{round: round, partition: r.Partition, offset: r.Offset, value: value})
			})
		}
		producerDone <- n
	}()

	select {
	case <-firstAck:
	case <-b.exited:
		t.Fatalf("round %d: kbroker exited on its own: %v", round, b.err)
	case <-time.After(crashWait):
		t.Fatalf("round %d: no record acknowledged within %v", round, crashWait)
	}
	time.Sleep(time.Duration(200+rand.IntN(601)) * time.Millisecond)

	b.kill9(t, fmt.Sprintf("round %d", round), crashWait)

	// Stop the producer: records in flight fail, only acknowledged ones
	// count.
	cancel()
	var attempted int
	select {
	case attempted = <-producerDone:
	case <-time.After(crashWait):
		t.Fatalf("round %d: the producer did not stop within %v", round, crashWait)
	}
	closeDone := make(chan struct{})
	go func() {
		cl.Close()
		pending.Wait()
		close(closeDone)
	}()
	select {
	case <-closeDone:
		closed = true
	case <-time.After(crashWait):
		t.Fatalf("round %d: closing the producer took over %v", round, crashWait)
	}
	mu.Lock()
	defer mu.Unlock()
	return acks, attempted
}

// crashVerify reads every partition of topic from the start on the broker
// at addr and checks the records against acked; it returns how many
// records it read.
func crashVerify(t *testing.T, addr, topic string, round int, acked []crashAck) int {
	t.Helper()
	start := time.Now()
	adm := newAdmin(t, addr)
	ends := endOffsets(t, adm, topic)
	if len(ends) != 3 {
		t.Fatalf("round %d: end offsets of %d partitions after the restart, want 3: %v", round, len(ends), ends)
	}

	// got[p][o] is the value read at offset o of partition p.
	got := map[int32][]string{}
	remaining := 0
	parts := map[int32]kgo.Offset{}
	for p, end := range ends {
		parts[p] = kgo.NewOffset().AtStart()
		got[p] = nil
		if end > 0 {
			remaining++
		}
	}
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(addr),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: parts}),
		kgo.FetchMaxWait(500*time.Millisecond),
		kgo.RequestTimeoutOverhead(5*time.Second),
		kgo.RetryTimeout(10*time.Second),
	)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), crashWait)
	defer cancel()
	for remaining > 0 {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			lens := map[int32]int{}
			for p, vs := range got {
				lens[p] = len(vs)
			}
			t.Fatalf("round %d: read %v records by partition within %v, want up to end offsets %v", round, lens, crashWait, ends)
		}
		fs.EachError(func(topic string, p int32, err error) {
			t.Errorf("round %d: fetch %s[%d]: %v", round, topic, p, err)
		})
		if t.Failed() {
			t.FailNow()
		}
		fs.EachRecord(func(r *kgo.Record) {
			p := r.Partition
			if want := int64(len(got[p])); r.Offset != want {
				t.Fatalf("round %d: partition %d: read offset %d after %d records: offsets are not dense from 0", round, p, r.Offset, want)
			}
			got[p] = append(got[p], string(r.Value))
			if int64(len(got[p])) == ends[p] {
				remaining--
			}
		})
	}

	// Each value once.
	where := map[string]string{}
	read := 0
	for p, vs := range got {
		read += len(vs)
		for o, v := range vs {
			at := fmt.Sprintf("partition %d offset %d", p, o)
			if prev, ok := where[v]; ok {
				t.Errorf("round %d: value %q at %s and at %s", round, v, prev, at)
			}
			where[v] = at
		}
	}
	// Every acknowledged record where it was acknowledged: the first 20
	// missing ones listed, then how many by round and partition.
	type roundPartition struct {
		round     int
		partition int32
	}
	missing := map[roundPartition]int{}
	lost := 0
	for _, a := range acked {
		vs := got[a.partition]
		var what string
		switch {
		case a.offset >= int64(len(vs)):
			what = fmt.Sprintf("partition %d ends at %d", a.partition, len(vs))
		case vs[a.offset] != a.value:
			what = fmt.Sprintf("there is %q", vs[a.offset])
		default:
			continue
		}
		if lost++; lost <= 20 {
			t.Errorf("round %d: LOST %q acknowledged in round %d at partition %d offset %d: %s",
				round, a.value, a.round, a.partition, a.offset, what)
		}
		missing[roundPartition{a.round, a.partition}]++
	}
	for rp, n := range missing {
		t.Errorf("round %d: %d records acknowledged in round %d on partition %d missing", round, n, rp.round, rp.partition)
	}
	// ListOffsets agrees with what was read.
	after := endOffsets(t, adm, topic)
	for p, vs := range got {
		if after[p] != int64(len(vs)) {
			t.Errorf("round %d: ListOffsets end of partition %d is %d, read %d records", round, p, after[p], len(vs))
		}
	}
	t.Logf("round %d: %d acknowledged records verified among %d read (by partition: %d, %d, %d) in %v",
		round, len(acked), read, len(got[0]), len(got[1]), len(got[2]), time.Since(start).Round(time.Millisecond))
	return read
}
