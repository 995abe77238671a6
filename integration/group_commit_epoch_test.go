package integration

// Offset commits of consumer-protocol members that carry an older member
// epoch (KIP-1251): what librdkafka sends when it commits revoked
// partitions while the heartbeat that moved it to a new epoch is under
// way. Raw requests, so that the test decides which epoch each request
// carries; it runs against Apache Kafka 4.4 as well (KBROKER_TEST_BOOTSTRAP).
// The streams-group variant is in streams_commit_epoch_test.go.

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// handMember is what a member driven by hand (rawMember,
// rawStreamsMember) holds: its identity, the epoch of its last heartbeat
// (set it to -1 to leave with the next one) and the partitions of the
// topic it owns (or whose tasks it runs) by the last assignment received,
// which the next heartbeat reports as owned.
type handMember struct {
	t     *testing.T
	cl    *kgo.Client // commits go through it
	group string
	topic string
	id    string
	epoch int32
	owned []int32 // sorted
}

func (m *handMember) state() *handMember { return m }

// commit sends an OffsetCommit of offset 1 for partitions of topic (id
// topicID) at member epoch epoch and returns the error of its first
// partition.
func (m *handMember) commit(epoch int32, topic string, topicID [16]byte, partitions []int32) error {
	m.t.Helper()
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Group, req.MemberID, req.Generation = m.group, m.id, epoch
	rt := kmsg.NewOffsetCommitRequestTopic()
	rt.Topic, rt.TopicID = topic, topicID
	for _, p := range partitions {
		rp := kmsg.NewOffsetCommitRequestTopicPartition()
		rp.Partition, rp.Offset = p, 1
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = []kmsg.OffsetCommitRequestTopic{rt}
	resp, err := req.RequestWith(testCtx(m.t), m.cl)
	if err != nil {
		m.t.Fatalf("member %s commit at epoch %d: %v", m.id, epoch, err)
	}
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
				return err
			}
		}
	}
	return nil
}

// heartbeatUntilServed sends a heartbeat with send until it answers
// without a retriable error, for up to 20 s: a fresh Kafka answers
// COORDINATOR_NOT_AVAILABLE until it has created and loaded
// __consumer_offsets. It fails the test on any other error.
func (m *handMember) heartbeatUntilServed(send func() (code int16, message *string)) {
	m.t.Helper()
	var err error
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		code, message := send()
		if err = kerr.ErrorForCode(code); err != nil && message != nil {
			err = fmt.Errorf("%w (%s)", err, *message)
		}
		if err == nil || !kerr.IsRetriable(err) || time.Now().After(deadline) {
			break
		}
	}
	if err != nil {
		m.t.Fatalf("member %s heartbeat at epoch %d: %v", m.id, m.epoch, err)
	}
}

// rawMember is a consumer-protocol member driven by hand.
type rawMember struct {
	handMember
	// topicID is the topic's id: heartbeats name it by id.
	topicID [16]byte
}

// heartbeat sends one ConsumerGroupHeartbeat (epoch 0 joins, -1 leaves)
// and applies its answer.
func (m *rawMember) heartbeat() {
	m.t.Helper()
	req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	req.Group, req.MemberID, req.MemberEpoch = m.group, m.id, m.epoch
	switch {
	case m.epoch == 0:
		req.RebalanceTimeoutMillis = 30_000
		req.SubscribedTopicNames = []string{m.topic}
		req.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	case m.epoch > 0:
		tp := kmsg.NewConsumerGroupHeartbeatRequestTopic()
		tp.TopicID, tp.Partitions = m.topicID, m.owned
		req.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{tp}
	}
	var resp *kmsg.ConsumerGroupHeartbeatResponse
	m.heartbeatUntilServed(func() (int16, *string) {
		var err error
		if resp, err = req.RequestWith(testCtx(m.t), m.cl); err != nil {
			m.t.Fatalf("member %s heartbeat at epoch %d: %v", m.id, m.epoch, err)
		}
		return resp.ErrorCode, resp.ErrorMessage
	})
	m.epoch = resp.MemberEpoch
	if resp.Assignment != nil {
		m.owned = []int32{}
		for _, tp := range resp.Assignment.Topics {
			if tp.TopicID == m.topicID {
				m.owned = append(m.owned, tp.Partitions...)
			}
		}
		slices.Sort(m.owned)
	}
}

