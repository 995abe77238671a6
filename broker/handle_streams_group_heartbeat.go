package broker

// StreamsGroupHeartbeat (key 88) v0–v1: the streams rebalance protocol of
// KIP-1071, as Kafka 4's KafkaApis.handleStreamsGroupHeartbeat and
// GroupMetadataManager.streamsGroupHeartbeat; package group/streams holds
// the rules (see its doc.go).
//
// Answered at once. Missing internal topics (repartition and changelog
// topics) are created by the broker before the answer, with the partition
// counts the coordinator decided and the configs the topology names; the
// heartbeat then already assigns tasks (Kafka creates them in the
// background and answers MISSING_INTERNAL_TOPICS until they exist). With
// streams.version at 0 the API is not advertised and the answer is
// UNSUPPORTED_VERSION. A group id held by a consumer or share group, or a
// classic group with members, is GROUP_ID_NOT_FOUND, as in Kafka; a join
// (epoch 0) takes over an Empty classic group's id, offsets kept.
//
// Versions: v1 adds AcceptableRecoveryLag (int64) and
// TopologyDescriptionRequired, never set here (no topology-description
// plugin, KIP-1331).

import (
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/group"
	"github.com/kbroker/kbroker/group/streams"
)

func (b *Broker) handleStreamsGroupHeartbeat(c *conn, req *kmsg.StreamsGroupHeartbeatRequest) (result, error) {
	resp := req.ResponseKind().(*kmsg.StreamsGroupHeartbeatResponse)
	if !b.allowed(c, opRead, resGroup, req.Group) {
		resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
		return respond(resp)
	}
	if !b.streamsGroups() {
		resp.ErrorCode = kerr.UnsupportedVersion.Code
		return respond(resp)
	}
	hr := streams.HeartbeatRequest{
		Group:                    req.Group,
		MemberID:                 req.MemberID,
		MemberEpoch:              req.MemberEpoch,
		EndpointInformationEpoch: req.EndpointInformationEpoch,
		InstanceID:               req.InstanceID,
		RackID:                   req.RackID,
		RebalanceTimeoutMillis:   req.RebalanceTimeoutMillis,
		ProcessID:                req.ProcessID,
		ShutdownApplication:      req.ShutdownApplication,
		ClientID:                 c.clientID,
		ClientHost:               c.groupClientHost(),
	}
	regex := false
	if t := req.Topology; t != nil {
		top := &streams.Topology{Epoch: t.Epoch, Subtopologies: make([]streams.Subtopology, len(t.Subtopologies))}
		for i, s := range t.Subtopologies {
			if len(s.SourceTopicRegex) > 0 {
				regex = true
			}
			sub := streams.Subtopology{
				ID:                      s.SubtopologyID,
				SourceTopics:            s.SourceTopics,
				RepartitionSinkTopics:   s.RepartitionSinkTopics,
				RepartitionSourceTopics: topicInfos(s.RepartitionSourceTopics),
				StateChangelogTopics:    topicInfos(s.StateChangelogTopics),
			}
			for _, g := range s.CopartitionGroups {
				if len(g.SourceTopicRegex) > 0 {
					regex = true
				}
				sub.CopartitionGroups = append(sub.CopartitionGroups, streams.CopartitionGroup{SourceTopics: g.SourceTopics, RepartitionSourceTopics: g.RepartitionSourceTopics})
			}
			top.Subtopologies[i] = sub
		}
		hr.Topology = top
	}
	if req.ActiveTasks != nil || req.StandbyTasks != nil || req.WarmupTasks != nil {
		if req.ActiveTasks == nil || req.StandbyTasks == nil || req.WarmupTasks == nil {
			resp.ErrorCode = kerr.InvalidRequest.Code
			resp.ErrorMessage = kmsg.StringPtr("If one task-type is non-null, all must be non-null.")
			return respond(resp)
		}
		hr.OwnedTasks = true
		hr.ActiveTasks, hr.StandbyTasks, hr.WarmupTasks = fromTaskIDs(req.ActiveTasks), fromTaskIDs(req.StandbyTasks), fromTaskIDs(req.WarmupTasks)
	}
	if e := req.UserEndpoint; e != nil {
		hr.UserEndpoint = &streams.Endpoint{Host: e.Host, Port: e.Port}
	}
	if req.ClientTags != nil {
		hr.ClientTagsSet = true
		hr.ClientTags = make([]streams.KV, len(req.ClientTags))
		for i, t := range req.ClientTags {
			hr.ClientTags[i] = streams.KV{Key: t.Key, Value: t.Value}
		}
	}
	// The request is checked before the group's type, as Kafka does.
	if err := hr.Validate(regex); err != nil {
		resp.ErrorCode = errorCode(err)
		resp.ErrorMessage = errorMessage(err)
		return respond(resp)
	}
	if msg := b.streamsGroupIDTaken(req); msg != "" {
		resp.ErrorCode = kerr.GroupIDNotFound.Code
		resp.ErrorMessage = kmsg.StringPtr(msg)
		return respond(resp)
	}
	r := b.streamsCo.Heartbeat(hr, regex, streamsMetadata{b})
	if r.Err != nil {
		resp.ErrorCode = errorCode(r.Err)
		resp.ErrorMessage = errorMessage(r.Err)
		return respond(resp)
	}
	resp.MemberID = r.MemberID
	resp.MemberEpoch = r.MemberEpoch
	if r.MemberEpoch < 0 {
		// Leaving: the rest stays at its defaults, as in Kafka.
		resp.AcceptableRecoveryLag = -1
		return b.streamsAnswerAfterWrite(req, resp)
	}
	resp.HeartbeatIntervalMillis = int32(r.HeartbeatInterval.Milliseconds())
	resp.AcceptableRecoveryLagLegacy = int32(min(r.AcceptableRecoveryLag, 1<<31-1))
	resp.AcceptableRecoveryLag = r.AcceptableRecoveryLag
	resp.TaskOffsetIntervalMillis = int32(r.TaskOffsetInterval.Milliseconds())
	resp.EndpointInformationEpoch = r.EndpointInformationEpoch
	for _, s := range r.Status {
		resp.Status = append(resp.Status, kmsg.StreamsGroupHeartbeatResponseStatus{StatusCode: s.Code, StatusDetail: s.Detail})
	}
	if r.HasTasks {
		resp.ActiveTasks = toTaskIDs(r.Tasks.Active)
		resp.StandbyTasks = toTaskIDs(r.Tasks.Standby)
		resp.WarmupTasks = toTaskIDs(r.Tasks.Warmup)
	}
	if r.HasEndpoints {
		resp.PartitionsByUserEndpoint = []kmsg.StreamsGroupHeartbeatResponsePartitionsByUserEndpoint{}
		for _, e := range r.Endpoints {
			pe := kmsg.StreamsGroupHeartbeatResponsePartitionsByUserEndpoint{UserEndpoint: kmsg.Endpoint{Host: e.Endpoint.Host, Port: e.Endpoint.Port}}
			for _, name := range sortedKeys(e.Active) {
				pe.ActivePartitions = append(pe.ActivePartitions, kmsg.StreamsGroupHeartbeatResponsePartitionsByUserEndpointActivePartition{Topic: name, Partitions: e.Active[name]})
			}
			for _, name := range sortedKeys(e.Standby) {
				pe.StandbyPartitions = append(pe.StandbyPartitions, kmsg.StreamsGroupHeartbeatResponsePartitionsByUserEndpointStandbyPartition{Topic: name, Partitions: e.Standby[name]})
			}
			resp.PartitionsByUserEndpoint = append(resp.PartitionsByUserEndpoint, pe)
		}
	}
	// Answered once the records the heartbeat changed are durable
	// (group_writes.go), as Kafka answers after its append.
	return b.streamsAnswerAfterWrite(req, resp)
}

