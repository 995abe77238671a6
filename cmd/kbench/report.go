package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strings"
)

// metrics are one measurement's numbers by key (see the columns below).
type metrics map[string]float64

// sample is one measurement: a case of a workload, on one broker, in one
// round.
type sample struct {
	Workload string  `json:"workload"`
	Case     string  `json:"case"`
	Broker   string  `json:"broker"`
	Round    int     `json:"round"`
	Metrics  metrics `json:"metrics"`
}

// results collects the samples of a run, in the order they were taken.
type results struct{ samples []sample }

// add records a sample; NaN and infinite values (nothing measured) are
// left out.
func (r *results) add(workload, caseName, broker string, round int, m metrics) {
	for k, v := range m {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			delete(m, k)
		}
	}
	r.samples = append(r.samples, sample{workload, caseName, broker, round, m})
}

// column is one column of a report table.
type column struct {
	key, header string
	// digits after the decimal point.
	digits int
}

// report describes the table of one workload.
type report struct {
	workload, title string
	cols            []column
}

var (
	colRecords   = column{"records_s", "records/s", 0}
	colMB        = column{"mb_s", "MB/s", 1}
	colAckP50    = column{"ack_p50", "ack p50 ms", 2}
	colAckP99    = column{"ack_p99", "ack p99 ms", 2}
	colBrokerCPU = column{"broker_cpu", "broker CPU-s/GB", 2}
	colClientCPU = column{"client_cpu", "client CPU-s/GB", 2}
	colAlloc     = column{"alloc_mb_gb", "broker alloc MB/GB", 0}
	// The broker's resident memory (rss.go): peak, and the medians of
	// all of it and of its anonymous part.
	colPeakRSS = column{"rss_peak_mb", "peak RSS MB", 0}
	colRSS     = column{"rss_mb", "RSS MB", 0}
	colAnonRSS = column{"rss_anon_mb", "anon RSS MB", 0}
)

// reports are printed in this order, for the workloads that ran.
var reports = []report{
	{"produce", "Produce (one kgo client, acks=all, idempotent, linger 0, no compression)",
		[]column{colRecords, colMB, colAckP50, colAckP99, colBrokerCPU, colClientCPU, colAlloc, colPeakRSS, colRSS, colAnonRSS}},
	{"raw", "Raw produce (prebuilt requests, acks=all, non-idempotent, no client library)",
		[]column{colRecords, colMB, colAckP50, colAckP99, colBrokerCPU, colClientCPU, colAlloc, colPeakRSS, colRSS, colAnonRSS}},
	{"consume", "Consume (new kgo clients read the topic from the start; see the case for how many)",
		[]column{colRecords, colMB, colBrokerCPU, colClientCPU, {"fetch_kb", "KiB/fetch", 0}, {"fetch_ms", "fetch p50 ms", 2},
			colAlloc, {"join_ms", "first record ms", 1}, colPeakRSS, colRSS, colAnonRSS}},
	{"rawconsume", "Raw consume (Fetch v11 on raw connections, kgo's default limits, batch headers walked, no client library)",
		[]column{colRecords, colMB, colBrokerCPU, colClientCPU, {"fetch_kb", "KiB/fetch", 0}, {"fetch_ms", "fetch p50 ms", 2},
			colAlloc, colPeakRSS, colRSS, colAnonRSS}},
	{"e2e", "End to end (1 KiB records at a fixed rate, produce call to poll)",
		[]column{{"p50", "p50 ms", 2}, {"p99", "p99 ms", 2}, {"p999", "p99.9 ms", 2}, {"max", "max ms", 2},
			colRecords, {"broker_cores", "broker cores", 3}, colPeakRSS, colRSS, colAnonRSS}},
	{"sync", fmt.Sprintf("Flush: %d producers at once, 1 KiB records, one partition each", syncProducers),
		[]column{colRecords, colMB, colAckP50, colAckP99, colBrokerCPU, colPeakRSS, colRSS, colAnonRSS}},
	{"startup", "Start-up (to answering ApiVersions and Metadata)",
		[]column{{"ready_ms", "exec to ready ms", 1}, {"open_ms", "open ms (in process)", 1},
			{"rss_peak_mb", "peak RSS MB (since exec)", 0}, {"rss_mb", "RSS MB (ready)", 0}, colAnonRSS}},
	{"scale", "Scale: what partitions cost (topics created one request each, one 100 B record per partition)",
		[]column{{"create_p50", "CreateTopics p50 ms", 2}, {"create_p99", "p99 ms", 2},
			{"idle_du_mb", "idle du MiB", 1}, {"du_kb_part", "du KiB/partition", 1}, {"heap_kb_part", "heap KiB/partition", 2},
			{"meta_ms", "Metadata all ms", 2}, {"start_clean_ms", "start clean ms", 0}, {"start_kill_ms", "start after kill -9 ms", 0},
			{"deleted_du_mb", "du after delete MiB", 1}}},
	{"scalebatch", "Scale: one CreateTopics request for 1,000 one-partition topics",
		[]column{{"create_ms", "request ms", 0}, {"du_mb", "du MiB", 1}}},
}