// awaitGroupCoordinator waits until FindCoordinator finds group's
// coordinator: Kafka creates __consumer_offsets at the first
// FindCoordinator, not at a heartbeat that comes without one (the raw
// streams member's), and answers NOT_COORDINATOR until then.
func awaitGroupCoordinator(t *testing.T, cl *kgo.Client, group string) {
	t.Helper()
	adm := kadm.NewClient(cl)
	var err error
	for deadline := time.Now().Add(groupWait); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if err = adm.FindGroupCoordinators(testCtx(t), group).Error(); err == nil {
			return
		}
	}
	t.Fatalf("no coordinator for group %s: %v", group, err)
}

// epochMember is a member runCommitOlderEpoch drives.
type epochMember interface {
	heartbeat()
	state() *handMember
}

// runCommitOlderEpoch: member a gets the 4 partitions of topic (id
// topicID), b joins and they split them 2/2 at one epoch, b leaves and a,
// at a later epoch, gets all 4. A commit with a's previous epoch is
// accepted for the 2 partitions a held at that epoch and refused
// (STALE_MEMBER_EPOCH) for the 2 it gained after; an epoch newer than
// a's is refused; more (if set) checks more with the previous epoch.
// After a restart (kbroker only) the same holds, through reconnect: the
// assignment epochs are part of the group's records.
func runCommitOlderEpoch(t *testing.T, b testBroker, topic string, topicID [16]byte, a, bm epochMember, more func(previous int32), reconnect func(addr string)) {
	t.Helper()
	as, bs := a.state(), bm.state()
	awaitGroupCoordinator(t, as.cl, as.group)
	settle := func(what string, done func() bool, ms ...epochMember) {
		t.Helper()
		awaitGroup(t, what, func() bool {
			for _, m := range ms {
				m.heartbeat()
			}
			return done()
		}, func() string {
			return fmt.Sprintf("a has %v at %d, b has %v at %d", as.owned, as.epoch, bs.owned, bs.epoch)
		})
	}
	a.heartbeat()
	settle("a to get all 4", func() bool { return len(as.owned) == 4 }, a)
	bm.heartbeat()
	settle("a and b to split 2/2 at one epoch", func() bool {
		return len(as.owned) == 2 && len(bs.owned) == 2 && as.epoch == bs.epoch
	}, a, bm)
	kept, previous := slices.Clone(as.owned), as.epoch
	bs.epoch = -1
	bm.heartbeat()
	settle("a to get all 4 after b left", func() bool { return len(as.owned) == 4 && as.epoch > previous }, a)
	var gained []int32
	for _, p := range as.owned {
		if !slices.Contains(kept, p) {
			gained = append(gained, p)
		}
	}
	check := func(what string, err, want error) {
		t.Helper()
		if err != want {
			t.Errorf("%s: got %v, want %v", what, err, want)
		}
	}
	checkAll := func() {
		t.Helper()
		check("a commits its first 2 partitions with its previous epoch", as.commit(previous, topic, topicID, kept), nil)
		check("a commits the 2 gained with its previous epoch", as.commit(previous, topic, topicID, gained), kerr.StaleMemberEpoch)
		check("a commits all 4 with its current epoch", as.commit(as.epoch, topic, topicID, as.owned), nil)
		check("a commits with a newer epoch", as.commit(as.epoch+1, topic, topicID, kept), kerr.StaleMemberEpoch)
		if more != nil {
			more(previous)
		}
	}
	checkAll()
	if externalBootstrap(t) != "" {
		return
	}
	b.Restart(t)
	as.cl = newKgo(t, b.Addr())
	if reconnect != nil {
		reconnect(b.Addr())
	}
	checkAll()
}

// TestConsumerGroupCommitOlderEpoch: runCommitOlderEpoch with
// consumer-protocol members.
func TestConsumerGroupCommitOlderEpoch(t *testing.T) {
	t.Parallel()
	eachBroker(t, groupOpts(kip848Props), func(t *testing.T, b testBroker) {
		topic, group := topicName(t), groupName(t)
		adm := newAdmin(t, b.Addr())
		createGroupTopic(t, adm, topic, 4)
		awaitTopicReady(t, b.Addr(), topic)
		details, err := adm.ListTopics(testCtx(t), topic)
		if err != nil || details[topic].Err != nil {
			t.Fatalf("list topic: %v %v", err, details[topic].Err)
		}
		topicID := [16]byte(details[topic].ID)
		cl := newKgo(t, b.Addr())
		newMember := func(name string) *rawMember {
			id := fmt.Sprintf("%s-%d", name, time.Now().UnixNano())
			return &rawMember{handMember: handMember{t: t, cl: cl, group: group, topic: topic, id: id}, topicID: topicID}
		}
		runCommitOlderEpoch(t, b, topic, topicID, newMember("a"), newMember("b"), nil, nil)
	})
}
