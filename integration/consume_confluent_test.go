//go:build cgo

package integration

// confluent-kafka-go: cgo, with the static librdkafka its module bundles
// (no system package needed). Without cgo the stubs in
// consume_confluent_nocgo_test.go stand in.

import (
	"context"
	"fmt"
	"testing"
	"time"

	ckafka "github.com/confluentinc/confluent-kafka-go/v2/kafka"
)

// confluentBuilt: confluent-kafka-go is compiled in.
const confluentBuilt = true

// confluentBase are the librdkafka settings of every confluent client:
// short timeouts instead of the minute-long defaults.
func confluentBase(addr string) ckafka.ConfigMap {
	return ckafka.ConfigMap{
		"bootstrap.servers":                  addr,
		"client.id":                          "kbroker-integration",
		"socket.timeout.ms":                  5000,
		"socket.connection.setup.timeout.ms": 5000,
		"reconnect.backoff.ms":               50,
		"reconnect.backoff.max.ms":           500,
		"retry.backoff.ms":                   50,
		"retry.backoff.max.ms":               500,
		"topic.metadata.refresh.interval.ms": 5000,
		"log_level":                          4, // warnings
	}
}

func produceConfluent(t *testing.T, addr, topic string, recs []consRec, c consCodec, o consumeOpts) {
	t.Helper()
	cfg := confluentBase(addr)
	cfg["enable.idempotence"] = true // keeps the order through retries
	cfg["linger.ms"] = 5
	cfg["message.timeout.ms"] = 15000
	cfg["compression.type"] = c.name
	if o.large {
		cfg["message.max.bytes"] = 4 << 20
	}
	p, err := ckafka.NewProducer(&cfg)
	if err != nil {
		t.Fatalf("confluent NewProducer: %v", err)
	}
	drained := make(chan struct{})
	go func() { // drain the events channel (errors), which Close closes
		defer close(drained)
		for ev := range p.Events() {
			if e, ok := ev.(ckafka.Error); ok {
				t.Logf("confluent producer: %v", e)
			}
		}
	}()
	defer func() {
		p.Close()
		<-drained
	}()
	deliveries := make(chan ckafka.Event, len(recs))
	for _, r := range recs {
		m := &ckafka.Message{TopicPartition: ckafka.TopicPartition{Topic: &topic, Partition: 0}, Key: r.Key, Value: r.Value}
		for _, h := range r.Headers {
			m.Headers = append(m.Headers, ckafka.Header{Key: h.Key, Value: h.Value})
		}
		if err := p.Produce(m, deliveries); err != nil {
			t.Fatalf("confluent Produce: %v", err)
		}
	}
	timeout := time.After(30 * time.Second)
	var first int64
	for i := range recs {
		select {
		case ev := <-deliveries:
			m, ok := ev.(*ckafka.Message)
			if !ok {
				t.Fatalf("confluent delivery report %T: %v", ev, ev)
			}
			if m.TopicPartition.Error != nil {
				t.Fatalf("confluent delivery of record %d: %v", i, m.TopicPartition.Error)
			}
			off := int64(m.TopicPartition.Offset)
			if i == 0 {
				first = off
			} else if off != first+int64(i) {
				t.Fatalf("confluent: record %d acknowledged at offset %d, the first at %d", i, off, first)
			}
		case <-timeout:
			t.Fatalf("confluent: %d of %d delivery reports in 30 s", i, len(recs))
		}
	}
}

// consumeConfluent assigns partition 0 to a librdkafka consumer. librdkafka
// will not make a consumer without group.id, so it gets one, but offsets
// are never committed or fetched: Assign with an explicit offset, no auto
// commit, no offset store.
func consumeConfluent(ctx context.Context, t *testing.T, addr, topic string, from int64, n int, o consumeOpts, out chan<- consRec) error {
	cfg := confluentBase(addr)
	cfg["group.id"] = "kbroker-assign-only"
	cfg["enable.auto.commit"] = false
	cfg["enable.auto.offset.store"] = false
	cfg["auto.offset.reset"] = "error"
	cfg["fetch.wait.max.ms"] = 500
	cfg["fetch.error.backoff.ms"] = 100
	cfg["session.timeout.ms"] = 6000
	cfg["heartbeat.interval.ms"] = 2000
	if o.large {
		cfg["fetch.message.max.bytes"] = 8 << 20
		cfg["fetch.max.bytes"] = 16 << 20
		cfg["receive.message.max.bytes"] = 32 << 20
	}
	c, err := ckafka.NewConsumer(&cfg)
	if err != nil {
		return fmt.Errorf("NewConsumer: %w", err)
	}
	defer closeConfluent(t, c)
	if err := c.Assign([]ckafka.TopicPartition{{Topic: &topic, Partition: 0, Offset: ckafka.Offset(from)}}); err != nil {
		return fmt.Errorf("Assign: %w", err)
	}
	for sent := 0; sent < n; {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("after %d records: %w", sent, err)
		}
		switch ev := c.Poll(100).(type) {
		case *ckafka.Message:
			if ev.TopicPartition.Error != nil {
				t.Logf("confluent consumer: %v", ev.TopicPartition.Error)
				continue
			}
			r := consRec{Offset: int64(ev.TopicPartition.Offset), Key: ev.Key, Value: ev.Value}
			for _, h := range ev.Headers {
				r.Headers = append(r.Headers, consHdr{h.Key, h.Value})
			}
			if err := consSend(ctx, out, r); err != nil {
				return err
			}
			sent++
		case ckafka.Error:
			t.Logf("confluent consumer: %v (code %v)", ev, ev.Code())
			if ev.IsFatal() {
				return ev
			}
		}
	}
	return nil
}

// closeConfluent closes a consumer; librdkafka's close waits for its group
// handling, which must not hang without a coordinator.
func closeConfluent(t *testing.T, c *ckafka.Consumer) {
	done := make(chan error, 1)
	go func() { done <- c.Close() }()
	select {
	case err := <-done:
		if err != nil {
			t.Logf("confluent consumer close: %v", err)
		}
	case <-time.After(15 * time.Second):
		t.Errorf("confluent consumer Close still blocked after 15 s")
	}
}
