package fault

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Rule is one fault: which requests it matches, what it does to them and
// how often. Empty filter fields match everything. The JSON form is the
// HTTP API's (docs/TESTING-CONTROLS.md).
type Rule struct {
	// ID identifies the rule once added; Add assigns it.
	ID int64 `json:"id,omitempty"`

	// API is the request's API, by Kafka name ("Produce", "FindCoordinator")
	// or key number ("0"); empty matches every API.
	API string `json:"api,omitempty"`
	// MinVersion and MaxVersion bound the request's version, inclusive.
	MinVersion *int16 `json:"min_version,omitempty"`
	MaxVersion *int16 `json:"max_version,omitempty"`
	// Topic matches requests naming this topic (for Fetch v13+, by the
	// topic's id resolved to its name).
	Topic string `json:"topic,omitempty"`
	// Partition, with Topic, narrows the match to one partition.
	Partition *int32 `json:"partition,omitempty"`
	// Group matches requests naming this consumer group.
	Group string `json:"group,omitempty"`
	// TransactionalID matches requests naming this transactional id.
	TransactionalID string `json:"transactional_id,omitempty"`
	// ClientID matches the client id of the request header.
	ClientID string `json:"client_id,omitempty"`
	// Listener matches the listener the connection came in on, by the
	// broker's listen address ("127.0.0.1:9092").
	Listener string `json:"listener,omitempty"`
	// Connection matches one connection, by the client's address as the
	// broker sees it ("127.0.0.1:53412").
	Connection string `json:"connection,omitempty"`

	// Error is the error code to answer with, by Kafka name
	// ("NOT_LEADER_OR_FOLLOWER") or number ("6"). Where the API has a
	// code per partition (Produce, Fetch, ListOffsets, ...), only the
	// partitions the rule matches get it and the rest are handled as
	// usual; elsewhere the whole request gets it. It needs API.
	Error string `json:"error,omitempty"`
	// DelayMs delays handling the request. Like a slow broker, the
	// connection handles nothing else meanwhile (Kafka reads a
	// connection's next request only after answering the last).
	DelayMs int64 `json:"delay_ms,omitempty"`
	// Close closes the connection "before" handling the request (it is
	// never handled; earlier answers still go out) or "after" its answer
	// is sent.
	Close string `json:"close,omitempty"`
	// ThrottleBytesPerSec sends the answer no faster than this many bytes
	// a second.
	ThrottleBytesPerSec int64 `json:"throttle_bytes_per_sec,omitempty"`
	// Swallow drops the request unanswered and, since Kafka answers a
	// connection's requests in order, leaves the connection hung: nothing
	// after it on that connection is handled or answered until the client
	// gives up and closes it.
	Swallow bool `json:"swallow,omitempty"`

	// After is how many matching requests pass untouched before the rule
	// may fire: After 2 fires on the 3rd match.
	After int64 `json:"after,omitempty"`
	// Times is how many times the rule fires; 0 is until removed.
	Times int64 `json:"times,omitempty"`
	// Probability, when in (0, 1), fires the rule on a match only with
	// that chance, drawn from a generator seeded with Seed, so a run with
	// the same requests in the same order fires on the same ones.
	Probability float64 `json:"probability,omitempty"`
	// Seed seeds the generator of Probability.
	Seed uint64 `json:"seed,omitempty"`
}

// Close values.
const (
	CloseBefore = "before"
	CloseAfter  = "after"
)

// compiled is a rule's filter and action in the form Decide uses.
type compiled struct {
	key        int16 // -1: any
	minV, maxV int16
	errCode    int16
	hasErr     bool
}

