package integration

// The clients of the consume tests: each can produce a list of records to
// partition 0 of a topic and read them back from an offset, without a
// consumer group (kbroker has none yet): each consumer assigns itself the
// partition and holds its own position. confluent-kafka-go is in
// consume_confluent_test.go (cgo).

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"
	kafkago "github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kgo"
)

// consRec is a record as produced and as consumed: offset (when consumed),
// key, value and headers in order.
type consRec struct {
	Offset  int64
	Key     []byte
	Value   []byte
	Headers []consHdr
}

type consHdr struct {
	Key   string
	Value []byte
}

// consCodec is a compression codec: the name each client knows it by and the
// batch attribute it sets (the low three bits).
type consCodec struct {
	name string // none, gzip, snappy, lz4, zstd: librdkafka's and kcat's names
	attr int16
}

var (
	noConsCodec = consCodec{"none", 0}
	consCodecs  = []consCodec{{"gzip", 1}, {"snappy", 2}, {"lz4", 3}, {"zstd", 4}}
)

// consumeOpts tune one consumption.
type consumeOpts struct {
	// large: records up to a few MiB; fetch and read limits are raised.
	large bool
	// live: the consumer runs across a broker restart (records are not
	// all there yet when it starts, so kcat is not told to stop at the end
	// of the partition).
	live bool
}

// consClient is one Kafka client of the consume tests.
type consClient struct {
	name string
	// binarySafe: keys, values and header values may hold any bytes
	// (kcat produces text lines, with one set of headers for all).
	binarySafe bool
	// produce writes recs, in order, to partition 0 of topic.
	produce func(t *testing.T, addr, topic string, recs []consRec, c consCodec, o consumeOpts)
	// consume reads partition 0 of topic from offset from and sends each
	// record to out until n were sent, ctx ends or the client fails. It
	// runs on its own goroutine: it must not call t.Fatal.
	consume func(ctx context.Context, t *testing.T, addr, topic string, from int64, n int, o consumeOpts, out chan<- consRec) error
}

// consClients are every client, kcat last; availableClients and
// needsClient leave out those that cannot run here.
var consClients = []consClient{
	{name: "kgo", binarySafe: true, produce: produceKgoRecs, consume: consumeKgo},
	{name: "sarama", binarySafe: true, produce: produceSarama, consume: consumeSarama},
	{name: "kafka-go", binarySafe: true, produce: produceKafkaGo, consume: consumeKafkaGo},
	{name: "confluent", binarySafe: true, produce: produceConfluent, consume: consumeConfluent},
	{name: "kcat", produce: produceKcat, consume: consumeKcat},
}

// consClientNamed returns the client called name.
func consClientNamed(name string) consClient {
	for _, c := range consClients {
		if c.name == name {
			return c
		}
	}
	panic("no client " + name)
}

// availableClients are the clients that can run here: all of them, less
// kcat when it is not on PATH and confluent-kafka-go when built without
// cgo, outside CI (in CI either fails the test).
func availableClients(t *testing.T) []consClient {
	t.Helper()
	var out []consClient
	for _, c := range consClients {
		if why := unavailable(c); why != "" {
			if os.Getenv("CI") != "" {
				t.Fatalf("%s in CI", why)
			}
			t.Logf("%s: leaving %s out", why, c.name)
			continue
		}
		out = append(out, c)
	}
	return out
}

// needsClient skips the test when c cannot run here (outside CI; in CI it
// fails).
func needsClient(t *testing.T, c consClient) {
	t.Helper()
	if why := unavailable(c); why != "" {
		if os.Getenv("CI") != "" {
			t.Fatalf("%s in CI", why)
		}
		t.Skipf("%s: skipping %s", why, c.name)
	}
}

// unavailable says why c cannot run here, or "".
func unavailable(c consClient) string {
	switch c.name {
	case "kcat":
		if _, err := exec.LookPath("kcat"); err != nil {
			return "kcat is not on PATH (apt-get install kcat; .ci/run installs it)"
		}
	case "confluent":
		if !confluentBuilt {
			return "confluent-kafka-go needs cgo (CGO_ENABLED=1 and a C compiler)"
		}
	}
	return ""
}