// print writes every table: medians over the rounds with the spread of
// the first column ((max−min)/median), then the ratios of each kbroker to
// each kfake of the same flush mode and, for the flush workload, sync
// over async.
func (r *results) print(w io.Writer) {
	for _, rep := range reports {
		cases, brokers := r.casesAndBrokers(rep.workload)
		if len(cases) == 0 {
			continue
		}
		fmt.Fprintf(w, "\n### %s\n\n", rep.title)
		head := []string{"case", "broker"}
		for _, c := range rep.cols {
			head = append(head, c.header)
		}
		head = append(head, "± "+rep.cols[0].header, "rounds")
		var rows [][]string
		for _, cs := range cases {
			for _, b := range brokers {
				vs := r.values(rep.workload, cs, b, rep.cols[0].key)
				if len(vs) == 0 {
					continue
				}
				row := []string{cs, b}
				for _, c := range rep.cols {
					row = append(row, format(median(r.values(rep.workload, cs, b, c.key)), c.digits))
				}
				row = append(row, fmt.Sprintf("%.0f %%", spread(vs)), fmt.Sprint(len(vs)))
				rows = append(rows, row)
			}
		}
		writeTable(w, head, rows)
		r.printRatios(w, rep, cases, brokers)
	}
}

// printRatios prints the ratios of medians, ours over theirs, for every
// pair of a kbroker and a kfake or Kafka of the same flush mode, of a kbroker or a
// floor over kfake-disk and of a kbroker over a floor, and for the flush
// workload each broker's sync over async.
func (r *results) printRatios(w io.Writer, rep report, cases, brokers []string) {
	type pair struct{ a, b string }
	var pairs []pair
	for _, a := range brokers {
		for _, b := range brokers {
			sameMode := strings.HasSuffix(a, "-sync") == strings.HasSuffix(b, "-sync")
			ours := strings.HasPrefix(a, "kbroker")
			floor := strings.HasPrefix(a, "floor")
			if sameMode && (ours && (strings.HasPrefix(b, "kfake") || strings.TrimSuffix(b, "-sync") == "kafka") ||
				floor && b == "kfake-disk" ||
				ours && strings.HasPrefix(b, "floor")) {
				pairs = append(pairs, pair{a, b})
			}
		}
	}
	if rep.workload == "sync" {
		for _, a := range brokers {
			if async, ok := strings.CutSuffix(a, "-sync"); ok && slices.Contains(brokers, async) {
				pairs = append(pairs, pair{a, async})
			}
		}
	}
	if len(pairs) == 0 {
		return
	}
	fmt.Fprintf(w, "\nRatios of medians (higher is better for rates, lower for latency, CPU and allocation):\n\n")
	head := []string{"case", "ratio"}
	for _, c := range rep.cols {
		head = append(head, c.header)
	}
	var rows [][]string
	for _, cs := range cases {
		for _, p := range pairs {
			if len(r.values(rep.workload, cs, p.a, rep.cols[0].key)) == 0 || len(r.values(rep.workload, cs, p.b, rep.cols[0].key)) == 0 {
				continue
			}
			row := []string{cs, p.a + " / " + p.b}
			for _, c := range rep.cols {
				a := median(r.values(rep.workload, cs, p.a, c.key))
				b := median(r.values(rep.workload, cs, p.b, c.key))
				row = append(row, formatRatio(a/b))
			}
			rows = append(rows, row)
		}
	}
	writeTable(w, head, rows)
}

