package broker

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// The controls over HTTP, as a test in another language uses them: a
// fault rule makes a produce retry, reset empties the broker, restart
// keeps the data.
func TestControlHTTP(t *testing.T) {
	t.Parallel()
	srv := newTestServer(t, func(c *Config) { c.SeedTopics = "events" })
	hs := httptest.NewServer(srv.ControlHandler())
	t.Cleanup(hs.Close)
	call := func(method, path, body string, wantStatus int) string {
		t.Helper()
		req, err := http.NewRequestWithContext(testCtx(t), method, hs.URL+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		resp, err := hs.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != wantStatus {
			t.Fatalf("%s %s: %d %s, want %d", method, path, resp.StatusCode, b, wantStatus)
		}
		return string(b)
	}

	call("POST", "/faults", `{"api":"Produce","topic":"events","times":1,"error":"NOT_LEADER_OR_FOLLOWER"}`, http.StatusCreated)
	prod := newClient(t, srv, kgo.DefaultProduceTopic("events"), kgo.MetadataMinAge(50*time.Millisecond))
	if err := prod.ProduceSync(testCtx(t), kgo.StringRecord("e1")).FirstErr(); err != nil {
		t.Fatal(err)
	}
	var rules []struct {
		Hits    int64 `json:"hits"`
		Matched int64 `json:"matched"`
	}
	if err := json.Unmarshal([]byte(call("GET", "/faults", "", http.StatusOK)), &rules); err != nil {
		t.Fatal(err)
	}
	if len(rules) != 1 || rules[0].Hits != 1 || rules[0].Matched != 2 {
		t.Fatalf("rules %+v, want one with 1 hit of 2 matches", rules)
	}
	call("DELETE", "/faults/", "", http.StatusNoContent)

	if out := call("POST", "/restart", "", http.StatusOK); !strings.Contains(out, "took_ms") {
		t.Fatalf("restart: %s", out)
	}
	endOf := func() int64 {
		t.Helper()
		offs, err := newAdmin(t, srv).ListEndOffsets(testCtx(t), "events")
		if err != nil {
			t.Fatal(err)
		}
		o, _ := offs.Lookup("events", 0)
		return o.Offset
	}
	if end := endOf(); end != 1 {
		t.Fatalf("after restart events ends at %d, want 1", end)
	}
	call("POST", "/restart?crash=true", "", http.StatusOK)
	if end := endOf(); end != 1 {
		t.Fatalf("after a crash-like restart events ends at %d, want 1", end)
	}
	call("POST", "/reset", "", http.StatusOK)
	if end := endOf(); end != 0 {
		t.Fatalf("after reset events ends at %d, want 0 (seeded again, empty)", end)
	}
	call("GET", "/reset", "", http.StatusMethodNotAllowed)
}
