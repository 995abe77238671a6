package fault

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
)

// Handler serves the rules as JSON, for tests in any language:
//
//	GET    /      the rules with their counts (a JSON array of Status)
//	POST   /      add a rule (a JSON Rule); answers {"id": N}
//	DELETE /      clear every rule
//	GET    /{id}  one rule
//	DELETE /{id}  remove one rule
//
// Mount it under a prefix with http.StripPrefix. A rule that does not
// validate is answered 400 with every problem; an unknown field in it is
// refused rather than ignored, so a typo never makes a rule match more
// than meant.
func (in *Injector) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, in.List())
	})
	mux.HandleFunc("POST /{$}", func(w http.ResponseWriter, req *http.Request) {
		var r Rule
		dec := json.NewDecoder(http.MaxBytesReader(w, req.Body, maxRuleBytes))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&r); err != nil {
			writeError(w, http.StatusBadRequest, fmt.Errorf("fault: read rule: %w", err))
			return
		}
		id, err := in.Add(r)
		if err != nil {
			writeError(w, http.StatusBadRequest, err)
			return
		}
		writeJSON(w, http.StatusCreated, map[string]int64{"id": id})
	})
	mux.HandleFunc("DELETE /{$}", func(w http.ResponseWriter, _ *http.Request) {
		in.Clear()
		w.WriteHeader(http.StatusNoContent)
	})
	mux.HandleFunc("GET /{id}", func(w http.ResponseWriter, req *http.Request) {
		id, err := strconv.ParseInt(req.PathValue("id"), 10, 64)
		if err != nil {
			writeError(w, http.StatusBadRequest, errors.New("fault: rule id is not a number"))
			return
		}
		for _, s := range in.List() {
			if s.ID == id {
				writeJSON(w, http.StatusOK, s)
				return
			}
		}
		writeError(w, http.StatusNotFound, fmt.Errorf("fault: no rule %d", id))
	})
	mux.HandleFunc("DELETE /{id}", func(w http.ResponseWriter, req *http.Request) {
		id, err := strconv.ParseInt(req.PathValue("id"), 10, 64)
		if err != nil {
			writeError(w, http.StatusBadRequest, errors.New("fault: rule id is not a number"))
			return
		}
		if !in.Remove(id) {
			writeError(w, http.StatusNotFound, fmt.Errorf("fault: no rule %d", id))
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})
	return mux
}

// maxRuleBytes bounds a rule's JSON.
const maxRuleBytes = 64 << 10

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, status int, err error) {
	writeJSON(w, status, map[string]string{"error": err.Error()})
}
