package main

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// syncProducers is the number of concurrent producers of the flush
// comparison.
const syncProducers = 8

// syncSize is the record size of the flush comparison.
const syncSize = 1024

// runSyncFlush produces volume bytes of 1 KiB records with 8 kgo clients
// at once (8 connections, 8 producer ids), client i to partition i of a
// new topic of 8 partitions, and reports the aggregate throughput, the
// produce requests' round trips and the broker's CPU per GB. Run against
// a broker flushing before it acknowledges (kbroker --flush sync: group
// commit; kfake SyncWrites: an fsync per batch) and the same broker in
// async mode, it shows what durability costs when producers are
// concurrent.
func runSyncFlush(ctx context.Context, bp *brokerProc, volume int64) (metrics, error) {
	topic := fmt.Sprintf("sync-%d", time.Now().UnixNano())
	if err := createTopic(ctx, bp.addr, topic, syncProducers); err != nil {
		return nil, err
	}
	rtt := &latencies{}
	cls := make([]*kgo.Client, syncProducers)
	for i := range cls {
		cl, err := kgo.NewClient(append(produceOpts(bp.addr), kgo.DefaultProduceTopic(topic),
			kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.WithHooks(produceRTTHook{rtt}))...)
		if err != nil {
			return nil, err
		}
		defer cl.Close()
		cls[i] = cl
	}
	value := randomValue(syncSize)
	if err := produceN(ctx, cls, value, 100*syncProducers); err != nil { // warm-up
		return nil, err
	}
	n := volume / syncSize
	m := startMeasure(bp)
	rtt.start()
	if err := produceN(ctx, cls, value, n); err != nil {
		return nil, err
	}
	out := m.finish(n * syncSize)
	out.setRate(n, n*syncSize)
	lat := rtt.stop()
	out["ack_p50"], out["ack_p99"] = ms(percentile(lat, 50)), ms(percentile(lat, 99))
	return out, nil
}
