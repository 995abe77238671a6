package admin

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kbroker/kbroker/broker"
)

// startBroker starts an in-process broker (auto-create off, so that an
// unknown topic is an error the metrics can count) and an admin server
// for it on a free loopback port.
func startBroker(t *testing.T, edit func(*broker.Config)) (*broker.InProcess, *Server) {
	t.Helper()
	b, err := broker.StartInProcess(t.TempDir(), func(c *broker.Config) {
		c.AutoCreateTopics = false
		c.GroupMinSessionTimeout = time.Second
		if edit != nil {
			edit(c)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	s := New(b.Broker)
	if err := s.Start("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return b, s
}

// workload is what runWorkload did, for the assertions.
type workload struct {
	topic, group       string
	produced, consumed int
	valueSize          int
}

// runWorkload creates a one-partition topic, produces 25 records of 100
// bytes, consumes the first 20 in a group that commits them, and produces
// nothing more: the group's lag is 5. The consumer stays a member until
// the test ends.
func runWorkload(t *testing.T, b *broker.InProcess) workload {
	t.Helper()
	w := workload{topic: "orders", group: "billing", produced: 25, consumed: 20, valueSize: 100}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	admin, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	if _, err := kadm.NewClient(admin).CreateTopic(ctx, 1, 1, nil, w.topic); err != nil {
		t.Fatalf("create topic: %v", err)
	}

	prod, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.DefaultProduceTopic(w.topic),
		kgo.ProducerBatchCompression(kgo.NoCompression())) // bytes in = values + framing
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	value := strings.Repeat("x", w.valueSize)
	// Two synchronous rounds: the first 20 records are what the group
	// consumes, the last 5 its lag.
	for _, n := range []int{w.consumed, w.produced - w.consumed} {
		recs := make([]*kgo.Record, n)
		for i := range recs {
			recs[i] = &kgo.Record{Value: []byte(value)}
		}
		if err := prod.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatalf("produce: %v", err)
		}
	}

	cons, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()),
		kgo.ConsumerGroup(w.group), kgo.ConsumeTopics(w.topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.DisableAutoCommit(),
		kgo.SessionTimeout(6*time.Second), kgo.RebalanceTimeout(6*time.Second),
		kgo.FetchMaxPartitionBytes(1)) // one batch per fetch: the consumer stops where told
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cons.Close)
	var last *kgo.Record
	for seen := 0; seen < w.consumed; {
		fs := cons.PollRecords(ctx, w.consumed-seen)
		if err := fs.Err0(); err != nil {
			t.Fatalf("poll: %v", err)
		}
		fs.EachRecord(func(r *kgo.Record) { last = r; seen++ })
	}
	// Commit exactly through the 20th record, whatever else was fetched.
	if last.Offset != int64(w.consumed-1) {
		t.Fatalf("the %dth record consumed has offset %d", w.consumed, last.Offset)
	}
	if err := cons.CommitRecords(ctx, last); err != nil {
		t.Fatalf("commit: %v", err)
	}
	return w
}

// get fetches path from the admin server.
func get(t *testing.T, s *Server, path string) (int, string) {
	t.Helper()
	cl := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := cl.Get("http://" + s.Addr() + path)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	return resp.StatusCode, string(body)
}
