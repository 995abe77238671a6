package broker

// ListConfigResources v0–v1 (v0 KIP-1000's ListClientMetricsResources; v1
// KIP-1142 resource_types and each resource's type), as Kafka 4.4's
// KafkaApis.handleListConfigResources.
//
// Without DESCRIBE_CONFIGS on the cluster the answer is
// CLUSTER_AUTHORIZATION_FAILED. v0 lists the client-metrics resources. v1
// lists the resources of each type asked for, an empty list meaning all
// five: GROUP (only the groups that have configs set), CLIENT_METRICS,
// BROKER_LOGGER and BROKER (each live broker's id; the cluster-wide
// default "" is not listed, even when set), TOPIC (every topic, internal
// ones included). A type asked for twice is listed once; any other type
// fails the whole request with UNSUPPORTED_VERSION and no resources. The
// types come in Kafka's order (group, client metrics, broker logger,
// broker, topic), whatever the order asked for.
//
// Deviations from Apache Kafka:
//   - kbroker keeps no client-metrics resources (IncrementalAlterConfigs
//     refuses CLIENT_METRICS), so v0 and the CLIENT_METRICS type list none.
//   - Within a type, names are sorted; Kafka lists them in the order of its
//     metadata image's hash maps.

import (
	"maps"
	"slices"
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// listConfigTypes are the types v1 serves, in the order Kafka lists them.
var listConfigTypes = []kmsg.ConfigResourceType{
	kmsg.ConfigResourceTypeGroupConfig,
	kmsg.ConfigResourceTypeClientMetrics,
	kmsg.ConfigResourceTypeBrokerLogger,
	kmsg.ConfigResourceTypeBroker,
	kmsg.ConfigResourceTypeTopic,
}

func (b *Broker) handleListConfigResources(c *conn, req *kmsg.ListConfigResourcesRequest) (result, error) {
	resp := req.ResponseKind().(*kmsg.ListConfigResourcesResponse)
	if !b.allowedCluster(c, opDescribeConfigs) {
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		return respond(resp)
	}
	// v0 has no resource_types: it is ListClientMetricsResources.
	supported := listConfigTypes
	if req.Version == 0 {
		supported = []kmsg.ConfigResourceType{kmsg.ConfigResourceTypeClientMetrics}
	}
	asked := supported
	if len(req.ResourceTypes) > 0 {
		asked = nil
		for _, t := range req.ResourceTypes {
			typ := kmsg.ConfigResourceType(t)
			if !slices.Contains(supported, typ) {
				resp.ErrorCode = kerr.UnsupportedVersion.Code
				return respond(resp)
			}
			asked = append(asked, typ)
		}
	}
	add := func(typ kmsg.ConfigResourceType, name string) {
		r := kmsg.NewListConfigResourcesResponseConfigResource()
		r.Name, r.Type = name, int8(typ)
		resp.ConfigResources = append(resp.ConfigResources, r)
	}
	for _, typ := range supported {
		if !slices.Contains(asked, typ) {
			continue
		}
		switch typ {
		case kmsg.ConfigResourceTypeGroupConfig:
			groups := b.cluster.Load().GroupConfigs
			for _, g := range slices.Sorted(maps.Keys(groups)) {
				add(typ, g)
			}
		case kmsg.ConfigResourceTypeBrokerLogger, kmsg.ConfigResourceTypeBroker:
			for _, id := range b.liveBrokerIDs() {
				add(typ, strconv.Itoa(int(id)))
			}
		case kmsg.ConfigResourceTypeTopic:
			for _, t := range b.topics.List() {
				add(typ, t.Name)
			}
		}
	}
	return respond(resp)
}

// liveBrokerIDs are the ids Kafka's metadata cache knows as brokers: this
// broker, or the live nodes of a simulated cluster.
func (b *Broker) liveBrokerIDs() []int32 {
	if b.nodes == nil {
		return []int32{b.cfg.NodeID}
	}
	return b.nodes.liveIDs()
}
