package integration

// Offset commits of streams-group members (KIP-1071) that carry an older
// member epoch (KIP-1251), as Kafka 4.4 accepts them for the tasks the
// member has held since that epoch. Raw StreamsGroupHeartbeat requests, so
// that the test decides which epoch each commit carries; it runs against
// Apache Kafka 4.4 as well (KBROKER_TEST_BOOTSTRAP).

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// rawStreamsMember is a streams-group member driven by hand, with a
// topology of one stateless subtopology ("0") reading topic: each
// heartbeat reports the active tasks of the last assignment received as
// owned, so a revocation completes with the next heartbeat.
type rawStreamsMember struct {
	t *testing.T
	// addr is the broker's: heartbeats go on their own connection, as
	// kgo does not send StreamsGroupHeartbeat; commits go through cl.
	addr  string
	cl    *kgo.Client
	group string
	topic string
	id    string
	epoch int32
	owned []int32 // the partitions of subtopology 0's active tasks, sorted
}

// heartbeat sends one StreamsGroupHeartbeat (epoch 0 joins, -1 leaves)
// and applies its answer.
func (m *rawStreamsMember) heartbeat() {
	m.t.Helper()
	req := kmsg.NewPtrStreamsGroupHeartbeatRequest()
	req.Version = 1
	req.Group, req.MemberID, req.MemberEpoch = m.group, m.id, m.epoch
	req.EndpointInformationEpoch = -1
	switch {
	case m.epoch == 0:
		req.RebalanceTimeoutMillis = 30_000
		req.ProcessID = kmsg.StringPtr("process-" + m.id)
		top := kmsg.NewStreamsGroupHeartbeatRequestTopology()
		s := kmsg.NewStreamsGroupHeartbeatRequestTopologySubtopology()
		s.SubtopologyID, s.SourceTopics = "0", []string{m.topic}
		top.Subtopologies = []kmsg.StreamsGroupHeartbeatRequestTopologySubtopology{s}
		req.Topology = &top
		req.ActiveTasks, req.StandbyTasks, req.WarmupTasks = []kmsg.TaskIDs{}, []kmsg.TaskIDs{}, []kmsg.TaskIDs{}
	case m.epoch > 0:
		req.ActiveTasks = []kmsg.TaskIDs{{SubtopologyID: "0", Partitions: m.owned}}
		req.StandbyTasks, req.WarmupTasks = []kmsg.TaskIDs{}, []kmsg.TaskIDs{}
	}
	// A fresh Kafka answers COORDINATOR_NOT_AVAILABLE (retriable) until
	// it has created and loaded __consumer_offsets.
	var resp *kmsg.StreamsGroupHeartbeatResponse
	var err error
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		resp = streamsRequest[*kmsg.StreamsGroupHeartbeatResponse](m.t, m.addr, req)
		if err = kerr.ErrorForCode(resp.ErrorCode); err != nil && resp.ErrorMessage != nil {
			err = fmt.Errorf("%w (%s)", err, *resp.ErrorMessage)
		}
		if err == nil || !kerr.IsRetriable(err) || time.Now().After(deadline) {
			break
		}
	}
	if err != nil {
		m.t.Fatalf("member %s heartbeat at epoch %d: %v", m.id, m.epoch, err)
	}
	m.epoch = resp.MemberEpoch
	if resp.ActiveTasks != nil {
		m.owned = []int32{}
		for _, tk := range resp.ActiveTasks {
			if tk.SubtopologyID == "0" {
				m.owned = append(m.owned, tk.Partitions...)
			}
		}
		slices.Sort(m.owned)
	}
}

// commit sends an OffsetCommit of offset 1 for partitions of topic (id
// topicID) at member epoch epoch and returns the error of its first
// partition.
func (m *rawStreamsMember) commit(epoch int32, topic string, topicID [16]byte, partitions []int32) error {
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

// TestStreamsGroupCommitOlderEpoch: streams member a runs the tasks of 2
// of 4 partitions beside b; b leaves and a, at its next epoch, runs all 4.
// A commit with a's previous epoch is accepted for the 2 partitions whose
// tasks a ran at that epoch and refused (STALE_MEMBER_EPOCH) for the 2 it
// gained after, and for a topic its topology does not read; an epoch
// newer than a's is refused. After a restart (kbroker) the same holds: the
// assignment epochs are part of the group's records.
func TestStreamsGroupCommitOlderEpoch(t *testing.T) {
	t.Parallel()
	eachBroker(t, groupOpts(nil), func(t *testing.T, b testBroker) {
		topic, other, group := topicName(t), topicName(t)+".other", groupName(t)
		adm := newAdmin(t, b.Addr())
		createGroupTopic(t, adm, topic, 4)
		createGroupTopic(t, adm, other, 1)
		awaitTopicReady(t, b.Addr(), topic)
		awaitTopicReady(t, b.Addr(), other)
		details, err := adm.ListTopics(testCtx(t), topic, other)
		if err != nil || details[topic].Err != nil || details[other].Err != nil {
			t.Fatalf("list topics: %v %v %v", err, details[topic].Err, details[other].Err)
		}
		topicID, otherID := [16]byte(details[topic].ID), [16]byte(details[other].ID)
		cl := newKgo(t, b.Addr())
		newMember := func(name string) *rawStreamsMember {
			return &rawStreamsMember{t: t, addr: b.Addr(), cl: cl, group: group, topic: topic, id: fmt.Sprintf("%s-%d", name, time.Now().UnixNano())}
		}
		a, bm := newMember("a"), newMember("b")
		// Both brokers delay a new group's first assignment
		// (group.streams.initial.rebalance.delay.ms, 3 s).
		settle := func(what string, done func() bool, ms ...*rawStreamsMember) {
			t.Helper()
			awaitGroup(t, what, func() bool {
				for _, m := range ms {
					m.heartbeat()
				}
				return done()
			}, func() string {
				return fmt.Sprintf("a runs %v at %d, b runs %v at %d", a.owned, a.epoch, bm.owned, bm.epoch)
			})
		}
		a.heartbeat()
		settle("a to run all 4 tasks", func() bool { return len(a.owned) == 4 }, a)
		bm.heartbeat()
		settle("a and b to split 2/2 at one epoch", func() bool {
			return len(a.owned) == 2 && len(bm.owned) == 2 && a.epoch == bm.epoch
		}, a, bm)
		kept, previous := slices.Clone(a.owned), a.epoch
		bm.epoch = -1
		bm.heartbeat()
		settle("a to run all 4 tasks after b left", func() bool { return len(a.owned) == 4 && a.epoch > previous }, a)
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
			check("a commits its first 2 partitions with its previous epoch", a.commit(previous, topic, topicID, kept), nil)
			check("a commits the 2 gained with its previous epoch", a.commit(previous, topic, topicID, gained), kerr.StaleMemberEpoch)
			check("a commits a topic it does not read with its previous epoch", a.commit(previous, other, otherID, []int32{0}), kerr.StaleMemberEpoch)
			check("a commits all 4 with its current epoch", a.commit(a.epoch, topic, topicID, a.owned), nil)
			check("a commits with a newer epoch", a.commit(a.epoch+1, topic, topicID, kept), kerr.StaleMemberEpoch)
		}
		checkAll()
		if externalBootstrap(t) != "" {
			return
		}
		b.Restart(t)
		a.addr, a.cl = b.Addr(), newKgo(t, b.Addr())
		checkAll()
	})
}
