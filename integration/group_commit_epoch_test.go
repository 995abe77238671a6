package integration

// Offset commits of consumer-protocol members that carry an older member
// epoch (KIP-1251): what librdkafka sends when it commits revoked
// partitions while the heartbeat that moved it to a new epoch is under
// way. Raw requests, so that the test decides which epoch each request
// carries; it runs against Apache Kafka 4.4 as well (KBROKER_TEST_BOOTSTRAP).

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// rawMember is a consumer-protocol member driven by hand: each heartbeat
// reports the partitions of the last assignment received as owned.
type rawMember struct {
	t     *testing.T
	cl    *kgo.Client
	group string
	topic string
	// topicID is the topic's id: heartbeats and OffsetCommit v10 name
	// it by id.
	topicID [16]byte
	id      string
	epoch   int32
	owned   []int32 // of topic, sorted
}

// heartbeat sends one ConsumerGroupHeartbeat (epoch 0 joins, -1 leaves)
// and applies its answer.
func (m *rawMember) heartbeat() {
	m.t.Helper()
	req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	req.Group, req.MemberID, req.MemberEpoch = m.group, m.id, m.epoch
	if m.epoch == 0 {
		req.RebalanceTimeoutMillis = 30_000
		req.SubscribedTopicNames = []string{m.topic}
	}
	switch {
	case m.epoch == 0:
		req.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	case m.epoch > 0:
		tp := kmsg.NewConsumerGroupHeartbeatRequestTopic()
		tp.TopicID, tp.Partitions = m.topicID, m.owned
		req.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{tp}
	}
	// A fresh Kafka answers COORDINATOR_NOT_AVAILABLE (retriable) until
	// it has created and loaded __consumer_offsets.
	var resp *kmsg.ConsumerGroupHeartbeatResponse
	var err error
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		resp, err = req.RequestWith(testCtx(m.t), m.cl)
		if err == nil {
			if err = kerr.ErrorForCode(resp.ErrorCode); err != nil && resp.ErrorMessage != nil {
				err = fmt.Errorf("%w (%s)", err, *resp.ErrorMessage)
			}
		}
		if err == nil || !kerr.IsRetriable(err) || time.Now().After(deadline) {
			break
		}
	}
	if err != nil {
		m.t.Fatalf("member %s heartbeat at epoch %d: %v", m.id, m.epoch, err)
	}
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

// commit sends an OffsetCommit of offset 1 for partitions of the topic at
// member epoch epoch and returns the error of its first partition.
func (m *rawMember) commit(epoch int32, partitions []int32) error {
	m.t.Helper()
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Group, req.MemberID, req.Generation = m.group, m.id, epoch
	rt := kmsg.NewOffsetCommitRequestTopic()
	rt.Topic, rt.TopicID = m.topic, m.topicID
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

// TestConsumerGroupCommitOlderEpoch: member a owns 2 of 4 partitions
// beside b; b leaves and a, at its next epoch, owns all 4. A commit with
// a's previous epoch is accepted for the 2 partitions a held at that
// epoch and refused (STALE_MEMBER_EPOCH) for the 2 it gained after; an
// epoch newer than a's is refused. After a restart (kbroker) the same
// holds: the assignment epochs are part of the group's records.
func TestConsumerGroupCommitOlderEpoch(t *testing.T) {
	t.Parallel()
	eachBroker(t, groupOpts(kip848Props), func(t *testing.T, b testBroker) {
		topic, group := topicName(t), groupName(t)
		adm := newAdmin(t, b.Addr())
		createGroupTopic(t, adm, topic, 4)
		details, err := adm.ListTopics(testCtx(t), topic)
		if err != nil || details[topic].Err != nil {
			t.Fatalf("list topic: %v %v", err, details[topic].Err)
		}
		topicID := [16]byte(details[topic].ID)
		cl := newKgo(t, b.Addr())
		newMember := func(name string) *rawMember {
			return &rawMember{t: t, cl: cl, group: group, topic: topic, topicID: topicID, id: fmt.Sprintf("%s-%d", name, time.Now().UnixNano())}
		}
		a, bm := newMember("a"), newMember("b")
		settle := func(what string, done func() bool, ms ...*rawMember) {
			t.Helper()
			awaitGroup(t, what, func() bool {
				for _, m := range ms {
					m.heartbeat()
				}
				return done()
			}, func() string {
				return fmt.Sprintf("a owns %v at %d, b owns %v at %d", a.owned, a.epoch, bm.owned, bm.epoch)
			})
		}
		a.heartbeat()
		settle("a to own all 4", func() bool { return len(a.owned) == 4 }, a)
		bm.heartbeat()
		settle("a and b to split 2/2 at one epoch", func() bool {
			return len(a.owned) == 2 && len(bm.owned) == 2 && a.epoch == bm.epoch
		}, a, bm)
		kept, previous := slices.Clone(a.owned), a.epoch
		bm.epoch = -1
		bm.heartbeat()
		settle("a to own all 4 after b left", func() bool { return len(a.owned) == 4 && a.epoch > previous }, a)
		var gained []int32
		for _, p := range a.owned {
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
			check("a commits its first 2 partitions with its previous epoch", a.commit(previous, kept), nil)
			check("a commits the 2 gained with its previous epoch", a.commit(previous, gained), kerr.StaleMemberEpoch)
			check("a commits all 4 with its current epoch", a.commit(a.epoch, a.owned), nil)
			check("a commits with a newer epoch", a.commit(a.epoch+1, kept), kerr.StaleMemberEpoch)
		}
		checkAll()
		if externalBootstrap(t) != "" {
			return
		}
		b.Restart(t)
		a.cl = newKgo(t, b.Addr())
		checkAll()
	})
}
