package broker

// OffsetFetch (key 9), v0–v10: the committed offsets of one group (v0–v7)
// or several (v8+), for the partitions asked or, with null topics (v2+),
// for every partition the group committed. A partition without a
// committed offset gets offset -1, leader epoch -1 and metadata "", with
// no error, as in Kafka 4 (also for unknown topics; v10 names topics by
// id, and an unknown id is UNKNOWN_TOPIC_ID). Offsets are visible only
// once durable (package offsets). With require_stable (v7+) a partition
// with offsets in an open transaction (TxnOffsetCommit not yet committed
// or aborted) gets UNSTABLE_OFFSET_COMMIT and offset -1, which clients
// retry, as Kafka answers. v9's member id and epoch concern KIP-848
// groups: for a consumer group a member id must name a member
// (UNKNOWN_MEMBER_ID) at that epoch (STALE_MEMBER_EPOCH), as the group's
// error with no topics; no member id with a negative epoch (the admin
// client) passes. Classic groups ignore them, as Kafka does.

import (
	"cmp"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/offsets"
	"github.com/kbroker/kbroker/topic"
)

// fetchedPartition is one partition's answer in either response shape.
type fetchedPartition struct {
	Partition   int32
	Offset      int64
	LeaderEpoch int32
	Metadata    *string
	ErrorCode   int16
}

// fetchedTopic is one topic's answers.
type fetchedTopic struct {
	Topic      string
	TopicID    [16]byte
	Partitions []fetchedPartition
}

