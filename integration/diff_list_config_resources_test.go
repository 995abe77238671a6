package integration

import (
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// listConfigResourcesSteps compare ListConfigResources over a topic and a
// group with a config of this run: every type (an empty list), a subset,
// the broker's own entries, client metrics (neither broker has any of this
// run), unsupported types, and a group whose last config is deleted. The
// Kafka broker also lists what earlier runs and sequences left, so the
// answers keep only the names of this run and the broker entries; each
// step runs at v0 (ListClientMetricsResources, which sends no types) and
// v1.
func listConfigResourcesSteps(run string) []diffStep {
	topic, group := "lcr-"+run, "lcr-g-"+run
	list := func(types ...int8) func(*diffSide, int16) kmsg.Request {
		return func(_ *diffSide, _ int16) kmsg.Request {
			r := kmsg.NewPtrListConfigResourcesRequest()
			r.ResourceTypes = types
			return r
		}
	}
	groupConfig := func(op kmsg.IncrementalAlterConfigOp, value *string) func(*diffSide, int16) kmsg.Request {
		return func(_ *diffSide, _ int16) kmsg.Request {
			r := kmsg.NewPtrIncrementalAlterConfigsRequest()
			res := kmsg.NewIncrementalAlterConfigsRequestResource()
			res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeGroupConfig, group
			c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
			c.Name, c.Op, c.Value = "consumer.session.timeout.ms", op, value
			res.Configs = append(res.Configs, c)
			r.Resources = append(r.Resources, res)
			return r
		}
	}
	// Kafka applies a group config to its metadata cache asynchronously.
	groupListed := func(want bool) func(kmsg.Response) bool {
		return func(resp kmsg.Response) bool {
			r := resp.(*kmsg.ListConfigResourcesResponse)
			listed := slices.ContainsFunc(r.ConfigResources, func(c kmsg.ListConfigResourcesResponseConfigResource) bool {
				return c.Name == group
			})
			return r.Version == 0 || listed == want
		}
	}
	keep := func(resp kmsg.Response) { keepListedOfRun(resp.(*kmsg.ListConfigResourcesResponse), run) }
	return append(createAndAwait(topic, 1), []diffStep{
		{name: "set a group config", req: groupConfig(kmsg.IncrementalAlterConfigOpSet, kmsg.StringPtr("50000")), versions: newest},
		{name: "list every type", req: list(), normalize: keep, until: groupListed(true)},
		{name: "list groups and topics", req: list(32, 2), normalize: keep},
		{name: "list every type by name, twice", req: list(2, 4, 8, 16, 32, 2), normalize: keep},
		{name: "list brokers and broker loggers", req: list(4, 8), normalize: keep},
		{name: "list client metrics", req: list(16), normalize: keep},
		{name: "list an unknown type", req: list(99), normalize: keep},
		{name: "list an unknown type with a known one", req: list(4, 0), normalize: keep},
		{name: "list type 1 (UNKNOWN)", req: list(1), normalize: keep},
		{name: "delete the group config", req: groupConfig(kmsg.IncrementalAlterConfigOpDelete, nil), versions: newest},
		{name: "list groups without it", req: list(32), normalize: keep, until: groupListed(false)},
	}...)
}

// keepListedOfRun keeps the resources named for run and the broker and
// broker-logger entries, in the order of their types as answered, each
// type's names sorted (Kafka lists them in its hash maps' order).
func keepListedOfRun(r *kmsg.ListConfigResourcesResponse, run string) {
	var types []int8
	byType := map[int8][]kmsg.ListConfigResourcesResponseConfigResource{}
	for _, c := range r.ConfigResources {
		broker := c.Type == int8(kmsg.ConfigResourceTypeBroker) || c.Type == int8(kmsg.ConfigResourceTypeBrokerLogger)
		if !broker && !strings.Contains(c.Name, run) {
			continue
		}
		if _, ok := byType[c.Type]; !ok {
			types = append(types, c.Type)
		}
		byType[c.Type] = append(byType[c.Type], c)
	}
	r.ConfigResources = r.ConfigResources[:0]
	for _, t := range types {
		rs := byType[t]
		slices.SortFunc(rs, func(a, b kmsg.ListConfigResourcesResponseConfigResource) int { return strings.Compare(a.Name, b.Name) })
		r.ConfigResources = append(r.ConfigResources, rs...)
	}
}
