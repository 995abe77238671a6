package main

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// consumeCase reads back the topic of a produce case, by direct partition
// assignment or through a consumer group.
type consumeCase struct {
	from  produceCase
	group bool
	// members is the number of clients reading at once, group members or
	// direct readers; 0 is one. Direct readers share the partitions out
	// (client i reads partitions p with p mod members = i); on a topic of
	// fewer partitions than readers, each reads one partition whole, so
	// that one partition is served several times over (records/s and
	// the per-GB figures count every copy served).
	members int
}

func (c consumeCase) name() string {
	how := "direct"
	if c.group {
		how = "group"
	}
	if c.members > 1 {
		how += fmt.Sprintf(" of %d", c.members)
	}
	return how + ", " + c.from.name()
}

// consumeCases are measured in this order, after the produce cases that
// wrote their topics.
var consumeCases = []consumeCase{
	{from: produceCase{100, 1, 1}}, {from: produceCase{1024, 1, 1}},
	// Direct reads of 8 partitions and 4 direct readers: what floor-read,
	// which has no groups, serves too. One kgo consumer decoding 100 B
	// records uses a core; four take the client's limit away.
	{from: produceCase{100, 8, 1}}, {from: produceCase{1024, 8, 1}},
	{from: produceCase{100, 1, 1}, members: 4}, {from: produceCase{1024, 1, 1}, members: 4},
	{from: produceCase{100, 8, 1}, members: 4}, {from: produceCase{1024, 8, 1}, members: 4},
	{from: produceCase{100, 8, 1}, group: true}, {from: produceCase{1024, 8, 1}, group: true},
	// One kgo consumer decoding 100 B records is the limit of the cases
	// above (a core of client CPU); four members share the decoding.
	{from: produceCase{100, 8, 1}, group: true, members: 4}, {from: produceCase{1024, 8, 1}, group: true, members: 4},
	// Issue 15 item 4: 1,000 partitions read by a group of four.
	{from: produceCase{1024, 1000, 1}, group: true, members: 4},
}

// runConsume reads the whole topic of c.from (written by runProduce) with one kgo client (kgo's
// default fetch settings) passes times, a new client each time, and
// reports throughput and the broker's CPU and heap per GB of record
// values. The time runs from creating the client to the last record, so a
// group's join is included; join_ms is the time to the first record of
// the first pass. fetch_kb and fetch_ms describe the Fetch responses the
// clients read (fetchStats).
func runConsume(ctx context.Context, bp *brokerProc, c consumeCase, topic string, passes int) (metrics, error) {
	want, err := topicRecords(ctx, bp.addr, topic)
	if err != nil {
		return nil, err
	}
	// Warm-up: one read of what is there, unmeasured (the page cache, the
	// brokers' own caches).
	fetches := &fetchStats{}
	if _, _, _, err := consumeAll(ctx, bp.addr, c, topic, want, 0, fetches); err != nil {
		return nil, err
	}
	fetches.start()
	m := startMeasure(bp)
	var payload, records int64
	var first time.Duration
	for pass := range passes {
		r, n, f, err := consumeAll(ctx, bp.addr, c, topic, want, pass+1, fetches)
		if err != nil {
			return nil, err
		}
		if pass == 0 {
			first = f
		}
		payload += n
		records += r
	}
	out := m.finish(payload)
	out.setRate(records, payload)
	out["join_ms"] = ms(first)
	fetches.finish(out)
	return out, nil
}

// consumeAll reads want records of topic from its start with new clients
// and returns the records read, the bytes of their values and the time to
// the first record. pass makes the group name unique; every client
// reports its fetches to fetches.
func consumeAll(ctx context.Context, addr string, c consumeCase, topic string, want int64, pass int, fetches *fetchStats) (int64, int64, time.Duration, error) {
	if c.members > 1 && c.group {
		n, f, err := consumeGroup(ctx, addr, c, topic, pass, fetches)
		return want, n, f, err
	}
	if c.members > 1 {
		return consumeDirect(ctx, addr, c, topic, fetches)
	}
	n, f, err := consumeOne(ctx, addr, c, topic, want, pass, fetches)
	return want, n, f, err
}

// consumerOpts are the options of every consume client: kgo's default
// fetch settings, the same for every broker, and the fetches hook.
func consumerOpts(addr string, fetches *fetchStats, opts ...kgo.Opt) []kgo.Opt {
	return append(opts, kgo.SeedBrokers(addr), kgo.WithHooks(fetches))
}

// consumeOne reads want records of topic from its start with one new
// client, by direct assignment of all partitions or in a new group.
func consumeOne(ctx context.Context, addr string, c consumeCase, topic string, want int64, pass int, fetches *fetchStats) (int64, time.Duration, error) {
	var opts []kgo.Opt
	if c.group {
		opts = append(opts, kgo.ConsumerGroup(fmt.Sprintf("kbench-%s-%d-%d", topic, time.Now().UnixNano(), pass)),
			kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	} else {
		parts := map[int32]kgo.Offset{}
		for p := range c.from.partitions {
			parts[int32(p)] = kgo.NewOffset().AtStart()
		}
		opts = append(opts, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: parts}))
	}
	start := time.Now()
	cl, err := kgo.NewClient(consumerOpts(addr, fetches, opts...)...)
	if err != nil {
		return 0, 0, err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	var got, payload int64
	var first time.Duration
	for got < want {
		fs := cl.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			return 0, 0, fmt.Errorf("consume %s: %w", topic, err)
		}
		if first == 0 && !fs.Empty() {
			first = time.Since(start)
		}
		fs.EachRecord(func(r *kgo.Record) {
			got++
			payload += int64(len(r.Value))
		})
	}
	if got != want {
		return 0, 0, fmt.Errorf("consume %s: %d records, want %d", topic, got, want)
	}
	return payload, first, nil
}