// casesAndBrokers lists a workload's cases and brokers in the order they
// first appear.
func (r *results) casesAndBrokers(workload string) (cases, brokers []string) {
	for _, s := range r.samples {
		if s.Workload != workload {
			continue
		}
		if !slices.Contains(cases, s.Case) {
			cases = append(cases, s.Case)
		}
		if !slices.Contains(brokers, s.Broker) {
			brokers = append(brokers, s.Broker)
		}
	}
	slices.SortStableFunc(brokers, func(a, b string) int { return brokerRank(a) - brokerRank(b) })
	return cases, brokers
}

// brokerRank orders brokers: kbroker first, then Kafka, kfake-disk,
// kfake-mem, then the floors.
func brokerRank(name string) int {
	for i, k := range []string{"kbroker", "kbroker-bin", "kafka", "kfake-disk", "kfake-mem", "floor-null", "floor-write", "floor-read", "external"} {
		if strings.TrimSuffix(name, "-sync") == k {
			return i
		}
	}
	return 99
}

// values are the key's values over the rounds (NaN left out).
func (r *results) values(workload, cs, broker, key string) []float64 {
	var vs []float64
	for _, s := range r.samples {
		if s.Workload == workload && s.Case == cs && s.Broker == broker {
			if v, ok := s.Metrics[key]; ok && !math.IsNaN(v) && !math.IsInf(v, 0) {
				vs = append(vs, v)
			}
		}
	}
	return vs
}

// format prints v with digits decimals, thousands grouped, "–" for NaN.
func format(v float64, digits int) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "–"
	}
	s := fmt.Sprintf("%.*f", digits, v)
	intPart, frac, _ := strings.Cut(s, ".")
	neg := strings.HasPrefix(intPart, "-")
	intPart = strings.TrimPrefix(intPart, "-")
	var b strings.Builder
	for i, ch := range intPart {
		if i > 0 && (len(intPart)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(ch)
	}
	out := b.String()
	if neg {
		out = "-" + out
	}
	if frac != "" {
		out += "." + frac
	}
	return out
}

// formatRatio prints a ratio of medians as "0.42×", or as "1/250" when
// it is below 0.01 (start-up against Kafka), where two decimals would
// print 0.00×; "–" when it is undefined.
func formatRatio(r float64) string {
	switch {
	case math.IsNaN(r) || math.IsInf(r, 0):
		return "–"
	case r > 0 && r < 0.01:
		return "1/" + format(1/r, 0)
	}
	return format(r, 2) + "×"
}

// writeTable writes a Markdown table.
func writeTable(w io.Writer, head []string, rows [][]string) {
	fmt.Fprintf(w, "| %s |\n", strings.Join(head, " | "))
	fmt.Fprintf(w, "|%s\n", strings.Repeat(" --- |", len(head)))
	for _, row := range rows {
		fmt.Fprintf(w, "| %s |\n", strings.Join(row, " | "))
	}
}

// writeJSON writes every sample to path.
func (r *results) writeJSON(path string) error {
	b, err := json.MarshalIndent(r.samples, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}
