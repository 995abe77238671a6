package integration

// Share-group state (KIP-932) across SIGKILL of the binary in sync flush
// mode: an acknowledgement the broker answered is durable.

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestShareCrashKill9: a franz-go share consumer reads 30 records of one
// partition, acknowledges (accepts) the first 20 and flushes the
// acknowledgements, and keeps the other 10 acquired; the binary is killed
// with SIGKILL and started again. A new share consumer of the group then
// gets exactly the 10 records that were not acknowledged, each with
// delivery count 2 (the acquisition survived as a delivery; its lock did
// not), and none of the 20.
func TestShareCrashKill9(t *testing.T) {
	t.Parallel()
	b := startBinary(t, "--flush", "sync")
	topic, group := topicName(t), "sg."+topicName(t)
	createGroupTopic(t, newAdmin(t, b.Addr()), topic, 1)
	setGroupConfig(t, b.Addr(), group, "share.auto.offset.reset", "earliest")
	produceGroupRecords(t, b.Addr(), topic, 1, 30, "s")

	var (
		mu      sync.Mutex
		ackErrs []error
	)
	a := newKgo(t, b.Addr(), kgo.ShareGroup(group), kgo.ConsumeTopics(topic), kgo.FetchMaxWait(200*time.Millisecond),
		kgo.ShareAckCallback(func(_ *kgo.Client, rs kgo.ShareAckResults) {
			mu.Lock()
			defer mu.Unlock()
			if err := rs.Error(); err != nil {
				ackErrs = append(ackErrs, err)
			}
		}))
	ctx := testCtx(t)
	var held []*kgo.Record
	for len(held) < 30 {
		pctx, cancel := context.WithTimeout(ctx, time.Second)
		held = append(held, a.PollRecords(pctx, 30-len(held)).Records()...)
		cancel()
		if ctx.Err() != nil {
			t.Fatalf("polled %d of 30 records", len(held))
		}
	}
	var accept []*kgo.Record
	for _, r := range held {
		if r.Offset < 20 {
			accept = append(accept, r)
		}
	}
	a.MarkAcks(kgo.AckAccept, accept...)
	if err := a.FlushAcks(ctx); err != nil {
		t.Fatalf("FlushAcks: %v", err)
	}
	mu.Lock()
	if len(ackErrs) > 0 {
		t.Fatalf("acknowledgements failed: %v", ackErrs)
	}
	mu.Unlock()
	b.kill9(t, "share consumer holding 10 records", 10*time.Second)
	b.start(t)

	c := newKgo(t, b.Addr(), kgo.ShareGroup(group), kgo.ConsumeTopics(topic), kgo.FetchMaxWait(200*time.Millisecond))
	got := map[int64]int32{}
	for len(got) < 10 {
		pctx, cancel := context.WithTimeout(ctx, time.Second)
		for _, r := range c.PollRecords(pctx, 30).Records() {
			if r.Offset < 20 {
				t.Fatalf("record %d was acknowledged before the kill and came again", r.Offset)
			}
			got[r.Offset] = r.DeliveryCount()
		}
		cancel()
		if ctx.Err() != nil {
			t.Fatalf("after the kill got %d of the 10 unacknowledged records: %v", len(got), got)
		}
	}
	for off, n := range got {
		if n != 2 {
			t.Errorf("record %d: delivery count %d after the kill, want 2", off, n)
		}
	}
}

// setGroupConfig sets one GROUP config with IncrementalAlterConfigs.
func setGroupConfig(t *testing.T, addr, group, name, value string) {
	t.Helper()
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	res := kmsg.NewIncrementalAlterConfigsRequestResource()
	res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeGroupConfig, group
	c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	c.Name, c.Op, c.Value = name, kmsg.IncrementalAlterConfigOpSet, &value
	res.Configs = append(res.Configs, c)
	req.Resources = append(req.Resources, res)
	resp, err := req.RequestWith(testCtx(t), newKgo(t, addr))
	if err == nil {
		err = kerr.ErrorForCode(resp.Resources[0].ErrorCode)
	}
	if err != nil {
		t.Fatalf("set group config %s=%s on %s: %v", name, value, group, err)
	}
}

// TestShareMembershipCrashKill9: two share-group members join over the
// wire and split a topic's partitions; the binary is killed with SIGKILL
// right after their answers and started again. Both members heartbeat on
// at the epochs they were given, with no error, no new epoch and no new
// assignment: the membership was durable before the broker answered.
func TestShareMembershipCrashKill9(t *testing.T) {
	t.Parallel()
	b := startBinary(t, "--flush", "sync")
	topic, group := topicName(t), "sgm."+topicName(t)
	createGroupTopic(t, newAdmin(t, b.Addr()), topic, 4)
	ctx := testCtx(t)
	beat := func(cl *kgo.Client, member string, epoch int32) *kmsg.ShareGroupHeartbeatResponse {
		t.Helper()
		req := kmsg.NewPtrShareGroupHeartbeatRequest()
		req.GroupID, req.MemberID, req.MemberEpoch = group, member, epoch
		if epoch == 0 {
			req.SubscribedTopicNames = []string{topic}
		}
		resp, err := req.RequestWith(ctx, cl)
		if err == nil {
			err = kerr.ErrorForCode(resp.ErrorCode)
		}
		if err != nil {
			t.Fatalf("%s heartbeats at epoch %d: %v", member, epoch, err)
		}
		return resp
	}
	cl := newKgo(t, b.Addr())
	epochs := map[string]int32{}
	parts := map[string]int{}
	for _, m := range []string{"m-a", "m-b", "m-a"} {
		r := beat(cl, m, epochs[m])
		epochs[m] = r.MemberEpoch
		if r.Assignment != nil {
			parts[m] = 0
			for _, tp := range r.Assignment.TopicPartitions {
				parts[m] += len(tp.Partitions)
			}
		}
	}
	if parts["m-a"]+parts["m-b"] != 4 || epochs["m-a"] != epochs["m-b"] {
		t.Fatalf("before the kill: epochs %v, partitions %v", epochs, parts)
	}
	b.kill9(t, "two share members", 10*time.Second)
	b.start(t)
	cl = newKgo(t, b.Addr())
	for _, m := range []string{"m-a", "m-b"} {
		r := beat(cl, m, epochs[m])
		if r.MemberEpoch != epochs[m] || r.Assignment != nil {
			t.Fatalf("%s after the kill: epoch %d (was %d), assignment %+v", m, r.MemberEpoch, epochs[m], r.Assignment)
		}
	}
}