// consRecords are n records for producer to send. Binary-safe producers
// send a null key, a binary key and value, an empty value, repeated header
// keys and records without headers; the rest of each value is repetitive
// text, so every codec shrinks a batch (librdkafka sends a batch that does
// not shrink uncompressed). kcat sends text lines, all with the headers of
// kcatHeaders.
func consRecords(producer consClient, n int) []consRec {
	recs := make([]consRec, n)
	pad := strings.Repeat("kbroker consume test ", 8)
	for i := range recs {
		r := consRec{
			Key:   fmt.Appendf(nil, "key-%d", i),
			Value: fmt.Appendf(nil, "value %d from %s: %s", i, producer.name, pad),
		}
		if !producer.binarySafe {
			r.Headers = kcatHeaders
			recs[i] = r
			continue
		}
		r.Headers = []consHdr{{"seq", []byte(strconv.Itoa(i))}, {"src", []byte(producer.name)}, {"dup", []byte("a")}, {"dup", []byte("b")}}
		switch i % 7 {
		case 1:
			r.Key = nil
		case 2:
			r.Key = []byte{0, '\n', 0xff, '%', 'k'}
			r.Value = append([]byte{0xfe, 0, '\n', '\n'}, r.Value...)
		case 3:
			r.Value = []byte{}
		case 4:
			r.Headers = nil
		case 5:
			r.Headers = append(r.Headers, consHdr{"empty", []byte{}})
		}
		recs[i] = r
	}
	return recs
}

// kcatHeaders are the headers kcat's producer puts on every record.
var kcatHeaders = []consHdr{{"src", []byte("kcat")}, {"dup", []byte("a")}, {"dup", []byte("b")}}

// checkConsRecords fails the test unless got are want, in order, at the
// offsets from first on. Null and empty keys, values and header values
// count as equal (clients differ in which they report).
func checkConsRecords(t *testing.T, who string, got, want []consRec, first int64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: got %d records, want %d", who, len(got), len(want))
	}
	for i := range want {
		g, w := got[i], want[i]
		if g.Offset != first+int64(i) {
			t.Fatalf("%s: record %d at offset %d, want %d (order or position lost)", who, i, g.Offset, first+int64(i))
		}
		if !bytes.Equal(g.Key, w.Key) {
			t.Fatalf("%s: record %d key %q, want %q", who, i, g.Key, w.Key)
		}
		if !bytes.Equal(g.Value, w.Value) {
			t.Fatalf("%s: record %d value %q, want %q", who, i, consShort(g.Value), consShort(w.Value))
		}
		if len(g.Headers) != len(w.Headers) {
			t.Fatalf("%s: record %d headers %q, want %q", who, i, g.Headers, w.Headers)
		}
		for j := range w.Headers {
			if g.Headers[j].Key != w.Headers[j].Key || !bytes.Equal(g.Headers[j].Value, w.Headers[j].Value) {
				t.Fatalf("%s: record %d headers %q, want %q", who, i, g.Headers, w.Headers)
			}
		}
	}
}

// consShort abbreviates a large value in messages.
func consShort(b []byte) []byte {
	if len(b) > 100 {
		return fmt.Appendf(b[:80:80], "... (%d bytes)", len(b))
	}
	return b
}

// consumption is a consumer running on its own goroutine.
type consumption struct {
	name   string
	recs   chan consRec
	done   chan struct{} // closed when the consumer returned
	err    error         // its error, once done is closed
	cancel context.CancelFunc
}

// startConsume starts c reading n records of topic from offset from; the
// test's cleanup stops it and waits for it.
func startConsume(t *testing.T, c consClient, addr, topic string, from int64, n int, o consumeOpts) *consumption {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	cs := &consumption{name: c.name, recs: make(chan consRec, n), done: make(chan struct{}), cancel: cancel}
	go func() {
		defer close(cs.done)
		cs.err = c.consume(ctx, t, addr, topic, from, n, o, cs.recs)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-cs.done:
		case <-time.After(20 * time.Second):
			t.Errorf("%s consumer still running 20 s after it was stopped", c.name)
		}
	})
	return cs
}

