package admin

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/broker"
	"github.com/kbroker/kbroker/internal/metric"
)

// The exported series. Where a Kafka user would look for a Kafka metric
// they carry its name in the form Prometheus exporters give it: the JMX
// exporter's (kafka_server_brokertopicmetrics_bytesin_total, from
// kafka.server:type=BrokerTopicMetrics,name=BytesInPerSec) or
// kafka-exporter's (kafka_consumergroup_lag); the rest are kbroker_*.
// Everything is read from the broker at scrape time.
var (
	descBrokers         = desc("kafka_brokers", "Number of brokers in the cluster (always 1).")
	descActiveCtrl      = desc("kafka_controller_kafkacontroller_activecontrollercount", "Active controllers on this broker (always 1: the single node is its own controller).")
	descOffline         = desc("kafka_controller_kafkacontroller_offlinepartitionscount", "Partitions without a leader (always 0 on a single node).")
	descUnderReplicated = desc("kafka_server_replicamanager_underreplicatedpartitions", "Under-replicated partitions (always 0: every partition has one replica, in sync).")
	descPartitionCount  = desc("kafka_server_replicamanager_partitioncount", "Partitions on this broker, internal topics included.")

	descRequests = desc("kafka_network_requestmetrics_requests_total", "Requests received, by API and version.", "request", "version")
	descErrors   = desc("kafka_network_requestmetrics_errors_total", "Error codes in responses (topic, partition and group level included), by API and error.", "request", "error")
	descLatency  = desc("kbroker_request_latency_seconds", "Request latency by phase: handle (the handler on the connection's reader), queue (from handled to the start of the write: group commit, parked fetch, earlier responses), send (writing the response).", "request", "phase")

	descBytesIn    = desc("kafka_server_brokertopicmetrics_bytesin_total", "Record-batch bytes appended, by topic.", "topic")
	descBytesOut   = desc("kafka_server_brokertopicmetrics_bytesout_total", "Record-batch bytes sent to consumers, by topic.", "topic")
	descMessagesIn = desc("kafka_server_brokertopicmetrics_messagesin_total", "Records appended, by topic.", "topic")
	descTopicParts = desc("kafka_topic_partitions", "Partitions of the topic.", "topic")

	descOldest    = desc("kafka_topic_partition_oldest_offset", "Log start offset of the partition.", "topic", "partition")
	descCurrent   = desc("kafka_topic_partition_current_offset", "High watermark of the partition (the offset the next visible record gets).", "topic", "partition")
	descLogEnd    = desc("kafka_log_log_logendoffset", "Log end offset of the partition (appended, possibly not yet visible in sync flush mode).", "topic", "partition")
	descLSO       = desc("kbroker_partition_last_stable_offset", "Last stable offset of the partition (read_committed consumers read below it).", "topic", "partition")
	descSize      = desc("kafka_log_log_size", "Bytes of the partition's record batches in the commit log.", "topic", "partition")
	descTopicSize = desc("kbroker_topic_size_bytes", "Bytes of the topic's record batches in the commit log.", "topic")
	descLimited   = desc("kbroker_metrics_partition_series_limited", "1 when per-partition series are left out (kbroker.metrics.partition.series.max).")

	descGroupOffset  = desc("kafka_consumergroup_current_offset", "Committed offset of the group on the partition.", "consumergroup", "topic", "partition")
	descGroupLag     = desc("kafka_consumergroup_lag", "High watermark minus the group's committed offset.", "consumergroup", "topic", "partition")
	descGroupLagSum  = desc("kafka_consumergroup_lag_sum", "Sum of the group's lag over the topic's partitions.", "consumergroup", "topic")
	descGroupMembers = desc("kafka_consumergroup_members", "Members of the group.", "consumergroup")
	descGroupState   = desc("kbroker_consumergroup_info", "Consumer group type and state (value 1).", "consumergroup", "type", "state")

	descTxns = desc("kbroker_transactions_in_flight", "Transactions ongoing or being completed (Ongoing, PrepareCommit, PrepareAbort).")

	descFlushLatency = desc("kbroker_flush_duration_seconds", "Duration of each flush (msync/fdatasync) that made commit-log bytes durable.")
	descFlushBatch   = desc("kbroker_group_commit_batch_size", "Produce requests completed by each flush (group commit; 0 in the async modes).")
	descFlushLag     = desc("kbroker_flush_lag_bytes", "Commit-log bytes written but not yet durable.")
	descFiles        = desc("kbroker_commitlog_files", "Commit-log files.")
	descAllocated    = desc("kbroker_commitlog_allocated_bytes", "Bytes allocated on disk by the commit-log files.")
	descInUse        = desc("kbroker_commitlog_used_bytes", "Bytes written in the commit-log files.")
	descDeleted      = desc("kbroker_commitlog_deleted_files_total", "Commit-log files deleted by retention.")
	descWrote        = desc("kbroker_commitlog_write_position_bytes", "Global commit-log position of the end of the data.")
	descFlushed      = desc("kbroker_commitlog_flushed_position_bytes", "Global commit-log position up to which data is durable.")

	descSendfile = desc("kbroker_fetch_sendfile_bytes_total", "Fetch bytes sent from the commit-log files with sendfile(2) (process-wide).")
	descFallback = desc("kbroker_fetch_fallback_bytes_total", "Fetch bytes sent with pread and write where sendfile could not be used (process-wide).")
	descCopied   = desc("kbroker_fetch_copied_bytes_total", "Fetch bytes copied out of the mapping (ranges below kbroker.fetch.copy.threshold.bytes).")

	descConns    = desc("kafka_server_socket_server_metrics_connection_count", "Open client connections, by listener.", "listener")
	descAccepted = desc("kbroker_connections_accepted_total", "Client connections accepted, by listener.", "listener")
	descRefused  = desc("kbroker_connections_refused_total", "Client connections closed at accept by max.connections or max.connections.per.ip, by listener.", "listener")

	descAuthOK      = desc("kafka_server_socket_server_metrics_successful_authentication_total", "Successful SASL logins, re-authentications included (all listeners).")
	descAuthFailed  = desc("kafka_server_socket_server_metrics_failed_authentication_total", "Refused SASL logins (all listeners).")
	descReauth      = desc("kafka_server_socket_server_metrics_successful_reauthentication_total", "Successful SASL re-authentications, KIP-368 (all listeners).")
	descExpiredSess = desc("kbroker_expired_sessions_total", "Connections closed because their SASL session expired before re-authentication.")

	descReady   = desc("kbroker_ready", "1 while the broker serves clients (store open, listener accepting), as /readyz.")
	descBuild   = desc("kbroker_build_info", "Build information (value 1).", "version", "goversion")
	descStarted = desc("kbroker_start_time_seconds", "When the broker started listening, in seconds since the epoch.")
)

