package integration

// Consumer groups with segmentio/kafka-go's Reader (GroupID set):
// FetchMessage, then a synchronous CommitMessages (CommitInterval 0). The
// Reader has no rebalance callbacks, so a member's partitions are those
// DescribeGroups shows for its client id. kafka-go speaks the oldest
// versions of the group APIs (FindCoordinator v0, JoinGroup v1, SyncGroup,
// Heartbeat and LeaveGroup v0, OffsetCommit v2, OffsetFetch v1).

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"testing"
	"time"

	kafkago "github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kadm"
)

// kafkaGoMember is a kafka-go Reader in a group, reading in a goroutine.
type kafkaGoMember struct {
	name         string
	group, topic string
	r            *kafkago.Reader
	adm          *kadm.Client
	log          *memberLog

	mu   sync.Mutex
	errs []error

	cancel context.CancelFunc
	done   chan struct{}
	closed bool
}

// startKafkaGoMember starts member name (its client id) of group on
// topic; the test's cleanup closes it.
func startKafkaGoMember(t *testing.T, addr, group, topic, name string, tally *groupTally) *kafkaGoMember {
	t.Helper()
	m := &kafkaGoMember{name: name, group: group, topic: topic, adm: newAdmin(t, addr), log: newMemberLog(t, "kafka-go member "+name), done: make(chan struct{})}
	m.r = kafkago.NewReader(kafkago.ReaderConfig{
		Brokers:               []string{addr},
		GroupID:               group,
		Topic:                 topic,
		Dialer:                &kafkago.Dialer{ClientID: name, Timeout: 5 * time.Second, DualStack: true},
		MinBytes:              1,
		MaxBytes:              1 << 20,
		MaxWait:               groupFetchWait,
		ReadLagInterval:       -1,
		HeartbeatInterval:     groupHeartbeat,
		SessionTimeout:        groupSessionTimeout,
		RebalanceTimeout:      groupRebalanceTimeout,
		JoinGroupBackoff:      200 * time.Millisecond,
		CommitInterval:        0, // CommitMessages commits before it returns
		WatchPartitionChanges: false,
		StartOffset:           kafkago.FirstOffset,
		ReadBackoffMin:        50 * time.Millisecond,
		ReadBackoffMax:        500 * time.Millisecond,
		MaxAttempts:           10,
		Logger:                kafkago.LoggerFunc(m.log.Printf),
		ErrorLogger:           kafkago.LoggerFunc(func(f string, args ...any) { m.log.Printf("ERROR: "+f, args...) }),
	})
	ctx, cancel := context.WithCancel(context.Background())
	m.cancel = cancel
	go func() {
		defer close(m.done)
		for {
			msg, err := m.r.FetchMessage(ctx)
			if ctx.Err() != nil {
				return
			}
			if err != nil {
				m.log.Printf("test: FetchMessage: %v", err)
				if errors.Is(err, io.EOF) { // the reader is closed
					return
				}
				time.Sleep(50 * time.Millisecond)
				continue
			}
			// Commit with a context of its own: a commit under way when
			// the member is stopped completes, so the tally knows it.
			cctx, ccancel := context.WithTimeout(context.Background(), 10*time.Second)
			err = m.r.CommitMessages(cctx, msg)
			ccancel()
			if err != nil {
				m.log.Printf("test: CommitMessages %d/%d: %v", msg.Partition, msg.Offset, err)
				m.mu.Lock()
				m.errs = append(m.errs, fmt.Errorf("commit of partition %d offset %d: %w", msg.Partition, msg.Offset, err))
				m.mu.Unlock()
			}
			tally.add(name, int32(msg.Partition), msg.Offset)
		}
	}()
	t.Cleanup(func() { m.close(t) })
	return m
}

// partitions are those DescribeGroups shows for the member's client id
// while the group is Stable.
func (m *kafkaGoMember) partitions(t *testing.T) []int32 {
	state, ms := describeGroup(t, m.adm, m.group, m.topic)
	if state != "Stable" {
		return nil
	}
	for _, dm := range ms {
		if dm.client == m.name {
			return dm.parts
		}
	}
	return nil
}

// close stops reading and closes the reader, which leaves the group.
func (m *kafkaGoMember) close(t *testing.T) {
	t.Helper()
	if m.closed {
		return
	}
	m.closed = true
	m.cancel()
	select {
	case <-m.done:
	case <-time.After(groupWait):
		t.Errorf("kafka-go member %s still reading %v after it was stopped", m.name, groupWait)
	}
	closed := make(chan error, 1)
	go func() { closed <- m.r.Close() }()
	select {
	case err := <-closed:
		if err != nil {
			t.Errorf("kafka-go member %s: Close: %v", m.name, err)
		}
	case <-time.After(groupWait):
		t.Errorf("kafka-go member %s: Close still blocked after %v", m.name, groupWait)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, err := range m.errs {
		t.Errorf("kafka-go member %s: %v", m.name, err)
	}
}

// TestGroupKafkaGo: runGroupScenario with kafka-go Readers: two members
// split 4 partitions (as DescribeGroups shows), one leaves. kafka-go
// cannot commit at a rebalance boundary (no revoke callback; a message
// fetched before a rebalance may be committed after it), so a record may
// be delivered twice around a rebalance while records arrive: at least
// once is checked, duplicates are logged. Then a new member of the group
// resumes exactly at the commits: it reads only records produced after.
func TestGroupKafkaGo(t *testing.T) {
	t.Parallel()
	eachBroker(t, groupOpts(nil), func(t *testing.T, b testBroker) {
		addr := b.Addr()
		topic, group := topicName(t), groupName(t)
		runGroupScenario(t, addr, topic, group, scenarioOpts{atLeastOnce: true}, func(t *testing.T, name string, tally *groupTally) groupMember {
			return startKafkaGoMember(t, addr, group, topic, name, tally)
		})

		adm := newAdmin(t, addr)
		before := endOffsets(t, adm, topic)
		produceGroupRecords(t, addr, topic, 4, 40, "after")
		ends := endOffsets(t, adm, topic)
		tally := newGroupTally()
		c := startKafkaGoMember(t, addr, group, topic, "c", tally)
		awaitGroup(t, "member c to read the 40 new records", func() bool { return tally.total() >= 40 }, tally.summary)
		awaitCommitted(t, adm, group, topic, ends)
		c.close(t)
		tally.mu.Lock()
		defer tally.mu.Unlock()
		for p, os := range tally.seen {
			for o, n := range os {
				if o < before[p] || o >= ends[p] || n != 1 {
					t.Errorf("resumed member c: partition %d offset %d delivered %d times; want each of [%d, %d) once", p, o, n, before[p], ends[p])
				}
			}
		}
	})
}
