package broker

// Feature flags (KIP-584, KIP-778 in KRaft): what ApiVersions v3+ reports
// as supported and finalized, and what UpdateFeatures may change.
//
// kbroker lists the features of a Kafka 4.0 node whose behaviour it has:
//
//   - metadata.version: supported 7 (3.3-IV3, the oldest Kafka 4 runs) to
//     25 (4.0-IV3), finalized at 25, the level of the record formats and
//     APIs it serves. With no metadata log there is nothing to convert, so
//     it cannot move: a higher level is outside the supported range and a
//     lower one is refused as Kafka refuses a downgrade that may lose
//     metadata.
//   - group.version: 0–1, finalized 1 (Kafka 4.0's default). Level 1 turns
//     on the consumer group protocol of KIP-848, which also needs
//     group.coordinator.rebalance.protocols to list consumer; at 0
//     ConsumerGroupHeartbeat and ConsumerGroupDescribe leave ApiVersions
//     and answer UNSUPPORTED_VERSION, as in Kafka.
//   - share.version: 0–1, finalized 1. Level 1 serves share groups
//     (KIP-932: ShareGroupHeartbeat, ShareGroupDescribe, ShareFetch,
//     ShareAcknowledge and the share-group offsets admin keys), as Kafka
//     4.2 does; at 0 those keys leave ApiVersions and answer
//     UNSUPPORTED_VERSION.
//   - streams.version: 0–1, finalized 1, as Kafka 4.2+ finalizes it on a
//     new cluster. Level 1 serves streams groups (KIP-1071:
//     StreamsGroupHeartbeat, StreamsGroupDescribe); at 0 those keys leave
//     ApiVersions and answer UNSUPPORTED_VERSION.
//   - eligible.leader.replicas.version: 0–1, finalized 0. KIP-966's ELR
//     needs more than one replica to mean anything, so either level changes
//     nothing here but what is reported.
//
//   - transaction.version: 0–2, finalized 2, what Kafka 4 finalizes on a
//     new cluster. Level 2 is transactions v2 (KIP-890 part 2): clients
//     that see it let Produce v12+ and TxnOffsetCommit v5+ add partitions
//     to the transaction implicitly and send EndTxn v5+, which bumps the
//     epoch with every commit or abort. Below 2 those versions are
//     served with the semantics of transactions v1, which Kafka 4 clients
//     then expect (level 1 changes only Kafka's record format, which
//     kbroker always writes).
//     Transactions under way when the level changes complete with the
//     semantics of the requests that end them.
//
// A feature at level 0 is not finalized and not reported, as in Kafka.
// Levels set with UpdateFeatures are kept in the cluster state file
// (package cluster) and survive restarts.

import (
	"fmt"
	"slices"
)

// Feature names.
const (
	featureMetadataVersion = "metadata.version"
	featureGroupVersion    = "group.version"
	featureELRVersion      = "eligible.leader.replicas.version"
	featureShareVersion    = "share.version"
	featureTxnVersion      = "transaction.version"
	featureStreamsVersion  = "streams.version"
)

// txnVersion2 is the transaction.version level of transactions v2.
const txnVersion2 = 2

// metadataVersionLevel is the metadata.version kbroker runs at, 4.0-IV3,
// and interBrokerProtocolVersion its name (DescribeConfigs reports it).
const (
	metadataVersionLevel       = 25
	metadataVersionMin         = 7
	interBrokerProtocolVersion = "4.0-IV3"
)

// featureSpec is one supported feature.
type featureSpec struct {
	name     string
	min, max int16
	// initial is the finalized level before any UpdateFeatures.
	initial int16
}

// features lists the supported features in the order ApiVersions reports
// them.
var features = []featureSpec{
	{name: featureELRVersion, min: 0, max: 1, initial: 0},
	{name: featureGroupVersion, min: 0, max: 1, initial: 1},
	{name: featureMetadataVersion, min: metadataVersionMin, max: metadataVersionLevel, initial: metadataVersionLevel},
	{name: featureShareVersion, min: 0, max: 1, initial: 1},
	{name: featureStreamsVersion, min: 0, max: 1, initial: 1},
	{name: featureTxnVersion, min: 0, max: txnVersion2, initial: txnVersion2},
}

// featureSpecFor returns the spec of name, or false for a feature this
// broker does not support.
func featureSpecFor(name string) (featureSpec, bool) {
	i := slices.IndexFunc(features, func(f featureSpec) bool { return f.name == name })
	if i < 0 {
		return featureSpec{}, false
	}
	return features[i], true
}

// featureLevel is the finalized level of a feature (0 for one not
// supported).
func (b *Broker) featureLevel(name string) int16 {
	if lvl, ok := b.cluster.Load().Features[name]; ok {
		return lvl
	}
	if f, ok := featureSpecFor(name); ok {
		return f.initial
	}
	return 0
}

// versionRange prints a range as Kafka's VersionRange.toString does.
func versionRange(min, max int16) string {
	if min == max {
		return fmt.Sprint(min)
	}
	return fmt.Sprintf("%d-%d", min, max)
}

// txnV2 reports whether transactions v2 is in effect: transaction.version
// is finalized at 2 or more.
func (b *Broker) txnV2() bool { return b.featureLevel(featureTxnVersion) >= txnVersion2 }