// next waits up to timeout for k more records.
func (cs *consumption) next(t *testing.T, k int, timeout time.Duration) []consRec {
	t.Helper()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	var got []consRec
	for len(got) < k {
		select {
		case r := <-cs.recs:
			got = append(got, r)
		case <-cs.done:
			// Take what it sent before it returned.
		drain:
			for len(got) < k {
				select {
				case r := <-cs.recs:
					got = append(got, r)
				default:
					break drain
				}
			}
			if len(got) < k {
				t.Fatalf("%s consumer stopped after %d of %d records: %v", cs.name, len(got), k, cs.err)
			}
		case <-timer.C:
			t.Fatalf("%s consumer got %d of %d records in %v", cs.name, len(got), k, timeout)
		}
	}
	return got
}

// consumeAll reads n records of topic from offset from with c.
func consumeAll(t *testing.T, c consClient, addr, topic string, from int64, n int, o consumeOpts) []consRec {
	t.Helper()
	start := time.Now()
	cs := startConsume(t, c, addr, topic, from, n, o)
	got := cs.next(t, n, 30*time.Second)
	t.Logf("%s consumed %d records in %v", c.name, n, time.Since(start).Round(time.Millisecond))
	return got
}

// consSend hands r to out unless ctx ends.
func consSend(ctx context.Context, out chan<- consRec, r consRec) error {
	select {
	case out <- r:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// ---- franz-go (kgo)

func produceKgoRecs(t *testing.T, addr, topic string, recs []consRec, c consCodec, o consumeOpts) {
	t.Helper()
	opts := []kgo.Opt{kgo.DefaultProduceTopic(topic), kgo.ProducerLinger(5 * time.Millisecond), kgo.RecordPartitioner(kgo.ManualPartitioner())}
	switch c.name {
	case "gzip":
		opts = append(opts, kgo.ProducerBatchCompression(kgo.GzipCompression()))
	case "snappy":
		opts = append(opts, kgo.ProducerBatchCompression(kgo.SnappyCompression()))
	case "lz4":
		opts = append(opts, kgo.ProducerBatchCompression(kgo.Lz4Compression()))
	case "zstd":
		opts = append(opts, kgo.ProducerBatchCompression(kgo.ZstdCompression()))
	default:
		opts = append(opts, kgo.ProducerBatchCompression(kgo.NoCompression()))
	}
	if o.large {
		opts = append(opts, kgo.ProducerBatchMaxBytes(4<<20))
	}
	cl := newKgo(t, addr, opts...)
	krs := make([]*kgo.Record, len(recs))
	for i, r := range recs {
		kr := &kgo.Record{Key: r.Key, Value: r.Value, Partition: 0}
		for _, h := range r.Headers {
			kr.Headers = append(kr.Headers, kgo.RecordHeader{Key: h.Key, Value: h.Value})
		}
		krs[i] = kr
	}
	results := cl.ProduceSync(testCtx(t), krs...)
	if err := results.FirstErr(); err != nil {
		t.Fatalf("kgo ProduceSync: %v", err)
	}
	for i, r := range results {
		if r.Record.Offset != results[0].Record.Offset+int64(i) {
			t.Fatalf("kgo: record %d acknowledged at offset %d, the first at %d", i, r.Record.Offset, results[0].Record.Offset)
		}
	}
}

func consumeKgo(ctx context.Context, t *testing.T, addr, topic string, from int64, n int, o consumeOpts, out chan<- consRec) error {
	opts := []kgo.Opt{
		kgo.SeedBrokers(addr),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().At(from)}}),
		kgo.FetchMaxWait(500 * time.Millisecond),
		kgo.RequestTimeoutOverhead(5 * time.Second),
		kgo.RetryTimeout(10 * time.Second),
		kgo.RetryBackoffFn(func(int) time.Duration { return 100 * time.Millisecond }),
	}
	if o.large {
		opts = append(opts, kgo.FetchMaxBytes(16<<20), kgo.FetchMaxPartitionBytes(8<<20))
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return err
	}
	defer cl.Close()
	for sent := 0; sent < n; {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("after %d records: %w", sent, err)
		}
		fs.EachError(func(topic string, p int32, err error) {
			t.Logf("kgo fetch %s-%d: %v", topic, p, err)
		})
		for _, kr := range fs.Records() {
			r := consRec{Offset: kr.Offset, Key: kr.Key, Value: kr.Value}
			for _, h := range kr.Headers {
				r.Headers = append(r.Headers, consHdr{h.Key, h.Value})
			}
			if err := consSend(ctx, out, r); err != nil {
				return err
			}
			sent++
		}
	}
	return nil
}

