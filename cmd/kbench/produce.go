package main

import (
	"context"
	"crypto/rand"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// produceCase is one produce measurement: records of size bytes to a
// topic of partitions partitions, from producers clients at once (0: one).
type produceCase struct {
	size, partitions, producers int
}

func (c produceCase) name() string {
	n := fmt.Sprintf("%s × %d partition%s", sizeName(c.size), c.partitions, plural(c.partitions))
	if c.producers > 1 {
		n += fmt.Sprintf(", %d producers", c.producers)
	}
	return n
}

// clients is the number of producing clients.
func (c produceCase) clients() int { return max(c.producers, 1) }

// topic is the case's topic in a run and round (tag); the consume cases
// read it again.
func (c produceCase) topic(tag string) string {
	return fmt.Sprintf("produce-%d-%d-%s", c.size, c.partitions, tag)
}

// produceCases are measured in this order. The many-partition cases are
// issue 18's (64 partitions, 8 producers: requests that each carry
// batches for several partitions, from several connections at once) and
// issue 15's (1,000 partitions against one: what spreading costs).
var produceCases = []produceCase{
	{100, 1, 1}, {1024, 1, 1}, {100, 8, 1}, {1024, 8, 1},
	{100, 64, 8}, {1024, 64, 8}, {1024, 1000, 1},
}

// produceOpts are the producer settings of every produce measurement:
// kgo's defaults (acks=all, idempotent, up to 5 requests in flight,
// sticky partitioning) except linger 0, so that a request goes out as
// soon as the connection can take it, and no compression, so that both
// brokers store and serve exactly what was produced.
func produceOpts(addr string) []kgo.Opt {
	return []kgo.Opt{kgo.SeedBrokers(addr), kgo.ProducerLinger(0), kgo.ProducerBatchCompression(kgo.NoCompression()),
		kgo.RequiredAcks(kgo.AllISRAcks()), kgo.MaxBufferedRecords(producerBuffer)}
}

// producerBuffer is the records a producer buffers (kgo's default, set so
// that the warm-up below follows it): what a request can carry at most,
// once the broker is slower than the producer.
const producerBuffer = 50_000

// runProduce produces volume bytes of record values to a new topic as
// fast as one kgo
// client can and reports throughput, the produce requests' round trips
// (from writing the request to reading its response) and the broker's
// CPU and heap per GB of record values.
func runProduce(ctx context.Context, bp *brokerProc, c produceCase, topic string, volume int64, lw *latencyFile) (metrics, error) {
	if err := createTopic(ctx, bp.addr, topic, c.partitions); err != nil {
		return nil, err
	}
	rtt := &latencies{log: lw.writer()}
	var cls []*kgo.Client
	defer func() {
		for _, cl := range cls {
			cl.Close()
		}
	}()
	for range c.clients() {
		// Records carry no partition: each client spreads them with kgo's
		// default (sticky) partitioner.
		cl, err := kgo.NewClient(append(produceOpts(bp.addr), kgo.DefaultProduceTopic(topic),
			kgo.WithHooks(produceRTTHook{rtt}))...)
		if err != nil {
			return nil, err
		}
		cls = append(cls, cl)
	}
	value := randomValue(c.size)
	// Warm-up: connections, producer ids, metadata, and the first 16 MB
	// and at least four producer buffers per producer (at most its share
	// of the window), so that the producers' requests have grown to the
	// size they keep and the broker's buffers with them: the window
	// measures the steady state. 16 MB in all was too little for 8
	// producers to 64 partitions, whose requests grow to 5 MB (50,000
	// records of 100 B) and 51 MB (1 KiB), and one buffer each was not
	// enough either: the window then held the broker's one-time growth to
	// them (8 buffers of 8 and of 52 MiB) and reported it as MB per GB.
	clients := int64(len(cls))
	warm := max(1000*clients, min(volume/16, 16e6)/int64(c.size),
		clients*min(4*producerBuffer, volume/int64(c.size)/clients))
	if err := produceN(ctx, cls, value, warm); err != nil {
		return nil, err
	}
	n := volume / int64(c.size)
	m := startMeasure(bp)
	rtt.start()
	if err := produceN(ctx, cls, value, n); err != nil {
		return nil, err
	}
	out := m.finish(n * int64(c.size))
	out.setRate(n, n*int64(c.size))
	lat := rtt.stop()
	out["ack_p50"], out["ack_p99"] = ms(percentile(lat, 50)), ms(percentile(lat, 99))
	return out, nil
}

// produceN produces n records of value spread over the clients, one
// goroutine each, as fast as they take them, and waits for every
// acknowledgement; the first error is returned. Records go to
// each client's default topic; with a manual partitioner, client i
// writes partition i.
func produceN(ctx context.Context, cls []*kgo.Client, value []byte, n int64) error {
	var (
		failed atomic.Pointer[error]
		wg     sync.WaitGroup
	)
	for i, cl := range cls {
		share := n / int64(len(cls))
		if i == 0 {
			share += n % int64(len(cls))
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range share {
				cl.Produce(ctx, &kgo.Record{Value: value, Partition: int32(i)}, func(_ *kgo.Record, err error) {
					if err != nil {
						failed.CompareAndSwap(nil, &err)
					}
				})
			}
			if err := cl.Flush(ctx); err != nil {
				failed.CompareAndSwap(nil, &err)
			}
		}()
	}
	wg.Wait()
	if err := failed.Load(); err != nil {
		return fmt.Errorf("produce: %w", *err)
	}
	return nil
}

// produceRTTHook records the round trip of every produce request.
type produceRTTHook struct{ l *latencies }

func (h produceRTTHook) OnBrokerE2E(_ kgo.BrokerMetadata, key int16, e kgo.BrokerE2E) {
	if key == 0 && e.Err() == nil { // Produce
		h.l.add(e.DurationE2E())
	}
}

// createTopic creates topic with partitions partitions and replication
// factor 1.
func createTopic(ctx context.Context, addr, topic string, partitions int) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	res, err := kadm.NewClient(cl).CreateTopic(ctx, int32(partitions), 1, nil, topic)
	if err == nil {
		err = res.Err
	}
	if err != nil {
		return fmt.Errorf("create topic %s: %w", topic, err)
	}
	return nil
}

