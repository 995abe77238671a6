package integration

import (
	"testing"
	"time"
)

// TestConsumeRestart: a consumer of each client runs across a broker
// restart (the binary stopped with SIGTERM and started again on the same
// data directory and address; the in-process broker closed and started
// again the same way). Each has read the 40 records produced before; it
// keeps fetching while the broker is down, reconnects, and reads the 40
// produced after the restart from offset 40 on: nothing lost, repeated or
// out of order. Then a new consumer of each client, started at offset 40
// (the next offset, which a consumer without a group keeps itself), reads
// the same 40.
func TestConsumeRestart(t *testing.T) {
	t.Parallel()
	const half = 40
	eachConsumeBroker(t, consumeBrokerOpts{fixedAddr: true}, func(t *testing.T, b testBroker) {
		addr := b.Addr()
		topic := topicName(t)
		createConsumeTopic(t, addr, topic, nil)
		kg := consClientNamed("kgo")
		all := consRecords(kg, 2*half)
		produceKgoRecs(t, addr, topic, all[:half], noConsCodec, consumeOpts{})

		cls := availableClients(t)
		live := make([]*consumption, len(cls))
		for i, c := range cls {
			live[i] = startConsume(t, c, addr, topic, 0, 2*half, consumeOpts{live: true})
		}
		for i, c := range cls {
			checkConsRecords(t, c.name+" before the restart", live[i].next(t, half, 30*time.Second), all[:half], 0)
		}

		start := time.Now()
		b.Restart(t)
		if b.Addr() != addr {
			t.Fatalf("the broker came back on %s, not %s", b.Addr(), addr)
		}
		t.Logf("restarted in %v", time.Since(start).Round(time.Millisecond))
		checkEndOffsets(t, newAdmin(t, addr), topic, map[int32]int64{0: half})
		produceKgoRecs(t, addr, topic, all[half:], noConsCodec, consumeOpts{})
		for i, c := range cls {
			checkConsRecords(t, c.name+" across the restart", live[i].next(t, half, 30*time.Second), all[half:], half)
			t.Logf("%s resumed %v after the restart began", c.name, time.Since(start).Round(time.Millisecond))
		}

		for _, c := range cls {
			got := consumeAll(t, c, addr, topic, half, half, consumeOpts{})
			checkConsRecords(t, c.name+" started at the next offset", got, all[half:], half)
		}
	})
}