// ---- sarama

// saramaConsumeConfig is saramaConfig for the consume tests: manual
// partitioning, the codec, and fetch limits.
func saramaConsumeConfig(c consCodec, o consumeOpts) *sarama.Config {
	cfg := saramaConfig(nil, false)
	cfg.Producer.Partitioner = sarama.NewManualPartitioner
	cfg.Producer.Retry.Max = 0
	cfg.Net.MaxOpenRequests = 1 // strict order without retries
	switch c.name {
	case "gzip":
		cfg.Producer.Compression = sarama.CompressionGZIP
	case "snappy":
		cfg.Producer.Compression = sarama.CompressionSnappy
	case "lz4":
		cfg.Producer.Compression = sarama.CompressionLZ4
	case "zstd":
		cfg.Producer.Compression = sarama.CompressionZSTD
	}
	cfg.Consumer.Return.Errors = true
	cfg.Consumer.MaxWaitTime = 500 * time.Millisecond
	cfg.Consumer.Retry.Backoff = 200 * time.Millisecond
	cfg.Metadata.Retry.Max = 20
	cfg.Metadata.Retry.Backoff = 250 * time.Millisecond
	if o.large {
		cfg.Producer.MaxMessageBytes = 4 << 20
		cfg.Consumer.Fetch.Default = 8 << 20
		cfg.Consumer.Fetch.Max = 16 << 20
	}
	return cfg
}

func produceSarama(t *testing.T, addr, topic string, recs []consRec, c consCodec, o consumeOpts) {
	t.Helper()
	p, err := sarama.NewSyncProducer([]string{addr}, saramaConsumeConfig(c, o))
	if err != nil {
		t.Fatalf("sarama NewSyncProducer: %v", err)
	}
	defer p.Close()
	msgs := make([]*sarama.ProducerMessage, len(recs))
	for i, r := range recs {
		m := &sarama.ProducerMessage{Topic: topic, Partition: 0, Value: sarama.ByteEncoder(r.Value)}
		if r.Key != nil {
			m.Key = sarama.ByteEncoder(r.Key)
		}
		for _, h := range r.Headers {
			m.Headers = append(m.Headers, sarama.RecordHeader{Key: []byte(h.Key), Value: h.Value})
		}
		msgs[i] = m
	}
	if err := p.SendMessages(msgs); err != nil {
		t.Fatalf("sarama SendMessages: %v", err)
	}
	for i, m := range msgs {
		if m.Offset != msgs[0].Offset+int64(i) {
			t.Fatalf("sarama: message %d acknowledged at offset %d, the first at %d", i, m.Offset, msgs[0].Offset)
		}
	}
}

func consumeSarama(ctx context.Context, t *testing.T, addr, topic string, from int64, n int, o consumeOpts, out chan<- consRec) error {
	c, err := sarama.NewConsumer([]string{addr}, saramaConsumeConfig(noConsCodec, o))
	if err != nil {
		return fmt.Errorf("NewConsumer: %w", err)
	}
	defer c.Close()
	pc, err := c.ConsumePartition(topic, 0, from)
	if err != nil {
		return fmt.Errorf("ConsumePartition: %w", err)
	}
	defer pc.Close()
	for sent := 0; sent < n; {
		select {
		case m := <-pc.Messages():
			r := consRec{Offset: m.Offset, Key: m.Key, Value: m.Value}
			for _, h := range m.Headers {
				r.Headers = append(r.Headers, consHdr{string(h.Key), h.Value})
			}
			if err := consSend(ctx, out, r); err != nil {
				return err
			}
			sent++
		case err := <-pc.Errors():
			t.Logf("sarama partition consumer: %v", err)
		case <-ctx.Done():
			return fmt.Errorf("after %d records: %w", sent, ctx.Err())
		}
	}
	return nil
}

// ---- segmentio/kafka-go

