package integration

// Consumer groups with sarama's ConsumerGroup: MarkMessage after each
// record, commits by sarama's offset manager (every 200 ms, when a claim's
// channel is drained, and when a session ends, before it rejoins).

import (
	"context"
	"errors"
	"io"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/IBM/sarama"
)

// saramaGroupConfig is saramaConfig with the group timing of these tests,
// the range balancer, and offsets from the start when none is committed.
func saramaGroupConfig(name string) *sarama.Config {
	cfg := saramaConfig(nil, false)
	cfg.ClientID = name
	cfg.Consumer.Return.Errors = true
	cfg.Consumer.MaxWaitTime = groupFetchWait
	cfg.Consumer.Retry.Backoff = 100 * time.Millisecond
	cfg.Consumer.Offsets.Initial = sarama.OffsetOldest
	cfg.Consumer.Offsets.AutoCommit.Enable = true
	cfg.Consumer.Offsets.AutoCommit.Interval = 200 * time.Millisecond
	cfg.Consumer.Group.Session.Timeout = groupSessionTimeout
	cfg.Consumer.Group.Heartbeat.Interval = groupHeartbeat
	cfg.Consumer.Group.Rebalance.Timeout = groupRebalanceTimeout
	cfg.Consumer.Group.Rebalance.Retry.Backoff = 200 * time.Millisecond
	cfg.Consumer.Group.Rebalance.GroupStrategies = []sarama.BalanceStrategy{sarama.NewBalanceStrategyRange()}
	cfg.Metadata.Retry.Max = 20
	cfg.Metadata.Retry.Backoff = 100 * time.Millisecond
	return cfg
}

// saramaMember is a sarama ConsumerGroup consuming topic in a goroutine
// (Consume in a loop, one call per session).
type saramaMember struct {
	name   string
	topic  string
	cg     sarama.ConsumerGroup
	assign *assignment
	tally  *groupTally
	log    *memberLog
	// stopAfter, when positive, is how many records the member consumes
	// (and marks) before it stops marking; stopped is closed then.
	stopAfter int
	stopped   chan struct{}

	mu       sync.Mutex
	consumed int
	errs     []error
	// sessionID and generation are those of the last session set up.
	sessionID  string
	generation int32
	// restarts: the broker restarts under the member, so the errors of
	// its partition consumers losing their connection are expected.
	restarts bool

	cancel context.CancelFunc
	done   chan struct{}
	closed bool
}

// startSaramaMember starts member name of group on topic, with
// saramaGroupConfig changed by tweaks; the test's cleanup closes it.
func startSaramaMember(t *testing.T, addr, group, topic, name string, tally *groupTally, stopAfter int, tweaks ...func(*sarama.Config)) *saramaMember {
	t.Helper()
	m := &saramaMember{name: name, topic: topic, assign: newAssignment(), tally: tally, log: newMemberLog(t, "sarama member "+name),
		stopAfter: stopAfter, stopped: make(chan struct{}), done: make(chan struct{})}
	cfg := saramaGroupConfig(name)
	for _, tweak := range tweaks {
		tweak(cfg)
	}
	cg, err := sarama.NewConsumerGroup([]string{addr}, group, cfg)
	if err != nil {
		t.Fatalf("sarama NewConsumerGroup: %v", err)
	}
	m.cg = cg
	errsDone := make(chan struct{})
	go func() {
		defer close(errsDone)
		for err := range cg.Errors() {
			m.log.Printf("test: error: %v", err)
			m.mu.Lock()
			if !m.restarts || !connectionLost(err) {
				m.errs = append(m.errs, err)
			}
			m.mu.Unlock()
		}
	}()
	ctx, cancel := context.WithCancel(context.Background())
	m.cancel = cancel
	go func() {
		defer close(m.done)
		for ctx.Err() == nil {
			if err := cg.Consume(ctx, []string{topic}, m); err != nil {
				if errors.Is(err, sarama.ErrClosedConsumerGroup) {
					return
				}
				m.log.Printf("test: Consume: %v", err)
				select {
				case <-ctx.Done():
				case <-time.After(100 * time.Millisecond):
				}
			}
		}
	}()
	t.Cleanup(func() {
		m.close(t)
		select {
		case <-errsDone:
		case <-time.After(groupWait):
			t.Errorf("sarama member %s: errors channel still open %v after Close", name, groupWait)
		}
	})
	return m
}

