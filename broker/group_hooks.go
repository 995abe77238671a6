package broker

import (
	"bytes"
	"fmt"
	"maps"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"go.uber.org/zap"

	"github.com/kbroker/kbroker/group"
	"github.com/kbroker/kbroker/group/consumer"
	"github.com/kbroker/kbroker/offsets"
	"github.com/kbroker/kbroker/partition"
	"github.com/kbroker/kbroker/topic"
)

// groupOffsets returns the committed-offsets store, opening it on first
// use. Like Kafka, the broker creates __consumer_offsets only when a group
// first needs it (FindCoordinator for a group, a commit), so a broker that
// never saw a group lists no internal topic; with create unset a missing
// topic means no offsets (nil, nil). After a restart the store opens at
// start-up if the topic exists.
func (b *Broker) groupOffsets(create bool) (*offsets.Store, error) {
	if s := b.offsets.Load(); s != nil {
		return s, nil
	}
	b.offsetsMu.Lock()
	defer b.offsetsMu.Unlock()
	if s := b.offsets.Load(); s != nil {
		return s, nil
	}
	parts, err := b.stateTopic(topic.GroupMetadataTopic, b.cfg.OffsetsTopicPartitions, create)
	if parts == nil || err != nil {
		return nil, err
	}
	s, err := offsets.Open(offsets.Config{
		Dir:              filepath.Join(b.cfg.DataDir, "metadata"),
		Retention:        durationMinutes(b.cfg.OffsetsRetentionMinutes),
		CheckInterval:    b.cfg.OffsetsRetentionCheckInterval,
		SnapshotInterval: b.cfg.OffsetsSnapshotInterval,
	}, b.store, parts, offsets.Hooks{Active: b.groupActive, Expired: b.groupExpired}, b.lg)
	if err != nil {
		return nil, err
	}
	for _, g := range s.Groups() {
		switch {
		case g.Share != nil:
			b.shares.Restore(restoredShareGroup(g.Share))
		case g.Streams != nil:
			b.streamsCo.Restore(restoredStreamsGroup(g.Streams), streamsMetadata{b})
		case g.Consumer != nil:
			b.groups.Consumer().Restore(restoredConsumerGroup(g.Consumer))
		default:
			b.groups.Restore(restoredGroup(g))
		}
	}
	b.groups.SetOffsetsHooks(group.OffsetsHooks{
		// An Empty consumer group lingers while it has offsets: they
		// expire (groupExpired deletes it) or DeleteGroups deletes them
		// with it.
		HasOffsets: func(id string) bool { return len(s.Fetch(id)) > 0 },
		// A consumer group took over an Empty classic group's id: the
		// classic metadata goes, so that its offsets expire by commit
		// time, not since the classic group emptied.
		ClassicReplaced: s.DeleteGroupMetadata,
	})
	b.offsets.Store(s)
	return s, nil
}

// stateTopic returns the partitions of an internal topic that holds a
// coordinator's state (__consumer_offsets, __transaction_state), creating
// the topic with n partitions when create is set, or nil when it does not
// exist and create is not set.
//
// The topic gets the configs Kafka gives it (GroupCoordinator's and
// TransactionStateManager's topic configs: cleanup.policy=compact, 100 MiB
// segments), so DescribeConfigs shows what tools expect; an existing topic
// from an older kbroker, created with retention.ms=-1 instead, is brought
// to them. The coordinator compacts the topic with snapshots (offsets/doc.go),
// which move its log start; retention never applies to it, whatever its
// configs say (partitionConfig).
func (b *Broker) stateTopic(name string, n int32, create bool) ([]*partition.Partition, error) {
	t, ok := b.topics.Get(name)
	if !ok && !create {
		return nil, nil
	}
	want := b.stateTopicConfigs(name)
	if !ok {
		var err error
		if t, err = b.topics.CreateInternal(name, n, want); err != nil {
			return nil, fmt.Errorf("create %s: %w", name, err)
		}
	} else if ops := stateTopicUpgrade(t.Configs, want); ops != nil {
		var err error
		if t, err = b.topics.IncrementalAlterConfigs(name, ops, false); err != nil {
			return nil, fmt.Errorf("update the configs of %s: %w", name, err)
		}
	}
	parts := b.store.Partitions(partition.TopicID(t.ID))
	if int32(len(parts)) != t.Partitions {
		return nil, fmt.Errorf("%s: %d of %d partitions in the store", t.Name, len(parts), t.Partitions)
	}
	return parts, nil
}

