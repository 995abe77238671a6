package admin

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/broker"
)

// scrape reads /metrics in the Prometheus text format and parses it.
func scrape(t *testing.T, s *Server) map[string]*dto.MetricFamily {
	t.Helper()
	code, body := get(t, s, "/metrics")
	if code != http.StatusOK {
		t.Fatalf("/metrics: status %d\n%s", code, body)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		t.Fatalf("/metrics does not parse: %v\n%s", err, body)
	}
	return fams
}

// value is the value of the series of family name whose labels include
// labels (name=value pairs); ok is false when there is none.
func value(fams map[string]*dto.MetricFamily, name string, labels ...string) (float64, bool) {
	f := fams[name]
	if f == nil {
		return 0, false
	}
next:
	for _, m := range f.Metric {
		for i := 0; i+1 < len(labels); i += 2 {
			found := false
			for _, l := range m.Label {
				if l.GetName() == labels[i] && l.GetValue() == labels[i+1] {
					found = true
				}
			}
			if !found {
				continue next
			}
		}
		switch {
		case m.Counter != nil:
			return m.Counter.GetValue(), true
		case m.Gauge != nil:
			return m.Gauge.GetValue(), true
		case m.Histogram != nil:
			return float64(m.Histogram.GetSampleCount()), true
		}
	}
	return 0, false
}

func TestMetricsAfterWorkload(t *testing.T) {
	t.Parallel()
	b, s := startBroker(t, nil)
	w := runWorkload(t, b)

	// One request that fails: Metadata for a topic that does not exist
	// (auto-create is off).
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr("no-such-topic")
	req.Topics = append(req.Topics, rt)
	if _, err := req.RequestWith(ctx, cl); err != nil {
		t.Fatal(err)
	}

	fams := scrape(t, s)
	topic := []string{"topic", w.topic}
	part := []string{"topic", w.topic, "partition", "0"}
	group := []string{"consumergroup", w.group, "topic", w.topic, "partition", "0"}
	for _, c := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{"kafka_server_brokertopicmetrics_messagesin_total", topic, float64(w.produced)},
		{"kafka_topic_partitions", topic, 1},
		{"kafka_topic_partition_current_offset", part, float64(w.produced)},
		{"kafka_topic_partition_oldest_offset", part, 0},
		{"kafka_log_log_logendoffset", part, float64(w.produced)},
		{"kbroker_partition_last_stable_offset", part, float64(w.produced)},
		{"kafka_consumergroup_current_offset", group, float64(w.consumed)},
		{"kafka_consumergroup_lag", group, float64(w.produced - w.consumed)},
		{"kafka_consumergroup_lag_sum", []string{"consumergroup", w.group, "topic", w.topic}, float64(w.produced - w.consumed)},
		{"kafka_consumergroup_members", []string{"consumergroup", w.group}, 1},
		{"kafka_network_requestmetrics_errors_total", []string{"request", "Metadata", "error", "UNKNOWN_TOPIC_OR_PARTITION"}, 1},
		{"kafka_server_replicamanager_underreplicatedpartitions", nil, 0},
		{"kafka_controller_kafkacontroller_offlinepartitionscount", nil, 0},
		{"kbroker_transactions_in_flight", nil, 0},
		{"kbroker_metrics_partition_series_limited", nil, 0},
		{"kbroker_ready", nil, 1},
	} {
		got, ok := value(fams, c.name, c.labels...)
		if !ok {
			t.Errorf("%s%v: no series", c.name, c.labels)
		} else if got != c.want {
			t.Errorf("%s%v: got %v, want %v", c.name, c.labels, got, c.want)
		}
	}

	// Bytes: every record batch appended is still stored, so the bytes in
	// are the partition's size; each record carries its 100-byte value.
	in, _ := value(fams, "kafka_server_brokertopicmetrics_bytesin_total", topic...)
	size, _ := value(fams, "kafka_log_log_size", part...)
	if in < float64(w.produced*w.valueSize) || in != size {
		t.Errorf("bytes in %v, partition size %v: want equal and at least %d", in, size, w.produced*w.valueSize)
	}
	// The consumer fetched at least the 20 records it committed.
	if out, _ := value(fams, "kafka_server_brokertopicmetrics_bytesout_total", topic...); out < float64(w.consumed*w.valueSize) {
		t.Errorf("bytes out %v, want at least %d", out, w.consumed*w.valueSize)
	}
	// Two ProduceSync rounds: at least two Produce requests, each timed.
	var produces float64
	for _, m := range fams["kafka_network_requestmetrics_requests_total"].GetMetric() {
		for _, l := range m.Label {
			if l.GetName() == "request" && l.GetValue() == "Produce" {
				produces += m.Counter.GetValue()
			}
		}
	}
	if produces < 2 {
		t.Errorf("Produce requests: got %v, want at least 2", produces)
	}
	// Handle and queue times are recorded before the response is written;
	// the send time after, so the last one may still be on its way. The
	// producer's requests share one connection, whose writer finished
	// recording each send before writing the next response.
	for _, c := range []struct {
		phase string
		want  float64
	}{{"handle", produces}, {"queue", produces}, {"send", produces - 1}} {
		if n, ok := value(fams, "kbroker_request_latency_seconds", "request", "Produce", "phase", c.phase); !ok || n < c.want {
			t.Errorf("Produce %s latency: %v observations, want at least %v", c.phase, n, c.want)
		}
	}
	// kgo opens a connection per kind of request; at least the consumer's
	// and cl's are open, and the admin and producer clients' were.
	if n, _ := value(fams, "kafka_server_socket_server_metrics_connection_count", "listener", "PLAINTEXT"); n < 2 {
		t.Errorf("open connections: got %v, want at least 2", n)
	}
	if n, _ := value(fams, "kbroker_connections_accepted_total", "listener", "PLAINTEXT"); n < 4 {
		t.Errorf("accepted connections: got %v, want at least 4", n)
	}
	if n, _ := value(fams, "kbroker_commitlog_files"); n < 1 {
		t.Errorf("commit-log files: got %v, want at least 1", n)
	}
	if used, _ := value(fams, "kbroker_commitlog_used_bytes"); used < in {
		t.Errorf("commit log in use %v, below the bytes in %v", used, in)
	}
	if got, _ := value(fams, "kafka_server_brokertopicmetrics_messagesin_total", "topic", "__consumer_offsets"); got < 1 {
		t.Errorf("the group's commit is not counted in __consumer_offsets: %v", got)
	}
}

