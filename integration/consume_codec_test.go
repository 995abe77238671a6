package integration

import (
	"encoding/binary"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestConsumeCompression: for each codec (gzip, snappy, lz4, zstd) one
// topic, to which kgo, sarama, kafka-go, confluent-kafka-go and kcat each
// produce 30 records with that codec, in turn. The broker keeps every
// batch as it was sent (each batch read back still carries its producer's
// codec in its attributes), and every client consumes the whole partition
// back, records and headers intact.
//
// librdkafka (confluent-kafka-go, kcat) decides from ApiVersions whether
// the broker can take a codec, and sends the batch uncompressed when it
// thinks not: older versions such as kcat's 2.0.2 send gzip, snappy and
// lz4 only when Produce v0 is listed. kbroker lists it, as Kafka 4 does
// (KAFKA-18659), so every client's batches must carry the codec.
func TestConsumeCompression(t *testing.T) {
	t.Parallel()
	const per = 30
	eachConsumeBroker(t, consumeBrokerOpts{}, func(t *testing.T, b testBroker) {
		cls := availableClients(t)
		for _, c := range consCodecs {
			t.Run(c.name, func(t *testing.T) {
				t.Parallel()
				topic := topicName(t)
				createConsumeTopic(t, b.Addr(), topic, nil)
				var want []consRec
				for _, p := range cls {
					recs := consRecords(p, per)
					p.produce(t, b.Addr(), topic, recs, c, consumeOpts{})
					want = append(want, recs...)
				}
				for _, bt := range readBatches(t, b.Addr(), topic, int64(len(want))) {
					p := cls[bt.firstOffset/per]
					switch {
					case bt.codec == c.attr:
					case bt.codec == 0:
						t.Errorf("%s sent the batch at offset %d uncompressed, not %s: it judged the broker unable to take %s", p.name, bt.firstOffset, c.name, c.name)
					default:
						t.Errorf("the batch at offset %d, from %s with %s, is read back with codec %d: the broker did not keep it as sent", bt.firstOffset, p.name, c.name, bt.codec)
					}
				}
				for _, cl := range cls {
					t.Run("to-"+cl.name, func(t *testing.T) {
						t.Parallel()
						got := consumeAll(t, cl, b.Addr(), topic, 0, len(want), consumeOpts{})
						checkConsRecords(t, cl.name, got, want, 0)
					})
				}
			})
		}
	})
}

// batchInfo is a record batch as read back.
type batchInfo struct {
	firstOffset int64
	records     int
	codec       int16 // the compression bits of its attributes
}

// readBatches reads partition 0 of topic with raw Fetch requests up to
// offset end and returns its batches, checking that they hold every
// offset once, in order.
func readBatches(t *testing.T, addr, topic string, end int64) []batchInfo {
	t.Helper()
	topics, err := newAdmin(t, addr).ListTopics(testCtx(t), topic)
	if err != nil || topics[topic].Err != nil {
		t.Fatalf("ListTopics %s: %v %v", topic, err, topics[topic].Err)
	}
	id := topics[topic].ID
	cl := newKgo(t, addr)
	var out []batchInfo
	for offset := int64(0); offset < end; {
		req := kmsg.NewPtrFetchRequest()
		req.ReplicaID, req.MaxBytes, req.SessionEpoch = -1, 1<<20, -1
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic, rt.TopicID = topic, id
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.FetchOffset, rp.PartitionMaxBytes, rp.CurrentLeaderEpoch = offset, 1<<20, -1
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(testCtx(t), cl)
		if err != nil {
			t.Fatalf("Fetch at %d: %v", offset, err)
		}
		if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
			t.Fatalf("Fetch at %d: %d topics in the response", offset, len(resp.Topics))
		}
		p := resp.Topics[0].Partitions[0]
		if p.ErrorCode != 0 || len(p.RecordBatches) == 0 {
			t.Fatalf("Fetch at %d: error %d, %d bytes", offset, p.ErrorCode, len(p.RecordBatches))
		}
		for raw := p.RecordBatches; len(raw) >= 12; {
			size := 12 + int(int32(binary.BigEndian.Uint32(raw[8:12])))
			if size > len(raw) {
				break // a partial batch at the end (kbroker sends none)
			}
			var rb kmsg.RecordBatch
			if err := rb.ReadFrom(raw[:size]); err != nil {
				t.Fatalf("batch at %d: %v", offset, err)
			}
			if rb.FirstOffset != offset {
				t.Fatalf("batch at offset %d where %d was next", rb.FirstOffset, offset)
			}
			out = append(out, batchInfo{firstOffset: rb.FirstOffset, records: int(rb.NumRecords), codec: rb.Attributes & 7})
			offset = rb.FirstOffset + int64(rb.LastOffsetDelta) + 1
			raw = raw[size:]
		}
	}
	return out
}