// stateTopicConfigs are the config overrides of an internal topic: Kafka's
// (cleanup.policy=compact, segment.bytes 104857600, compression.type
// producer for the offsets topic and uncompressed with
// unclean.leader.election.enable=false for the transaction log), plus
// max.message.bytes as large as a request, since a coordinator record is
// as large as what a client sent.
func (b *Broker) stateTopicConfigs(name string) map[string]*string {
	s := func(v string) *string { return &v }
	c := map[string]*string{
		topic.CleanupPolicyConfig:   s("compact"),
		topic.SegmentBytesConfig:    s("104857600"),
		topic.MaxMessageBytesConfig: s(strconv.Itoa(int(b.cfg.MaxRequestBytes))),
	}
	switch name {
	case topic.GroupMetadataTopic:
		c[topic.CompressionTypeConfig] = s("producer")
	case topic.TransactionTopic:
		c[topic.CompressionTypeConfig] = s("uncompressed")
		c["unclean.leader.election.enable"] = s("false")
	}
	return c
}

// stateTopicUpgrade returns the operations that give an existing internal
// topic the configs want, dropping the retention overrides older kbroker
// versions set, or nil when it has them. A config an operator set on top
// of those is left alone.
func stateTopicUpgrade(cur topic.Configs, want map[string]*string) []topic.AlterOp {
	if v, ok := cur.Override(topic.CleanupPolicyConfig); ok && v == "compact" {
		return nil
	}
	var ops []topic.AlterOp
	for _, name := range slices.Sorted(maps.Keys(want)) {
		ops = append(ops, topic.AlterOp{Name: name, Op: topic.OpSet, Value: want[name]})
	}
	for _, name := range []string{topic.RetentionMsConfig, topic.RetentionBytesConfig} {
		if _, ok := cur.Override(name); ok {
			ops = append(ops, topic.AlterOp{Name: name, Op: topic.OpDelete})
		}
	}
	return ops
}

// committedOffsets is the store for a request that must write (a commit):
// opened or created on demand; a failure is COORDINATOR_NOT_AVAILABLE,
// which clients retry.
func (b *Broker) committedOffsets() (*offsets.Store, error) {
	s, err := b.groupOffsets(true)
	if err != nil {
		b.lg.Error("open group offsets", zap.Error(err))
		return nil, fmt.Errorf("%w: %w", kerr.CoordinatorNotAvailable, err)
	}
	return s, nil
}

// onGroupState records each generation, each replacement of a static
// member and each emptying of a classic group in __consumer_offsets, as
// Kafka writes group metadata, so that a restart brings the group back
// with its members (restoredGroup) and knows since when it has been empty.
// The group's record is taken when the hook runs, so a group that moved on
// meanwhile is recorded as it is now, and one in a rebalance is not
// recorded (the rebalance's end will be); groupRecordMu keeps the records
// of concurrent hooks in the order of the states they saw.
//
// As Kafka, the SyncGroup (and JoinGroup, LeaveGroup) answers wait for
// the append (group_writes.go); a failed append is logged and its error
// answered, but unlike Kafka the generation is not failed.
func (b *Broker) onGroupState(groupID string, s group.State) {
	if s == group.Dead {
		return // DeleteGroups and expiry write the tombstones
	}
	store := b.recordStore(groupID)
	if store == nil {
		return
	}
	b.groupRecordMu.Lock()
	defer b.groupRecordMu.Unlock()
	r, ok := b.groups.Record(groupID)
	if !ok {
		return
	}
	rec := offsets.GroupRecord{Group: groupID, ProtocolType: r.ProtocolType, Generation: r.Generation, Protocol: r.Protocol, Leader: r.Leader}
	for _, m := range r.Members {
		rec.Members = append(rec.Members, offsets.Member{
			MemberID: m.MemberID, InstanceID: m.InstanceID, ClientID: m.ClientID, ClientHost: m.ClientHost,
			SessionTimeoutMs: clampMillis(m.SessionTimeout), RebalanceTimeoutMs: clampMillis(m.RebalanceTimeout),
			Subscription: m.Subscription, Assignment: m.Assignment,
		})
	}
	store.RecordGroup(rec, b.startGroupWrite(groupID))
}