func kafkaGoCodec(c consCodec) kafkago.Compression {
	switch c.name {
	case "gzip":
		return kafkago.Gzip
	case "snappy":
		return kafkago.Snappy
	case "lz4":
		return kafkago.Lz4
	case "zstd":
		return kafkago.Zstd
	}
	return 0
}

func produceKafkaGo(t *testing.T, addr, topic string, recs []consRec, c consCodec, o consumeOpts) {
	t.Helper()
	// A transport of its own: the shared default one caches metadata per
	// address for seconds, and would not know a topic created since.
	tr := &kafkago.Transport{DialTimeout: 5 * time.Second, IdleTimeout: 5 * time.Second}
	defer tr.CloseIdleConnections()
	w := &kafkago.Writer{
		Addr:         kafkago.TCP(addr),
		Transport:    tr,
		Topic:        topic,
		Balancer:     kafkago.BalancerFunc(func(kafkago.Message, ...int) int { return 0 }),
		BatchTimeout: 5 * time.Millisecond,
		BatchSize:    len(recs),
		RequiredAcks: kafkago.RequireAll,
		MaxAttempts:  1,
		ReadTimeout:  10 * time.Second,
		WriteTimeout: 10 * time.Second,
		Compression:  kafkaGoCodec(c),
	}
	if o.large {
		w.BatchBytes = 4 << 20
	}
	defer w.Close()
	msgs := make([]kafkago.Message, len(recs))
	for i, r := range recs {
		m := kafkago.Message{Key: r.Key, Value: r.Value}
		for _, h := range r.Headers {
			m.Headers = append(m.Headers, kafkago.Header{Key: h.Key, Value: h.Value})
		}
		msgs[i] = m
	}
	if err := w.WriteMessages(testCtx(t), msgs...); err != nil {
		t.Fatalf("kafka-go WriteMessages: %v", err)
	}
}

func consumeKafkaGo(ctx context.Context, t *testing.T, addr, topic string, from int64, n int, o consumeOpts, out chan<- consRec) error {
	cfg := kafkago.ReaderConfig{
		Brokers:         []string{addr},
		Topic:           topic,
		Partition:       0, // and no GroupID: the reader is assigned partition 0
		MinBytes:        1,
		MaxBytes:        1 << 20,
		MaxWait:         500 * time.Millisecond,
		ReadLagInterval: -1,
		ReadBackoffMin:  50 * time.Millisecond,
		ReadBackoffMax:  500 * time.Millisecond,
		MaxAttempts:     20,
		Dialer:          &kafkago.Dialer{Timeout: 5 * time.Second, DualStack: true},
		ErrorLogger:     kafkago.LoggerFunc(func(f string, args ...any) { t.Logf("kafka-go reader: "+f, args...) }),
	}
	if o.large {
		cfg.MaxBytes = 8 << 20
	}
	r := kafkago.NewReader(cfg)
	defer r.Close()
	if err := r.SetOffset(from); err != nil {
		return fmt.Errorf("SetOffset: %w", err)
	}
	for sent := 0; sent < n; sent++ {
		m, err := r.ReadMessage(ctx)
		if err != nil {
			return fmt.Errorf("ReadMessage after %d records: %w", sent, err)
		}
		rc := consRec{Offset: m.Offset, Key: m.Key, Value: m.Value}
		for _, h := range m.Headers {
			rc.Headers = append(rc.Headers, consHdr{h.Key, h.Value})
		}
		if err := consSend(ctx, out, rc); err != nil {
			return err
		}
	}
	return nil
}

// ---- kcat (librdkafka, the system's)

// kcatFormat prints each record as a line "offset keylen valuelen", the
// key, a newline, the value, a newline, and the headers (name=value,...)
// on a line: the lengths make binary keys and values readable.
const kcatFormat = "%o %K %S\n%k\n%s\n%h\n"

