package broker

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"time"
)

// ControlHandler serves the test controls of docs/TESTING-CONTROLS.md
// over HTTP, JSON in and out, for tests in any language:
//
//	GET/POST/DELETE /faults[/{id}]  fault rules (fault.Injector.Handler)
//	POST /reset                      Reset: delete everything clients made
//	POST /restart                    Restart on the same address and data
//	POST /restart?crash=true         RestartCrashed: as after a crash
//	GET  /nodes                      the nodes of a simulated cluster
//	POST /nodes/{id}/stop|start      StopNode, StartNode
//	GET  /leaders?topic=T&partition=P      PartitionLeader
//	POST /leaders {"topic","partition","node"}  MovePartitionLeader
//	GET  /coordinators?type=group&key=K    Coordinator
//	POST /coordinators {"type","key","node"}   MoveCoordinator
//
// Mount it on a listener only tests can reach (loopback): it can wipe the
// broker. Reset and restart answer {"took_ms": N} once the broker serves
// again, or 500 with {"error": "..."}.
func (ip *InProcess) ControlHandler() http.Handler {
	mux := http.NewServeMux()
	faults := ip.Faults().Handler() // the injector outlives restarts
	serveFaults := func(w http.ResponseWriter, r *http.Request) {
		r2 := new(http.Request)
		*r2 = *r
		u := *r.URL
		u.Path = "/" + strings.TrimPrefix(strings.TrimPrefix(r.URL.Path, "/faults"), "/")
		u.RawPath = ""
		r2.URL = &u
		faults.ServeHTTP(w, r2)
	}
	mux.HandleFunc("/faults", serveFaults)
	mux.HandleFunc("/faults/", serveFaults)
	mux.HandleFunc("POST /reset", ip.serveRestart(ip.Reset))
	mux.HandleFunc("POST /restart", func(w http.ResponseWriter, r *http.Request) {
		restart := ip.Restart
		if r.URL.Query().Get("crash") == "true" {
			restart = func(context.Context) error { return ip.RestartCrashed() }
		}
		ip.serveRestart(restart)(w, r)
	})
	ip.nodeControls(mux)
	return mux
}

// controlTimeout bounds a reset or restart asked over HTTP, including the
// wait for in-flight requests.
const controlTimeout = 30 * time.Second

func (ip *InProcess) serveRestart(do func(context.Context) error) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), controlTimeout)
		defer cancel()
		start := time.Now()
		w.Header().Set("Content-Type", "application/json")
		if err := do(ctx); err != nil {
			w.WriteHeader(http.StatusInternalServerError)
			json.NewEncoder(w).Encode(map[string]string{"error": err.Error()})
			return
		}
		json.NewEncoder(w).Encode(map[string]int64{"took_ms": time.Since(start).Milliseconds()})
	}
}