// onConsumerGroupChange records a consumer group (KIP-848) in
// __consumer_offsets after a change, as Kafka writes its records with the
// heartbeat that made the change: the records that changed since the
// group was last recorded, tombstones for members gone, and tombstones for
// everything when the group was deleted. groupRecordMu keeps the records
// in the order of the states taken. The heartbeat's answer waits for the
// append, as Kafka's does (group_writes.go).
func (b *Broker) onConsumerGroupChange(groupID string) {
	store := b.recordStore(groupID)
	if store == nil {
		return
	}
	b.groupRecordMu.Lock()
	defer b.groupRecordMu.Unlock()
	r, found, err := b.groups.Consumer().Record(groupID)
	if err != nil {
		return // closing: the group is not gone, and nothing changed
	}
	if !found {
		store.RecordConsumerGroup(groupID, nil, b.startGroupWrite(groupID))
		return
	}
	cg := &offsets.ConsumerGroup{Group: groupID, Epoch: r.Epoch, AssignmentEpoch: r.AssignmentEpoch}
	for _, t := range r.Topics {
		cg.Topics = append(cg.Topics, offsets.ConsumerTopic{ID: t.ID, Name: t.Name, Partitions: t.Partitions})
	}
	for _, m := range r.Members {
		cg.Members = append(cg.Members, offsets.ConsumerMember{
			MemberID: m.MemberID, InstanceID: m.InstanceID, RackID: m.RackID, ClientID: m.ClientID, ClientHost: m.ClientHost,
			SubscribedTopicNames: m.TopicNames, SubscribedTopicRegex: m.Regex, ServerAssignor: m.ServerAssignor,
			RebalanceTimeoutMs: rebalanceMillis(m.RebalanceTimeout),
			MemberEpoch:        m.Epoch, PreviousMemberEpoch: m.PreviousEpoch, State: int8(m.State),
			Assigned:          storedAssignment(m.Assigned, m.AssignmentEpochs),
			PendingRevocation: storedAssignment(m.PendingRevocation, m.AssignmentEpochs),
			Target:            storedAssignment(m.Target, nil),
		})
	}
	store.RecordConsumerGroup(groupID, cg, b.startGroupWrite(groupID))
}

// rebalanceMillis is a consumer member's rebalance timeout as its record
// holds it: -1 (Kafka's default) when the member never gave one.
func rebalanceMillis(d time.Duration) int32 {
	if d < 0 {
		return -1
	}
	return clampMillis(d)
}

// storedAssignment is an assignment as the records hold it, by topic id,
// with the partitions' assignment epochs when epochs has them all.
func storedAssignment(a consumer.Assignment, epochs consumer.AssignmentEpochs) []offsets.TopicPartitions {
	ids := slices.SortedFunc(maps.Keys(a), func(x, y consumer.TopicID) int { return bytes.Compare(x[:], y[:]) })
	out := make([]offsets.TopicPartitions, 0, len(ids))
	for _, id := range ids {
		out = append(out, offsets.TopicPartitions{TopicID: id, Partitions: a[id],
			AssignmentEpochs: storedEpochs(a[id], epochs, func(p int32) consumer.TopicPartition {
				return consumer.TopicPartition{TopicID: id, Partition: p}
			})})
	}
	return out
}

// storedEpochs are the assignment epochs of partitions, in their order,
// as the records hold them (KIP-1251; key is a partition's key in
// epochs): one per partition, or none unless epochs has every one, so
// that a partition without one falls back to the member epoch.
func storedEpochs[K comparable](partitions []int32, epochs map[K]int32, key func(p int32) K) []int32 {
	if epochs == nil {
		return nil
	}
	out := make([]int32, 0, len(partitions))
	for _, p := range partitions {
		e, ok := epochs[key(p)]
		if !ok {
			return nil
		}
		out = append(out, e)
	}
	return out
}

// restoredConsumerGroup is the consumer group stored records describe.
func restoredConsumerGroup(cg *offsets.ConsumerGroup) consumer.Record {
	r := consumer.Record{Group: cg.Group, Epoch: cg.Epoch, AssignmentEpoch: cg.AssignmentEpoch}
	for _, t := range cg.Topics {
		r.Topics = append(r.Topics, consumer.Topic{ID: t.ID, Name: t.Name, Partitions: t.Partitions})
	}
	for _, m := range cg.Members {
		rebalance := time.Duration(m.RebalanceTimeoutMs) * time.Millisecond
		if m.RebalanceTimeoutMs < 0 {
			rebalance = -1
		}
		r.Members = append(r.Members, consumer.MemberRecord{
			MemberID: m.MemberID, InstanceID: m.InstanceID, RackID: m.RackID, ClientID: m.ClientID, ClientHost: m.ClientHost,
			TopicNames: m.SubscribedTopicNames, Regex: m.SubscribedTopicRegex, ServerAssignor: m.ServerAssignor,
			RebalanceTimeout: rebalance,
			Epoch:            m.MemberEpoch, PreviousEpoch: m.PreviousMemberEpoch, State: consumer.MemberState(m.State),
			Assigned: loadedAssignment(m.Assigned), PendingRevocation: loadedAssignment(m.PendingRevocation),
			AssignmentEpochs: loadedEpochs(m.Assigned, m.PendingRevocation),
			Target:           loadedAssignment(m.Target),
		})
	}
	return r
}

