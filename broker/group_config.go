package broker

import (
	"fmt"
	"strings"

	"github.com/kbroker/kbroker/group/consumer"
)

// defaultRebalanceProtocols is group.coordinator.rebalance.protocols by
// default: Kafka 4.4's "classic,consumer,streams", so that
// ConsumerGroupHeartbeat (KIP-848) is advertised and clients that opt into
// the consumer protocol use it (streams groups follow streams.version).
const defaultRebalanceProtocols = "classic,consumer,streams"

// consumerProtocolEnabled parses group.coordinator.rebalance.protocols
// and reports whether it lists "consumer". Kafka accepts the group types
// (classic, consumer, streams, share); kbroker serves classic always,
// consumer when listed, and streams and share by their features
// (streams.version, share.version) whether listed or not, as Kafka 4.2+;
// it refuses other names and a list without classic, which it cannot
// turn off.
func (c *Config) consumerProtocolEnabled() (bool, error) {
	classic, consumerOn := false, false
	for _, p := range strings.Split(c.GroupCoordinatorRebalanceProtocols, ",") {
		switch strings.TrimSpace(p) {
		case "classic":
			classic = true
		case "consumer":
			consumerOn = true
		case "streams", "share":
			// Served by their features (streams.version, share.version),
			// as in Kafka 4.2+, where this setting no longer gates them.
		default:
			return false, fmt.Errorf("group.coordinator.rebalance.protocols %q: %q is not classic or consumer", c.GroupCoordinatorRebalanceProtocols, strings.TrimSpace(p))
		}
	}
	if !classic {
		return false, fmt.Errorf("group.coordinator.rebalance.protocols %q must include classic", c.GroupCoordinatorRebalanceProtocols)
	}
	return consumerOn, nil
}

// consumerGroupConfig is what the consumer-group coordinator takes of the
// settings. Empty groups without offsets are deleted at the offsets
// cleanup interval, as Kafka's cleanup does.
func (c *Config) consumerGroupConfig() consumer.Config {
	var assignors []string
	for _, a := range strings.Split(c.ConsumerGroupAssignors, ",") {
		if a = strings.TrimSpace(a); a != "" {
			assignors = append(assignors, a)
		}
	}
	return consumer.Config{
		SessionTimeout:          c.ConsumerGroupSessionTimeout,
		MinSessionTimeout:       c.ConsumerGroupMinSessionTimeout,
		MaxSessionTimeout:       c.ConsumerGroupMaxSessionTimeout,
		HeartbeatInterval:       c.ConsumerGroupHeartbeatInterval,
		MinHeartbeatInterval:    c.ConsumerGroupMinHeartbeatInterval,
		MaxHeartbeatInterval:    c.ConsumerGroupMaxHeartbeatInterval,
		MaxSize:                 c.ConsumerGroupMaxSize,
		Assignors:               assignors,
		EmptyGroupCheckInterval: c.OffsetsRetentionCheckInterval,
	}
}

// consumerProtocol reports whether the consumer group protocol (KIP-848)
// is served: ConsumerGroupHeartbeat and ConsumerGroupDescribe are
// advertised, and answered with UNSUPPORTED_VERSION otherwise, as Kafka
// does when it is off. Like Kafka 4 it needs both the setting
// (group.coordinator.rebalance.protocols lists consumer) and the
// finalized feature group.version at 1 or above (UpdateFeatures).
func (b *Broker) consumerProtocol() bool {
	on, _ := b.cfg.consumerProtocolEnabled()
	return on && b.featureLevel(featureGroupVersion) >= 1
}
