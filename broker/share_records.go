package broker

import (
	"go.uber.org/zap"

	"github.com/kbroker/kbroker/group/share"
	"github.com/kbroker/kbroker/offsets"
)

// recordShareGroup records a share group in __consumer_offsets (Kafka's
// ShareGroup* records, offsets/share_records.go) as it is now, or its
// tombstones once it is gone, and calls done (if not nil) once the
// records are durable: ShareGroupHeartbeat answers only then, as Kafka
// does. groupRecordMu keeps the records of concurrent changes in the
// order of the states taken; the wait for durability happens outside it
// and outside the coordinator's lock.
func (b *Broker) recordShareGroup(groupID string, done func(error)) {
	if done == nil {
		done = func(error) {}
	}
	store := b.recordStore(groupID)
	if store == nil {
		done(nil) // logged by recordStore; the group lives on in memory
		return
	}
	b.groupRecordMu.Lock()
	defer b.groupRecordMu.Unlock()
	r, ok := b.shares.Record(groupID)
	if !ok {
		store.RecordShareGroup(groupID, nil, done)
		return
	}
	sg := &offsets.ShareGroup{Group: groupID, Epoch: r.Epoch, MetadataHash: r.MetadataHash, AssignmentEpoch: r.AssignmentEpoch,
		Initializing: []offsets.ShareTopic{}, Deleting: []offsets.ShareTopic{}}
	for _, t := range r.Topics {
		ps := make([]int32, t.Partitions)
		for i := range ps {
			ps[i] = int32(i)
		}
		// Kafka initializes the share state of every partition of a
		// subscribed topic when the assignment first names it; here a
		// share-partition's state starts at its first fetch, so every
		// subscribed partition counts as initialized. The timestamp is
		// not kept: 0 says unknown.
		sg.Initialized = append(sg.Initialized, offsets.ShareTopic{ID: t.ID, Name: t.Name, Partitions: ps})
	}
	for _, m := range r.Members {
		a := storedShareAssignment(m.Assignment)
		sg.Members = append(sg.Members, offsets.ShareMember{
			MemberID: m.MemberID, RackID: m.Rack, ClientID: m.ClientID, ClientHost: m.ClientHost,
			SubscribedTopicNames: m.Subscribed, MemberEpoch: m.Epoch, PreviousMemberEpoch: m.PreviousEpoch,
			State:    0, // STABLE: share members never wait for revocations
			Assigned: a, Target: a,
		})
	}
	store.RecordShareGroup(groupID, sg, func(err error) {
		if err != nil {
			b.lg.Warn("share group records not written", zap.String("group", groupID), zap.Error(err))
		}
		done(err)
	})
}

// storedShareAssignment is a share member's assignment as the records
// hold it.
func storedShareAssignment(a []share.TopicPartitions) []offsets.TopicPartitions {
	out := make([]offsets.TopicPartitions, len(a))
	for i, tp := range a {
		out[i] = offsets.TopicPartitions{TopicID: tp.TopicID, Partitions: tp.Partitions}
	}
	return out
}

// restoredShareGroup is the share group stored records describe.
func restoredShareGroup(sg *offsets.ShareGroup) share.GroupRecord {
	r := share.GroupRecord{Group: sg.Group, Epoch: sg.Epoch, AssignmentEpoch: sg.AssignmentEpoch, MetadataHash: sg.MetadataHash}
	for _, t := range sg.Initialized {
		r.Topics = append(r.Topics, share.Topic{ID: t.ID, Name: t.Name, Partitions: int32(len(t.Partitions))})
	}
	for _, m := range sg.Members {
		mr := share.MemberRecord{MemberID: m.MemberID, Rack: m.RackID, ClientID: m.ClientID, ClientHost: m.ClientHost,
			Subscribed: m.SubscribedTopicNames, Epoch: m.MemberEpoch, PreviousEpoch: m.PreviousMemberEpoch}
		for _, tp := range m.Assigned {
			if len(tp.Partitions) > 0 {
				mr.Assignment = append(mr.Assignment, share.TopicPartitions{TopicID: tp.TopicID, Partitions: tp.Partitions})
			}
		}
		r.Members = append(r.Members, mr)
	}
	return r
}