// TestStatusWithoutBrowser checks /status.json and the page's HTML as
// served (the Chromium test checks the page as rendered).
func TestStatusWithoutBrowser(t *testing.T) {
	t.Parallel()
	b, s := startBroker(t, nil)
	w := runWorkload(t, b)

	code, body := get(t, s, "/status.json")
	if code != http.StatusOK {
		t.Fatalf("/status.json: %d\n%s", code, body)
	}
	var st broker.Status
	if err := json.Unmarshal([]byte(body), &st); err != nil {
		t.Fatalf("/status.json: %v\n%.500s", err, body)
	}
	var lag int64 = -1
	for _, g := range st.Groups {
		if g.ID == w.group {
			lag = g.Lag()
		}
	}
	if lag != int64(w.produced-w.consumed) {
		t.Errorf("/status.json: group %s lag %d, want %d", w.group, lag, w.produced-w.consumed)
	}

	code, body = get(t, s, "/")
	if code != http.StatusOK {
		t.Fatalf("/: %d", code)
	}
	for _, want := range []string{`data-topic="` + w.topic + `"`, `data-group="` + w.group + `"`, `data-lag="5"`, `id="ready"`} {
		if !strings.Contains(body, want) {
			t.Errorf("/ lacks %s", want)
		}
	}
	for _, path := range []string{"/assets/style.css", "/assets/page.js"} {
		if code, _ := get(t, s, path); code != http.StatusOK {
			t.Errorf("%s: %d", path, code)
		}
	}
}