// randomValue is size random bytes: nothing compresses them.
func randomValue(size int) []byte {
	v := make([]byte, size)
	rand.Read(v)
	return v
}

// measure is a window of broker and client CPU and broker heap.
type measure struct {
	bp               *brokerProc
	start            time.Time
	cpu0, self0      time.Duration
	cpuOK            bool
	alloc0, objects0 uint64
	heapOK           bool
}

// startMeasure opens a window.
func startMeasure(bp *brokerProc) *measure {
	m := &measure{bp: bp}
	m.alloc0, m.objects0, m.heapOK = bp.heap()
	m.cpu0, m.cpuOK = bp.cpu()
	m.self0 = selfCPU()
	m.start = time.Now()
	return m
}

// finish closes the window: the elapsed seconds, the broker's and the
// clients' CPU seconds per GB of payload, and the broker's heap bytes
// (MB per GB) and objects (per MB) allocated.
func (m *measure) finish(payload int64) metrics {
	elapsed := time.Since(m.start)
	self := selfCPU() - m.self0
	out := metrics{"seconds": elapsed.Seconds()}
	gb := float64(payload) / 1e9
	out["client_cpu"] = self.Seconds() / gb
	if cpu, ok := m.bp.cpu(); ok && m.cpuOK {
		out["broker_cpu"] = (cpu - m.cpu0).Seconds() / gb
		out["broker_cores"] = (cpu - m.cpu0).Seconds() / elapsed.Seconds()
	}
	if alloc, objects, ok := m.bp.heap(); ok && m.heapOK {
		out["alloc_mb_gb"] = float64(alloc-m.alloc0) / 1e6 / gb
		out["objects_mb"] = float64(objects-m.objects0) / (float64(payload) / 1e6)
	}
	return out
}

// setRate adds records/s and MB/s over the window's seconds.
func (out metrics) setRate(records, payload int64) {
	s := out["seconds"]
	out["records_s"] = float64(records) / s
	out["mb_s"] = float64(payload) / 1e6 / s
}

func sizeName(size int) string {
	if size%1024 == 0 {
		return fmt.Sprintf("%d KiB", size/1024)
	}
	return fmt.Sprintf("%d B", size)
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}
