package broker

// IncrementalAlterConfigs v0–v1 (KIP-339), as Kafka 4's
// ConfigAdminManager.preprocess and ConfigurationControlManager.
//
// A resource (type and name) given more than once is INVALID_REQUEST for
// every occurrence. TOPIC resources apply SET (0), DELETE (1), APPEND (2)
// and SUBTRACT (3) to the topic's overrides and validate the result
// (topic.Registry.IncrementalAlterConfigs: a config named twice, an
// unknown operation or a null value other than for DELETE is
// INVALID_REQUEST; APPEND/SUBTRACT on a non-list, unknown names and bad
// values INVALID_CONFIG; a missing topic UNKNOWN_TOPIC_OR_PARTITION).
// BROKER resources (the empty name or this broker's id) accept only DELETE,
// which changes nothing since kbroker has no dynamic broker configs; any
// other operation is INVALID_REQUEST "Cannot update these configs
// dynamically", as Kafka answers for a config that is not dynamic. Other
// resource types are INVALID_REQUEST. ValidateOnly checks and changes
// nothing.
//
// Deviations from Apache Kafka:
//   - No broker config is dynamic (see AlterConfigs).
//   - BROKER_LOGGER, CLIENT_METRICS and GROUP resources are not supported.
//
// Versions: v1 flexible.

import (
	"fmt"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"github.com/kbroker/kbroker/topic"
)

func (b *Broker) handleIncrementalAlterConfigs(c *conn, req *kmsg.IncrementalAlterConfigsRequest) (result, error) {
	resp := req.ResponseKind().(*kmsg.IncrementalAlterConfigsResponse)
	dups := duplicates(req.Resources, func(r *kmsg.IncrementalAlterConfigsRequestResource) string {
		return resourceKey(r.ResourceType, r.ResourceName)
	})
	for i := range req.Resources {
		rr := &req.Resources[i]
		res := kmsg.NewIncrementalAlterConfigsResponseResource()
		res.ResourceType, res.ResourceName = rr.ResourceType, rr.ResourceName
		var err error
		if _, dup := dups[resourceKey(rr.ResourceType, rr.ResourceName)]; dup {
			err = errDuplicateResource
		} else {
			err = b.incrementalAlterConfigs(c, rr, req.ValidateOnly)
		}
		if err != nil {
			res.ErrorCode, res.ErrorMessage = adminError(c, "alter configs of "+rr.ResourceName, err)
		}
		resp.Resources = append(resp.Resources, res)
	}
	return respond(resp)
}

// incrementalAlterConfigs applies one resource.
func (b *Broker) incrementalAlterConfigs(c *conn, rr *kmsg.IncrementalAlterConfigsRequestResource, validateOnly bool) error {
	switch rr.ResourceType {
	case kmsg.ConfigResourceTypeTopic:
		ops := make([]topic.AlterOp, len(rr.Configs))
		for i, cf := range rr.Configs {
			ops[i] = topic.AlterOp{Name: cf.Name, Op: topic.OpType(cf.Op), Value: cf.Value}
		}
		t, err := b.topics.IncrementalAlterConfigs(rr.ResourceName, ops, validateOnly)
		if err == nil && !validateOnly {
			c.lg.Info("altered topic configs", zap.String("topic", t.Name), zap.Any("configs", t.Configs.Overrides()))
		}
		return err
	case kmsg.ConfigResourceTypeBroker:
		changed, err := brokerConfigChanges(rr.Configs)
		if err != nil {
			return err
		}
		return b.alterBrokerConfigs(rr.ResourceName, changed)
	}
	return unknownResourceType(rr.ResourceType)
}

// brokerConfigChanges checks the operations of a BROKER resource as
// ConfigAdminManager.preprocess does and returns the names of those that
// would change something: all but DELETE, since nothing is set dynamically.
func brokerConfigChanges(configs []kmsg.IncrementalAlterConfigsRequestResourceConfig) ([]string, error) {
	seen := make(map[string]bool, len(configs))
	var nulls, changed []string
	for _, cf := range configs {
		if seen[cf.Name] {
			return nil, errDuplicateConfig
		}
		seen[cf.Name] = true
		if cf.Op < kmsg.IncrementalAlterConfigOpSet || cf.Op > kmsg.IncrementalAlterConfigOpSubtract {
			return nil, &topic.Error{Code: kerr.InvalidRequest, Detail: fmt.Sprintf("Unknown operations type %d", int8(cf.Op))}
		}
		if cf.Op == kmsg.IncrementalAlterConfigOpDelete {
			continue
		}
		if cf.Value == nil {
			nulls = append(nulls, cf.Name)
		}
		changed = append(changed, cf.Name)
	}
	if nulls != nil {
		return nil, &topic.Error{Code: kerr.InvalidRequest, Detail: "Null value not supported for : " + strings.Join(nulls, ", ")}
	}
	return changed, nil
}
