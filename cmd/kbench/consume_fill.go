package main

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// The consume cases read batches whose shape depends on who wrote them:
// a producer with linger 0 sends what has queued while its last request
// was in flight, so a broker that acknowledges sooner gets smaller
// batches, and its consumers then decode more batches per record and
// take its copy path (batches under kbroker.fetch.copy.threshold.bytes)
// rather than sendfile. Reading the produce cases' topics therefore
// compares brokers on different data. With --consume-batch-bytes, each
// broker's consume topics are written instead by fillTopic in batches of
// one fixed size, the same on every broker.

// fillTopic writes volume bytes of record values of c's size to a new
// topic of c's partitions, round-robin, in batches of batchBytes (kgo's
// ProducerBatchMaxBytes, filled: records are buffered and flushed many
// batches at a time, so that only the last batch of a partition in each
// flush may be short).
func fillTopic(ctx context.Context, addr string, c produceCase, topic string, volume int64, batchBytes int) error {
	if err := createTopic(ctx, addr, topic, c.partitions); err != nil {
		return err
	}
	cl, err := kgo.NewClient(append(produceOpts(addr), kgo.DefaultProduceTopic(topic), kgo.ManualFlushing(),
		kgo.ProducerBatchMaxBytes(int32(batchBytes)), kgo.MaxBufferedRecords(1<<22),
		kgo.RecordPartitioner(kgo.ManualPartitioner()))...)
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	// Flush after about 64 batches per partition, at least 16 MB.
	perFlush := max(int64(16<<20), int64(64*batchBytes*c.partitions))
	value := randomValue(c.size)
	var failed atomic.Pointer[error]
	var sent, pending int64
	for i := 0; sent < volume; i++ {
		cl.Produce(ctx, &kgo.Record{Value: value, Partition: int32(i % c.partitions)}, func(_ *kgo.Record, err error) {
			if err != nil {
				failed.CompareAndSwap(nil, &err)
			}
		})
		sent += int64(c.size)
		if pending += int64(c.size); pending >= perFlush || sent >= volume {
			if err := cl.Flush(ctx); err != nil {
				return fmt.Errorf("fill %s: %w", topic, err)
			}
			if err := failed.Load(); err != nil {
				return fmt.Errorf("fill %s: %w", topic, *err)
			}
			pending = 0
		}
	}
	return nil
}