func TestMetricsPartitionSeriesLimit(t *testing.T) {
	t.Parallel()
	b, s := startBroker(t, func(c *broker.Config) { c.MetricsPartitionSeriesMax = 0 })
	w := runWorkload(t, b)
	fams := scrape(t, s)
	for _, name := range []string{"kafka_log_log_size", "kafka_topic_partition_current_offset", "kafka_consumergroup_lag"} {
		if f := fams[name]; f != nil && len(f.Metric) > 0 {
			t.Errorf("%s has %d series with kbroker.metrics.partition.series.max=0", name, len(f.Metric))
		}
	}
	for _, c := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{"kbroker_metrics_partition_series_limited", nil, 1},
		{"kafka_consumergroup_lag_sum", []string{"consumergroup", w.group, "topic", w.topic}, float64(w.produced - w.consumed)},
		{"kafka_server_brokertopicmetrics_messagesin_total", []string{"topic", w.topic}, float64(w.produced)},
	} {
		if got, ok := value(fams, c.name, c.labels...); !ok || got != c.want {
			t.Errorf("%s%v: got %v (present %v), want %v", c.name, c.labels, got, ok, c.want)
		}
	}
}

func TestProbes(t *testing.T) {
	t.Parallel()
	// Before the broker exists (the command starts the admin listener
	// before opening the store): alive, not ready.
	s := New(nil)
	if err := s.Start("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if code, _ := get(t, s, "/healthz"); code != http.StatusOK {
		t.Errorf("/healthz without a broker: %d, want 200", code)
	}
	if code, body := get(t, s, "/readyz"); code != http.StatusServiceUnavailable || !strings.Contains(body, "opening") {
		t.Errorf("/readyz without a broker: %d %q, want 503 saying it is opening", code, body)
	}
	if code, body := get(t, s, "/"); code != http.StatusOK || !strings.Contains(body, "not ready") {
		t.Errorf("/ without a broker: %d, want 200 and a page saying not ready\n%.300s", code, body)
	}
	fams := scrape(t, s)
	if got, ok := value(fams, "kbroker_ready"); !ok || got != 0 {
		t.Errorf("kbroker_ready without a broker: %v %v, want 0", got, ok)
	}

	b, err := broker.StartInProcess(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	s.SetBroker(b.Broker)
	if code, body := get(t, s, "/readyz"); code != http.StatusOK {
		t.Errorf("/readyz with a started broker: %d %q, want 200", code, body)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if code, _ := get(t, s, "/readyz"); code != http.StatusServiceUnavailable {
		t.Errorf("/readyz after shutdown: %d, want 503", code)
	}
	if code, _ := get(t, s, "/healthz"); code != http.StatusOK {
		t.Errorf("/healthz after shutdown: %d, want 200", code)
	}
	if code, _ := get(t, s, "/status.json"); code != http.StatusServiceUnavailable {
		t.Errorf("/status.json after shutdown: %d, want 503", code)
	}
}

// TestMetricsTransactionsAndSyncFlush checks the transaction and flush
// series on a sync-mode broker: an open transaction is in flight until it
// commits, and every acknowledged produce was completed by a group commit.
func TestMetricsTransactionsAndSyncFlush(t *testing.T) {
	t.Parallel()
	b, s := startBroker(t, func(c *broker.Config) { c.FlushMode = "sync" })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	adm, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()))
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	if _, err := kadm.NewClient(adm).CreateTopic(ctx, 1, 1, nil, "payments"); err != nil {
		t.Fatal(err)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.DefaultProduceTopic("payments"),
		kgo.TransactionalID("payments-tx"), kgo.TransactionTimeout(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if err := cl.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("v")}).FirstErr(); err != nil {
		t.Fatal(err)
	}

	fams := scrape(t, s)
	if got, _ := value(fams, "kbroker_transactions_in_flight"); got != 1 {
		t.Errorf("transactions in flight: got %v, want 1", got)
	}
	if got, _ := value(fams, "kbroker_partition_last_stable_offset", "topic", "payments", "partition", "0"); got != 0 {
		t.Errorf("last stable offset behind the open transaction: got %v, want 0", got)
	}
	if n, _ := value(fams, "kbroker_flush_duration_seconds"); n < 1 {
		t.Errorf("flushes in sync mode: %v, want at least 1", n)
	}
	var served float64
	for _, m := range fams["kbroker_group_commit_batch_size"].GetMetric() {
		served += m.Histogram.GetSampleSum()
	}
	if served < 1 {
		t.Errorf("requests completed by group commits: %v, want at least 1", served)
	}
	_, body := get(t, s, "/")
	if !strings.Contains(body, `data-txn="payments-tx"`) {
		t.Errorf("the page does not list the open transaction")
	}

	// (After EndTxn the markers are written in the background, so the
	// moment the count drops is not observable without polling.)
	if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatal(err)
	}
}
