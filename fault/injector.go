package fault

import (
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Injector holds the fault rules of one broker. Its methods are safe for
// concurrent use; Active and Decide are what the request path calls.
type Injector struct {
	// rules is nil when there are none, so Active is one atomic load;
	// otherwise an immutable slice in the order added, replaced whole by
	// Add, Remove and Clear.
	rules atomic.Pointer[[]*rule]
	// mu serializes the writers of rules and guards nextID.
	mu     sync.Mutex
	nextID int64
	o      options
}

// rule is an added Rule with its counters.
type rule struct {
	r Rule
	c compiled

	mu struct {
		sync.Mutex
		matched int64      // requests that passed the filter
		hits    int64      // times the rule fired
		rng     *rand.Rand // for Probability; nil when it is 0 or 1
	}
}

// Option configures an Injector.
type Option func(*options)

type options struct {
	canFail func(key int16) bool
}

// WithErrorAPIs tells the injector which API keys can answer with an
// injected error code, so that Add refuses a rule that the broker could
// not apply.
func WithErrorAPIs(canFail func(key int16) bool) Option {
	return func(o *options) { o.canFail = canFail }
}

// New returns an injector without rules.
func New(opts ...Option) *Injector {
	in := &Injector{}
	for _, o := range opts {
		o(&in.o)
	}
	return in
}

// Status is a rule with its counters, as List reports it.
type Status struct {
	Rule
	// Matched counts the requests that passed the rule's filter.
	Matched int64 `json:"matched"`
	// Hits counts the times the rule fired.
	Hits int64 `json:"hits"`
	// Exhausted is set once a rule with Times has fired that many times;
	// it stays listed (with its counts) until removed or cleared.
	Exhausted bool `json:"exhausted"`
}

// Add validates r, gives it an id and appends it to the rules; it
// returns the id. Every problem of the rule is reported at once.
func (in *Injector) Add(r Rule) (int64, error) {
	c, err := r.compile(&in.o)
	if err != nil {
		return 0, err
	}
	// The caller keeps its pointers; the rule keeps copies.
	r.MinVersion, r.MaxVersion, r.Partition = clonePtr(r.MinVersion), clonePtr(r.MaxVersion), clonePtr(r.Partition)
	nr := &rule{r: r, c: c}
	if r.Probability > 0 && r.Probability < 1 {
		nr.mu.rng = rand.New(rand.NewPCG(r.Seed, r.Seed^0x9e3779b97f4a7c15))
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	in.nextID++
	nr.r.ID = in.nextID
	var cur []*rule
	if p := in.rules.Load(); p != nil {
		cur = *p
	}
	next := append(slices.Clip(cur), nr)
	in.rules.Store(&next)
	return nr.r.ID, nil
}

// Remove deletes the rule with the given id and reports whether it
// existed.
func (in *Injector) Remove(id int64) bool {
	in.mu.Lock()
	defer in.mu.Unlock()
	p := in.rules.Load()
	if p == nil {
		return false
	}
	i := slices.IndexFunc(*p, func(r *rule) bool { return r.r.ID == id })
	if i < 0 {
		return false
	}
	next := slices.Delete(slices.Clone(*p), i, i+1)
	if len(next) == 0 {
		in.rules.Store(nil)
	} else {
		in.rules.Store(&next)
	}
	return true
}

// Clear deletes every rule.
func (in *Injector) Clear() {
	in.mu.Lock()
	in.rules.Store(nil)
	in.mu.Unlock()
}

// List returns the rules in the order they are tried, with their counts.
func (in *Injector) List() []Status {
	p := in.rules.Load()
	if p == nil {
		return []Status{}
	}
	out := make([]Status, 0, len(*p))
	for _, r := range *p {
		r.mu.Lock()
		s := Status{Rule: r.r, Matched: r.mu.matched, Hits: r.mu.hits}
		r.mu.Unlock()
		s.Exhausted = r.r.Times > 0 && s.Hits >= r.r.Times
		out = append(out, s)
	}
	return out
}

// Active reports whether any rule exists: the one check every request
// pays for.
func (in *Injector) Active() bool { return in.rules.Load() != nil }

// Decision is what a fired rule does to a request.
type Decision struct {
	// RuleID is the rule that fired.
	RuleID int64
	// Error is the error code to answer with; 0 for none.
	Error int16
	// Delay is how long to wait before handling the request.
	Delay time.Duration
	// CloseBefore closes the connection instead of handling the request;
	// CloseAfter closes it once the answer is sent.
	CloseBefore, CloseAfter bool
	// ThrottleBytesPerSec limits the answer's rate; 0 for none.
	ThrottleBytesPerSec int64
	// Swallow leaves the request, and the connection, unanswered.
	Swallow bool

	topic     string
	partition *int32
}

// Matches reports whether the rule's topic and partition filter covers
// a partition: where the API has an error code per partition, those
// matched get Error and the others are handled as usual.
func (d *Decision) Matches(topic string, partition int32) bool {
	if d.topic == "" {
		return true
	}
	return topic == d.topic && (d.partition == nil || partition == *d.partition || partition < 0)
}

// Partitioned reports whether the rule names a partition, not only a
// topic.
func (d *Decision) Partitioned() bool { return d.partition != nil }

// Decide returns what the first rule that fires on r does, or nil when
// none fires. Every rule whose filter r passes, up to the one that fires,
// counts the match.
func (in *Injector) Decide(r *Request) *Decision {
	p := in.rules.Load()
	if p == nil {
		return nil
	}
	var n *names
	for _, ru := range *p {
		if !ru.headerMatches(r) {
			continue
		}
		if ru.needsNames() {
			if n == nil {
				d := describe(r)
				n = &d
			}
			if !ru.namesMatch(n) {
				continue
			}
		}
		if ru.fire() {
			return ru.decision()
		}
	}
	return nil
}

// headerMatches checks the filters that need no look into the body.
func (ru *rule) headerMatches(r *Request) bool {
	c := &ru.c
	switch {
	case c.key >= 0 && c.key != r.Key,
		r.Version < c.minV || r.Version > c.maxV,
		ru.r.ClientID != "" && ru.r.ClientID != r.ClientID,
		ru.r.Listener != "" && ru.r.Listener != r.Listener,
		ru.r.Connection != "" && ru.r.Connection != r.Connection:
		return false
	}
	return true
}

func (ru *rule) needsNames() bool {
	return ru.r.Topic != "" || ru.r.Group != "" || ru.r.TransactionalID != ""
}

func (ru *rule) namesMatch(n *names) bool {
	if t := ru.r.Topic; t != "" && !n.allTopics {
		if !slices.ContainsFunc(n.parts, func(tp TopicPartition) bool {
			return tp.Topic == t && (ru.r.Partition == nil || tp.Partition < 0 || tp.Partition == *ru.r.Partition)
		}) {
			return false
		}
	}
	if g := ru.r.Group; g != "" && !slices.Contains(n.groups, g) {
		return false
	}
	if x := ru.r.TransactionalID; x != "" && !slices.Contains(n.txns, x) {
		return false
	}
	return true
}

// fire counts a match and reports whether the rule fires on it: past
// After, within Times, and, with a Probability, when the draw says so.
func (ru *rule) fire() bool {
	ru.mu.Lock()
	defer ru.mu.Unlock()
	ru.mu.matched++
	switch {
	case ru.mu.matched <= ru.r.After:
		return false
	case ru.r.Times > 0 && ru.mu.hits >= ru.r.Times:
		return false
	case ru.mu.rng != nil && ru.mu.rng.Float64() >= ru.r.Probability:
		return false
	}
	ru.mu.hits++
	return true
}

func (ru *rule) decision() *Decision {
	return &Decision{
		RuleID:              ru.r.ID,
		Error:               ru.c.errCode,
		Delay:               time.Duration(ru.r.DelayMs) * time.Millisecond,
		CloseBefore:         ru.r.Close == CloseBefore,
		CloseAfter:          ru.r.Close == CloseAfter,
		ThrottleBytesPerSec: ru.r.ThrottleBytesPerSec,
		Swallow:             ru.r.Swallow,
		topic:               ru.r.Topic,
		partition:           ru.r.Partition,
	}
}

func clonePtr[T any](p *T) *T {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}
