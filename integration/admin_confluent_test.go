//go:build cgo

package integration

// The admin calls librdkafka's own admin test makes beyond topics, with
// confluent-kafka-go (librdkafka, cgo): dynamic broker configs, the GROUP
// config resource (KIP-848) and ElectLeaders. Without cgo,
// admin_confluent_nocgo_test.go skips the test.

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"testing"

	ckafka "github.com/confluentinc/confluent-kafka-go/v2/kafka"
)

// TestAdminConfluent: librdkafka's AdminClient sets log.retention.ms on
// the broker (IncrementalAlterConfigs), and DescribeConfigs reports it from
// DYNAMIC_BROKER_CONFIG with the topic inheriting it; sets a group's
// consumer.session.timeout.ms (GROUP config resource) and reads it back
// from GROUP_CONFIG; and a preferred election on an existing partition is
// ELECTION_NOT_NEEDED, as on a one-broker Kafka.
func TestAdminConfluent(t *testing.T) {
	t.Parallel()
	needsClient(t, consClientNamed("confluent"))
	eachBroker(t, brokerOpts{}, func(t *testing.T, b testBroker) {
		topic, group := topicName(t), groupName(t)
		createGroupTopic(t, newAdmin(t, b.Addr()), topic, 1)
		cfg := confluentBase(b.Addr())
		adm, err := ckafka.NewAdminClient(&cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(adm.Close)
		ctx := testCtx(t)

		alter := func(res ckafka.ConfigResource) {
			t.Helper()
			rs, err := adm.IncrementalAlterConfigs(ctx, []ckafka.ConfigResource{res})
			if err != nil {
				t.Fatalf("IncrementalAlterConfigs %s %s: %v", res.Type, res.Name, err)
			}
			if rs[0].Error.Code() != ckafka.ErrNoError {
				t.Fatalf("IncrementalAlterConfigs %s %s: %v", res.Type, res.Name, rs[0].Error)
			}
		}
		describe := func(typ ckafka.ResourceType, name, key string) ckafka.ConfigEntryResult {
			t.Helper()
			rs, err := adm.DescribeConfigs(ctx, []ckafka.ConfigResource{{Type: typ, Name: name}})
			if err != nil || rs[0].Error.Code() != ckafka.ErrNoError {
				t.Fatalf("DescribeConfigs %s %s: %v %v", typ, name, err, rs)
			}
			e, ok := rs[0].Config[key]
			if !ok {
				t.Fatalf("DescribeConfigs %s %s: no %s", typ, name, key)
			}
			return e
		}

		// The broker's own id: kbroker's is 0, a reference Kafka's may
		// differ, and librdkafka waits for a broker resource's node.
		md, err := adm.GetMetadata(nil, false, 5000)
		if err != nil || len(md.Brokers) == 0 {
			t.Fatalf("metadata: %v %+v", err, md)
		}
		node := strconv.Itoa(int(md.Brokers[0].ID))
		alter(ckafka.ConfigResource{Type: ckafka.ResourceBroker, Name: node, Config: []ckafka.ConfigEntry{
			{Name: "log.retention.ms", Value: "86400000", IncrementalOperation: ckafka.AlterConfigOpTypeSet}}})
		// A shared external broker must not keep the dynamic value.
		t.Cleanup(func() {
			_, _ = adm.IncrementalAlterConfigs(context.Background(), []ckafka.ConfigResource{{Type: ckafka.ResourceBroker, Name: node,
				Config: []ckafka.ConfigEntry{{Name: "log.retention.ms", IncrementalOperation: ckafka.AlterConfigOpTypeDelete}}}})
		})
		// Kafka applies a dynamic config through its metadata log, after
		// the answer; kbroker before it. Both must show it soon.
		var be, te ckafka.ConfigEntryResult
		awaitGroup(t, "the dynamic log.retention.ms on the broker and the topic", func() bool {
			be = describe(ckafka.ResourceBroker, node, "log.retention.ms")
			te = describe(ckafka.ResourceTopic, topic, "retention.ms")
			return be.Value == "86400000" && be.Source == ckafka.ConfigSourceDynamicBroker &&
				te.Value == "86400000" && te.Source == ckafka.ConfigSourceDynamicBroker
		}, func() string { return fmt.Sprintf("broker %s: %+v; topic %s: %+v", node, be, topic, te) })
		// Kafka 4 dropped inter.broker.protocol.version; kbroker still
		// reports it for admin UIs that read it.
		if _, external := b.(externalBroker); !external {
			if e := describe(ckafka.ResourceBroker, node, "inter.broker.protocol.version"); e.Value == "" {
				t.Errorf("inter.broker.protocol.version: %+v", e)
			}
		}

		alter(ckafka.ConfigResource{Type: ckafka.ResourceGroup, Name: group, Config: []ckafka.ConfigEntry{
			{Name: "consumer.session.timeout.ms", Value: "50000", IncrementalOperation: ckafka.AlterConfigOpTypeSet}}})
		var ge ckafka.ConfigEntryResult
		awaitGroup(t, "the group's consumer.session.timeout.ms", func() bool {
			ge = describe(ckafka.ResourceGroup, group, "consumer.session.timeout.ms")
			return ge.Value == "50000" && ge.Source == ckafka.ConfigSourceGroup
		}, func() string { return fmt.Sprintf("group %s: %+v", group, ge) })

		res, err := adm.ElectLeaders(ctx, ckafka.NewElectLeadersRequest(ckafka.ElectionTypePreferred, []ckafka.TopicPartition{{Topic: &topic, Partition: 0}}))
		if err != nil {
			t.Fatal(err)
		}
		var ke ckafka.Error
		if len(res.TopicPartitions) != 1 || !errors.As(res.TopicPartitions[0].Error, &ke) || ke.Code() != ckafka.ErrElectionNotNeeded {
			t.Errorf("ElectLeaders: %v, want ELECTION_NOT_NEEDED", res.TopicPartitions)
		}
	})
}
