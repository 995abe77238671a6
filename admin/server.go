package admin

import (
	"encoding/json"
	"errors"
	"expvar"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.uber.org/zap"

	"github.com/kbroker/kbroker/broker"
)

// Server is the admin HTTP server of one broker. It may start before the
// broker exists (SetBroker), so that a long recovery is visible: /healthz
// answers at once, /readyz says 503 until the broker serves.
type Server struct {
	b   atomic.Pointer[broker.Broker]
	lg  *zap.Logger
	mux *http.ServeMux
	reg *prometheus.Registry
	// history samples the broker's traffic for the status page's charts.
	history *history

	mu struct {
		sync.Mutex
		srv *http.Server
		ln  net.Listener
	}
	// done is closed when Serve has returned (after Start).
	done chan struct{}
	// stop ends the sampler.
	stop chan struct{}
	wg   sync.WaitGroup
}

// Option configures a Server's dependencies.
type Option func(*Server)

// WithLogger sets the logger; the default discards everything.
func WithLogger(lg *zap.Logger) Option { return func(s *Server) { s.lg = lg } }

// New returns a server with every built-in endpoint registered (see the
// package comment) for b, which may be nil until SetBroker. Add more
// endpoints with Handle, then Start it.
func New(b *broker.Broker, opts ...Option) *Server {
	s := &Server{
		lg:   zap.NewNop(),
		mux:  http.NewServeMux(),
		reg:  prometheus.NewRegistry(),
		done: make(chan struct{}),
		stop: make(chan struct{}),
	}
	for _, o := range opts {
		o(s)
	}
	s.b.Store(b)
	s.history = newHistory(s.broker)
	// The registry is the server's own, not prometheus.DefaultRegisterer:
	// several brokers in one process (tests) each export their own.
	s.reg.MustRegister(
		newCollector(s.broker),
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	s.mux.Handle("GET /metrics", promhttp.HandlerFor(s.reg, promhttp.HandlerOpts{
		ErrorLog:          zap.NewStdLog(s.lg),
		ErrorHandling:     promhttp.ContinueOnError,
		EnableOpenMetrics: true,
	}))
	s.mux.HandleFunc("GET /healthz", s.healthz)
	s.mux.HandleFunc("GET /readyz", s.readyz)
	s.mux.HandleFunc("GET /status.json", s.statusJSON)
	s.mux.HandleFunc("GET /{$}", s.statusPage)
	s.mux.Handle("GET /assets/", http.FileServerFS(assets))
	s.mux.Handle("GET /debug/vars", varsHandler(s.broker))
	s.mux.HandleFunc("/debug/pprof/", pprof.Index) // also the named profiles: heap, goroutine, ...
	s.mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	s.mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	s.mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	s.mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	return s
}

// SetBroker sets the broker the server reports on, once it is open.
func (s *Server) SetBroker(b *broker.Broker) { s.b.Store(b) }

// broker is the broker, or nil while it is being opened.
func (s *Server) broker() *broker.Broker { return s.b.Load() }

// serving is the broker if it serves clients, or nil and why not.
func (s *Server) serving() (*broker.Broker, error) {
	b := s.broker()
	if b == nil {
		return nil, errOpening
	}
	if err := b.Ready(); err != nil {
		return nil, err
	}
	return b, nil
}

// errOpening is the reason for not being ready before SetBroker.
var errOpening = errors.New("admin: the broker is opening its store (recovery may take a while)")

// Handle registers h for pattern (http.ServeMux syntax, e.g.
// "POST /control/reset"). Call it before Start; it panics on a pattern
// that conflicts with one already registered, as ServeMux does.
func (s *Server) Handle(pattern string, h http.Handler) { s.mux.Handle(pattern, h) }

// Registry is the server's Prometheus registry, for other packages'
// collectors.
func (s *Server) Registry() *prometheus.Registry { return s.reg }

// Handler is the server's mux, for tests and for serving it elsewhere.
func (s *Server) Handler() http.Handler { return s.mux }

// Start listens on addr (host:port; port 0 picks a free one) and serves in
// the background until Close.
func (s *Server) Start(addr string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("admin: listen on %s: %w", addr, err)
	}
	srv := &http.Server{
		Handler:           s.mux,
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          zap.NewStdLog(s.lg),
	}
	s.mu.Lock()
	s.mu.srv, s.mu.ln = srv, ln
	s.mu.Unlock()
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		s.history.run(s.stop)
	}()
	go func() {
		defer close(s.done)
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.lg.Warn("admin server stopped", zap.Error(err))
		}
	}()
	return nil
}

// Addr is the address the server listens on ("" before Start).
func (s *Server) Addr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mu.ln == nil {
		return ""
	}
	return s.mu.ln.Addr().String()
}

// Close stops the server and its connections (a CPU profile being taken
// is cut off) and waits for its goroutines.
func (s *Server) Close() {
	s.mu.Lock()
	srv := s.mu.srv
	s.mu.Unlock()
	select {
	case <-s.stop:
		return // closed already
	default:
		close(s.stop)
	}
	if srv != nil {
		_ = srv.Close() // the only error is the listener's, already closed or not
		<-s.done
	}
	s.wg.Wait()
}

// healthz is the liveness probe: the process answers HTTP. It does not
// look at the broker, so that a broker busy recovering or shutting down
// is not restarted for it.
func (s *Server) healthz(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	fmt.Fprintln(w, "ok")
}

// readyz is the readiness probe: 200 once the store is open and the Kafka
// listener accepts, 503 otherwise (before Start, during Shutdown).
func (s *Server) readyz(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	if _, err := s.serving(); err != nil {
		w.WriteHeader(http.StatusServiceUnavailable)
		fmt.Fprintln(w, "not ready:", err)
		return
	}
	fmt.Fprintln(w, "ready")
}

// statusJSON serves broker.Status as JSON.
func (s *Server) statusJSON(w http.ResponseWriter, _ *http.Request) {
	b, err := s.serving()
	if err != nil {
		http.Error(w, "not ready: "+err.Error(), http.StatusServiceUnavailable)
		return
	}
	st := b.Status()
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(&st); err != nil {
		s.lg.Debug("write status.json", zap.Error(err))
	}
}

// varsHandler is expvar's /debug/vars with one more variable, "kbroker":
// the broker's fetch counters. The variable is added per handler rather
// than with expvar.Publish, which is process-wide and panics on a second
// broker in the same process (tests run several).
func varsHandler(get func() *broker.Broker) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		var stats []byte
		var err error
		if b := get(); b != nil {
			stats, err = json.Marshal(b.Stats())
		} else {
			stats, err = json.Marshal(broker.Stats{})
		}
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
