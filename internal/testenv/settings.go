package testenv

import (
	"errors"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The settings are named KBROKER_<AREA>_<KNOB>: the area is the test or
// loop (STORE, BINARY, GROUP, TXN, RELIABILITY, POWER_LOSS, SHUTDOWN,
// HOSTILE, MODEL, CHURN; TEST and DIFF for the brokers the integration
// tests run against), the knob what it sets (KILLS, ROUNDS, SEEDS, STEPS,
// SEED, DURATION, DEBUG, CYCLES, BOOTSTRAP, KAFKA). KBROKER_WRITE_*
// rewrite checked-in test data.
// docs/TESTING.md is the table; keep the two in step.

// renamed maps a former name to its current one. A former name that is
// set fails the test: a stale script or CI file would otherwise run the
// default without a word.
var renamed = map[string]string{
	"KBROKER_CRASH_KILLS":          "KBROKER_STORE_KILLS",
	"KBROKER_BROKER_KILLS":         "KBROKER_BINARY_KILLS",
	"KBROKER_REL_DEBUG":            "KBROKER_RELIABILITY_DEBUG",
	"KBROKER_HOSTILE_WRITE_CORPUS": "KBROKER_WRITE_HOSTILE_CORPUS",
}

// lookup is the value of the setting name, failing the test if a former
// name of it is set.
func lookup(t testing.TB, name string) (string, bool) {
	t.Helper()
	for old, cur := range renamed {
		if cur == name {
			if _, ok := os.LookupEnv(old); ok {
				t.Fatalf("%s was renamed %s", old, name)
			}
		}
	}
	v, ok := os.LookupEnv(name)
	if !ok || v == "" {
		return "", false
	}
	return v, true
}

// Count is the positive integer setting name, or def when it is unset. A
// value that is not a positive integer fails the test.
func Count(t testing.TB, name string, def int) int {
	t.Helper()
	s, ok := lookup(t, name)
	if !ok {
		return def
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 {
		t.Fatalf("%s=%q: want a positive integer", name, s)
	}
	return n
}

// Seed is the unsigned integer setting name (a random seed), or def.
func Seed(t testing.TB, name string, def uint64) uint64 {
	t.Helper()
	s, ok := lookup(t, name)
	if !ok {
		return def
	}
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		t.Fatalf("%s=%q: want an unsigned integer: %v", name, s, err)
	}
	return n
}

// Duration is the positive Go duration setting name ("90s", "5m"), or
// def.
func Duration(t testing.TB, name string, def time.Duration) time.Duration {
	t.Helper()
	s, ok := lookup(t, name)
	if !ok {
		return def
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		t.Fatalf("%s=%q: want a positive duration such as 90s or 5m", name, s)
	}
	return d
}

// Flag reports whether the boolean setting name is on: unset is off, and
// anything strconv.ParseBool refuses fails the test (so "yes" is not
// quietly off).
func Flag(t testing.TB, name string) bool {
	t.Helper()
	s, ok := lookup(t, name)
	if !ok {
		return false
	}
	on, err := strconv.ParseBool(s)
	if err != nil {
		t.Fatalf("%s=%q: want 1 or 0 (true or false)", name, s)
	}
	return on
}

// Addr is the host:port setting name (a broker's address), or "" when it
// is unset. A value that is not one host:port with a port in 1–65535
// fails the test: a typo would otherwise surface as a dial timeout far
// from its cause, or (unset by mistake) run the tests against another
// broker than meant.
func Addr(t testing.TB, name string) string {
	t.Helper()
	s, ok := lookup(t, name)
	if !ok {
		return ""
	}
	s = strings.TrimSpace(s)
	host, port, err := net.SplitHostPort(s)
	if err == nil && host == "" {
		err = errors.New("no host")
	}
	if err == nil {
		if p, perr := strconv.Atoi(port); perr != nil || p < 1 || p > 65535 {
			err = errors.New("the port is not a number in 1–65535")
		}
	}
	if err != nil {
		t.Fatalf("%s=%q: want one host:port such as 127.0.0.1:9092: %v", name, s, err)
	}
	return s
}