func (b *Broker) handleOffsetFetch(c *conn, req *kmsg.OffsetFetchRequest) (result, error) {
	resp := req.ResponseKind().(*kmsg.OffsetFetchResponse)
	byID := req.Version >= 10
	if req.Version < 8 {
		var topics []kmsg.OffsetFetchRequestGroupTopic
		all := req.Topics == nil && req.Version >= 2
		for _, t := range req.Topics {
			topics = append(topics, kmsg.OffsetFetchRequestGroupTopic{Topic: t.Topic, Partitions: t.Partitions})
		}
		fts := b.fetchGroupOffsets(req.Group, all, topics, false, req.RequireStable, req.Version)
		if !b.allowed(c, opDescribe, resGroup, req.Group) {
			if req.Version >= 2 {
				resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
				return respond(resp)
			}
			fts = deniedOffsets(fts, kerr.GroupAuthorizationFailed.Code)
		}
		for _, ft := range b.authorizedOffsets(c, fts, all) {
			rt := kmsg.OffsetFetchResponseTopic{Topic: ft.Topic}
			for _, p := range ft.Partitions {
				rt.Partitions = append(rt.Partitions, kmsg.OffsetFetchResponseTopicPartition{
					Partition: p.Partition, Offset: p.Offset, LeaderEpoch: p.LeaderEpoch, Metadata: p.Metadata, ErrorCode: p.ErrorCode,
				})
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return respond(resp)
	}
	for _, g := range req.Groups {
		rg := kmsg.OffsetFetchResponseGroup{Group: g.Group}
		if req.Version < 9 {
			g.MemberID, g.MemberEpoch = nil, -1 // not in these versions
		}
		if !b.allowed(c, opDescribe, resGroup, g.Group) {
			rg.ErrorCode = kerr.GroupAuthorizationFailed.Code
			resp.Groups = append(resp.Groups, rg)
			continue
		}
		found, err := b.groups.Consumer().ValidateFetch(g.Group, g.MemberID, g.MemberEpoch)
		if !found {
			found, err = b.streamsCo.ValidateFetch(g.Group, g.MemberID, g.MemberEpoch)
		}
		if found && err != nil {
			rg.ErrorCode = errorCode(err)
			resp.Groups = append(resp.Groups, rg)
			continue
		}
		for _, ft := range b.authorizedOffsets(c, b.fetchGroupOffsets(g.Group, g.Topics == nil, g.Topics, byID, req.RequireStable, req.Version), g.Topics == nil) {
			rt := kmsg.OffsetFetchResponseGroupTopic{Topic: ft.Topic, TopicID: ft.TopicID}
			for _, p := range ft.Partitions {
				rt.Partitions = append(rt.Partitions, kmsg.OffsetFetchResponseGroupTopicPartition{
					Partition: p.Partition, Offset: p.Offset, LeaderEpoch: p.LeaderEpoch, Metadata: p.Metadata, ErrorCode: p.ErrorCode,
				})
			}
			rg.Topics = append(rg.Topics, rt)
		}
		resp.Groups = append(resp.Groups, rg)
	}
	return respond(resp)
}

// authorizedOffsets applies the topic DESCRIBE check to fetched offsets:
// with all topics asked, the unauthorized ones are left out; named ones
// answer offset -1 and TOPIC_AUTHORIZATION_FAILED.
func (b *Broker) authorizedOffsets(c *conn, fts []fetchedTopic, all bool) []fetchedTopic {
	if b.security.authz == nil {
		return fts
	}
	out := fts[:0]
	for _, ft := range fts {
		name := ft.Topic
		if t, ok := b.topics.ByID(topic.ID(ft.TopicID)); name == "" && ok {
			name = t.Name
		}
		if b.allowed(c, opDescribe, resTopic, name) {
			out = append(out, ft)
		} else if !all {
			out = append(out, deniedOffsets([]fetchedTopic{ft}, kerr.TopicAuthorizationFailed.Code)...)
		}
	}
	return out
}

// deniedOffsets replaces every partition's answer by code, offset -1.
func deniedOffsets(fts []fetchedTopic, code int16) []fetchedTopic {
	for i := range fts {
		for j := range fts[i].Partitions {
			p := &fts[i].Partitions[j]
			empty := ""
			*p = fetchedPartition{Partition: p.Partition, Offset: -1, LeaderEpoch: -1, Metadata: &empty, ErrorCode: code}
		}
	}
	return fts
}

// fetchGroupOffsets answers for one group: every committed partition when
// all is set, else the partitions asked.
func (b *Broker) fetchGroupOffsets(groupID string, all bool, asked []kmsg.OffsetFetchRequestGroupTopic, byID, requireStable bool, version int16) []fetchedTopic {
	var committed map[offsets.TopicPartition]offsets.Offset
	store, _ := b.groupOffsets(false)
	if store != nil {
		committed = store.Fetch(groupID)
	}
	empty := ""
	answer := func(tp offsets.TopicPartition) fetchedPartition {
		if requireStable && store != nil && store.PendingTxn(groupID, tp) {
			return fetchedPartition{Partition: tp.Partition, Offset: -1, LeaderEpoch: -1, Metadata: &empty, ErrorCode: kerr.UnstableOffsetCommit.Code}
		}
		o, ok := committed[tp]
		if !ok {
			return fetchedPartition{Partition: tp.Partition, Offset: -1, LeaderEpoch: -1, Metadata: &empty}
		}
		md := o.Metadata
		fp := fetchedPartition{Partition: tp.Partition, Offset: o.Offset, LeaderEpoch: o.LeaderEpoch, Metadata: &md}
		if version < 5 {
			fp.LeaderEpoch = -1
		}
		return fp
	}
	var out []fetchedTopic
	if all {
		byTopic := map[string][]int32{}
		for tp := range committed {
			byTopic[tp.Topic] = append(byTopic[tp.Topic], tp.Partition)
		}
		for name, parts := range byTopic {
			ft := fetchedTopic{Topic: name}
			if byID {
				t, ok := b.topics.Get(name)
				if !ok {
					continue // deleted: no id to report it by
				}
				ft.TopicID = t.ID
			}
			slices.Sort(parts)
			for _, p := range parts {
				ft.Partitions = append(ft.Partitions, answer(offsets.TopicPartition{Topic: name, Partition: p}))
			}
			out = append(out, ft)
		}
		slices.SortFunc(out, func(a, b fetchedTopic) int { return cmp.Compare(a.Topic, b.Topic) })
		return out
	}
	for _, at := range asked {
		ft := fetchedTopic{Topic: at.Topic, TopicID: at.TopicID}
		name := at.Topic
		code := int16(0)
		if byID {
			t, ok := b.topics.ByID(topic.ID(at.TopicID))
			if ok {
				name = t.Name
			} else {
				code = kerr.UnknownTopicID.Code
			}
		}
		for _, p := range at.Partitions {
			if code != 0 {
				ft.Partitions = append(ft.Partitions, fetchedPartition{Partition: p, Offset: -1, LeaderEpoch: -1, ErrorCode: code})
				continue
			}
			ft.Partitions = append(ft.Partitions, answer(offsets.TopicPartition{Topic: name, Partition: p}))
		}
		out = append(out, ft)
	}
	return out
}
