package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"net"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/kbroker/kbroker/broker"
)

// adminAddrRE finds the admin server's address in the log, console or
// JSON.
var adminAddrRE = regexp.MustCompile(`admin listening on.*?"addr": ?"([^"]+)"`)

// adminAddr returns the address in r's "admin listening on" log line; the
// line is logged before the listening line is printed.
func adminAddr(t *testing.T, r *running) string {
	t.Helper()
	m := adminAddrRE.FindStringSubmatch(r.logs.String())
	if m == nil {
		t.Fatalf("no \"admin listening on\" line in the log:\n%s", r.logs)
	}
	return m[1]
}

// httpGet fetches url with a client that keeps no idle connections (the
// leak check at the end of the tests would see their goroutines).
func httpGet(t *testing.T, url string) (int, []byte) {
	t.Helper()
	cl := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := cl.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	return resp.StatusCode, body
}

func TestRunAdminListen(t *testing.T) {
	for _, tc := range []struct{ format, flag string }{{"console", "--admin-listen"}, {"json", "--admin-listen"}, {"console", "--debug-listen"}} {
		t.Run(tc.format+tc.flag, func(t *testing.T) {
			r := startRun(t, "--listen", "127.0.0.1:0", "--data-dir", t.TempDir(), tc.flag, "127.0.0.1:0", "--log-format", tc.format)
			addr := adminAddr(t, r)
			if host, port, err := net.SplitHostPort(addr); err != nil || host != "127.0.0.1" || port == "0" {
				t.Fatalf("admin listening on %q: want 127.0.0.1 and a real port (%v)", addr, err)
			}
			apiVersions(t, r.addr)

			code, body := httpGet(t, "http://"+addr+"/debug/vars")
			if code != http.StatusOK {
				t.Fatalf("/debug/vars: status %d\n%s", code, body)
			}
			var vars struct {
				Kbroker  *broker.Stats
				Memstats *struct{ HeapAlloc, HeapSys uint64 }
				Cmdline  []string
			}
			if err := json.Unmarshal(body, &vars); err != nil {
				t.Fatalf("/debug/vars is not JSON: %v\n%s", err, body)
			}
			if vars.Kbroker == nil || vars.Memstats == nil || vars.Memstats.HeapAlloc == 0 || vars.Memstats.HeapSys == 0 || len(vars.Cmdline) == 0 {
				t.Errorf("/debug/vars lacks kbroker, memstats or cmdline:\n%s", body)
			}
			if !bytes.Contains(body, []byte(`"kbroker": {"SendfileBytes":`)) {
				t.Errorf("/debug/vars: kbroker is not the broker's Stats:\n%.300s", body)
			}

			code, body = httpGet(t, "http://"+addr+"/debug/pprof/")
			if code != http.StatusOK || !bytes.Contains(body, []byte("goroutine")) {
				t.Errorf("/debug/pprof/: status %d\n%.500s", code, body)
			}
			code, body = httpGet(t, "http://"+addr+"/debug/pprof/heap?gc=1&debug=1")
			if code != http.StatusOK || !bytes.Contains(body, []byte("heap profile")) {
				t.Errorf("/debug/pprof/heap: status %d\n%.500s", code, body)
			}
			code, _ = httpGet(t, "http://"+addr+"/debug/pprof/cmdline")
			if code != http.StatusOK {
				t.Errorf("/debug/pprof/cmdline: status %d", code)
			}
			if code, body = httpGet(t, "http://"+addr+"/"); code != http.StatusOK || !bytes.Contains(body, []byte("<title>kbroker")) {
				t.Errorf("/: status %d, want the status page\n%.300s", code, body)
			}
			for _, path := range []string{"/healthz", "/readyz"} {
				if code, body = httpGet(t, "http://"+addr+path); code != http.StatusOK {
					t.Errorf("%s: status %d\n%s", path, code, body)
				}
			}
			if code, body = httpGet(t, "http://"+addr+"/metrics"); code != http.StatusOK || !bytes.Contains(body, []byte("kbroker_ready 1")) {
				t.Errorf("/metrics: status %d, want kbroker_ready 1\n%.500s", code, body)
			}
			// startRun fails the test on any further line on stdout.

			r.cancel()
			if err := <-r.done; err != nil {
				t.Fatalf("run: %v", err)
			}
			r.done <- nil // for the cleanup
			if _, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
				t.Errorf("admin server still listening on %s after run returned", addr)
			}
		})
	}
}

func TestRunAdminListenOffByDefault(t *testing.T) {
	r := startRun(t, "--listen", "127.0.0.1:0", "--data-dir", t.TempDir())
	apiVersions(t, r.addr)
	if logs := r.logs.String(); strings.Contains(logs, "admin listening") {
		t.Errorf("admin server started without --admin-listen:\n%s", logs)
	}
}

func TestRunAdminListenErrors(t *testing.T) {
	if _, err := parseArgs([]string{"--admin-listen", "no-port"}, io.Discard); err == nil || !strings.Contains(err.Error(), "-admin-listen") {
		t.Errorf("parseArgs(--admin-listen no-port): got %v, want an error naming the flag", err)
	}
	if _, err := parseArgs([]string{"--admin-listen", "localhost:1", "--debug-listen", "localhost:2"}, io.Discard); err == nil {
		t.Errorf("parseArgs with different --admin-listen and --debug-listen: no error")
	}
	if _, err := parseArgs([]string{"--debug-listen", "no-port"}, io.Discard); err == nil || !strings.Contains(err.Error(), "-debug-listen") {
		t.Errorf("parseArgs(--debug-listen no-port): got %v, want an error naming the flag", err)
	}
	o, err := parseArgs([]string{"--debug-listen", "localhost:6060"}, io.Discard)
	if err != nil || o.adminListen != "localhost:6060" {
		t.Errorf("parseArgs(--debug-listen localhost:6060): %+v, %v", o, err)
	}

	// An address in use fails the start: status 1 (an error), nothing on
	// stdout, and the data directory is released.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var stdout bytes.Buffer
	err = run(ctx, []string{"--listen", "127.0.0.1:0", "--data-dir", dir, "--admin-listen", ln.Addr().String()}, &stdout, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "admin: listen") || !strings.Contains(err.Error(), "address already in use") {
		t.Fatalf("got %v, want the admin listener's address already in use", err)
	}
	if stdout.Len() != 0 {
		t.Errorf("stdout %q after a failed start, want nothing", stdout.String())
	}
	r := startRun(t, "--listen", "127.0.0.1:0", "--data-dir", dir)
	apiVersions(t, r.addr)
}

func TestHelpDebugListen(t *testing.T) {
	var out bytes.Buffer
	if err := run(context.Background(), []string{"-h"}, io.Discard, &out); !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("got %v, want flag.ErrHelp", err)
	}
	for _, want := range []string{"-debug-listen address", "/debug/vars", "/debug/pprof/", "off by default"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("usage lacks %q:\n%s", want, out.String())
		}
	}
}