func produceKcat(t *testing.T, addr, topic string, recs []consRec, c consCodec, o consumeOpts) {
	t.Helper()
	var in strings.Builder
	for _, r := range recs {
		if bytes.ContainsAny(r.Key, "\t\n") || bytes.ContainsAny(r.Value, "\t\n") {
			t.Fatalf("kcat cannot produce %q: %q", r.Key, consShort(r.Value))
		}
		fmt.Fprintf(&in, "%s\t%s\n", r.Key, r.Value)
	}
	args := []string{"-P", "-b", addr, "-t", topic, "-p", "0", "-K", "\t", "-z", c.name}
	for _, h := range kcatHeaders {
		args = append(args, "-H", h.Key+"="+string(h.Value))
	}
	if o.large {
		args = append(args, "-X", "message.max.bytes=4194304")
	}
	runKcat(t, in.String(), append(args, kcatOpts...)...)
}

func consumeKcat(ctx context.Context, t *testing.T, addr, topic string, from int64, n int, o consumeOpts, out chan<- consRec) error {
	path, err := exec.LookPath("kcat")
	if err != nil {
		return err
	}
	offset := strconv.FormatInt(from, 10)
	if from == 0 {
		offset = "beginning"
	}
	args := []string{"-C", "-u", "-b", addr, "-t", topic, "-p", "0", "-o", offset, "-c", strconv.Itoa(n), "-f", kcatFormat,
		"-X", "socket.timeout.ms=5000", "-X", "fetch.wait.max.ms=500",
		"-X", "reconnect.backoff.ms=50", "-X", "reconnect.backoff.max.ms=500"}
	if o.live {
		args = append(args, "-E") // the broker may be down a while: keep trying
	} else {
		args = append(args, "-e") // all records are there: stop at the end
	}
	if o.large {
		args = append(args, "-X", "fetch.message.max.bytes=8388608", "-X", "fetch.max.bytes=16777216", "-X", "receive.message.max.bytes=33554432")
	}
	cmd := exec.CommandContext(ctx, path, args...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	var stderr lockedBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		return err
	}
	sent := 0
	perr := parseKcat(bufio.NewReader(stdout), func(r consRec) error {
		sent++
		return consSend(ctx, out, r)
	})
	if perr != nil {
		cmd.Process.Kill() // nobody reads its output any more
	}
	werr := cmd.Wait()
	if perr != nil || werr != nil || sent != n {
		return fmt.Errorf("kcat %q: %d of %d records; parse: %v; exit: %v\nstderr:\n%s", args, sent, n, perr, werr, stderr.String())
	}
	return nil
}

// parseKcat reads kcatFormat output, calling f for each record.
func parseKcat(br *bufio.Reader, f func(consRec) error) error {
	for {
		line, err := br.ReadString('\n')
		if errors.Is(err, io.EOF) && line == "" {
			return nil
		}
		if err != nil {
			return fmt.Errorf("record line %q: %w", line, err)
		}
		var r consRec
		var klen, vlen int
		if _, err := fmt.Sscanf(line, "%d %d %d\n", &r.Offset, &klen, &vlen); err != nil {
			return fmt.Errorf("record line %q: %w", line, err)
		}
		if r.Key, err = readKcatField(br, klen); err != nil {
			return fmt.Errorf("key of offset %d: %w", r.Offset, err)
		}
		if r.Value, err = readKcatField(br, vlen); err != nil {
			return fmt.Errorf("value of offset %d: %w", r.Offset, err)
		}
		hs, err := br.ReadString('\n')
		if err != nil {
			return fmt.Errorf("headers of offset %d: %w", r.Offset, err)
		}
		if hs = strings.TrimSuffix(hs, "\n"); hs != "" {
			for _, kv := range strings.Split(hs, ",") {
				k, v, _ := strings.Cut(kv, "=")
				h := consHdr{Key: k, Value: []byte(v)}
				if v == "NULL" {
					h.Value = nil
				}
				r.Headers = append(r.Headers, h)
			}
		}
		if err := f(r); err != nil {
			return err
		}
	}
}

// readKcatField reads n bytes (none for -1, null) and the newline after them.
func readKcatField(br *bufio.Reader, n int) ([]byte, error) {
	var b []byte
	if n >= 0 {
		b = make([]byte, n)
		if _, err := io.ReadFull(br, b); err != nil {
			return nil, err
		}
	}
	if c, err := br.ReadByte(); err != nil || c != '\n' {
		return nil, fmt.Errorf("no newline after %d bytes (%q, %v)", n, c, err)
	}
	return b, nil
}
