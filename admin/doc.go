// Package admin is kbroker's admin listener (--admin-listen): one HTTP
// server for the people and programs that watch or drive a broker, beside
// the Kafka listener.
//
//	/            status page: broker, topics, groups and lag, transactions,
//	             commit-log files, throughput of the last minutes
//	/status.json the same snapshot as JSON (broker.Status)
//	/metrics     Prometheus text format (metrics.go lists the series)
//	/healthz     200 while the process serves HTTP (liveness)
//	/readyz      200 once the store is open and the Kafka listener
//	             accepts, 503 before and during shutdown (readiness)
//	/debug/vars  expvar: memstats and the broker's fetch counters
//	/debug/pprof net/http/pprof
//
// The Server owns the listener and the mux; other packages add their
// endpoints with Handle before Start (the test control endpoints of issue
// 20 are meant to live here too), so a broker has one admin port to open,
// forward and protect. Anyone who can reach it can profile the broker:
// bind it to loopback unless it is protected otherwise.
//
// Metrics are read at scrape time from the broker's own counters (plain
// atomics and internal/metric histograms on the hot paths), so the
// Prometheus client library stays out of the produce and fetch paths.
package admin