// compile validates r and resolves its names.
func (r *Rule) compile(o *options) (compiled, error) {
	c := compiled{key: -1, minV: -1 << 15, maxV: 1<<15 - 1}
	var errs []error
	if r.API != "" {
		key, err := parseAPI(r.API)
		if err != nil {
			errs = append(errs, err)
		}
		c.key = key
	}
	if r.MinVersion != nil {
		c.minV = *r.MinVersion
	}
	if r.MaxVersion != nil {
		c.maxV = *r.MaxVersion
	}
	if c.minV > c.maxV {
		errs = append(errs, fmt.Errorf("fault: min_version %d above max_version %d", c.minV, c.maxV))
	}
	if r.Partition != nil && r.Topic == "" {
		errs = append(errs, errors.New("fault: partition needs topic"))
	}
	if r.Error != "" {
		code, err := ParseErrorCode(r.Error)
		switch {
		case err != nil:
			errs = append(errs, err)
		case r.API == "":
			errs = append(errs, errors.New("fault: error needs api: the shape of an error answer depends on the API"))
		case c.key >= 0 && o.canFail != nil && !o.canFail(c.key):
			errs = append(errs, fmt.Errorf("fault: %s cannot answer with an injected error code; use delay_ms, close or swallow", kmsg.NameForKey(c.key)))
		}
		c.errCode, c.hasErr = code, true
	}
	switch r.Close {
	case "", CloseBefore, CloseAfter:
	default:
		errs = append(errs, fmt.Errorf("fault: close %q is neither %q nor %q", r.Close, CloseBefore, CloseAfter))
	}
	if r.DelayMs < 0 || r.ThrottleBytesPerSec < 0 || r.After < 0 || r.Times < 0 {
		errs = append(errs, errors.New("fault: delay_ms, throttle_bytes_per_sec, after and times must not be negative"))
	}
	if r.DelayMs > maxDelayMs {
		errs = append(errs, fmt.Errorf("fault: delay_ms %d above the limit of %d", r.DelayMs, maxDelayMs))
	}
	if r.Probability < 0 || r.Probability > 1 {
		errs = append(errs, fmt.Errorf("fault: probability %v outside [0, 1]", r.Probability))
	}
	if r.Swallow && (c.hasErr || r.Close != "" || r.ThrottleBytesPerSec > 0) {
		errs = append(errs, errors.New("fault: swallow leaves nothing to answer: it combines only with delay_ms"))
	}
	if r.Close == CloseBefore && (c.hasErr || r.ThrottleBytesPerSec > 0) {
		errs = append(errs, errors.New("fault: close before answering leaves no answer to fail or throttle"))
	}
	if !c.hasErr && r.DelayMs == 0 && r.Close == "" && r.ThrottleBytesPerSec == 0 && !r.Swallow {
		errs = append(errs, errors.New("fault: the rule has no action (error, delay_ms, close, throttle_bytes_per_sec or swallow)"))
	}
	return c, errors.Join(errs...)
}

// maxDelayMs bounds a delay: a test that needs longer wants swallow.
const maxDelayMs = 10 * 60 * 1000

// parseAPI resolves an API by Kafka name or key number.
func parseAPI(s string) (int16, error) {
	if n, err := strconv.ParseInt(s, 10, 16); err == nil {
		if kmsg.RequestForKey(int16(n)) == nil {
			return -1, fmt.Errorf("fault: unknown api key %d", n)
		}
		return int16(n), nil
	}
	for key := int16(0); key <= maxKey; key++ {
		if kmsg.RequestForKey(key) != nil && strings.EqualFold(kmsg.NameForKey(key), s) {
			return key, nil
		}
	}
	return -1, fmt.Errorf("fault: unknown api %q", s)
}

// maxKey is above every API key kmsg knows.
const maxKey = 100

// errorAliases are Kafka's current names for codes that kerr knows by an
// older one.
var errorAliases = map[string]int16{
	"NOT_LEADER_OR_FOLLOWER":          6,
	"REPLICA_NOT_AVAILABLE":           9,
	"UNKNOWN_SERVER_ERROR":            -1,
	"COORDINATOR_LOAD_IN_PROGRESS":    14,
	"COORDINATOR_NOT_AVAILABLE":       15,
	"NOT_COORDINATOR":                 16,
	"OFFSET_OUT_OF_RANGE":             1,
	"UNKNOWN_TOPIC_OR_PARTITION":      3,
	"GROUP_COORDINATOR_NOT_AVAILABLE": 15,
	"NOT_COORDINATOR_FOR_GROUP":       16,
}

// ParseErrorCode resolves a Kafka error by name (either Kafka's current
// name or franz-go kerr's, case-insensitive) or by number. Code 0 (no
// error) is refused: a rule that "fails" with success does nothing.
func ParseErrorCode(s string) (int16, error) {
	if n, err := strconv.ParseInt(s, 10, 16); err == nil {
		if n == 0 {
			return 0, errors.New("fault: error code 0 is no error")
		}
		// Any code is allowed, also one newer than kerr knows.
		return int16(n), nil
	}
	up := strings.ToUpper(s)
	if code, ok := errorAliases[up]; ok {
		return code, nil
	}
	for code := int16(-1); code < maxErrorCode; code++ {
		if e := kerr.TypedErrorForCode(code); e != nil && e.Code == code && e.Message == up {
			return code, nil
		}
	}
	return 0, fmt.Errorf("fault: unknown error %q", s)
}

// maxErrorCode is above every code kerr knows.
const maxErrorCode = 300
