package main

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// httpDo sends method to url with body and returns the status and body,
// with a client that keeps no idle connections.
func httpDo(t *testing.T, method, url, body string) (int, string) {
	t.Helper()
	cl := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := cl.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// The command serves the test controls on a loopback admin listener: a
// fault rule, a restart that keeps the seed topic's data on the same
// address, a reset that empties it, and the status page following the
// new broker.
func TestRunAdminControls(t *testing.T) {
	r := startRun(t, "--listen", "127.0.0.1:0", "--data-dir", t.TempDir(), "--admin-listen", "127.0.0.1:0", "--seed-topics", "cmd-orders:2")
	admin := "http://" + adminAddr(t, r)
	if code, body := httpDo(t, "POST", admin+"/faults", `{"api":"Metadata","times":1,"delay_ms":1}`); code != http.StatusCreated {
		t.Fatalf("POST /faults: %d %s", code, body)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(r.addr), kgo.DefaultProduceTopic("cmd-orders"), kgo.RetryTimeout(20*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx := t.Context()
	if err := cl.ProduceSync(ctx, kgo.StringRecord("x")).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if code, body := httpDo(t, "GET", admin+"/faults", ""); code != http.StatusOK || !strings.Contains(body, `"hits":1`) {
		t.Fatalf("GET /faults: %d %s", code, body)
	}
	records := func() int64 {
		t.Helper()
		ends, err := kadm.NewClient(cl).ListEndOffsets(ctx, "cmd-orders")
		if err != nil {
			t.Fatal(err)
		}
		var n int64
		ends.Each(func(o kadm.ListedOffset) { n += o.Offset })
		return n
	}
	if code, body := httpDo(t, "POST", admin+"/restart", ""); code != http.StatusOK {
		t.Fatalf("POST /restart: %d %s", code, body)
	}
	if n := records(); n != 1 {
		t.Fatalf("after restart: %d records, want 1", n)
	}
	if code, body := httpDo(t, "POST", admin+"/reset", ""); code != http.StatusOK {
		t.Fatalf("POST /reset: %d %s", code, body)
	}
	if n := records(); n != 0 {
		t.Fatalf("after reset: %d records, want 0", n)
	}
	if code, body := httpDo(t, "GET", admin+"/readyz", ""); code != http.StatusOK {
		t.Fatalf("/readyz after reset: %d %s (the admin server must follow the new broker)", code, body)
	}
}

// Off a loopback address, the controls need --admin-controls=on.
func TestAdminControlsMode(t *testing.T) {
	for _, tc := range []struct {
		listen, mode string
		want         bool
	}{
		{"127.0.0.1:0", "auto", true},
		{"localhost:0", "auto", true},
		{"[::1]:0", "auto", true},
		{"0.0.0.0:0", "auto", false},
		{"10.1.2.3:0", "auto", false},
		{"0.0.0.0:0", "on", true},
		{"127.0.0.1:0", "off", false},
	} {
		o := options{adminListen: tc.listen, adminControls: tc.mode}
		if got := o.controlsOn(); got != tc.want {
			t.Errorf("%s with %s: controls %v, want %v", tc.listen, tc.mode, got, tc.want)
		}
	}
	if _, err := parseArgs([]string{"--admin-controls", "maybe"}, io.Discard); err == nil {
		t.Error("--admin-controls maybe accepted")
	}
}

// --nodes 3 serves a simulated cluster whose node controls are on the
// admin listener: Metadata lists three brokers, a node stops and starts.
func TestRunNodesControls(t *testing.T) {
	r := startRun(t, "--listen", "127.0.0.1:0", "--data-dir", t.TempDir(), "--admin-listen", "127.0.0.1:0",
		"--nodes", "3", "--seed-topics", "cmd-nodes:3")
	admin := "http://" + adminAddr(t, r)
	cl, err := kgo.NewClient(kgo.SeedBrokers(r.addr), kgo.RetryTimeout(20*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	meta, err := kadm.NewClient(cl).BrokerMetadata(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(meta.Brokers) != 3 {
		t.Fatalf("metadata lists %d brokers, want 3", len(meta.Brokers))
	}
	if code, body := httpDo(t, "POST", admin+"/nodes/2/stop", ""); code != http.StatusOK || !strings.Contains(body, `"id":2,"live":false`) {
		t.Fatalf("POST /nodes/2/stop: %d %s", code, body)
	}
	if code, body := httpDo(t, "POST", admin+"/leaders", `{"topic":"cmd-nodes","partition":0,"node":1}`); code != http.StatusOK || !strings.Contains(body, `"leader":1`) {
		t.Fatalf("POST /leaders: %d %s", code, body)
	}
	if code, body := httpDo(t, "POST", admin+"/nodes/2/start", ""); code != http.StatusOK || strings.Contains(body, `"live":false`) {
		t.Fatalf("POST /nodes/2/start: %d %s", code, body)
	}
	if code, body := httpDo(t, "POST", admin+"/coordinators", `{"type":"group","key":"g","node":2}`); code != http.StatusOK || !strings.Contains(body, `"node":2`) {
		t.Fatalf("POST /coordinators: %d %s", code, body)
	}
	if code, body := httpDo(t, "POST", admin+"/nodes/9/stop", ""); code != http.StatusBadRequest {
		t.Fatalf("POST /nodes/9/stop: %d %s, want 400", code, body)
	}
}
