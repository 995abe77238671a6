//go:build cgo

package integration

// Consumer groups with confluent-kafka-go (librdkafka, cgo): Subscribe
// with a rebalance callback, a synchronous CommitMessage after each
// message. Without cgo, group_confluent_nocgo_test.go skips the test.

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	ckafka "github.com/confluentinc/confluent-kafka-go/v2/kafka"
)

// confluentMember is a librdkafka consumer in a group, polling in a
// goroutine.
type confluentMember struct {
	name   string
	c      *ckafka.Consumer
	assign *assignment
	log    *memberLog

	// last is the offset of the last message processed, by partition
	// (used by the poll loop and the rebalance callback, which librdkafka
	// calls from Poll or Close: never at the same time).
	last map[int32]int64

	mu   sync.Mutex
	errs []error

	cancel context.CancelFunc
	done   chan struct{}
	closed bool
}

// startConfluentMember starts member name of group on topic with the
// assignment strategy strategy ("range", "cooperative-sticky"); the test's
// cleanup closes it.
func startConfluentMember(t *testing.T, addr, group, topic, name, strategy string, tally *groupTally) *confluentMember {
	t.Helper()
	m := &confluentMember{name: name, assign: newAssignment(), log: newMemberLog(t, "confluent member "+name), last: map[int32]int64{}, done: make(chan struct{})}
	cfg := confluentBase(addr)
	cfg["client.id"] = name
	cfg["group.id"] = group
	cfg["enable.auto.commit"] = false
	cfg["auto.offset.reset"] = "earliest"
	cfg["partition.assignment.strategy"] = strategy
	cfg["session.timeout.ms"] = int(groupSessionTimeout / time.Millisecond)
	cfg["heartbeat.interval.ms"] = int(groupHeartbeat / time.Millisecond)
	// The rebalance timeout librdkafka sends is max.poll.interval.ms.
	cfg["max.poll.interval.ms"] = 10000
	cfg["fetch.wait.max.ms"] = int(groupFetchWait / time.Millisecond)
	cfg["fetch.error.backoff.ms"] = 100
	if groupDebug(t) {
		cfg["debug"] = "cgrp" // librdkafka logs to the test's stderr
		cfg["log_level"] = 7
	}
	c, err := ckafka.NewConsumer(&cfg)
	if err != nil {
		t.Fatalf("confluent NewConsumer: %v", err)
	}
	m.c = c
	cooperative := strategy == "cooperative-sticky"
	err = c.Subscribe(topic, func(c *ckafka.Consumer, ev ckafka.Event) error {
		m.log.Printf("test: %v", ev)
		switch e := ev.(type) {
		case ckafka.AssignedPartitions:
			ps := confluentPartitions(topic, e.Partitions)
			if cooperative {
				m.assign.add(ps)
			} else {
				m.assign.set(ps)
			}
		case ckafka.RevokedPartitions:
			ps := confluentPartitions(topic, e.Partitions)
			lost := c.AssignmentLost()
			if !lost {
				// Commit the revoked partitions once more: a commit
				// after a message may have failed during the rebalance.
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
		return nil // librdkafka (un)assigns after the callback
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
					if cooperative && confluentRebalancing(err) {
						// A cooperative member consumes through
						// rebalances; Kafka refuses commits in one
						// (ILLEGAL_GENERATION for the ending generation,
						// REBALANCE_IN_PROGRESS before the new one is
						// synced); a later commit, at the latest the one
						// on revoke, covers the record.
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

func (m *confluentMember) addErr(err error) {
	m.log.Printf("test: %v", err)
	m.mu.Lock()
	defer m.mu.Unlock()
	m.errs = append(m.errs, err)
}

// confluentRebalancing reports whether err is a commit refused because
// of a rebalance.
func confluentRebalancing(err error) bool {
	var kerr ckafka.Error
	if !errors.As(err, &kerr) {
		return false
	}
	return kerr.Code() == ckafka.ErrIllegalGeneration || kerr.Code() == ckafka.ErrRebalanceInProgress
}

// confluentPartitions are the partitions of topic in tps.
func confluentPartitions(topic string, tps []ckafka.TopicPartition) []int32 {
	var ps []int32
	for _, tp := range tps {
		if tp.Topic != nil && *tp.Topic == topic {
			ps = append(ps, tp.Partition)
		}
	}
	return ps
}

func (m *confluentMember) partitions(*testing.T) []int32 { return m.assign.partitions() }

// close stops polling and closes the consumer, which leaves the group.
func (m *confluentMember) close(t *testing.T) {
	t.Helper()
	if m.closed {
		return
	}
	m.closed = true
	m.cancel()
	select {
	case <-m.done:
	case <-time.After(groupWait):
		t.Errorf("confluent member %s still polling %v after it was stopped", m.name, groupWait)
		return
	}
	closeConfluent(t, m.c)
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, err := range m.errs {
		t.Errorf("confluent member %s: %v", m.name, err)
	}
	if n := m.assign.lostCount(); n > 0 {
		t.Errorf("confluent member %s lost %d partitions (AssignmentLost in a revoke)", m.name, n)
	}
}

// TestGroupConfluent: runGroupScenario with confluent-kafka-go consumers,
// with the eager range assignor and with cooperative-sticky: two members
// split 4 partitions, one leaves, every record exactly once.
func TestGroupConfluent(t *testing.T) {
	t.Parallel()
	needsClient(t, consClientNamed("confluent"))
	for _, strategy := range []string{"range", "cooperative-sticky"} {
		t.Run(strategy, func(t *testing.T) {
			t.Parallel()
			eachBroker(t, groupOpts(nil), func(t *testing.T, b testBroker) {
				addr := b.Addr()
				topic, group := topicName(t), groupName(t)
				runGroupScenario(t, addr, topic, group, scenarioOpts{}, func(t *testing.T, name string, tally *groupTally) groupMember {
					return startConfluentMember(t, addr, group, topic, name, strategy, tally)
				})
			})
		})
	}
}
