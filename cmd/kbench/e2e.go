package main

import (
	"context"
	"encoding/binary"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// e2eSize is the record size of the end-to-end measurement.
const e2eSize = 1024

// runE2E produces records of 1 KiB at a fixed rate, lingering linger
// before sending a batch, to a new topic of one partition and consumes
// them with a second client of the same process (kgo's default long
// polling), and reports the end-to-end latency of
// each record, from its Produce call to its arrival in PollFetches, after
// a warm-up second. Each record's value starts with the nanoseconds since
// the run's start at its Produce call. The producer is paced by the
// clock: when it wakes, it sends every record due by then.
func runE2E(ctx context.Context, bp *brokerProc, rate int, linger, d time.Duration, lw *latencyFile) (metrics, error) {
	topic := fmt.Sprintf("e2e-%d", time.Now().UnixNano())
	if err := createTopic(ctx, bp.addr, topic, 1); err != nil {
		return nil, err
	}
	cons, err := kgo.NewClient(kgo.SeedBrokers(bp.addr),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}))
	if err != nil {
		return nil, err
	}
	defer cons.Close()
	prod, err := kgo.NewClient(append(produceOpts(bp.addr), kgo.DefaultProduceTopic(topic), kgo.ProducerLinger(linger))...)
	if err != nil {
		return nil, err
	}
	defer prod.Close()

	const warmup = time.Second
	base := time.Now()
	total := int64(float64(rate) * (warmup + d).Seconds())
	lat := &latencies{log: lw.writer()}
	var failed atomic.Pointer[error]
	done := make(chan struct{})
	go func() {
		defer close(done)
		interval := time.Second / time.Duration(rate)
		template := randomValue(e2eSize)
		for i := int64(0); i < total; {
			due := time.Duration(i) * interval
			if wait := due - time.Since(base); wait > 0 {
				time.Sleep(wait)
			}
			now := time.Since(base)
			for ; i < total && time.Duration(i)*interval <= now; i++ {
				v := make([]byte, e2eSize)
				copy(v, template)
				binary.BigEndian.PutUint64(v, uint64(time.Since(base)))
				prod.Produce(ctx, &kgo.Record{Value: v}, func(_ *kgo.Record, err error) {
					if err != nil {
						failed.CompareAndSwap(nil, &err)
					}
				})
			}
		}
	}()

	var m *measure
	var got int64
	ctx, cancel := context.WithTimeout(ctx, warmup+d+time.Minute)
	defer cancel()
	for got < total {
		fs := cons.PollFetches(ctx)
		arrived := time.Since(base)
		if err := fs.Err0(); err != nil {
			return nil, fmt.Errorf("e2e consume: %w", err)
		}
		if m == nil && arrived >= warmup {
			m = startMeasure(bp)
			lat.start()
		}
		fs.EachRecord(func(r *kgo.Record) {
			got++
			sent := time.Duration(binary.BigEndian.Uint64(r.Value))
			if sent >= warmup {
				lat.add(arrived - sent)
			}
		})
		if err := failed.Load(); err != nil {
			return nil, fmt.Errorf("e2e produce: %w", *err)
		}
	}
	<-done
	if m == nil { // everything arrived within the warm-up: nothing measured
		return nil, fmt.Errorf("e2e: no record after the warm-up")
	}
	ds := lat.stop()
	out := m.finish(int64(len(ds)) * e2eSize)
	out.setRate(int64(len(ds)), int64(len(ds))*e2eSize)
	out["p50"], out["p99"], out["p999"] = ms(percentile(ds, 50)), ms(percentile(ds, 99)), ms(percentile(ds, 99.9))
	out["max"] = ms(percentile(ds, 100))
	return out, nil
}
