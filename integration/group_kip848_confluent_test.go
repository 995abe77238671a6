//go:build cgo

package integration

// The consumer rebalance protocol of KIP-848 with confluent-kafka-go: the
// bundled librdkafka 2.11 speaks it with group.protocol=consumer (generally
// available since librdkafka 2.10). Without cgo,
// group_kip848_confluent_nocgo_test.go skips the test.

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	ckafka "github.com/confluentinc/confluent-kafka-go/v2/kafka"
)

// TestGroupKIP848Confluent: runKIP848Scenario with librdkafka members
// (group.protocol=consumer), committing after each message and the revoked
// partitions in the rebalance callback.
func TestGroupKIP848Confluent(t *testing.T) {
	t.Parallel()
	needsClient(t, consClientNamed("confluent"))
	eachBroker(t, groupOpts(kip848Props), func(t *testing.T, b testBroker) {
		runKIP848Scenario(t, b, startConfluent848Member)
	})
}

// startConfluent848Member starts member name of group on topic with the
// consumer protocol; the test's cleanup closes it. The session timeout
// and heartbeat interval are the broker's (librdkafka refuses them with
// group.protocol=consumer); max.poll.interval.ms is the rebalance timeout.
func startConfluent848Member(t *testing.T, addr, group, topic, name string, tally *groupTally) groupMember {
	t.Helper()
	m := &confluentMember{name: name, assign: newAssignment(), log: newMemberLog(t, "confluent KIP-848 member "+name), last: map[int32]int64{}, done: make(chan struct{})}
	cfg := confluentBase(addr)
	cfg["client.id"] = name
	cfg["group.id"] = group
	cfg["group.protocol"] = "consumer"
	cfg["enable.auto.commit"] = false
	cfg["auto.offset.reset"] = "earliest"
	cfg["max.poll.interval.ms"] = 10000
	cfg["fetch.wait.max.ms"] = int(groupFetchWait / time.Millisecond)
	cfg["fetch.error.backoff.ms"] = 100
	if groupDebug(t) {
		cfg["debug"] = "cgrp"
		cfg["log_level"] = 7
	}
	c, err := ckafka.NewConsumer(&cfg)
	if err != nil {
		t.Fatalf("confluent NewConsumer: %v", err)
	}
	m.c = c
	err = c.Subscribe(topic, func(c *ckafka.Consumer, ev ckafka.Event) error {
		m.log.Printf("test: %v", ev)
		switch e := ev.(type) {
		case ckafka.AssignedPartitions:
			m.assign.add(confluentPartitions(topic, e.Partitions))
		case ckafka.RevokedPartitions:
			ps := confluentPartitions(topic, e.Partitions)
			lost := c.AssignmentLost()
			if !lost {
				// The member keeps its epoch until it acknowledges the
				// revocation, after this callback: the commit passes.
				var tps []ckafka.TopicPartition
				for _, p := range ps {
					if o, ok := m.last[p]; ok {
						tps = append(tps, ckafka.TopicPartition{Topic: &topic, Partition: p, Offset: ckafka.Offset(o + 1)})
					}
				}
				if len(tps) > 0 {
					if _, err := c.CommitOffsets(tps); err != nil {
						m.addErr(fmt.Errorf("commit of the revoked partitions %v: %w", tps, err))
					}
				}
			}
			m.assign.remove(ps, lost)
		}
		return nil // librdkafka (un)assigns incrementally after the callback
	})
	if err != nil {
		c.Close()
		t.Fatalf("confluent Subscribe: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	m.cancel = cancel
	go func() {
		defer close(m.done)
		for ctx.Err() == nil {
			switch ev := c.Poll(100).(type) {
			case *ckafka.Message:
				tp := ev.TopicPartition
				if tp.Error != nil {
					m.log.Printf("test: message error: %v", tp.Error)
					continue
				}
				m.last[tp.Partition] = int64(tp.Offset)
				if _, err := c.CommitMessage(ev); err != nil {
					err = fmt.Errorf("CommitMessage of partition %d offset %d: %w", tp.Partition, tp.Offset, err)
					var kerr ckafka.Error
					if errors.As(err, &kerr) && kerr.Code() == ckafka.ErrStaleMemberEpoch {
						// The member moved to a new epoch between the
						// poll and the commit; a later commit, at the
						// latest the one on revoke, covers the record.
						m.log.Printf("test: %v", err)
					} else {
						m.addErr(err)
					}
				}
				tally.add(name, tp.Partition, int64(tp.Offset))
			case ckafka.Error:
				m.log.Printf("test: error: %v (code %v, fatal %v)", ev, ev.Code(), ev.IsFatal())
				if ev.IsFatal() {
					m.addErr(ev)
					return
				}
			case nil:
			default:
				m.log.Printf("test: event %v", ev)
			}
		}
	}()
	t.Cleanup(func() { m.close(t) })
	return m
}