// loadedAssignment is a stored assignment as the coordinator holds it:
// each topic's partitions sorted and distinct, empty topics dropped.
func loadedAssignment(tps []offsets.TopicPartitions) consumer.Assignment {
	a := consumer.Assignment{}
	for _, tp := range tps {
		if len(tp.Partitions) == 0 {
			continue
		}
		ps := append(a[tp.TopicID], tp.Partitions...)
		slices.Sort(ps)
		a[tp.TopicID] = slices.Compact(ps)
	}
	return a
}

// loadedEpochs are the assignment epochs stored with a member's
// assignments; nil when none are (records from before KIP-1251).
func loadedEpochs(assignments ...[]offsets.TopicPartitions) consumer.AssignmentEpochs {
	var out consumer.AssignmentEpochs
	for _, tps := range assignments {
		for _, tp := range tps {
			for i, e := range tp.AssignmentEpochs {
				if out == nil {
					out = consumer.AssignmentEpochs{}
				}
				out[consumer.TopicPartition{TopicID: tp.TopicID, Partition: tp.Partitions[i]}] = e
			}
		}
	}
	return out
}

// recordStore is the store a group's records go to, created (with
// __consumer_offsets) if no FindCoordinator or commit did so yet, so that
// no group state goes unrecorded; nil, logged, if it cannot be opened.
func (b *Broker) recordStore(groupID string) *offsets.Store {
	s, err := b.groupOffsets(true)
	if err != nil {
		b.lg.Warn("group not recorded: no offsets store", zap.String("group", groupID), zap.Error(err))
		return nil
	}
	return s
}

// restoredGroup is the classic group a stored group comes back as.
func restoredGroup(g offsets.GroupInfo) group.Record {
	r := group.Record{Group: g.Group, ProtocolType: g.ProtocolType, Generation: g.Generation}
	if !g.HasRecord {
		return r
	}
	r.Protocol, r.Leader = g.Record.Protocol, g.Record.Leader
	for _, m := range g.Record.Members {
		r.Members = append(r.Members, group.RecordMember{
			MemberID: m.MemberID, InstanceID: m.InstanceID, ClientID: m.ClientID, ClientHost: m.ClientHost,
			SessionTimeout:   time.Duration(m.SessionTimeoutMs) * time.Millisecond,
			RebalanceTimeout: time.Duration(m.RebalanceTimeoutMs) * time.Millisecond,
			Subscription:     m.Subscription, Assignment: m.Assignment,
		})
	}
	return r
}

// clampMillis is d in milliseconds as an int32 field holds it.
func clampMillis(d time.Duration) int32 {
	return int32(min(d.Milliseconds(), math.MaxInt32))
}

// groupActive tells the offsets store whether a group, classic, consumer
// or streams, has members.
func (b *Broker) groupActive(groupID string) bool {
	if b.groups.Consumer().Active(groupID) {
		return true
	}
	if d, err := b.streamsCo.Describe(groupID); err == nil {
		return len(d.Members) > 0
	}
	d, err := b.groups.Describe(groupID)
	return err != nil || (d.State != group.Empty && d.State != group.Dead)
}

// groupExpired forgets a group whose offsets all expired while empty.
func (b *Broker) groupExpired(groupID string) {
	if err := b.deleteGroup(groupID); err != nil {
		b.lg.Debug("expired group not deleted", zap.String("group", groupID), zap.Error(err))
	}
}

// deleteGroup deletes an Empty consumer, streams or classic group (a
// group id names one at a time): NON_EMPTY_GROUP with members,
// GROUP_ID_NOT_FOUND when there is none.
func (b *Broker) deleteGroup(groupID string) error {
	if found, err := b.groups.Consumer().Delete(groupID); found {
		return err
	}
	if found, err := b.streamsCo.Delete(groupID); found {
		return err
	}
	return b.groups.Delete(groupID)
}

// consumerMetadata is the topic registry as the consumer-group coordinator
// reads it (consumer.Metadata): lookups take no lock.
type consumerMetadata struct{ r *topic.Registry }

func (b *Broker) consumerMetadata() consumer.Metadata { return consumerMetadata{b.topics} }

func consumerTopic(t topic.Topic) consumer.Topic {
	return consumer.Topic{Name: t.Name, ID: consumer.TopicID(t.ID), Partitions: t.Partitions}
}

func (m consumerMetadata) TopicByName(name string) (consumer.Topic, bool) {
	t, ok := m.r.Get(name)
	return consumerTopic(t), ok
}

func (m consumerMetadata) TopicByID(id consumer.TopicID) (consumer.Topic, bool) {
	t, ok := m.r.ByID(topic.ID(id))
	return consumerTopic(t), ok
}

func (m consumerMetadata) TopicNames() []string {
	ts := m.r.List()
	names := make([]string, len(ts))
	for i, t := range ts {
		names[i] = t.Name
	}
	return names
}
