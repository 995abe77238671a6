package broker

import (
	"time"

	"github.com/kbroker/kbroker/group/streams"
	"github.com/kbroker/kbroker/offsets"
)

// onStreamsGroupChange records a streams group (KIP-1071) in
// __consumer_offsets after a change, as Kafka writes its StreamsGroup*
// records with the heartbeat that made the change: the records that
// changed since the group was last recorded, tombstones for members gone,
// and tombstones for everything when the group was deleted. The append
// is registered as the group's latest write, which the heartbeat's answer
// waits for (group_writes.go); groupRecordMu keeps the records in the
// order of the states taken. A closing coordinator records nothing (its
// groups are not deleted).
func (b *Broker) onStreamsGroupChange(groupID string) {
	store := b.recordStore(groupID)
	if store == nil {
		return
	}
	b.groupRecordMu.Lock()
	defer b.groupRecordMu.Unlock()
	r, found, err := b.streamsCo.Record(groupID)
	switch {
	case err != nil:
		return
	case !found:
		store.RecordStreamsGroup(groupID, nil, b.startGroupWrite(groupID))
		return
	}
	store.RecordStreamsGroup(groupID, storedStreamsGroup(r), b.startGroupWrite(groupID))
}

// storedStreamsGroup is a streams group as its records hold it.
func storedStreamsGroup(r streams.Record) *offsets.StreamsGroup {
	sg := &offsets.StreamsGroup{Group: r.Group, Epoch: r.Epoch, AssignmentEpoch: r.AssignmentEpoch}
	if t := r.Topology; t != nil {
		st := &offsets.StreamsTopology{Epoch: t.Epoch, Subtopologies: make([]offsets.StreamsSubtopology, 0, len(t.Subtopologies))}
		for _, s := range t.Subtopologies {
			ss := offsets.StreamsSubtopology{
				ID: s.ID, SourceTopics: s.SourceTopics, RepartitionSinkTopics: s.RepartitionSinkTopics,
				StateChangelogTopics:    storedTopicInfos(s.StateChangelogTopics),
				RepartitionSourceTopics: storedTopicInfos(s.RepartitionSourceTopics),
			}
			for _, cg := range s.CopartitionGroups {
				ss.CopartitionGroups = append(ss.CopartitionGroups, offsets.StreamsCopartitionGroup{
					SourceTopics: cg.SourceTopics, RepartitionSourceTopics: cg.RepartitionSourceTopics,
				})
			}
			st.Subtopologies = append(st.Subtopologies, ss)
		}
		sg.Topology = st
	}
	for _, m := range r.Members {
		sm := offsets.StreamsMember{
			MemberID: m.MemberID, InstanceID: m.InstanceID, RackID: m.RackID, ClientID: m.ClientID, ClientHost: m.ClientHost,
			ProcessID: m.ProcessID, TopologyEpoch: m.TopologyEpoch, RebalanceTimeoutMs: -1,
			MemberEpoch: m.Epoch, PreviousMemberEpoch: m.PreviousEpoch, State: int8(m.State),
			Assigned:          storedTasks(m.Assigned, m.AssignmentEpochs),
			PendingRevocation: storedTasks(m.PendingRevocation, m.AssignmentEpochs),
			Target:            storedTasks(m.Target, nil),
		}
		if m.RebalanceTimeout > 0 {
			sm.RebalanceTimeoutMs = clampMillis(m.RebalanceTimeout)
		}
		if e := m.UserEndpoint; e != nil {
			sm.UserEndpoint = &offsets.StreamsEndpoint{Host: e.Host, Port: e.Port}
		}
		for _, kv := range m.ClientTags {
			sm.ClientTags = append(sm.ClientTags, offsets.KeyValue{Key: kv.Key, Value: kv.Value})
		}
		sg.Members = append(sg.Members, sm)
	}
	return sg
}

func storedTopicInfos(ts []streams.TopicInfo) []offsets.StreamsTopicInfo {
	out := make([]offsets.StreamsTopicInfo, 0, len(ts))
	for _, t := range ts {
		st := offsets.StreamsTopicInfo{Name: t.Name, Partitions: t.Partitions, ReplicationFactor: t.ReplicationFactor}
		for _, c := range t.Configs {
			st.Configs = append(st.Configs, offsets.KeyValue{Key: c.Key, Value: c.Value})
		}
		out = append(out, st)
	}
	return out
}

// storedTaskSet is a task set as the records hold it, with the tasks'
// assignment epochs where epochs has them all.
func storedTaskSet(s streams.TaskSet, epochs streams.TaskEpochs) []offsets.TaskIDs {
	l := s.List()
	out := make([]offsets.TaskIDs, len(l))
	for i, t := range l {
		out[i] = offsets.TaskIDs{Subtopology: t.Subtopology, Partitions: t.Partitions,
			AssignmentEpochs: storedEpochs(t.Partitions, epochs, func(p int32) streams.Task {
				return streams.Task{Subtopology: t.Subtopology, Partition: p}
			})}
	}
	return out
}

