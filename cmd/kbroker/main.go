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
// --debug-listen ADDR (off by default) serves expvar at /debug/vars (the
// runtime's memstats and a "kbroker" variable with the fetch counters of
// broker.Stats) and net/http/pprof at /debug/pprof/ on ADDR; the address
// bound is logged ("debug listening on"), not printed on standard output:
//
//	kbroker --debug-listen localhost:6060
//	curl -s localhost:6060/debug/vars | jq .kbroker
//	go tool pprof http://localhost:6060/debug/pprof/profile?seconds=10
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
