package broker

// AlterConfigs v0–v2 (the legacy, replacing form), as Kafka 4's
// ConfigAdminManager.preprocess and the controller.
//
// A resource (type and name) given more than once is INVALID_REQUEST for
// every occurrence ("each resource must appear at most once"), as is a
// resource naming a config twice. TOPIC resources replace the topic's
// config overrides with the ones given (topic.Registry.AlterConfigs: a
// config left out returns to its default; null values INVALID_REQUEST;
// unknown names and bad values INVALID_CONFIG; a missing topic
// UNKNOWN_TOPIC_OR_PARTITION). BROKER resources (the empty name for the
// cluster-wide default or this broker's id, else INVALID_REQUEST) replace
// that resource's dynamic broker configs with the ones given
// (dynamic_config.go): a config that is not dynamic is INVALID_REQUEST
// "Cannot update these configs dynamically" (KAFKA-13609 keeps that code),
// a bad value INVALID_CONFIG. Other resource types are INVALID_REQUEST.
// ValidateOnly checks and changes nothing.
//
// Deviations from Apache Kafka:
//   - Only the dynamic broker configs kbroker applies are accepted
//     (dynamic_config.go); Kafka also accepts names it does not know.
//   - CLIENT_METRICS and GROUP resources are not supported here (GROUP is
//     served by IncrementalAlterConfigs, as in Kafka 4).
//
// Versions: v1 throttle; v2 flexible.

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"github.com/kbroker/kbroker/topic"
)

func (b *Broker) handleAlterConfigs(c *conn, req *kmsg.AlterConfigsRequest) (result, error) {
	resp := req.ResponseKind().(*kmsg.AlterConfigsResponse)
	dups := duplicates(req.Resources, func(r *kmsg.AlterConfigsRequestResource) string {
		return resourceKey(r.ResourceType, r.ResourceName)
	})
	for i := range req.Resources {
		rr := &req.Resources[i]
		res := kmsg.NewAlterConfigsResponseResource()
		res.ResourceType, res.ResourceName = rr.ResourceType, rr.ResourceName
		var err error
		if _, dup := dups[resourceKey(rr.ResourceType, rr.ResourceName)]; dup {
			err = errDuplicateResource
		} else if aerr := b.configsAllowed(c, opAlterConfigs, rr.ResourceType, rr.ResourceName); aerr != nil {
			err = aerr
		} else {
			err = b.alterConfigs(c, rr, req.ValidateOnly)
		}
		if err != nil {
			res.ErrorCode, res.ErrorMessage = adminError(c, "alter configs of "+rr.ResourceName, err)
		}
		resp.Resources = append(resp.Resources, res)
	}
	return respond(resp)
}

// alterConfigs applies one resource of a legacy AlterConfigs.
func (b *Broker) alterConfigs(c *conn, rr *kmsg.AlterConfigsRequestResource, validateOnly bool) error {
	configs := make(map[string]*string, len(rr.Configs))
	names := make([]string, 0, len(rr.Configs))
	for _, cf := range rr.Configs {
		if _, ok := configs[cf.Name]; ok {
			return errDuplicateConfig
		}
		configs[cf.Name] = cf.Value
		names = append(names, cf.Name)
	}
	switch rr.ResourceType {
	case kmsg.ConfigResourceTypeTopic:
		t, err := b.topics.AlterConfigs(rr.ResourceName, configs, validateOnly)
		if err == nil && !validateOnly {
			c.lg.Info("replaced topic configs", zap.String("topic", t.Name), zap.Any("configs", t.Configs.Overrides()))
		}
		return err
	case kmsg.ConfigResourceTypeBroker:
		var nulls []string
		for _, cf := range rr.Configs {
			if cf.Value == nil {
				nulls = append(nulls, cf.Name)
			}
		}
		if nulls != nil {
			return &topic.Error{Code: kerr.InvalidRequest, Detail: "Null value not supported for : " + strings.Join(nulls, ", ")}
		}
		ops := make([]brokerConfigOp, len(rr.Configs))
		for i, cf := range rr.Configs {
			ops[i] = brokerConfigOp{name: cf.Name, value: cf.Value}
		}
		return b.alterBrokerConfigs(rr.ResourceName, ops, true, validateOnly)
	}
	return unknownResourceType(rr.ResourceType)
}

// alterBrokerConfigs refuses to change broker configs (names), after
// checking that the resource names this broker or the cluster default.
func (b *Broker) alterBrokerConfigs(resource string, ops []brokerConfigOp, replace, validateOnly bool) error {
	if resource != "" {
		id, err := strconv.ParseInt(resource, 10, 32)
		if err != nil {
			return &topic.Error{Code: kerr.InvalidRequest, Detail: "Node id must be an integer, but it is: " + resource}
		}
		if int32(id) != b.cfg.NodeID {
			return &topic.Error{Code: kerr.InvalidRequest, Detail: fmt.Sprintf(
				"Unexpected broker id, expected %d, but received %s", b.cfg.NodeID, resource)}
		}
	}
	return b.alterDynamicBrokerConfigs(resource, ops, replace, validateOnly)
}

func resourceKey(t kmsg.ConfigResourceType, name string) string {
	return strconv.Itoa(int(t)) + "/" + name
}

func unknownResourceType(t kmsg.ConfigResourceType) error {
	return &topic.Error{Code: kerr.InvalidRequest, Detail: fmt.Sprintf("Unknown resource type %d", int8(t))}
}

var (
	errDuplicateResource = &topic.Error{Code: kerr.InvalidRequest, Detail: "Each resource must appear at most once."}
	errDuplicateConfig   = &topic.Error{Code: kerr.InvalidRequest, Detail: "Error due to duplicate config keys"}
)
