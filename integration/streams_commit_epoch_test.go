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
	"github.com/twmb/franz-go/pkg/kmsg"
)

// rawStreamsMember is a streams-group member driven by hand, with a
// topology of one stateless subtopology ("0") reading topic: owned are
// the partitions of its active tasks, which each heartbeat reports, so a
// revocation completes with the next heartbeat.
type rawStreamsMember struct {
	handMember
	// addr is the broker's: heartbeats go on their own connection, as
	// kgo does not send StreamsGroupHeartbeat.
	addr string
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
	var resp *kmsg.StreamsGroupHeartbeatResponse
	m.heartbeatUntilServed(func() (int16, *string) {
		resp = streamsRequest[*kmsg.StreamsGroupHeartbeatResponse](m.t, m.addr, req)
		return resp.ErrorCode, resp.ErrorMessage
	})
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

// TestStreamsGroupCommitOlderEpoch: runCommitOlderEpoch with streams
// members, whose tasks stand for the partitions; a commit with the
// previous epoch of a topic a's topology does not read is refused too.
// Both brokers delay a new group's first assignment
// (group.streams.initial.rebalance.delay.ms, 3 s), which the scenario's
// waits allow for.
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
			id := fmt.Sprintf("%s-%d", name, time.Now().UnixNano())
			return &rawStreamsMember{handMember: handMember{t: t, cl: cl, group: group, topic: topic, id: id}, addr: b.Addr()}
		}
		a, bm := newMember("a"), newMember("b")
		more := func(previous int32) {
			t.Helper()
			if err := a.commit(previous, other, otherID, []int32{0}); err != kerr.StaleMemberEpoch {
				t.Errorf("a commits a topic it does not read with its previous epoch: got %v, want %v", err, kerr.StaleMemberEpoch)
			}
		}
		runCommitOlderEpoch(t, b, topic, topicID, a, bm, more, func(addr string) { a.addr = addr })
	})
}
