package integration

// Group administration with kadm: ListGroups, DescribeGroups,
// DeleteGroups, offsets committed and deleted by an admin, and the
// internal __consumer_offsets topic.

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestGroupAdmin: with a kgo member consuming a 2-partition topic,
// ListGroups lists the group (consumer protocol, Stable), DescribeGroups
// shows the member (client id, subscription, assignment of both
// partitions) and the cooperative-sticky protocol, DeleteGroups refuses
// the non-empty group (NON_EMPTY_GROUP), FetchOffsets shows the commits,
// Metadata lists __consumer_offsets as internal and producing to it fails.
// Once the member left: the group is Empty; an admin commits offsets for
// it (no generation) and deletes one partition's (OffsetDelete); then
// DeleteGroups removes it: FetchOffsets is empty, ListGroups no longer
// lists it, and both stay so across a restart. DeleteGroups of a missing
// group is GROUP_ID_NOT_FOUND.
func TestGroupAdmin(t *testing.T) {
	t.Parallel()
	eachBroker(t, groupOpts(nil), func(t *testing.T, b testBroker) {
		const partitions = 2
		topic, group := topicName(t), groupName(t)
		adm := newAdmin(t, b.Addr())
		ctx := testCtx(t)
		createGroupTopic(t, adm, topic, partitions)
		produceGroupRecords(t, b.Addr(), topic, partitions, 20, "r")
		ends := endOffsets(t, adm, topic)

		tally := newGroupTally()
		m := startKgoMember(t, b.Addr(), group, topic, "admin-test-member", tally)
		tally.awaitAll(t, ends)
		awaitCommitted(t, adm, group, topic, ends)

		listed, err := adm.ListGroups(ctx)
		if err != nil {
			t.Fatalf("ListGroups: %v", err)
		}
		if lg, ok := listed[group]; !ok || lg.ProtocolType != "consumer" || lg.State != "Stable" {
			t.Errorf("ListGroups: %s is %+v (listed %v), want protocol type consumer, Stable; all: %v", group, lg, ok, listed.Groups())
		}
		if stable, err := adm.ListGroups(ctx, "Stable"); err != nil || !slices.Contains(stable.Groups(), group) {
			t.Errorf("ListGroups(Stable): %v, %v; want %s among them", stable.Groups(), err, group)
		}
		if empty, err := adm.ListGroups(ctx, "Empty"); err != nil || slices.Contains(empty.Groups(), group) {
			t.Errorf("ListGroups(Empty): %v, %v; want %s not among them", empty.Groups(), err, group)
		}

		ds, err := adm.DescribeGroups(ctx, group)
		if err != nil {
			t.Fatalf("DescribeGroups: %v", err)
		}
		d := ds[group]
		if d.Err != nil || d.State != "Stable" || d.ProtocolType != "consumer" || d.Protocol != "cooperative-sticky" || len(d.Members) != 1 {
			t.Fatalf("DescribeGroups: %+v; want Stable, consumer, cooperative-sticky, 1 member", d)
		}
		dm := d.Members[0]
		if dm.ClientID != "admin-test-member" || dm.MemberID == "" || dm.ClientHost == "" {
			t.Errorf("DescribeGroups member: id %q, client id %q, host %q", dm.MemberID, dm.ClientID, dm.ClientHost)
		}
		if id, _ := m.cl.GroupMetadata(); dm.MemberID != id {
			t.Errorf("DescribeGroups member id %q, the client's %q", dm.MemberID, id)
		}
		if join, ok := dm.Join.AsConsumer(); !ok || !slices.Equal(join.Topics, []string{topic}) {
			t.Errorf("DescribeGroups member subscription: %+v (decoded %v), want [%s]", dm.Join, ok, topic)
		}
		if got := d.AssignedPartitions().Sorted(); len(got) != 1 || got[0].Topic != topic || !slices.Equal(got[0].Partitions, []int32{0, 1}) {
			t.Errorf("DescribeGroups assignment: %v, want %s [0 1]", got, topic)
		}

		resp, err := adm.DeleteGroups(ctx, group)
		if err != nil {
			t.Fatalf("DeleteGroups of a group with a member: %v", err)
		}
		if err := resp[group].Err; !errors.Is(err, kerr.NonEmptyGroup) {
			t.Errorf("DeleteGroups of a group with a member: %v, want NON_EMPTY_GROUP", err)
		}
		checkCommitted(t, adm, group, topic, ends)

		checkOffsetsTopic(t, adm, b.Addr())

		m.close(t) // leaves the group
		awaitGroup(t, "the group to be Empty after its member left", func() bool {
			state, ms := describeGroup(t, adm, group, topic)
			return state == "Empty" && len(ms) == 0
		}, func() string { state, ms := describeGroup(t, adm, group, topic); return state + " " + fmtMembers(ms) })

		// An admin's commit (no member, no generation) to the Empty
		// group, and OffsetDelete of one partition.
		os := kadm.Offsets{}
		os.AddOffset(topic, 0, 5, -1)
		os.AddOffset(topic, 1, 7, -1)
		if err := adm.CommitAllOffsets(ctx, group, os); err != nil {
			t.Fatalf("CommitAllOffsets to the Empty group: %v", err)
		}
		checkCommitted(t, adm, group, topic, map[int32]int64{0: 5, 1: 7})
		dr, err := adm.DeleteOffsets(ctx, group, kadm.TopicsSet{topic: {1: {}}})
		if err == nil {
			err = dr.Error()
		}
		if err != nil {
			t.Fatalf("DeleteOffsets of partition 1: %v", err)
		}
		checkCommitted(t, adm, group, topic, map[int32]int64{0: 5})

		resp, err = adm.DeleteGroups(ctx, group)
		if err == nil {
			err = resp.Error()
		}
		if err != nil {
			t.Fatalf("DeleteGroups of the Empty group: %v", err)
		}
		checkDeleted := func(when string) {
			t.Helper()
			if got := committedOffsets(t, adm, group, topic); len(got) != 0 {
				t.Errorf("%s: FetchOffsets of the deleted group: %v, want none", when, got)
			}
			listed, err := adm.ListGroups(testCtx(t))
			if err != nil {
				t.Fatalf("%s: ListGroups: %v", when, err)
			}
			if _, ok := listed[group]; ok {
				t.Errorf("%s: ListGroups still lists the deleted group %s", when, group)
			}
			ds, err := adm.DescribeGroups(testCtx(t), group)
			if err != nil {
				t.Fatalf("%s: DescribeGroups: %v", when, err)
			}
			// Kafka describes an unknown group as Dead, without an error
			// (GROUP_ID_NOT_FOUND from v6, KIP-1043).
			if d := ds[group]; !(d.Err == nil && d.State == "Dead") && !errors.Is(d.Err, kerr.GroupIDNotFound) {
				t.Errorf("%s: DescribeGroups of the deleted group: state %q, error %v; want Dead or GROUP_ID_NOT_FOUND", when, d.State, d.Err)
			}
		}
		checkDeleted("after DeleteGroups")

		resp, err = adm.DeleteGroups(ctx, group+".missing")
		if err != nil {
			t.Fatalf("DeleteGroups of a missing group: %v", err)
		}
		if err := resp[group+".missing"].Err; !errors.Is(err, kerr.GroupIDNotFound) {
			t.Errorf("DeleteGroups of a missing group: %v, want GROUP_ID_NOT_FOUND", err)
		}

		b.Restart(t)
		adm = newAdmin(t, b.Addr())
		checkDeleted("after a restart")
		checkOffsetsTopic(t, adm, b.Addr())
	})
}

