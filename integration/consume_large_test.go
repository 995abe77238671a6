package integration

import (
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestConsumeLargeRecord: on a topic created with max.message.bytes of
// 4 MiB, kgo produces a small record, a 1.5 MiB one, a 3 MiB one and a
// small one, each in its batch, the large ones larger than the 1 MiB that
// clients ask per partition by default. Raw fetches with max_bytes and
// partition_max_bytes of 1 MiB get each large batch whole (KIP-74: a first
// batch is returned even past the request's limits), and every client
// consumes the records back byte for byte, its own limits raised to take
// them. A 5 MiB record is refused with MESSAGE_TOO_LARGE and leaves
// nothing behind.
func TestConsumeLargeRecord(t *testing.T) {
	t.Parallel()
	eachConsumeBroker(t, consumeBrokerOpts{}, func(t *testing.T, b testBroker) {
		topic := topicName(t)
		maxBytes := "4194304"
		createConsumeTopic(t, b.Addr(), topic, map[string]*string{"max.message.bytes": &maxBytes})
		rng := rand.New(rand.NewChaCha8([32]byte{'k', 'b'}))
		random := func(n int) []byte { // incompressible
			v := make([]byte, n)
			for i := range v {
				v[i] = byte(rng.Uint32())
			}
			return v
		}
		want := []consRec{
			{Key: []byte("small-before"), Value: []byte("a small record"), Headers: []consHdr{{"size", []byte("small")}}},
			{Key: []byte("large-1.5MiB"), Value: random(3 << 19), Headers: []consHdr{{"size", []byte("1.5 MiB")}}},
			{Key: []byte("large-3MiB"), Value: random(3 << 20), Headers: []consHdr{{"size", []byte("3 MiB")}}},
			{Key: []byte("small-after"), Value: []byte("another small record"), Headers: []consHdr{{"size", []byte("small")}}},
		}
		for i := range want { // one batch each
			produceKgoRecs(t, b.Addr(), topic, want[i:i+1], noConsCodec, consumeOpts{large: true})
		}
		if got := readBatches(t, b.Addr(), topic, int64(len(want))); len(got) != len(want) {
			t.Fatalf("%d batches, want one per record (%d)", len(got), len(want))
		}

		cl := newKgo(t, b.Addr(), kgo.DefaultProduceTopic(topic), kgo.ProducerBatchMaxBytes(8<<20))
		err := cl.ProduceSync(testCtx(t), &kgo.Record{Value: random(5 << 20)}).FirstErr()
		if !errors.Is(err, kerr.MessageTooLarge) {
			t.Fatalf("producing 5 MiB to a topic with max.message.bytes 4 MiB: %v, want MESSAGE_TOO_LARGE", err)
		}
		checkEndOffsets(t, newAdmin(t, b.Addr()), topic, map[int32]int64{0: int64(len(want))})

		for _, c := range availableClients(t) {
			t.Run("to-"+c.name, func(t *testing.T) {
				t.Parallel()
				got := consumeAll(t, c, b.Addr(), topic, 0, len(want), consumeOpts{large: true})
				checkConsRecords(t, c.name, got, want, 0)
				// From the 3 MiB record on: it is the first batch.
				got = consumeAll(t, c, b.Addr(), topic, 2, len(want)-2, consumeOpts{large: true})
				checkConsRecords(t, c.name+" from offset 2", got, want[2:], 2)
			})
		}
	})
}
