package fault

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestHandler(t *testing.T) {
	in := New()
	srv := httptest.NewServer(http.StripPrefix("/faults", in.Handler()))
	defer srv.Close()
	do := func(method, path, body string) (int, string) {
		t.Helper()
		req, err := http.NewRequest(method, srv.URL+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	code, body := do("POST", "/faults/", `{"api":"Produce","topic":"X","after":2,"times":1,"error":"NOT_LEADER_OR_FOLLOWER"}`)
	if code != http.StatusCreated || !strings.Contains(body, `"id":1`) {
		t.Fatalf("add: %d %s", code, body)
	}
	if code, body = do("POST", "/faults/", `{"api":"Produce","eror":"6"}`); code != http.StatusBadRequest || !strings.Contains(body, "eror") {
		t.Fatalf("unknown field: %d %s, want 400 naming it", code, body)
	}
	if code, body = do("POST", "/faults/", `{"api":"Produce"}`); code != http.StatusBadRequest || !strings.Contains(body, "no action") {
		t.Fatalf("invalid rule: %d %s, want 400", code, body)
	}
	in.Decide(produceTo("X", 0))
	code, body = do("GET", "/faults/", "")
	var st []Status
	if err := json.Unmarshal([]byte(body), &st); err != nil || code != http.StatusOK {
		t.Fatalf("list: %d %s %v", code, body, err)
	}
	if len(st) != 1 || st[0].ID != 1 || st[0].Matched != 1 || st[0].Error != "NOT_LEADER_OR_FOLLOWER" {
		t.Fatalf("list: %+v", st)
	}
	if code, _ = do("GET", "/faults/1", ""); code != http.StatusOK {
		t.Fatalf("get 1: %d", code)
	}
	if code, _ = do("DELETE", "/faults/1", ""); code != http.StatusNoContent {
		t.Fatalf("delete 1: %d", code)
	}
	if code, _ = do("DELETE", "/faults/1", ""); code != http.StatusNotFound {
		t.Fatalf("delete 1 again: %d, want 404", code)
	}
	do("POST", "/faults/", `{"delay_ms":5}`)
	if code, _ = do("DELETE", "/faults/", ""); code != http.StatusNoContent || in.Active() {
		t.Fatalf("clear: %d, active %v", code, in.Active())
	}
}