// topicRecords is the number of records in topic (the sum of its
// partitions' end offsets; nothing is ever deleted here).
func topicRecords(ctx context.Context, addr, topic string) (int64, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	ends, err := kadm.NewClient(cl).ListEndOffsets(ctx, topic)
	if err != nil {
		return 0, err
	}
	var n int64
	ends.Each(func(o kadm.ListedOffset) { n += o.Offset })
	if err := ends.Error(); err != nil {
		return 0, err
	}
	return n, nil
}

// consumeGroup reads topic from its start with c.members clients in one
// new group, until every partition has been read to its end offset, and
// returns the bytes of the record values read to the end (each offset
// once) and the time to the first record. A member that joins late takes
// partitions over from the last committed offsets, so a few records may
// be read twice; they cost the broker, but count once.
func consumeGroup(ctx context.Context, addr string, c consumeCase, topic string, pass int, fetches *fetchStats) (int64, time.Duration, error) {
	ends, err := endOffsets(ctx, addr, topic)
	if err != nil {
		return 0, 0, err
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	group := fmt.Sprintf("kbench-%s-%d-%d", topic, time.Now().UnixNano(), pass)
	var (
		mu      sync.Mutex
		next    = map[int32]int64{} // per partition, one past the highest offset read
		left    = len(ends)
		payload int64
		first   time.Duration
		done    = make(chan struct{})
	)
	for p, end := range ends {
		if end == 0 {
			left--
		}
		next[p] = 0
	}
	if left == 0 {
		return 0, 0, nil
	}
	start := time.Now()
	errs := make(chan error, c.members)
	var wg sync.WaitGroup
	for range c.members {
		cl, err := kgo.NewClient(consumerOpts(addr, fetches, kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))...)
		if err != nil {
			cancel()
			wg.Wait()
			return 0, 0, err
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer cl.Close()
			for {
				fs := cl.PollFetches(ctx)
				select {
				case <-done:
					return
				default:
				}
				if err := fs.Err0(); err != nil {
					errs <- fmt.Errorf("consume %s: %w", topic, err)
					return
				}
				mu.Lock()
				if first == 0 && !fs.Empty() {
					first = time.Since(start)
				}
				fs.EachRecord(func(r *kgo.Record) {
					if r.Offset < next[r.Partition] {
						return // read again after a rebalance
					}
					next[r.Partition] = r.Offset + 1
					payload += int64(len(r.Value))
					if r.Offset+1 == ends[r.Partition] {
						if left--; left == 0 {
							close(done)
						}
					}
				})
				mu.Unlock()
			}
		}()
	}
	select {
	case <-done:
	case err := <-errs:
		cancel()
		wg.Wait()
		return 0, 0, err
	case <-ctx.Done():
		wg.Wait()
		return 0, 0, fmt.Errorf("consume %s: %w", topic, ctx.Err())
	}
	cancel() // the members' polls return
	wg.Wait()
	return payload, first, nil
}

// endOffsets is each partition's end offset.
func endOffsets(ctx context.Context, addr, topic string) (map[int32]int64, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	listed, err := kadm.NewClient(cl).ListEndOffsets(ctx, topic)
	if err != nil {
		return nil, err
	}
	if err := listed.Error(); err != nil {
		return nil, err
	}
	out := map[int32]int64{}
	listed.Each(func(o kadm.ListedOffset) { out[o.Partition] = o.Offset })
	return out, nil
}

// readsPartition reports whether reader i of readers reads partition p of
// parts: the partitions p with p mod readers = i, or, on fewer partitions
// than readers, partition i mod parts whole.
func readsPartition(i, p, readers, parts int32) bool {
	return p%readers == i || parts < readers && p == i%parts
}

// consumeDirect reads topic from its start with c.members clients, each
// assigned its share of the partitions (see consumeCase.members), and
// returns the records read in all, the bytes of their values and the time
// to the first record.
func consumeDirect(ctx context.Context, addr string, c consumeCase, topic string, fetches *fetchStats) (int64, int64, time.Duration, error) {
	ends, err := endOffsets(ctx, addr, topic)
	if err != nil {
		return 0, 0, 0, err
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	parts := int32(len(ends))
	var (
		mu               sync.Mutex
		records, payload int64
		first            time.Duration
		errs             []error
		wg               sync.WaitGroup
	)
	start := time.Now()
	for i := range int32(c.members) {
		assign := map[int32]kgo.Offset{}
		var want int64
		for p := range parts {
			if readsPartition(i, p, int32(c.members), parts) {
				assign[p] = kgo.NewOffset().AtStart()
				want += ends[p]
			}
		}
		if want == 0 {
			continue
		}
		cl, err := kgo.NewClient(consumerOpts(addr, fetches, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: assign}))...)
		if err != nil {
			cancel()
			wg.Wait()
			return 0, 0, 0, err
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer cl.Close()
			var got, bytes int64
			for got < want {
				fs := cl.PollFetches(ctx)
				if err := fs.Err0(); err != nil {
					mu.Lock()
					errs = append(errs, fmt.Errorf("consume %s: %w", topic, err))
					mu.Unlock()
					cancel()
					return
				}
				if !fs.Empty() {
					mu.Lock()
					if first == 0 {
						first = time.Since(start)
					}
					mu.Unlock()
				}
				fs.EachRecord(func(r *kgo.Record) {
					got++
					bytes += int64(len(r.Value))
				})
			}
			mu.Lock()
			records += got
			payload += bytes
			mu.Unlock()
		}()
	}
	wg.Wait()
	if len(errs) > 0 {
		return 0, 0, 0, errs[0]
	}
	return records, payload, first, nil
}
