package integration

// End-to-end consume tests: every client (franz-go, sarama, kafka-go,
// confluent-kafka-go, kcat) produces, and every client consumes back by
// assigning itself the partition, with no consumer group (the group tests
// are group_*_test.go); no client may send a request kbroker does not
// serve (eachConsumeBroker checks).
// More in consume_*_test.go: compression, large records, restarts.

import (
	"maps"
	"testing"
	"time"
)

// createConsumeTopic creates topic with one partition and configs.
func createConsumeTopic(t *testing.T, addr, topic string, configs map[string]*string) {
	t.Helper()
	created, err := newAdmin(t, addr).CreateTopic(testCtx(t), 1, 1, configs, topic)
	if err == nil {
		err = created.Err
	}
	if err != nil {
		t.Fatalf("CreateTopic %s: %v", topic, err)
	}
}

// TestConsume: each client produces records (null, binary and empty keys
// and values, repeated header keys, records without headers; kcat text
// lines with headers) and each client consumes them back, from the start
// and from an offset in the middle: keys, values, headers, offsets and
// order are all preserved.
func TestConsume(t *testing.T) {
	t.Parallel()
	const n, mid = 50, 17
	eachConsumeBroker(t, consumeBrokerOpts{}, func(t *testing.T, b testBroker) {
		for _, p := range consClients {
			t.Run("from-"+p.name, func(t *testing.T) {
				t.Parallel()
				needsClient(t, p)
				topic := topicName(t)
				createConsumeTopic(t, b.Addr(), topic, nil)
				want := consRecords(p, n)
				p.produce(t, b.Addr(), topic, want, noConsCodec, consumeOpts{})
				checkEndOffsets(t, newAdmin(t, b.Addr()), topic, map[int32]int64{0: n})
				for _, c := range consClients {
					t.Run("to-"+c.name, func(t *testing.T) {
						t.Parallel()
						needsClient(t, c)
						got := consumeAll(t, c, b.Addr(), topic, 0, n, consumeOpts{})
						checkConsRecords(t, c.name, got, want, 0)
						got = consumeAll(t, c, b.Addr(), topic, mid, n-mid, consumeOpts{})
						checkConsRecords(t, c.name+" from offset 17", got, want[mid:], mid)
					})
				}
			})
		}
	})
}

// TestConsumeAssignOnlyNoGroupMembership: librdkafka will not make a
// consumer without group.id, so confluent-kafka-go's gets one; with Assign
// and explicit offsets, no auto commit and no offset store it must still
// not join the group nor commit or fetch offsets while it consumes and
// then sits idle for a few seconds, nor when it closes (looking the
// coordinator up is allowed: librdkafka does that for any group.id). The
// recording broker sees every request.
func TestConsumeAssignOnlyNoGroupMembership(t *testing.T) {
	t.Parallel()
	for _, c := range []consClient{consClientNamed("confluent"), consClientNamed("kcat")} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			needsClient(t, c)
			b := startRecording(t, nil)
			topic := topicName(t)
			createConsumeTopic(t, b.Addr(), topic, nil)
			kg := consClientNamed("kgo")
			want := consRecords(kg, 20)
			kg.produce(t, b.Addr(), topic, want, noConsCodec, consumeOpts{})
			b.requests.mu.Lock()
			clear(b.requests.apis)
			b.requests.mu.Unlock()
			// Ask for one record more than there is: the consumer keeps
			// fetching (and its group handling, if any, keeps running)
			// until it is stopped.
			cs := startConsume(t, c, b.Addr(), topic, 5, len(want)-5+1, consumeOpts{live: true})
			checkConsRecords(t, c.name, cs.next(t, len(want)-5, 30*time.Second), want[5:], 5)
			time.Sleep(3 * time.Second)
			cs.cancel()
			<-cs.done
			b.requests.mu.Lock()
			apis := maps.Clone(b.requests.apis)
			b.requests.mu.Unlock()
			t.Logf("%s sent %v", c.name, apis)
			noUnsupportedAPIs(t, b)
			for api := range apis {
				switch api {
				case "ApiVersions", "Metadata", "Fetch", "ListOffsets", "OffsetForLeaderEpoch", "FindCoordinator":
				default:
					t.Errorf("%s sent %s, which an assignment-only consumer does not need", c.name, api)
				}
			}
		})
	}
}