// streamsGroupIDTaken says why req's group id cannot be a streams group
// (another type of group has it), or "". An Empty classic group, maybe
// with only committed offsets as after a restart, gives way to a joining
// member with its offsets kept, as Kafka's maybeDeleteEmptyClassicGroup.
func (b *Broker) streamsGroupIDTaken(req *kmsg.StreamsGroupHeartbeatRequest) string {
	if req.Group == "" || b.streamsCo.Has(req.Group) {
		return ""
	}
	switch d, err := b.groups.Describe(req.Group); {
	case b.shares.Has(req.Group) || b.groups.Consumer().Exists(req.Group) || err == nil && d.State != group.Dead && d.State != group.Empty:
		return "Group " + req.Group + " is not a streams group."
	case err == nil && d.State == group.Empty && req.MemberEpoch == 0:
		if derr := b.groups.Delete(req.Group); derr == nil {
			if s, _ := b.groupOffsets(false); s != nil {
				s.DeleteGroupMetadata(req.Group)
			}
		}
	}
	return ""
}

// streamsAnswerAfterWrite answers resp once the group's latest append of
// records is durable; if it failed, the answer is that error alone.
func (b *Broker) streamsAnswerAfterWrite(req *kmsg.StreamsGroupHeartbeatRequest, resp *kmsg.StreamsGroupHeartbeatResponse) (result, error) {
	return b.answerAfterGroupWrite(req.Group, resp, func(code int16) {
		*resp = *req.ResponseKind().(*kmsg.StreamsGroupHeartbeatResponse)
		resp.ErrorCode = code
	})
}

func topicInfos(ts []kmsg.TopicInfo) []streams.TopicInfo {
	out := make([]streams.TopicInfo, len(ts))
	for i, t := range ts {
		ti := streams.TopicInfo{Name: t.Topic, Partitions: t.NumPartitions, ReplicationFactor: t.ReplicationFactor}
		for _, c := range t.Configs {
			ti.Configs = append(ti.Configs, streams.TopicConfig{Key: c.Key, Value: c.Value})
		}
		out[i] = ti
	}
	return out
}

func fromTaskIDs(ts []kmsg.TaskIDs) []streams.SubtopologyTasks {
	out := make([]streams.SubtopologyTasks, len(ts))
	for i, t := range ts {
		out[i] = streams.SubtopologyTasks{Subtopology: t.SubtopologyID, Partitions: t.Partitions}
	}
	return out
}

func toTaskIDs(s streams.TaskSet) []kmsg.TaskIDs {
	l := s.List()
	out := make([]kmsg.TaskIDs, len(l))
	for i, t := range l {
		out[i] = kmsg.TaskIDs{SubtopologyID: t.Subtopology, Partitions: t.Partitions}
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
