package broker

// Metadata v0–v13: the one broker, the cluster id and the topics asked for.
//
// Topics: a null list (v1+), or an empty one in v0, means every topic;
// otherwise the topics asked for, by name or, in v12+, by topic id (an
// unknown id is UNKNOWN_TOPIC_ID with a null name). Each topic is answered
// once, in request order, however often it is asked for. Every partition is
// led by this broker (leader epoch 0) with itself as the only replica and
// in-sync replica; a partition the store does not serve yet (a topic
// being created concurrently) is LEADER_NOT_AVAILABLE, which clients retry.
//
// Unknown topics are auto-created (autoCreateTopic) when
// auto.create.topics.enable is on and the request allows it
// (AllowAutoTopicCreation, v4+; always in v0–v3, as in Kafka), and returned
// ready; else UNKNOWN_TOPIC_OR_PARTITION, or INVALID_TOPIC_EXCEPTION for a
// name Kafka would refuse.
//
// Deviations from Apache Kafka:
//   - A just auto-created topic is returned with its partitions and no
//     error: kbroker creates it synchronously, where Kafka answers
//     LEADER_NOT_AVAILABLE until the controller has elected leaders.
//   - Internal topics are never auto-created by Metadata; the broker's
//     coordinators create them.
//   - v10–v11 requests naming a topic by id get INVALID_REQUEST for that
//     topic, where Kafka fails the whole request; a v12+ entry with neither
//     name nor id is ignored (as kfake), where Kafka fails with an internal
//     error.
//   - The top-level error code (v13, KIP-1102) is always 0.
//
// Versions: v1 controller id, is_internal, rack (null here); v2 cluster id;
// v3 throttle; v4 allow_auto_topic_creation; v5 offline replicas; v7
// leader epoch (KIP-320); v8 authorized operations (KIP-430: without an
// authorizer Kafka reports every operation the resource supports, and so
// does kbroker; -2147483648 when not asked for); v9 flexible; v10 topic ids
// (KIP-516); v11 drops cluster authorized operations; v12 topics by id;
// v13 top-level error code.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"github.com/kbroker/kbroker/partition"
	"github.com/kbroker/kbroker/topic"
)

// ACL operation codes (Kafka's AclOperation) and the bit fields Kafka
// reports for a resource when there is no authorizer: every operation the
// resource type supports (AclEntry.supportedOperations), bit n for code n.
const (
	aclRead            = 3
	aclWrite           = 4
	aclCreate          = 5
	aclDelete          = 6
	aclAlter           = 7
	aclDescribe        = 8
	aclClusterAction   = 9
	aclDescribeConfigs = 10
	aclAlterConfigs    = 11
	aclIdempotentWrite = 12

	topicAuthorizedOps = 1<<aclRead | 1<<aclWrite | 1<<aclCreate | 1<<aclDescribe |
		1<<aclDelete | 1<<aclAlter | 1<<aclDescribeConfigs | 1<<aclAlterConfigs
	clusterAuthorizedOps = 1<<aclCreate | 1<<aclClusterAction | 1<<aclDescribeConfigs |
		1<<aclAlterConfigs | 1<<aclIdempotentWrite | 1<<aclAlter | 1<<aclDescribe
)

func (b *Broker) handleMetadata(c *conn, req *kmsg.MetadataRequest) (result, error) {
	resp := req.ResponseKind().(*kmsg.MetadataResponse)
	resp.Brokers = b.metadataBrokers(c)
	resp.ClusterID = kmsg.StringPtr(b.cfg.ClusterID)
	resp.ControllerID = b.controllerID()
	if req.Version >= 8 && req.Version <= 10 && req.IncludeClusterAuthorizedOperations {
		resp.AuthorizedOperations = b.clusterOps(c)
	}
	if req.Topics == nil || (req.Version == 0 && len(req.Topics) == 0) {
		for _, t := range b.topics.List() {
			// Kafka leaves out the topics the client may not describe.
			if b.allowed(c, opDescribe, resTopic, t.Name) {
				resp.Topics = append(resp.Topics, b.metadataTopic(&t))
			}
		}
	} else {
		resp.Topics = b.metadataRequested(c, req)
	}
	c.injectMetadata(resp)
	if req.Version >= 8 && req.IncludeTopicAuthorizedOperations {
		for i := range resp.Topics {
			if resp.Topics[i].Topic != nil && resp.Topics[i].ErrorCode != kerr.TopicAuthorizationFailed.Code {
				resp.Topics[i].AuthorizedOperations = b.authorizedOps(c, resTopic, *resp.Topics[i].Topic)
			}
		}
	}
	return respond(resp)
}

// metadataBrokers describes this broker, or the live nodes of a
// simulated cluster, as clients of c's listener should reach them.
func (b *Broker) metadataBrokers(c *conn) []kmsg.MetadataResponseBroker {
	if b.nodes == nil {
		mb := kmsg.NewMetadataResponseBroker()
		mb.NodeID = b.cfg.NodeID
		mb.Host, mb.Port = c.advertised()
		return []kmsg.MetadataResponseBroker{mb}
	}
	ids := b.nodes.liveIDs()
	out := make([]kmsg.MetadataResponseBroker, len(ids))
	for i, id := range ids {
		out[i].Default()
		out[i].NodeID = id
		out[i].Host, out[i].Port = b.endpoint(id, c.l.index)
	}
	return out
}

