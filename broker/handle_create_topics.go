package broker

// CreateTopics v0–v7, as Kafka 4's ControllerApis.createTopics and
// ReplicationControlManager.createTopic on a cluster of one broker.
//
// Per topic, in Kafka's order: a name given more than once in the request
// is INVALID_REQUEST ("duplicate topic name", answered once); then the
// registry's checks (invalid name INVALID_TOPIC_EXCEPTION,
// TOPIC_ALREADY_EXISTS, also for an existing internal topic, another
// internal name INVALID_REQUEST, colliding name INVALID_TOPIC_EXCEPTION,
// INVALID_CONFIG);
// then the placement: a manual replica assignment needs replication factor
// and partitions -1 (else INVALID_REQUEST) and every partition, numbered
// 0..n-1, must be placed on exactly this broker (else
// INVALID_REPLICA_ASSIGNMENT, with Kafka's messages); without one the
// replication factor must be -1 or 1 (0 and below -1, or more than the one
// broker, are INVALID_REPLICATION_FACTOR) and partitions -1 or positive
// (INVALID_PARTITIONS). -1 partitions means num.partitions.
// ValidateOnly (v1+) checks everything and changes nothing. A request that
// would create more than 10,000 partitions in all is refused as a whole
// with POLICY_VIOLATION, as Kafka does.
//
// Deviations from Apache Kafka:
//   - TimeoutMillis is ignored: creation is synchronous on one node.
//   - A validate-only answer has no topic id (Kafka makes up one it never
//     uses).
//   - Clients cannot create internal topics (INVALID_REQUEST, as Kafka for
//     __cluster_metadata); the broker's coordinators create them. Once
//     they have, a create is TOPIC_ALREADY_EXISTS, as in Kafka.
//   - Responses keep request order (Kafka appends duplicates at the end).
//
// Versions: v1 validate_only and error messages; v2 throttle; v4 -1
// partitions and replication factor for the broker defaults (KIP-464); v5
// flexible, with partitions, replication factor and configs of the created
// topic (KIP-525; the configs set as the request spelled them, as Kafka); v6 quota errors (KIP-599, none here); v7 topic id
// (KIP-516).

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"github.com/kbroker/kbroker/topic"
)

// maxPartitionsPerRequest is Kafka's MAX_PARTITIONS_PER_BATCH: a
// CreateTopics or CreatePartitions request that would create more
// partitions than this in all is refused as a whole (POLICY_VIOLATION),
// before anything is done. Each partition costs a directory, an fsync and
// memory, so one request of a billion partitions (a count with a high bit
// set) would hold the topic registry for hours and the memory with it.
const maxPartitionsPerRequest = 10_000

// errTooManyPartitions is Kafka's answer to such a request.
const errTooManyPartitions = "Excessively large number of partitions per request."