// checkOffsetsTopic: Metadata lists __consumer_offsets as internal, and a
// client cannot produce to it.
func checkOffsetsTopic(t *testing.T, adm *kadm.Client, addr string) {
	t.Helper()
	const offsetsTopic = "__consumer_offsets"
	md, err := adm.Metadata(testCtx(t))
	if err != nil {
		t.Fatalf("Metadata: %v", err)
	}
	td, ok := md.Topics[offsetsTopic]
	if !ok || td.Err != nil || !td.IsInternal || len(td.Partitions) == 0 {
		t.Errorf("Metadata: %s listed %v, error %v, internal %v, %d partitions; want listed, internal", offsetsTopic, ok, td.Err, td.IsInternal, len(td.Partitions))
	}

	cl := newKgo(t, addr, kgo.RecordDeliveryTimeout(5*time.Second), kgo.RecordRetries(2))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err = cl.ProduceSync(ctx, &kgo.Record{Topic: offsetsTopic, Value: []byte("not an offset commit")}).FirstErr()
	if !errors.Is(err, kerr.InvalidTopicException) {
		t.Errorf("producing to %s: %v, want INVALID_TOPIC_EXCEPTION (as Kafka)", offsetsTopic, err)
	}
}

func fmtMembers(ms []describedMember) string {
	var s string
	for _, m := range ms {
		s += m.id + "/" + m.client + " "
	}
	return s
}