// metadataRequested answers the topics a request names, once each, in
// request order.
func (b *Broker) metadataRequested(c *conn, req *kmsg.MetadataRequest) []kmsg.MetadataResponseTopic {
	allowAuto := b.cfg.AutoCreateTopics && (req.Version < 4 || req.AllowAutoTopicCreation)
	out := make([]kmsg.MetadataResponseTopic, 0, len(req.Topics))
	seenNames := make(map[string]bool, len(req.Topics))
	seenIDs := make(map[topic.ID]bool)
	for _, rt := range req.Topics {
		var mt kmsg.MetadataResponseTopic
		switch {
		case rt.TopicID != [16]byte{}:
			id := topic.ID(rt.TopicID)
			if seenIDs[id] {
				continue
			}
			seenIDs[id] = true
			mt = b.metadataByID(c, req.Version, rt)
		case rt.Topic == nil:
			continue
		default:
			if seenNames[*rt.Topic] {
				continue
			}
			mt = b.metadataByName(c, *rt.Topic, allowAuto)
		}
		if mt.Topic != nil {
			if seenNames[*mt.Topic] {
				continue // asked for by id and by name
			}
			seenNames[*mt.Topic] = true
		}
		out = append(out, mt)
	}
	return out
}

// metadataByID answers a topic asked for by id (v12+).
func (b *Broker) metadataByID(c *conn, version int16, rt kmsg.MetadataRequestTopic) kmsg.MetadataResponseTopic {
	if version < 12 {
		mt := kmsg.NewMetadataResponseTopic()
		mt.Topic = rt.Topic
		mt.TopicID = rt.TopicID
		mt.ErrorCode = kerr.InvalidRequest.Code
		return mt
	}
	t, ok := b.topics.ByID(topic.ID(rt.TopicID))
	if !ok {
		mt := kmsg.NewMetadataResponseTopic()
		mt.TopicID = rt.TopicID
		mt.ErrorCode = kerr.UnknownTopicID.Code
		return mt
	}
	if !b.allowed(c, opDescribe, resTopic, t.Name) {
		mt := kmsg.NewMetadataResponseTopic()
		mt.TopicID = rt.TopicID
		mt.ErrorCode = kerr.TopicAuthorizationFailed.Code
		return mt
	}
	return b.metadataTopic(&t)
}

// metadataByName answers a topic asked for by name, auto-creating it if
// allowed.
func (b *Broker) metadataByName(c *conn, name string, allowAuto bool) kmsg.MetadataResponseTopic {
	if !b.allowed(c, opDescribe, resTopic, name) {
		mt := kmsg.NewMetadataResponseTopic()
		mt.Topic = kmsg.StringPtr(name)
		mt.ErrorCode = kerr.TopicAuthorizationFailed.Code
		return mt
	}
	t, ok := b.topics.Get(name)
	var err error
	if !ok {
		// Auto-creation needs CREATE on the cluster or on the topic.
		if allowAuto && !b.allowedCluster(c, opCreate) && !b.allowed(c, opCreate, resTopic, name) {
			err = kerr.TopicAuthorizationFailed
		} else if allowAuto {
			t, err = b.autoCreateTopic(name)
		} else if err = topic.ValidateName(name); err == nil {
			err = kerr.UnknownTopicOrPartition
		}
	}
	if err != nil {
		mt := kmsg.NewMetadataResponseTopic()
		mt.Topic = kmsg.StringPtr(name)
		mt.IsInternal = topic.IsInternal(name)
		mt.ErrorCode = errorCode(err)
		if mt.ErrorCode == kerr.UnknownServerError.Code || mt.ErrorCode == kerr.KafkaStorageError.Code {
			c.lg.Error("auto-create topic failed", zap.String("topic", name), zap.Error(err))
		}
		return mt
	}
	return b.metadataTopic(&t)
}

// metadataTopic describes an existing topic: every partition led by this
// broker, the only replica.
func (b *Broker) metadataTopic(t *topic.Topic) kmsg.MetadataResponseTopic {
	mt := kmsg.NewMetadataResponseTopic()
	mt.Topic = kmsg.StringPtr(t.Name)
	mt.TopicID = t.ID
	mt.IsInternal = t.Internal
	served := int32(len(b.store.Partitions(partition.TopicID(t.ID))))
	replicas := []int32{b.cfg.NodeID} // shared: encoding only reads it
	mt.Partitions = make([]kmsg.MetadataResponseTopicPartition, t.Partitions)
	for i := range mt.Partitions {
		p := &mt.Partitions[i]
		p.Default()
		p.Partition = int32(i)
		p.Replicas = replicas
		p.ISR = replicas
		p.OfflineReplicas = []int32{}
		if p.Partition >= served {
			p.ErrorCode = kerr.LeaderNotAvailable.Code
			p.Leader = -1
			p.ISR = []int32{}
			continue
		}
		p.Leader = b.cfg.NodeID
		p.LeaderEpoch = 0
		if b.nodes != nil {
			p.Leader, p.LeaderEpoch = b.nodes.leader(t.ID, p.Partition)
			p.Replicas, p.ISR, p.OfflineReplicas = b.nodes.replicas(p.Leader)
		}
	}
	return mt
}
