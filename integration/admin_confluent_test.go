//go:build cgo

package integration

// The admin calls librdkafka's own admin test makes beyond topics, with
// confluent-kafka-go (librdkafka, cgo): dynamic broker configs, the GROUP
// config resource (KIP-848) and ElectLeaders. Without cgo,
// admin_confluent_nocgo_test.go skips the test.

import (
	"errors"
	"testing"

	ckafka "github.com/confluentinc/confluent-kafka-go/v2/kafka"
)

// TestAdminConfluent: librdkafka's AdminClient sets log.retention.ms on
// broker 0 (IncrementalAlterConfigs), and DescribeConfigs reports it from
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

		alter(ckafka.ConfigResource{Type: ckafka.ResourceBroker, Name: "0", Config: []ckafka.ConfigEntry{
			{Name: "log.retention.ms", Value: "86400000", IncrementalOperation: ckafka.AlterConfigOpTypeSet}}})
		if e := describe(ckafka.ResourceBroker, "0", "log.retention.ms"); e.Value != "86400000" || e.Source != ckafka.ConfigSourceDynamicBroker {
			t.Errorf("broker 0 log.retention.ms: %+v", e)
		}
		if e := describe(ckafka.ResourceTopic, topic, "retention.ms"); e.Value != "86400000" || e.Source != ckafka.ConfigSourceDynamicBroker {
			t.Errorf("%s retention.ms: %+v, want the dynamic broker value", topic, e)
		}
		if e := describe(ckafka.ResourceBroker, "0", "inter.broker.protocol.version"); e.Value == "" {
			t.Errorf("inter.broker.protocol.version: %+v", e)
		}

		alter(ckafka.ConfigResource{Type: ckafka.ResourceGroup, Name: group, Config: []ckafka.ConfigEntry{
			{Name: "consumer.session.timeout.ms", Value: "50000", IncrementalOperation: ckafka.AlterConfigOpTypeSet}}})
		if e := describe(ckafka.ResourceGroup, group, "consumer.session.timeout.ms"); e.Value != "50000" || e.Source != ckafka.ConfigSourceGroup {
			t.Errorf("group %s consumer.session.timeout.ms: %+v", group, e)
		}

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
