package broker

import (
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"go.uber.org/zap"

	"github.com/kbroker/kbroker/topic"
)

// autoCreateTopic returns the topic called name, creating it with
// num.partitions partitions and no config overrides when it does not exist
// and auto.create.topics.enable is on (Kafka's AutoTopicCreationManager).
// Metadata calls it for the topics a client asks for; whether the request
// allows auto-creation is the caller's to check.
//
// Unlike Kafka, which creates the topic through the controller and answers
// LEADER_NOT_AVAILABLE until its partitions have leaders, the registry
// creates the topic and the store its partitions before this returns, so
// the caller can answer with a ready topic at once (as kfake does; clients
// accept both).
//
// Errors are *topic.Error: INVALID_TOPIC_EXCEPTION for an invalid or
// colliding name, UNKNOWN_TOPIC_OR_PARTITION when auto-creation is off or
// the name is an internal topic (those are created by the broker's own
// coordinators, with their own partition counts and configs, never by a
// client's metadata request), or whatever the registry failed with.
func (b *Broker) autoCreateTopic(name string) (topic.Topic, error) {
	if t, ok := b.topics.Get(name); ok {
		return t, nil
	}
	if err := topic.ValidateName(name); err != nil {
		return topic.Topic{}, err
	}
	if !b.cfg.AutoCreateTopics || topic.IsInternal(name) || name == topic.ClusterMetadataTopic {
		return topic.Topic{}, &topic.Error{Code: kerr.UnknownTopicOrPartition, Detail: fmt.Sprintf("topic '%s' does not exist", name)}
	}
	t, err := b.topics.Create(name, b.cfg.DefaultPartitions, nil, false)
	if errors.Is(err, kerr.TopicAlreadyExists) {
		// Another request created it since Get: that one is as good.
		if t, ok := b.topics.Get(name); ok {
			return t, nil
		}
	}
	if err != nil {
		return topic.Topic{}, err
	}
	b.lg.Info("auto-created topic", zap.String("topic", name), zap.Int32("partitions", t.Partitions), zap.Stringer("id", t.ID))
	return t, nil
}