func (b *Broker) handleCreateTopics(c *conn, req *kmsg.CreateTopicsRequest) (result, error) {
	resp := req.ResponseKind().(*kmsg.CreateTopicsResponse)
	if b.createdPartitions(req) > maxPartitionsPerRequest {
		// ReplicationControlManager.validateTotalNumberOfPartitions.
		for _, rt := range req.Topics {
			st := kmsg.NewCreateTopicsResponseTopic()
			st.Topic = rt.Topic
			st.ErrorCode, st.ErrorMessage = kerr.PolicyViolation.Code, kmsg.StringPtr(errTooManyPartitions)
			resp.Topics = append(resp.Topics, st)
		}
		return respond(resp)
	}
	clusterCreate := b.allowedCluster(c, opCreate)
	name := func(t *kmsg.CreateTopicsRequestTopic) string { return t.Topic }
	// The topics are created concurrently so that their registry writes
	// share fdatasync calls (the registry's journal is a group commit):
	// one request for 1,000 topics costs a handful of syncs, not 1,000.
	// Names that occur once are unique, so they key the answers.
	dups := duplicates(req.Topics, name)
	answers := make([]kmsg.CreateTopicsResponseTopic, len(req.Topics))
	parallel(len(req.Topics), createTopicsParallelism, func(i int) {
		if _, dup := dups[req.Topics[i].Topic]; !dup {
			answers[i] = b.createTopicAuthorized(c, &req.Topics[i], req.ValidateOnly, clusterCreate)
		}
	})
	byName := make(map[string]*kmsg.CreateTopicsResponseTopic, len(answers))
	for i := range answers {
		if _, dup := dups[req.Topics[i].Topic]; !dup {
			byName[req.Topics[i].Topic] = &answers[i]
		}
	}
	resp.Topics = answerTopics(req.Topics, name,
		func(name string) kmsg.CreateTopicsResponseTopic {
			st := kmsg.NewCreateTopicsResponseTopic()
			st.Topic = name
			st.ErrorCode, st.ErrorMessage = kerr.InvalidRequest.Code, kmsg.StringPtr("Duplicate topic name.")
			return st
		},
		func(rt *kmsg.CreateTopicsRequestTopic) kmsg.CreateTopicsResponseTopic { return *byName[rt.Topic] })
	return respond(resp)
}

// createTopicsParallelism bounds the topics of one CreateTopics request
// being created at once.
const createTopicsParallelism = 256

// parallel calls fn(0) to fn(n-1) on up to width goroutines and returns
// when all have returned.
func parallel(n, width int, fn func(int)) {
	if n <= 1 || width <= 1 {
		for i := range n {
			fn(i)
		}
		return
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(n, width) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := int(next.Add(1) - 1); i < n; i = int(next.Add(1) - 1) {
				fn(i)
			}
		}()
	}
	wg.Wait()
}

// createTopicAuthorized is createTopic after the CREATE check: on the
// cluster (clusterCreate) or on the topic, else TOPIC_AUTHORIZATION_FAILED.
// Safe to run concurrently: the checks only read the connection.
func (b *Broker) createTopicAuthorized(c *conn, rt *kmsg.CreateTopicsRequestTopic, validateOnly, clusterCreate bool) kmsg.CreateTopicsResponseTopic {
	if !clusterCreate && !b.allowed(c, opCreate, resTopic, rt.Topic) {
		st := kmsg.NewCreateTopicsResponseTopic()
		st.Topic = rt.Topic
		st.ErrorCode = kerr.TopicAuthorizationFailed.Code
		return st
	}
	st := b.createTopic(c, rt, validateOnly)
	if st.ErrorCode == 0 && !b.allowed(c, opDescribeConfigs, resTopic, rt.Topic) {
		// Created, but the configs in the answer need DESCRIBE_CONFIGS
		// (Kafka's CreateTopics, v5+).
		st.ConfigErrorCode, st.Configs = kerr.TopicAuthorizationFailed.Code, nil
	}
	return st
}

// createdPartitions is an upper bound of the partitions req would create,
// counted as Kafka counts them: a manual assignment's entries, else the
// partition count, -1 meaning num.partitions.
func (b *Broker) createdPartitions(req *kmsg.CreateTopicsRequest) int64 {
	var n int64
	for _, rt := range req.Topics {
		switch {
		case len(rt.ReplicaAssignment) > 0:
			n += int64(len(rt.ReplicaAssignment))
		case rt.NumPartitions == -1:
			n += int64(b.cfg.DefaultPartitions)
		case rt.NumPartitions > 0:
			n += int64(rt.NumPartitions)
		}
	}
	return n
}

// answerTopics answers each topic of a request in order; a name that
// occurs more than once is not acted on and gets one duplicate answer
// instead, as Kafka does for CreateTopics and CreatePartitions.
func answerTopics[T, R any](topics []T, name func(*T) string, duplicate func(string) R, answer func(*T) R) []R {
	dups := duplicates(topics, name)
	out := make([]R, 0, len(topics))
	for i := range topics {
		t := &topics[i]
		n := name(t)
		if answered, dup := dups[n]; dup {
			if !answered {
				dups[n] = true
				out = append(out, duplicate(n))
			}
			continue
		}
		out = append(out, answer(t))
	}
	return out
}