func desc(name, help string, labels ...string) *prometheus.Desc {
	return prometheus.NewDesc(name, help, labels, nil)
}

// collector exports the broker's state at scrape time.
type collector struct {
	b func() *broker.Broker
}

func newCollector(b func() *broker.Broker) *collector { return &collector{b: b} }

// Describe sends every descriptor; the collector is checked.
func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{
		descBrokers, descActiveCtrl, descOffline, descUnderReplicated, descPartitionCount,
		descRequests, descErrors, descLatency, descBytesIn, descBytesOut, descMessagesIn, descTopicParts,
		descOldest, descCurrent, descLogEnd, descLSO, descSize, descTopicSize, descLimited,
		descGroupOffset, descGroupLag, descGroupLagSum, descGroupMembers, descGroupState, descTxns,
		descFlushLatency, descFlushBatch, descFlushLag, descFiles, descAllocated, descInUse, descDeleted,
		descWrote, descFlushed, descSendfile, descFallback, descCopied, descConns, descAccepted, descRefused,
		descAuthOK, descAuthFailed, descReauth, descExpiredSess, descBuild, descStarted, descReady,
	} {
		ch <- d
	}
}

// Collect reads one broker.Status and the request metrics.
func (c *collector) Collect(ch chan<- prometheus.Metric) {
	b := c.b()
	if b == nil || b.Ready() != nil {
		// Opening (recovery) or shutting down: the store is not to be
		// read; only readiness is reported.
		ch <- prometheus.MustNewConstMetric(descReady, prometheus.GaugeValue, 0)
		return
	}
	ch <- prometheus.MustNewConstMetric(descReady, prometheus.GaugeValue, 1)
	st := b.Status()
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	counter := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v, labels...)
	}
	histogram := func(d *prometheus.Desc, h *metric.Histogram, labels ...string) {
		n, sum, buckets := h.Snapshot()
		ch <- prometheus.MustNewConstHistogram(d, n, sum, buckets, labels...)
	}

	gauge(descBrokers, 1)
	gauge(descActiveCtrl, 1)
	gauge(descOffline, 0)
	gauge(descUnderReplicated, 0)
	gauge(descBuild, 1, st.Version, st.GoVersion)
	if !st.StartedAt.IsZero() {
		gauge(descStarted, float64(st.StartedAt.UnixNano())/1e9)
	}

	b.RequestMetrics(func(a *broker.APIMetrics) {
		name := kmsg.NameForKey(a.Key)
		for v := range a.Requests {
			if n := a.Requests[v].Load(); n > 0 {
				counter(descRequests, float64(n), name, strconv.Itoa(v))
			}
		}
		a.EachError(func(code int16, n uint64) {
			counter(descErrors, float64(n), name, errorName(code))
		})
		if n, _, _ := a.Handle.Snapshot(); n > 0 {
			histogram(descLatency, a.Handle, name, "handle")
			histogram(descLatency, a.Queue, name, "queue")
			histogram(descLatency, a.Send, name, "send")
		}
	})

	limit := b.Config().MetricsPartitionSeriesMax
	parts := 0
	for _, t := range st.Topics {
		parts += len(t.Partitions)
	}
	perPartition := parts <= limit
	limited := 0.0
	gauge(descPartitionCount, float64(parts))
	for _, t := range st.Topics {
		var in, out, recs, size int64
		for _, p := range t.Partitions {
			in, out, recs, size = in+p.BytesIn, out+p.BytesOut, recs+p.RecordsIn, size+p.Size
			if !perPartition {
				continue
			}
			idx := strconv.Itoa(int(p.Index))
			gauge(descOldest, float64(p.LogStart), t.Name, idx)
			gauge(descCurrent, float64(p.HighWatermark), t.Name, idx)
			gauge(descLogEnd, float64(p.LogEnd), t.Name, idx)
			gauge(descLSO, float64(p.LastStable), t.Name, idx)
			gauge(descSize, float64(p.Size), t.Name, idx)
		}
		gauge(descTopicParts, float64(len(t.Partitions)), t.Name)
		gauge(descTopicSize, float64(size), t.Name)
		counter(descBytesIn, float64(in), t.Name)
		counter(descBytesOut, float64(out), t.Name)
		counter(descMessagesIn, float64(recs), t.Name)
	}
	if !perPartition {
		limited = 1
	}

	committed := 0
	for _, g := range st.Groups {
		committed += len(g.Offsets)
	}
	perGroupPartition := committed <= limit
	if !perGroupPartition {
		limited = 1
	}
	gauge(descLimited, limited)
	for _, g := range st.Groups {
		gauge(descGroupMembers, float64(g.Members), g.ID)
		gauge(descGroupState, 1, g.ID, g.Type, g.State)
		sums := map[string]int64{}
		for _, o := range g.Offsets {
			sums[o.Topic] += o.Lag
			if perGroupPartition {
				idx := strconv.Itoa(int(o.Partition))
				gauge(descGroupOffset, float64(o.Offset), g.ID, o.Topic, idx)
				gauge(descGroupLag, float64(o.Lag), g.ID, o.Topic, idx)
			}
		}
		for topic, lag := range sums {
			gauge(descGroupLagSum, float64(lag), g.ID, topic)
		}
	}
	gauge(descTxns, float64(len(st.Transactions)))

	cl := st.CommitLog
	histogram(descFlushLatency, cl.Flushes.Latency)
	histogram(descFlushBatch, cl.Flushes.Batch)
	gauge(descFlushLag, float64(max(cl.Wrote-cl.Flushed, 0)))
	var allocated, used int64
	for _, f := range cl.Files {
		allocated += f.Size
		used += f.Wrote
	}
	gauge(descFiles, float64(len(cl.Files)))
	gauge(descAllocated, float64(allocated))
	gauge(descInUse, float64(used))
	counter(descDeleted, float64(cl.DeletedFiles))
	gauge(descWrote, float64(cl.Wrote))
	gauge(descFlushed, float64(cl.Flushed))

	counter(descSendfile, float64(st.Stats.SendfileBytes))
	counter(descFallback, float64(st.Stats.FallbackBytes))
	counter(descCopied, float64(st.Stats.CopiedBytes))
	for _, l := range st.Stats.Listeners {
		gauge(descConns, float64(l.Open), l.Name)
		counter(descAccepted, float64(l.Accepted), l.Name)
		counter(descRefused, float64(l.Refused), l.Name)
	}
	counter(descAuthOK, float64(st.Stats.Authentications))
	counter(descAuthFailed, float64(st.Stats.FailedAuthentications))
	counter(descReauth, float64(st.Stats.Reauthentications))
	counter(descExpiredSess, float64(st.Stats.ExpiredSessions))
}

// errorName is a Kafka error code's name (NOT_LEADER_OR_FOLLOWER), as the
// error tag of Kafka's ErrorsPerSec.
func errorName(code int16) string {
	if e := kerr.TypedErrorForCode(code); e != nil && (e.Code == code || code == kerr.UnknownServerError.Code) {
		return e.Message
	}
	return "CODE_" + strconv.Itoa(int(code))
}
