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
// BROKER resources (the empty name for the cluster-wide default or this
// broker's id) SET and DELETE dynamic broker configs (dynamic_config.go);
// setting a config that is not dynamic is INVALID_REQUEST "Cannot update
// these configs dynamically", as Kafka answers, and APPEND/SUBTRACT on a
// dynamic one (none is a list) INVALID_CONFIG. Other resource types are
// INVALID_REQUEST, except GROUP: a consumer group's configs
// (group_configs.go). ValidateOnly checks and changes nothing.
//
// Deviations from Apache Kafka:
//   - Only the dynamic broker configs kbroker applies (see AlterConfigs).
//   - BROKER_LOGGER and CLIENT_METRICS resources are not supported.
//   - An unknown operation on a TOPIC resource is INVALID_REQUEST, as on
//     the others; Kafka 4.4's controller fails on it with
//     UNKNOWN_SERVER_ERROR (TestDiffKafka asserts the difference).
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
		} else if aerr := b.configsAllowed(c, opAlterConfigs, rr.ResourceType, rr.ResourceName); aerr != nil {
			err = aerr
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
		ops, err := brokerConfigOps(rr.Configs)
		if err != nil {
			return err
		}
		return b.alterBrokerConfigs(rr.ResourceName, ops, false, validateOnly)
	case kmsg.ConfigResourceTypeGroupConfig:
		return b.alterGroupConfigs(rr.ResourceName, rr.Configs, validateOnly)
	}
	return unknownResourceType(rr.ResourceType)
}

// brokerConfigOps checks the operations of a BROKER resource as
// ConfigAdminManager.preprocess and prepareIncrementalConfigs do and turns
// them into sets, deletes and list edits: a config named twice, an unknown
// operation or a null value other than for DELETE is INVALID_REQUEST;
// APPEND and SUBTRACT are for LIST configs (log.cleanup.policy), on others
// INVALID_CONFIG.
func brokerConfigOps(configs []kmsg.IncrementalAlterConfigsRequestResourceConfig) ([]brokerConfigOp, error) {
	seen := make(map[string]bool, len(configs))
	var nulls []string
	ops := make([]brokerConfigOp, 0, len(configs))
	for _, cf := range configs {
		if seen[cf.Name] {
			return nil, errDuplicateConfig
		}
		seen[cf.Name] = true
		switch cf.Op {
		case kmsg.IncrementalAlterConfigOpDelete:
			ops = append(ops, brokerConfigOp{name: cf.Name})
			continue
		case kmsg.IncrementalAlterConfigOpSet:
		case kmsg.IncrementalAlterConfigOpAppend, kmsg.IncrementalAlterConfigOpSubtract:
			if spec, dynamic := dynamicBrokerConfigs[cf.Name]; dynamic && spec.typ != kmsg.ConfigTypeList {
				word := "append"
				if cf.Op == kmsg.IncrementalAlterConfigOpSubtract {
					word = "subtract"
				}
				return nil, &topic.Error{Code: kerr.InvalidConfig, Detail: fmt.Sprintf("Config value %s is not allowed for config key: %s", word, cf.Name)}
			}
		default:
			return nil, &topic.Error{Code: kerr.InvalidRequest, Detail: fmt.Sprintf("Unknown operations type %d", int8(cf.Op))}
		}
		if cf.Value == nil {
			nulls = append(nulls, cf.Name)
		}
		v := ""
		if cf.Value != nil {
			v = *cf.Value
		}
		ops = append(ops, brokerConfigOp{name: cf.Name, value: &v, edit: cf.Op})
	}
	if nulls != nil {
		return nil, &topic.Error{Code: kerr.InvalidRequest, Detail: "Null value not supported for : " + strings.Join(nulls, ", ")}
	}
	return ops, nil
}
