// Package fault is the broker's fault injector: rules that make chosen
// requests fail, stall, lose their connection or go unanswered, so that a
// client's error handling can be tested against a broker that misbehaves
// on cue, deterministically.
//
// A Rule has a filter (API key and versions, topic and partition, group,
// transactional id, client id, listener, connection), an action (an error
// code, a delay, closing the connection before or after answering,
// throttled response bytes, or swallowing the request) and a budget
// (skip the first After matches, then fire Times times or until removed,
// each time with a Probability drawn from a generator seeded with Seed).
// "The 3rd Produce to topic X fails with NOT_LEADER_OR_FOLLOWER" is
//
//	Rule{API: "Produce", Topic: "X", After: 2, Times: 1, Error: "NOT_LEADER_OR_FOLLOWER"}
//
// and it does exactly that: the rule counts the Produce requests that
// carry a partition of X, lets two pass, fails the partitions of X in the
// third (the other partitions of that request are handled as usual) and
// never fires again.
//
// The broker asks Injector.Active, one atomic load, on every request; only
// when rules exist does it describe the request (Request) and ask Decide.
// Rules are tried in the order they were added and the first that fires
// decides; a rule's counters move under its own mutex, so concurrent
// connections see one order of matches per rule.
//
// The package knows Kafka requests (kmsg) but nothing of the broker: the
// broker applies a Decision, and tells the injector through Options which
// APIs can answer with an injected error code. Handler exposes the rules
// as JSON over HTTP for tests written in any language.
package fault
