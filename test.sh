#!/usr/bin/env bash
# The project's test command (README, .ci/run): vet, format check, every
# test under the race detector, the allocation checks without it, then
# each fuzz target briefly.
#
#   FUZZ_SCALE=1            multiplies each fuzz target's execution budget
#                           (0 skips fuzzing; 100 for a long run by hand).
#                           Budgets are counts, not durations: go1.26's fuzz
#                           coordinator can fail a run with a spurious
#                           "context deadline exceeded" when a -fuzztime
#                           duration ends (golang/go#75804).
#   KBROKER_STORE_KILLS=20  SIGKILLs in the store's crash loop (more by hand;
#                           docs/TESTING.md lists every KBROKER_* setting)
#   KBROKER_SKIP_JAVA=1     skips the Java client tests (integration/java),
#                           which need mvn and a JDK 17+
#   KBROKER_SKIP_KAFKA=1    skips the differential tests against Apache
#                           Kafka (scripts/kafka-ref.sh: mvn, JDK 17+)
set -euo pipefail
cd "$(dirname "$0")"

FUZZ_SCALE="${FUZZ_SCALE:-1}"

# cleanup holds the commands that undo what the run started.
cleanup=()
run_cleanup() {
	local c
	for c in "${cleanup[@]}"; do eval "$c" || true; done
}
trap run_cleanup EXIT

# fuzz_budget is a target's executions at FUZZ_SCALE=1, about 5-20 s here:
# FuzzRecover and FuzzOpen create and recover files per input, FuzzParseRequest
# re-encodes every request twice; the decoders are cheap.
fuzz_budget() {
	case "$1" in
	FuzzRecover | FuzzOpen) echo $((3000 * FUZZ_SCALE)) ;;
	FuzzParseRequest) echo $((50000 * FUZZ_SCALE)) ;;
	FuzzRetain) echo $((50000 * FUZZ_SCALE)) ;; # decompresses and recompresses every input
	FuzzExchange) echo $((50000 * FUZZ_SCALE)) ;; # PLAIN inputs run PBKDF2
	*) echo $((300000 * FUZZ_SCALE)) ;;
	esac
}

echo "== go vet"
go vet ./...

echo "== gofmt"
unformatted="$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))"
if [ -n "$unformatted" ]; then
	echo "not gofmt'ed:"; echo "$unformatted"; exit 1
fi

echo "== go test -race"
go test -race -count=1 -timeout 15m ./...

# The allocation checks skip under -race (its runtime allocates as the
# broker runs), so they get a run of their own without it.
echo "== allocation tests without -race"
go test -count=1 -timeout 5m -run 'Alloc|BuffersSettle' ./broker/ ./flush/ ./log/ ./partition/... ./sendfile/ ./consumequeue/ ./protocol/

if [ "${KBROKER_SKIP_JAVA:-}" = "1" ]; then
	echo "== Java client tests skipped (KBROKER_SKIP_JAVA=1)"
else
	echo "== Java client tests (integration/java, Apache Kafka's kafka-clients)"
	# The broker runs under the race detector, as in the Go integration
	# tests; its log is checked for races after the run.
	javabin="$(mktemp -d)"
	cleanup+=("rm -rf $javabin")
	go build -race -o "$javabin/kbroker" ./cmd/kbroker
	(cd integration/java && mvn -B -ntp -Dstyle.color=never test -Dkbroker.binary="$javabin/kbroker")
	# kbroker.log: the shared broker; kbroker-security.log: SecurityTest's;
	# kbroker-cluster.log: ControlsTest's --nodes broker.
	for log in integration/java/target/kbroker.log integration/java/target/kbroker-security.log \
		integration/java/target/kbroker-cluster.log; do
		if [ -f "$log" ] && grep -q 'DATA RACE' "$log"; then
			echo "data race in kbroker under the Java client tests:"; cat "$log"; exit 1
		fi
	done
fi

if [ "${KBROKER_SKIP_KAFKA:-}" = "1" ]; then
	echo "== differential tests against Apache Kafka skipped (KBROKER_SKIP_KAFKA=1)"
else
	echo "== differential tests against Apache Kafka (scripts/kafka-ref.sh)"
	KAFKA_REF_DIR="$(mktemp -d)"
	export KAFKA_REF_DIR
	cleanup+=("scripts/kafka-ref.sh stop; rm -rf $KAFKA_REF_DIR")
	kafka="$(scripts/kafka-ref.sh start)"
	KBROKER_DIFF_KAFKA="$kafka" go test -race -count=1 -timeout 5m -run 'TestDiffKafka' ./integration/
	scripts/kafka-ref.sh stop
fi

if [ "$FUZZ_SCALE" != "0" ]; then
	echo "== fuzz (execution budgets x$FUZZ_SCALE)"
	# go test -fuzz takes one target in one package at a time.
	grep -rl --include='*_test.go' '^func Fuzz' . | xargs -n1 dirname | sort -u | while read -r pkg; do
		grep -ho '^func Fuzz[A-Za-z0-9_]*' "$pkg"/*_test.go | sed 's/^func //' | sort -u | while read -r target; do
			budget="$(fuzz_budget "$target")"
			echo "-- $pkg $target ($budget executions)"
			go test -run '^$' -fuzz "^${target}\$" -fuzztime "${budget}x" -fuzzminimizetime 2s "$pkg"
		done
	done
fi
echo "== all tests passed"
