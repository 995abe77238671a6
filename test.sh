#!/usr/bin/env bash
# The project's test command (README, .ci/run): vet, format check, every
# test under the race detector, then each fuzz target briefly.
#
#   FUZZTIME=10s            how long each fuzz target runs (0 skips fuzzing)
#   KBROKER_CRASH_KILLS=20  SIGKILLs in the store's crash loop (more by hand)
set -euo pipefail
cd "$(dirname "$0")"

FUZZTIME="${FUZZTIME:-10s}"

echo "== go vet"
go vet ./...

echo "== gofmt"
unformatted="$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))"
if [ -n "$unformatted" ]; then
	echo "not gofmt'ed:"; echo "$unformatted"; exit 1
fi

echo "== go test -race"
go test -race -count=1 -timeout 15m ./...

if [ "$FUZZTIME" != "0" ]; then
	echo "== fuzz ($FUZZTIME per target)"
	# go test -fuzz takes one target in one package at a time.
	grep -rl --include='*_test.go' '^func Fuzz' . | xargs -n1 dirname | sort -u | while read -r pkg; do
		grep -ho '^func Fuzz[A-Za-z0-9_]*' "$pkg"/*_test.go | sed 's/^func //' | sort -u | while read -r target; do
			echo "-- $pkg $target"
			go test -run '^$' -fuzz "^${target}\$" -fuzztime "$FUZZTIME" "$pkg"
		done
	done
fi
echo "== all tests passed"
