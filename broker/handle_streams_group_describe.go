package broker

// StreamsGroupDescribe (key 89) v0: the streams groups of KIP-1071, as
// Kafka 4's GroupMetadataManager.streamsGroupDescribe. A group id not held
// by a streams group is GROUP_ID_NOT_FOUND ("Group X is not a streams
// group." when another type holds it). Task offsets are not kept (the
// coordinator does not use them: no warm-up tasks), so members describe
// none.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/group/streams"
)

func (b *Broker) handleStreamsGroupDescribe(c *conn, req *kmsg.StreamsGroupDescribeRequest) (result, error) {
	resp := req.ResponseKind().(*kmsg.StreamsGroupDescribeResponse)
	seen := make(map[string]bool, len(req.Groups))
	for _, id := range req.Groups {
		if seen[id] {
			continue
		}
		seen[id] = true
		g := kmsg.NewStreamsGroupDescribeResponseGroup()
		g.Group = id
		switch {
		case !b.streamsGroups():
			g.ErrorCode = kerr.UnsupportedVersion.Code
		case id == "":
			g.ErrorCode = kerr.InvalidGroupID.Code
		case !b.allowed(c, opDescribe, resGroup, id):
			g.ErrorCode = kerr.GroupAuthorizationFailed.Code
		default:
			d, err := b.streamsCo.Describe(id)
			if err != nil {
				g.ErrorCode = errorCode(err)
				msg := errorMessage(err)
				if b.shares.Has(id) || b.groupIDTaken(id) {
					msg = kmsg.StringPtr("Group " + id + " is not a streams group.")
				}
				g.ErrorMessage = msg
				break
			}
			fillStreamsGroupDescription(&g, &d)
			if req.IncludeAuthorizedOperations {
				g.AuthorizedOperations = b.authorizedOps(c, resGroup, id)
			}
		}
		resp.Groups = append(resp.Groups, g)
	}
	return respond(resp)
}

func fillStreamsGroupDescription(g *kmsg.StreamsGroupDescribeResponseGroup, d *streams.Description) {
	g.State = string(d.State)
	g.Epoch = d.Epoch
	g.AssignmentEpoch = d.TargetEpoch
	if t := d.Topology; t != nil {
		top := kmsg.NewStreamsGroupDescribeResponseGroupTopology()
		top.Epoch = t.Epoch
		for _, s := range t.Subtopologies {
			st := kmsg.NewStreamsGroupDescribeResponseGroupTopologySubtopology()
			st.SubtopologyID = s.ID
			st.SourceTopics = s.SourceTopics
			st.RepartitionSinkTopics = s.RepartitionSinkTopics
			st.StateChangelogTopics = toKmsgTopicInfos(s.StateChangelogTopics)
			st.RepartitionSourceTopics = toKmsgTopicInfos(s.RepartitionSourceTopics)
			top.Subtopologies = append(top.Subtopologies, st)
		}
		g.Topology = &top
	}
	g.Members = []kmsg.StreamsGroupDescribeResponseGroupMember{}
	for _, m := range d.Members {
		rm := kmsg.NewStreamsGroupDescribeResponseGroupMember()
		rm.MemberID = m.MemberID
		rm.MemberEpoch = m.MemberEpoch
		if m.InstanceID != "" {
			rm.InstanceID = kmsg.StringPtr(m.InstanceID)
		}
		if m.RackID != "" {
			rm.RackID = kmsg.StringPtr(m.RackID)
		}
		rm.ClientID, rm.ClientHost = m.ClientID, m.ClientHost
		rm.TopologyEpoch = m.TopologyEpoch
		rm.ProcessID = m.ProcessID
		if e := m.UserEndpoint; e != nil {
			rm.UserEndpoint = &kmsg.StreamsGroupDescribeResponseGroupMemberUserEndpoint{Host: e.Host, Port: e.Port}
		}
		rm.ClientTags = []kmsg.StreamsGroupDescribeResponseGroupMemberClientTag{}
		for _, t := range m.ClientTags {
			rm.ClientTags = append(rm.ClientTags, kmsg.StreamsGroupDescribeResponseGroupMemberClientTag{Key: t.Key, Value: t.Value})
		}
		rm.TaskOffsets, rm.TaskEndOffsets = []kmsg.TaskOffset{}, []kmsg.TaskOffset{}
		rm.Assignment = kmsg.StreamsAssignment{ActiveTasks: toTaskIDs(m.Assignment.Active), StandbyTasks: toTaskIDs(m.Assignment.Standby), WarmupTasks: toTaskIDs(m.Assignment.Warmup)}
		rm.TargetAssignment = kmsg.StreamsAssignment{ActiveTasks: toTaskIDs(m.TargetAssignment.Active), StandbyTasks: toTaskIDs(m.TargetAssignment.Standby), WarmupTasks: toTaskIDs(m.TargetAssignment.Warmup)}
		g.Members = append(g.Members, rm)
	}
}

func toKmsgTopicInfos(ts []streams.TopicInfo) []kmsg.TopicInfo {
	out := make([]kmsg.TopicInfo, len(ts))
	for i, t := range ts {
		ki := kmsg.TopicInfo{Topic: t.Name, NumPartitions: t.Partitions, ReplicationFactor: t.ReplicationFactor}
		for _, c := range t.Configs {
			ki.Configs = append(ki.Configs, kmsg.TopicInfoConfig{Key: c.Key, Value: c.Value})
		}
		out[i] = ki
	}
	return out
}