// createTopic creates (or with validateOnly checks) one topic.
func (b *Broker) createTopic(c *conn, rt *kmsg.CreateTopicsRequestTopic, validateOnly bool) kmsg.CreateTopicsResponseTopic {
	st := kmsg.NewCreateTopicsResponseTopic()
	st.Topic = rt.Topic
	configs := make(map[string]*string, len(rt.Configs))
	for _, cf := range rt.Configs {
		configs[cf.Name] = cf.Value
	}
	// The registry's checks come first in Kafka, so ask it before looking
	// at the placement; the real call below checks again.
	_, err := b.topics.Create(rt.Topic, 1, configs, true)
	var partitions int32
	if err == nil {
		partitions, err = b.placement(rt)
	}
	var t topic.Topic
	if err == nil {
		t, err = b.topics.Create(rt.Topic, partitions, configs, validateOnly)
	}
	if err != nil {
		st.ErrorCode, st.ErrorMessage = adminError(c, "create topic "+rt.Topic, err)
		return st
	}
	if !validateOnly {
		c.lg.Info("created topic", zap.String("topic", t.Name), zap.Int32("partitions", t.Partitions), zap.Stringer("id", t.ID))
	}
	st.TopicID = t.ID
	st.NumPartitions = t.Partitions
	st.ReplicationFactor = 1
	for _, e := range t.Configs.Describe(b.topics.Defaults()) {
		cf := kmsg.NewCreateTopicsResponseTopicConfig()
		cf.Name = e.Name
		if !e.Sensitive {
			cf.Value = kmsg.StringPtr(e.Value)
		}
		if raw, ok := configs[e.Name]; ok && raw != nil && e.Source == kmsg.ConfigSourceDynamicTopicConfig {
			// The value as the request spelled it (" 1000 ",
			// "compact, delete"): Kafka answers its creation configs
			// unparsed (ReplicationControlManager's
			// computeEffectiveTopicConfigs); DescribeConfigs answers
			// the canonical form, as here.
			cf.Value = raw
		}
		cf.ReadOnly = e.ReadOnly
		cf.Source = int8(e.Source)
		cf.IsSensitive = e.Sensitive
		st.Configs = append(st.Configs, cf)
	}
	return st
}

// placement checks the replication factor or manual assignment of a new
// topic against the one broker, as ReplicationControlManager.createTopic,
// and returns the partition count to create (-1: the default).
func (b *Broker) placement(rt *kmsg.CreateTopicsRequestTopic) (int32, error) {
	if len(rt.ReplicaAssignment) > 0 {
		return b.manualPlacement(rt)
	}
	switch rf := rt.ReplicationFactor; {
	case rf < -1 || rf == 0:
		return 0, &topic.Error{Code: kerr.InvalidReplicationFactor, Detail: "Replication factor must be larger than 0, or -1 to use the default value."}
	case rt.NumPartitions < -1 || rt.NumPartitions == 0:
		return 0, &topic.Error{Code: kerr.InvalidPartitions, Detail: "Number of partitions was set to an invalid non-positive value."}
	case rf > 1:
		return 0, &topic.Error{Code: kerr.InvalidReplicationFactor, Detail: fmt.Sprintf(
			"Unable to replicate the partition %d time(s): The target replication factor of %d cannot be reached because only 1 broker(s) are registered.", rf, rf)}
	}
	return rt.NumPartitions, nil
}

