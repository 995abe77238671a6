package broker

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// result is what a handler hands to the connection's writer: a response
// that is ready now, or one that completes later (a produce waiting for its
// group commit), or no response at all (acks=0). doc.go states the whole
// contract.
type result struct {
	// resp is the response; when ready is not nil it is complete only once
	// ready yields.
	resp kmsg.Response
	// ready yields (is closed, or, for a pooled produce response, carries
	// one token that the writer takes) once whoever completes a pending
	// response has.
	ready <-chan struct{}
	// none means the request gets no response (Produce with acks=0).
	none bool
	// fetch, instead of resp, is a fetch response whose record data the
	// writer sends from the commit-log files with sendfile(2).
	fetch *fetchResult
	// throttle, when positive, is the rate in bytes a second at which
	// the writer sends the response (a fault rule's throttling).
	throttle int64
	// raw, instead of resp, sends rawToken as a bare length-prefixed
	// frame: the SaslHandshake v0 token flow, which has no header.
	raw      bool
	rawToken []byte
	// produce, when set, is the pooled Produce response resp points
	// into: the writer recycles it once resp is sent.
	produce *produceResponse
}

// respond wraps a response that is ready at once.
func respond(resp kmsg.Response) (result, error) { return result{resp: resp}, nil }

// handlerFunc handles one decoded request. A returned error means the
// connection is broken and is closed; every Kafka-level failure goes into
// the response as an error code instead.
type handlerFunc func(b *Broker, c *conn, req kmsg.Request) (result, error)

// typed adapts a handler for one request type, so handler bodies never
// type-assert.
func typed[R kmsg.Request](f func(b *Broker, c *conn, req R) (result, error)) handlerFunc {
	return func(b *Broker, c *conn, req kmsg.Request) (result, error) {
		r, ok := req.(R)
		if !ok {
			return result{}, fmt.Errorf("broker: request of type %T for handler of %T", req, r)
		}
		return f(b, c, r)
	}
}

// api is one supported API key: the versions served and the handler.
type api struct {
	key      int16
	min, max int16
	handle   handlerFunc
	// hidden, when set and true, keeps the key out of ApiVersions while
	// it is still dispatched: a protocol that a setting turns off
	// (group.coordinator.rebalance.protocols), whose handler answers
	// UNSUPPORTED_VERSION, as Kafka's does.
	hidden func(b *Broker) bool
	// listedFromV0 makes ApiVersions list the key from v0 while requests
	// below min still close the connection: Kafka 4 does so for Produce
	// (KAFKA-18659), because older librdkafka (kcat's 2.0 among them)
	// sends gzip, snappy and lz4 batches only when it sees Produce v0.
	listedFromV0 bool
}

// apiTable is the one list of what the broker serves. ApiVersions is
// generated from it and the dispatcher refuses anything outside it, so a
// version is advertised only when its handler exists. The maximum of each
// is the newest version kmsg knows, capped where a newer version changes
// semantics the handler does not implement.
func apiTable() []api {
	table := []api{
		{key: 18, min: 0, max: kmsgMax(18), handle: typed((*Broker).handleApiVersions)},
		{key: 1, min: 4, max: kmsgMax(1), handle: typed((*Broker).handleFetch)},
	}
	table = append(table, adminAPIs()...)
	table = append(table, dataAPIs()...)
	table = append(table, groupAPIs()...)
	table = append(table, offsetAPIs()...)
	table = append(table, txnAPIs()...)
	table = append(table, securityAPIs()...)
	table = append(table, shareAPIs()...)
	table = append(table, streamsAPIs()...)
	return table
}

// kmsgMax is the newest version of key that the kmsg package knows.
func kmsgMax(key int16) int16 {
	req := kmsg.RequestForKey(key)
	if req == nil {
		return -1
	}
	return req.MaxVersion()
}

// apiIndex maps API keys to table entries for the dispatcher.
type apiIndex [maxAPIKey + 1]*api

const maxAPIKey = 100

func indexAPIs(table []api) *apiIndex {
	var idx apiIndex
	for i := range table {
		a := &table[i]
		if a.key < 0 || a.key > maxAPIKey {
			panic(fmt.Sprintf("broker: api key %d out of range", a.key))
		}
		if a.max > kmsgMax(a.key) {
			panic(fmt.Sprintf("broker: api key %d advertises v%d, kmsg knows v%d", a.key, a.max, kmsgMax(a.key)))
		}
		idx[a.key] = a
	}
	return &idx
}

// lookup returns the table entry serving key at version, or nil.
func (idx *apiIndex) lookup(key, version int16) *api {
	if key < 0 || key > maxAPIKey {
		return nil
	}
	a := idx[key]
	if a == nil || version < a.min || version > a.max {
		return nil
	}
	return a
}
