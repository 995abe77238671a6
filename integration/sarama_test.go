package integration

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/IBM/sarama"
)

// saramaConfig is a sarama config with short timeouts; version nil keeps
// sarama's default (2.8.0 in v1.61).
func saramaConfig(version *sarama.KafkaVersion, idempotent bool) *sarama.Config {
	cfg := sarama.NewConfig()
	if version != nil {
		cfg.Version = *version
	}
	cfg.ClientID = "kbroker-integration"
	cfg.Net.DialTimeout = 5 * time.Second
	cfg.Net.ReadTimeout = 10 * time.Second
	cfg.Net.WriteTimeout = 5 * time.Second
	cfg.Metadata.Retry.Max = 5
	cfg.Metadata.Retry.Backoff = 100 * time.Millisecond
	cfg.Metadata.Timeout = 10 * time.Second
	cfg.Admin.Timeout = 5 * time.Second
	cfg.Producer.Return.Successes = true
	cfg.Producer.RequiredAcks = sarama.WaitForAll
	cfg.Producer.Timeout = 5 * time.Second
	// A non-idempotent producer that retries may store a batch twice and
	// report only the second copy's offsets; with retries off, any error
	// fails the test with its cause instead, and the offsets it reports
	// must be dense. The idempotent producer retries safely.
	cfg.Producer.Retry.Max = 0
	cfg.Producer.Retry.Backoff = 100 * time.Millisecond
	if idempotent {
		cfg.Producer.Retry.Max = 3
		cfg.Producer.Idempotent = true
		cfg.Net.MaxOpenRequests = 1
	}
	return cfg
}

// TestSarama: sarama's ClusterAdmin creates a topic and lists it with its
// config, its SyncProducer produces with headers and gets dense offsets,
// and the end offsets agree, whether asked with sarama or kadm. With
// Version = V3_6_0_0 (plain and idempotent) and with sarama's default.
func TestSarama(t *testing.T) {
	t.Parallel()
	v36 := sarama.V3_6_0_0
	for _, tt := range []struct {
		name       string
		version    *sarama.KafkaVersion
		idempotent bool
	}{
		{"V3_6_0_0", &v36, false},
		{"V3_6_0_0-idempotent", &v36, true},
		{"default-version", nil, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			eachBroker(t, brokerOpts{}, func(t *testing.T, b testBroker) {
				testSarama(t, b.Addr(), saramaConfig(tt.version, tt.idempotent))
			})
		})
	}
}

func testSarama(t *testing.T, addr string, cfg *sarama.Config) {
	const partitions, messages = 2, 500
	topic := topicName(t)
	addrs := []string{addr}

	admin, err := sarama.NewClusterAdmin(addrs, cfg)
	if err != nil {
		t.Fatalf("NewClusterAdmin: %v", err)
	}
	defer admin.Close()
	retention := "7200000"
	err = admin.CreateTopic(topic, &sarama.TopicDetail{
		NumPartitions:     partitions,
		ReplicationFactor: 1,
		ConfigEntries:     map[string]*string{"retention.ms": &retention},
	}, false)
	if err != nil {
		t.Fatalf("CreateTopic: %v", err)
	}
	awaitTopicReady(t, addr, topic)

	producer, err := sarama.NewSyncProducer(addrs, cfg)
	if err != nil {
		t.Fatalf("NewSyncProducer: %v", err)
	}
	defer producer.Close()
	msgs := make([]*sarama.ProducerMessage, messages)
	for i := range msgs {
		msgs[i] = &sarama.ProducerMessage{
			Topic:   topic,
			Key:     sarama.StringEncoder(fmt.Sprintf("key-%d", i)),
			Value:   sarama.StringEncoder(fmt.Sprintf("value %d", i)),
			Headers: []sarama.RecordHeader{{Key: []byte("seq"), Value: []byte(fmt.Sprint(i))}},
		}
	}
	if err := producer.SendMessages(msgs); err != nil {
		var perrs sarama.ProducerErrors
		if errors.As(err, &perrs) && len(perrs) > 0 {
			t.Fatalf("SendMessages: %v; the first: %v", err, perrs[0].Err)
		}
		t.Fatalf("SendMessages: %v", err)
	}
	// One more on its own, to partition 0 of the hash partitioner's
	// choice: SendMessage reports its offset.
	one := &sarama.ProducerMessage{Topic: topic, Value: sarama.StringEncoder("single")}
	p, off, err := producer.SendMessage(one)
	if err != nil {
		t.Fatalf("SendMessage: %v", err)
	}

	seen := map[int32]map[int64]bool{}
	for _, m := range append(msgs, one) {
		if seen[m.Partition] == nil {
			seen[m.Partition] = map[int64]bool{}
		}
		if seen[m.Partition][m.Offset] {
			t.Fatalf("offset %d of partition %d given twice", m.Offset, m.Partition)
		}
		seen[m.Partition][m.Offset] = true
	}
	if one.Partition != p || one.Offset != off {
		t.Fatalf("SendMessage returned %d/%d, the message says %d/%d", p, off, one.Partition, one.Offset)
	}
	want := map[int32]int64{}
	for p := range int32(partitions) {
		want[p] = int64(len(seen[p]))
		for o := range want[p] {
			if !seen[p][o] {
				t.Fatalf("partition %d: offset %d never returned: offsets are not dense", p, o)
			}
		}
	}

	client, err := sarama.NewClient(addrs, cfg)
	if err != nil {
		t.Fatalf("NewClient: %v", err)
	}
	defer client.Close()
	got := map[int32]int64{}
	for p := range int32(partitions) {
		if got[p], err = client.GetOffset(topic, p, sarama.OffsetNewest); err != nil {
			t.Fatalf("GetOffset(%d, newest): %v", p, err)
		}
		if oldest, err := client.GetOffset(topic, p, sarama.OffsetOldest); err != nil || oldest != 0 {
			t.Fatalf("GetOffset(%d, oldest): %d, %v; want 0", p, oldest, err)
		}
	}
	if !equalOffsets(got, want) {
		t.Fatalf("sarama end offsets %v, want %v", got, want)
	}
	checkEndOffsets(t, newAdmin(t, addr), topic, want)

	topics, err := admin.ListTopics()
	if err != nil {
		t.Fatalf("ListTopics: %v", err)
	}
	detail, ok := topics[topic]
	if !ok || detail.NumPartitions != partitions {
		t.Fatalf("ListTopics: %s is %+v (found %v), want %d partitions", topic, detail, ok, partitions)
	}
	if v := detail.ConfigEntries["retention.ms"]; v == nil || *v != retention {
		t.Fatalf("ListTopics: %s retention.ms %v, want %s", topic, v, retention)
	}

	// Producing to a missing topic auto-creates it (sarama asks for it).
	auto := &sarama.ProducerMessage{Topic: topic + ".auto", Value: sarama.StringEncoder("x")}
	if _, off, err := producer.SendMessage(auto); err != nil || off != 0 {
		t.Fatalf("SendMessage to a new topic: offset %d, %v; want 0", off, err)
	}
}
