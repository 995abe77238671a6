package main

import (
	"encoding/json"
	"errors"
	"expvar"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"time"

	"go.uber.org/zap"

	"github.com/kbroker/kbroker/broker"
)

// debugServer serves expvar and pprof for --debug-listen.
//
// It has its own mux: importing expvar and net/http/pprof also registers
// their handlers on http.DefaultServeMux, which nothing here serves.
type debugServer struct {
	srv  *http.Server
	ln   net.Listener
	done chan struct{} // closed when Serve has returned
}

// startDebug listens on addr and serves, in the background:
//
//	/debug/vars     expvar: cmdline, memstats and "kbroker", b.Stats()
//	/debug/pprof/   net/http/pprof (heap?gc=1 collects before profiling)
func startDebug(addr string, b *broker.Broker, lg *zap.Logger) (*debugServer, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("debug listener: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle("/debug/vars", varsHandler(b))
	mux.HandleFunc("/debug/pprof/", pprof.Index) // also the named profiles: heap, goroutine, ...
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	d := &debugServer{
		srv: &http.Server{
			Handler:           mux,
			ReadHeaderTimeout: 10 * time.Second,
			ErrorLog:          zap.NewStdLog(lg.Named("debug")),
		},
		ln:   ln,
		done: make(chan struct{}),
	}
	go func() {
		defer close(d.done)
		if err := d.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			lg.Warn("debug server stopped", zap.Error(err))
		}
	}()
	return d, nil
}

// Addr is the address the debug server listens on.
func (d *debugServer) Addr() string { return d.ln.Addr().String() }

// Close stops the server and its connections (a CPU profile being taken
// is cut off) and waits for Serve to return.
func (d *debugServer) Close() {
	_ = d.srv.Close() // the only error is the listener's, already closed or not
	<-d.done
}

// varsHandler is expvar's /debug/vars with one more variable, "kbroker":
// the broker's fetch counters. The variable is added per handler rather
// than with expvar.Publish, which is process-wide and panics on a second
// broker in the same process (the command's tests run several).
func varsHandler(b *broker.Broker) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		stats, err := json.Marshal(b.Stats())
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		fmt.Fprintf(w, "{\n%q: %s", "kbroker", stats)
		expvar.Do(func(kv expvar.KeyValue) {
			fmt.Fprintf(w, ",\n%q: %s", kv.Key, kv.Value)
		})
		fmt.Fprintf(w, "\n}\n")
	})
}