// storedTasks are a member's tasks as the records hold them; only active
// tasks carry assignment epochs (KIP-1251), from epochs.
func storedTasks(t streams.Tasks, epochs streams.TaskEpochs) offsets.StreamsTasks {
	return offsets.StreamsTasks{Active: storedTaskSet(t.Active, epochs), Standby: storedTaskSet(t.Standby, nil), Warmup: storedTaskSet(t.Warmup, nil)}
}

// restoredStreamsGroup is the streams group stored records describe.
func restoredStreamsGroup(sg *offsets.StreamsGroup) streams.Record {
	r := streams.Record{Group: sg.Group, Epoch: sg.Epoch, AssignmentEpoch: sg.AssignmentEpoch}
	if st := sg.Topology; st != nil {
		t := &streams.Topology{Epoch: st.Epoch}
		for _, ss := range st.Subtopologies {
			s := streams.Subtopology{
				ID: ss.ID, SourceTopics: ss.SourceTopics, RepartitionSinkTopics: ss.RepartitionSinkTopics,
				StateChangelogTopics:    loadedTopicInfos(ss.StateChangelogTopics),
				RepartitionSourceTopics: loadedTopicInfos(ss.RepartitionSourceTopics),
			}
			for _, cg := range ss.CopartitionGroups {
				s.CopartitionGroups = append(s.CopartitionGroups, streams.CopartitionGroup{
					SourceTopics: cg.SourceTopics, RepartitionSourceTopics: cg.RepartitionSourceTopics,
				})
			}
			t.Subtopologies = append(t.Subtopologies, s)
		}
		r.Topology = t
	}
	for _, m := range sg.Members {
		mr := streams.MemberRecord{
			MemberID: m.MemberID, InstanceID: m.InstanceID, RackID: m.RackID, ClientID: m.ClientID, ClientHost: m.ClientHost,
			ProcessID: m.ProcessID, TopologyEpoch: m.TopologyEpoch,
			Epoch: m.MemberEpoch, PreviousEpoch: m.PreviousMemberEpoch, State: streams.MemberState(m.State),
			Assigned: loadedTasks(m.Assigned), PendingRevocation: loadedTasks(m.PendingRevocation),
			AssignmentEpochs: loadedTaskEpochs(m.Assigned.Active, m.PendingRevocation.Active),
			Target:           loadedTasks(m.Target),
		}
		if m.RebalanceTimeoutMs > 0 {
			mr.RebalanceTimeout = time.Duration(m.RebalanceTimeoutMs) * time.Millisecond
		}
		if e := m.UserEndpoint; e != nil {
			mr.UserEndpoint = &streams.Endpoint{Host: e.Host, Port: e.Port}
		}
		for _, kv := range m.ClientTags {
			mr.ClientTags = append(mr.ClientTags, streams.KV{Key: kv.Key, Value: kv.Value})
		}
		r.Members = append(r.Members, mr)
	}
	return r
}

func loadedTopicInfos(ts []offsets.StreamsTopicInfo) []streams.TopicInfo {
	out := make([]streams.TopicInfo, 0, len(ts))
	for _, st := range ts {
		t := streams.TopicInfo{Name: st.Name, Partitions: st.Partitions, ReplicationFactor: st.ReplicationFactor}
		for _, c := range st.Configs {
			t.Configs = append(t.Configs, streams.TopicConfig{Key: c.Key, Value: c.Value})
		}
		out = append(out, t)
	}
	return out
}

func loadedTaskSet(ts []offsets.TaskIDs) streams.TaskSet {
	l := make([]streams.SubtopologyTasks, len(ts))
	for i, t := range ts {
		l[i] = streams.SubtopologyTasks{Subtopology: t.Subtopology, Partitions: t.Partitions}
	}
	return streams.NewTaskSet(l)
}

func loadedTasks(t offsets.StreamsTasks) streams.Tasks {
	return streams.Tasks{Active: loadedTaskSet(t.Active), Standby: loadedTaskSet(t.Standby), Warmup: loadedTaskSet(t.Warmup)}
}

// loadedTaskEpochs are the assignment epochs stored with a member's
// active tasks; nil when none are (records from before KIP-1251).
func loadedTaskEpochs(sets ...[]offsets.TaskIDs) streams.TaskEpochs {
	var out streams.TaskEpochs
	for _, ts := range sets {
		for _, t := range ts {
			if len(t.AssignmentEpochs) != len(t.Partitions) {
				continue // the decoder drops such epochs; a member epoch stands in
			}
			for i, e := range t.AssignmentEpochs {
				if out == nil {
					out = streams.TaskEpochs{}
				}
				out[streams.Task{Subtopology: t.Subtopology, Partition: t.Partitions[i]}] = e
			}
		}
	}
	return out
}
