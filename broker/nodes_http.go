package broker

// The simulated cluster's controls over HTTP (ControlHandler), JSON in
// and out as the other test controls: docs/TESTING-CONTROLS.md.

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
)

// maxControlBody bounds a control request's JSON body.
const maxControlBody = 64 << 10

func (ip *InProcess) nodeControls(mux *http.ServeMux) {
	mux.HandleFunc("GET /nodes", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, ip.Broker.Nodes())
	})
	nodeOp := func(op func(*Broker, int32) error) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			id, err := strconv.ParseInt(r.PathValue("id"), 10, 32)
			if err != nil {
				controlError(w, fmt.Errorf("node id %q: %w", r.PathValue("id"), err))
				return
			}
			if err := op(ip.Broker, int32(id)); err != nil {
				controlError(w, err)
				return
			}
			writeJSON(w, http.StatusOK, ip.Broker.Nodes())
		}
	}
	mux.HandleFunc("POST /nodes/{id}/stop", nodeOp((*Broker).StopNode))
	mux.HandleFunc("POST /nodes/{id}/start", nodeOp((*Broker).StartNode))

	type leaderJSON struct {
		Topic     string `json:"topic"`
		Partition int32  `json:"partition"`
		Node      *int32 `json:"node,omitempty"`
		Leader    int32  `json:"leader"`
		Epoch     int32  `json:"epoch"`
	}
	mux.HandleFunc("GET /leaders", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		p, err := strconv.ParseInt(q.Get("partition"), 10, 32)
		if err != nil {
			controlError(w, fmt.Errorf("partition %q: %w", q.Get("partition"), err))
			return
		}
		out := leaderJSON{Topic: q.Get("topic"), Partition: int32(p)}
		if out.Leader, out.Epoch, err = ip.Broker.PartitionLeader(out.Topic, out.Partition); err != nil {
			controlError(w, err)
			return
		}
		writeJSON(w, http.StatusOK, out)
	})
	mux.HandleFunc("POST /leaders", func(w http.ResponseWriter, r *http.Request) {
		var in leaderJSON
		if err := readJSON(r, &in); err != nil {
			controlError(w, err)
			return
		}
		node := int32(-1)
		if in.Node != nil {
			node = *in.Node
		}
		var err error
		in.Node = nil
		if in.Leader, in.Epoch, err = ip.Broker.MovePartitionLeader(in.Topic, in.Partition, node); err != nil {
			controlError(w, err)
			return
		}
		writeJSON(w, http.StatusOK, in)
	})

	type coordJSON struct {
		Type string `json:"type"` // "group" or "transaction"
		Key  string `json:"key"`
		Node *int32 `json:"node,omitempty"`
	}
	kindOf := func(t string) (int8, error) {
		switch t {
		case "group", "":
			return GroupCoordinator, nil
		case "transaction":
			return TransactionCoordinator, nil
		}
		return 0, fmt.Errorf("coordinator type %q is not group or transaction", t)
	}
	mux.HandleFunc("GET /coordinators", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		kind, err := kindOf(q.Get("type"))
		if err != nil {
			controlError(w, err)
			return
		}
		node := ip.Broker.Coordinator(kind, q.Get("key"))
		writeJSON(w, http.StatusOK, coordJSON{Type: q.Get("type"), Key: q.Get("key"), Node: &node})
	})
	mux.HandleFunc("POST /coordinators", func(w http.ResponseWriter, r *http.Request) {
		var in coordJSON
		if err := readJSON(r, &in); err != nil {
			controlError(w, err)
			return
		}
		kind, err := kindOf(in.Type)
		if err != nil {
			controlError(w, err)
			return
		}
		node := int32(-1)
		if in.Node != nil {
			node = *in.Node
		}
		if node, err = ip.Broker.MoveCoordinator(kind, in.Key, node); err != nil {
			controlError(w, err)
			return
		}
		in.Node = &node
		writeJSON(w, http.StatusOK, in)
	})
}

func readJSON(r *http.Request, v any) error {
	body, err := io.ReadAll(io.LimitReader(r.Body, maxControlBody+1))
	if err != nil {
		return err
	}
	if len(body) > maxControlBody {
		return errors.New("request body too large")
	}
	if err := json.Unmarshal(body, v); err != nil {
		return fmt.Errorf("request body: %w", err)
	}
	return nil
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

// controlError answers a refused control call: 400 with {"error": "..."}
// (a bad argument, a node that cannot stop), 501 for a broker that is
// not a simulated cluster.
func controlError(w http.ResponseWriter, err error) {
	status := http.StatusBadRequest
	if errors.Is(err, ErrNotSimulated) {
		status = http.StatusNotImplemented
	}
	writeJSON(w, status, map[string]string{"error": err.Error()})
}
