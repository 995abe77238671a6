package integration

// Streams groups (KIP-1071) across SIGKILL of the binary: the group's
// StreamsGroup* records in __consumer_offsets bring it back with its
// epochs and tasks, so its members go on without a rebalance.

import (
	"encoding/binary"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/protocol"
)

// streamsRequest sends req on a connection of its own and decodes the
// answer: franz-go's client does not send streams-group requests.
func streamsRequest[R kmsg.Response](t *testing.T, addr string, req kmsg.Request) R {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(10 * time.Second))
	frame := kmsg.NewRequestFormatter(kmsg.FormatterClientID("streams-crash")).AppendRequest(nil, req, 7)
	if _, err := nc.Write(frame); err != nil {
		t.Fatal(err)
	}
	n, err := protocol.ReadSize(nc, 64<<20)
	if err != nil {
		t.Fatalf("%s: read response size: %v", kmsg.NameForKey(req.Key()), err)
	}
	body, err := protocol.ReadBody(nc, n, nil)
	if err != nil || len(body) < 5 || binary.BigEndian.Uint32(body) != 7 {
		t.Fatalf("%s: response %x: %v", kmsg.NameForKey(req.Key()), body[:min(len(body), 8)], err)
	}
	body = body[4:]
	resp := req.ResponseKind()
	if resp.IsFlexible() {
		body = body[1:] // no header tags
	}
	if err := resp.ReadFrom(body); err != nil {
		t.Fatalf("%s: decode response: %v", kmsg.NameForKey(req.Key()), err)
	}
	return resp.(R)
}

// streamsCrashMember is a streams member driven with raw heartbeats, as
// the Java client sends them: the topology of stream(in).groupBy().count()
// on joining, its owned tasks on every later heartbeat.
type streamsCrashMember struct {
	id, process string
	epoch       int32
	active      []kmsg.TaskIDs
}

func (m *streamsCrashMember) heartbeat(t *testing.T, addr, group, topic string) *kmsg.StreamsGroupHeartbeatResponse {
	t.Helper()
	req := kmsg.NewPtrStreamsGroupHeartbeatRequest()
	req.Group, req.MemberID, req.MemberEpoch, req.EndpointInformationEpoch = group, m.id, m.epoch, -1
	req.ActiveTasks, req.StandbyTasks, req.WarmupTasks = m.active, []kmsg.TaskIDs{}, []kmsg.TaskIDs{}
	if m.epoch == 0 {
		req.RebalanceTimeoutMillis = 30000
		req.ProcessID = kmsg.StringPtr(m.process)
		req.ActiveTasks = []kmsg.TaskIDs{}
		top := kmsg.NewStreamsGroupHeartbeatRequestTopology()
		s0 := kmsg.NewStreamsGroupHeartbeatRequestTopologySubtopology()
		s0.SubtopologyID, s0.SourceTopics, s0.RepartitionSinkTopics = "0", []string{topic}, []string{group + "-rep"}
		s1 := kmsg.NewStreamsGroupHeartbeatRequestTopologySubtopology()
		s1.SubtopologyID = "1"
		s1.RepartitionSourceTopics = []kmsg.TopicInfo{{Topic: group + "-rep"}}
		s1.StateChangelogTopics = []kmsg.TopicInfo{{Topic: group + "-changelog"}}
		top.Subtopologies = []kmsg.StreamsGroupHeartbeatRequestTopologySubtopology{s0, s1}
		req.Topology = &top
	}
	req.Version = 1
	resp := streamsRequest[*kmsg.StreamsGroupHeartbeatResponse](t, addr, req)
	if resp.ErrorCode == 0 {
		m.epoch = resp.MemberEpoch
		if resp.ActiveTasks != nil {
			m.active = resp.ActiveTasks
		}
	}
	return resp
}

func taskCount(ts []kmsg.TaskIDs) (n int) {
	for _, tk := range ts {
		n += len(tk.Partitions)
	}
	return n
}

// TestStreamsGroupCrashKill9: two members of a streams group converge on
// half the tasks each; the binary is killed with SIGKILL and started
// again; each member's next heartbeat at its member epoch is accepted
// with the same epoch and tasks, and the group is Stable at the same group
// epoch. Then one member leaves and the other gets every task, so the
// restored group rebalances as before the kill.
func TestStreamsGroupCrashKill9(t *testing.T) {
	t.Parallel()
	b := startBinary(t, "--flush", "sync", "--config", writeProps(t, map[string]string{
		"group.streams.initial.rebalance.delay.ms": "0",
	}))
	topic, group := topicName(t), "st."+topicName(t)
	createGroupTopic(t, newAdmin(t, b.Addr()), topic, 2)

	ms := []*streamsCrashMember{{id: "m1", process: "p1"}, {id: "m2", process: "p2"}}
	for round := 0; round < 4; round++ {
		for _, m := range ms {
			if r := m.heartbeat(t, b.Addr(), group, topic); r.ErrorCode != 0 {
				t.Fatalf("round %d, %s: %v", round, m.id, kerr.ErrorForCode(r.ErrorCode))
			}
		}
	}
	describe := func() kmsg.StreamsGroupDescribeResponseGroup {
		t.Helper()
		req := kmsg.NewPtrStreamsGroupDescribeRequest()
		req.Groups = []string{group}
		return streamsRequest[*kmsg.StreamsGroupDescribeResponse](t, b.Addr(), req).Groups[0]
	}
	before := describe()
	if before.ErrorCode != 0 || before.State != "Stable" || taskCount(ms[0].active) != 2 || taskCount(ms[1].active) != 2 {
		t.Fatalf("before the kill: %v %s, tasks %+v %+v", kerr.ErrorForCode(before.ErrorCode), before.State, ms[0].active, ms[1].active)
	}

	b.kill9(t, "streams group of two stable members", crashWait)
	b.start(t)
	for _, m := range ms {
		epoch, tasks := m.epoch, taskCount(m.active)
		r := m.heartbeat(t, b.Addr(), group, topic)
		if r.ErrorCode != 0 || r.MemberEpoch != epoch || taskCount(m.active) != tasks {
			t.Fatalf("%s after the kill: %v epoch %d (was %d), tasks %+v (had %d)",
				m.id, kerr.ErrorForCode(r.ErrorCode), r.MemberEpoch, epoch, m.active, tasks)
		}
	}
	if after := describe(); after.ErrorCode != 0 || after.State != "Stable" || after.Epoch != before.Epoch || len(after.Members) != 2 {
		t.Fatalf("after the kill: %v %s epoch %d (was %d), %d members",
			kerr.ErrorForCode(after.ErrorCode), after.State, after.Epoch, before.Epoch, len(after.Members))
	}

	ms[1].epoch = -1
	if r := ms[1].heartbeat(t, b.Addr(), group, topic); r.ErrorCode != 0 {
		t.Fatalf("leave: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	for range 3 {
		if r := ms[0].heartbeat(t, b.Addr(), group, topic); r.ErrorCode != 0 {
			t.Fatalf("m1 after m2 left: %v", kerr.ErrorForCode(r.ErrorCode))
		}
	}
	if taskCount(ms[0].active) != 4 {
		t.Fatalf("m1 has %+v after m2 left, want all 4 tasks", ms[0].active)
	}
}