func (m *saramaMember) Setup(s sarama.ConsumerGroupSession) error {
	m.log.Printf("test: session %s generation %d: claims %v", s.MemberID(), s.GenerationID(), s.Claims())
	m.mu.Lock()
	m.sessionID, m.generation = s.MemberID(), s.GenerationID()
	m.mu.Unlock()
	m.assign.set(s.Claims()[m.topic])
	return nil
}

func (m *saramaMember) Cleanup(s sarama.ConsumerGroupSession) error {
	m.log.Printf("test: session %s generation %d ends", s.MemberID(), s.GenerationID())
	m.assign.set(nil)
	return nil
}

func (m *saramaMember) ConsumeClaim(s sarama.ConsumerGroupSession, c sarama.ConsumerGroupClaim) error {
	for {
		select {
		case msg, ok := <-c.Messages():
			if !ok {
				return nil
			}
			m.mu.Lock()
			take := m.stopAfter <= 0 || m.consumed < m.stopAfter
			if take {
				m.consumed++
				if m.consumed == m.stopAfter {
					close(m.stopped)
				}
			}
			m.mu.Unlock()
			if !take {
				continue // neither counted nor marked: the next member gets it
			}
			m.tally.add(m.name, msg.Partition, msg.Offset)
			s.MarkMessage(msg, "")
			if len(c.Messages()) == 0 {
				s.Commit()
			}
		case <-s.Context().Done():
			return nil
		}
	}
}

func (m *saramaMember) partitions(*testing.T) []int32 { return m.assign.partitions() }

// close stops consuming and closes the consumer group, which commits the
// marked offsets and leaves the group. It fails the test if sarama
// reported an error.
func (m *saramaMember) close(t *testing.T) {
	t.Helper()
	if m.closed {
		return
	}
	m.closed = true
	m.cancel()
	select {
	case <-m.done:
	case <-time.After(groupWait):
		t.Errorf("sarama member %s still consuming %v after it was stopped", m.name, groupWait)
	}
	closed := make(chan error, 1)
	go func() { closed <- m.cg.Close() }()
	select {
	case err := <-closed:
		if err != nil {
			t.Errorf("sarama member %s: Close: %v", m.name, err)
		}
	case <-time.After(groupWait):
		t.Errorf("sarama member %s: Close still blocked after %v", m.name, groupWait)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, err := range m.errs {
		t.Errorf("sarama member %s: %v", m.name, err)
	}
}

// TestGroupSarama: runGroupScenario with sarama's ConsumerGroup (range):
// two members split 4 partitions, one leaves, every record exactly once.
func TestGroupSarama(t *testing.T) {
	t.Parallel()
	eachBroker(t, groupOpts(nil), func(t *testing.T, b testBroker) {
		addr := b.Addr()
		topic, group := topicName(t), groupName(t)
		runGroupScenario(t, addr, topic, group, scenarioOpts{}, func(t *testing.T, name string, tally *groupTally) groupMember {
			return startSaramaMember(t, addr, group, topic, name, tally, 0)
		})
	})
}

// connectionLost reports whether a sarama consumer error is the loss of
// the connection to the broker.
func connectionLost(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, sarama.ErrNotConnected) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.EPIPE)
}

// expectRestarts makes the member accept the errors of a broker restart
// (connectionLost) instead of failing the test for them.
func (m *saramaMember) expectRestarts() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.restarts = true
}