// manualPlacement checks a manual replica assignment: partitions numbered
// 0..n-1, each placed on this broker only.
func (b *Broker) manualPlacement(rt *kmsg.CreateTopicsRequestTopic) (int32, error) {
	if rt.ReplicationFactor != -1 {
		return 0, &topic.Error{Code: kerr.InvalidRequest, Detail: "A manual partition assignment was specified, but replication factor was not set to -1."}
	}
	if rt.NumPartitions != -1 {
		return 0, &topic.Error{Code: kerr.InvalidRequest, Detail: "A manual partition assignment was specified, but numPartitions was not set to -1."}
	}
	seen := make(map[int32]bool, len(rt.ReplicaAssignment))
	rf := -1
	for _, a := range rt.ReplicaAssignment {
		if seen[a.Partition] {
			return 0, &topic.Error{Code: kerr.InvalidReplicaAssignment, Detail: fmt.Sprintf("Found multiple manual partition assignments for partition %d", a.Partition)}
		}
		if err := b.checkReplicas(a.Replicas, rf); err != nil {
			return 0, err
		}
		rf = len(a.Replicas)
		seen[a.Partition] = true
	}
	for i := range int32(len(seen)) {
		if !seen[i] {
			return 0, &topic.Error{Code: kerr.InvalidReplicaAssignment, Detail: "partitions should be a consecutive 0-based integer sequence"}
		}
	}
	return int32(len(seen)), nil
}

// checkReplicas validates the replica list of one manually placed
// partition as Kafka's validateManualPartitionAssignment: not empty, only
// registered brokers (this one), none twice, and as many as the other
// partitions have (rf, unless negative).
func (b *Broker) checkReplicas(replicas []int32, rf int) error {
	if len(replicas) == 0 {
		return &topic.Error{Code: kerr.InvalidReplicaAssignment, Detail: "The manual partition assignment includes an empty replica list."}
	}
	sorted := slices.Sorted(slices.Values(replicas))
	for i, id := range sorted {
		if id != b.cfg.NodeID {
			return &topic.Error{Code: kerr.InvalidReplicaAssignment, Detail: fmt.Sprintf(
				"The manual partition assignment includes broker %d, but no such broker is registered.", id)}
		}
		if i > 0 && sorted[i-1] == id {
			return &topic.Error{Code: kerr.InvalidReplicaAssignment, Detail: fmt.Sprintf(
				"The manual partition assignment includes the broker %d more than once.", id)}
		}
	}
	if rf >= 0 && len(replicas) != rf {
		return &topic.Error{Code: kerr.InvalidReplicaAssignment, Detail: fmt.Sprintf(
			"The manual partition assignment includes a partition with %d replica(s), but this is not consistent with previous partitions, which have %d replica(s).",
			len(replicas), rf)}
	}
	return nil
}

// duplicates maps every key that occurs more than once in items to false,
// for handlers that answer each duplicated key once (setting it to true
// when they have).
func duplicates[T any](items []T, key func(*T) string) map[string]bool {
	seen := make(map[string]bool, len(items))
	var dups map[string]bool
	for i := range items {
		k := key(&items[i])
		if seen[k] {
			if dups == nil {
				dups = make(map[string]bool)
			}
			dups[k] = false
		}
		seen[k] = true
	}
	return dups
}

// adminError turns a failed topic or config operation into the error code
// and message of an admin response. A *topic.Error carries both (the
// message is its Detail, as Kafka's ApiError message), a bare kerr code
// only the code; anything else is a failure of the broker itself
// (persisting the registry), which is logged.
func adminError(c *conn, what string, err error) (int16, *string) {
	var te *topic.Error
	if errors.As(err, &te) {
		return te.Code.Code, kmsg.StringPtr(te.Detail)
	}
	var ke *kerr.Error
	if errors.As(err, &ke) && ke != kerr.UnknownServerError && ke != kerr.KafkaStorageError {
		return ke.Code, nil
	}
	code := errorCode(err)
	if errors.Is(err, syscall.ENOSPC) {
		// A full disk is the machine's state, not a broker fault: a
		// warning, as for the produce requests it refuses.
		c.lg.Warn(what+" failed: disk full", zap.Error(err))
	} else {
		c.lg.Error(what+" failed", zap.Error(err))
	}
	return code, errorMessage(err)
}
