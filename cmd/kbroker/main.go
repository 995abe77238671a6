// Command kbroker runs a single-node, Kafka-wire-compatible broker.
//
// With no arguments it listens on localhost:9092 and keeps its data in
// ./kbroker-data, ready for kcat or any Kafka client:
//
//	kbroker
//	kbroker --listen 0.0.0.0:9092 --advertised-listener myhost:9092 --data-dir /var/lib/kbroker
//	kbroker --config server.properties --flush sync
//
// Settings can come from a file of key=value lines with Kafka's property
// names (server.properties style); flags given explicitly override it. When
// the broker is ready, exactly one line goes to standard output:
//
//	kbroker listening on 127.0.0.1:9092
//
// with the address actually bound (so --listen 127.0.0.1:0 can be used by
// scripts and tests). Logs go to standard error. SIGINT or SIGTERM stops
// the broker cleanly (in-flight requests finish, the store is flushed and
// checkpointed, waiting at most 30 s); a second signal exits at once with
// status 1, leaving recovery to the next start.
//
// --admin-listen ADDR (off by default) serves the admin endpoints of
// package admin on ADDR: the status page at /, Prometheus metrics at
// /metrics, the probes /healthz and /readyz, /status.json, expvar at
// /debug/vars (memstats and a "kbroker" variable with broker.Stats) and
// net/http/pprof at /debug/pprof/. It starts before the store is opened,
// so that a long recovery is visible (/readyz answers 503 until the broker
// serves). The address bound is logged ("admin listening on"), not printed
// on standard output. --debug-listen is its former name:
//
//	kbroker --admin-listen localhost:9644
//	curl -s localhost:9644/metrics | grep kafka_consumergroup_lag
//	go tool pprof http://localhost:9644/debug/pprof/profile?seconds=10
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
)

func main() {
	err := run(context.Background(), os.Args[1:], os.Stdout, os.Stderr)
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
	default:
		fmt.Fprintf(os.Stderr, "kbroker: %v\n", err)
		os.Exit(1)
	}
}
