#!/usr/bin/env bash
# kafka-perf.sh: Apache Kafka's own load tools, kafka-producer-perf-test and
# kafka-consumer-perf-test (org.apache.kafka.tools.ProducerPerformance and
# ConsumerPerformance of kafka-tools), run against kbroker and against
# Apache Kafka's broker in turn (issue 14), with each broker's CPU time and
# resident memory read from /proc. Prints a Markdown table.
#
#   scripts/kafka-perf.sh            both brokers, the default cases
#
# Each broker runs alone: kbroker (the binary, default settings: async
# flush, 128 MiB commit-log files) on a fresh data directory, then Kafka
# started by scripts/kafka-ref.sh (single-node KRaft, on the same disk).
# For each case a topic is created, the producer tool writes it, then the
# consumer tool reads it back through a consumer group. The tools' jars are
# resolved by scripts/kafka-ref.sh classpath (Maven, nothing vendored); it
# needs Java 17+, mvn and go. Settings (environment):
#
#   KAFKA_PERF_BROKERS="kbroker kafka"        which brokers, in this order
#   KAFKA_PERF_CASES="100:2000000 1024:500000"  record size:record count
#   KAFKA_PERF_PARTITIONS=1                   partitions of each topic
#   KAFKA_PERF_PRODUCER_PROPS="acks=all"      producer settings (k=v ...)
#   KAFKA_PERF_DIR=$(mktemp -d)               data and logs (removed after,
#                                             unless KAFKA_PERF_KEEP=1)
#   KAFKA_PERF_HEAP=1g                        Kafka's heap (its start
#                                             script's -Xmx1G)
#   KBROKER_BIN                               kbroker binary (default: go
#                                             build ./cmd/kbroker)
#
# Columns: records/s and MB/s as the tools print them (the consumer's
# "fetch" rates, which leave out the group join); latency percentiles as
# the producer tool prints them (time from send() to the acknowledgement,
# so queueing in the client's 32 MiB buffer included); broker CPU-s/GB is
# the broker process's utime+stime during the tool's run per GB of record
# values; peak RSS is the process's VmHWM during the run (reset before it),
# RSS its VmRSS at the end and anon RSS the anonymous part of that
# (RssAnon: heaps). kbroker's RSS also counts the pages of its commit-log
# mapping that it touched, page cache that Kafka's RSS does not show:
# fetches copy batches under 16 KiB out of the mapping, and the producer
# tool's batches (batch.size 16384) are all under it.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/.." && pwd)"
brokers="${KAFKA_PERF_BROKERS:-kbroker kafka}"
cases="${KAFKA_PERF_CASES:-100:2000000 1024:500000}"
partitions="${KAFKA_PERF_PARTITIONS:-1}"
producer_props="${KAFKA_PERF_PRODUCER_PROPS:-acks=all}"
heap="${KAFKA_PERF_HEAP:-1g}"
dir="${KAFKA_PERF_DIR:-$(mktemp -d /tmp/kafka-perf.XXXXXX)}"
mkdir -p "$dir"

cp="$("$here/kafka-ref.sh" classpath)"
tool_opts=(-Xmx1g -Dorg.slf4j.simpleLogger.defaultLogLevel=warn -cp "$cp")

kbroker_pid=""
kafka_dir="$dir/kafka-ref"
cleanup() {
	if [ -n "$kbroker_pid" ] && kill -0 "$kbroker_pid" 2>/dev/null; then
		kill -TERM "$kbroker_pid"
		wait "$kbroker_pid" 2>/dev/null || true
	fi
	KAFKA_REF_DIR="$kafka_dir" "$here/kafka-ref.sh" stop >/dev/null 2>&1 || true
	if [ "${KAFKA_PERF_KEEP:-0}" != 1 ]; then
		rm -rf "$dir"
	fi
}
trap cleanup EXIT

freeport() {
	python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'
}

# cpu_ticks is the utime+stime of pid in clock ticks (fields 14 and 15 of
# /proc/pid/stat, counted after the command name's closing parenthesis).
cpu_ticks() {
	local stat
	stat="$(cat "/proc/$1/stat")"
	stat="${stat##*) }"
	# shellcheck disable=SC2086
	set -- $stat
	echo $((${12} + ${13}))
}

# mem_kb prints VmHWM, VmRSS and RssAnon of pid in kB.
mem_kb() {
	awk '/^VmHWM:/ {h=$2} /^VmRSS:/ {r=$2} /^RssAnon:/ {a=$2} END {print h, r, a}' "/proc/$1/status"
}

start_kbroker() {
	local bin="${KBROKER_BIN:-}"
	if [ -z "$bin" ]; then
		bin="$dir/kbroker"
		(cd "$root" && go build -o "$bin" ./cmd/kbroker)
	fi
	local port
	port="$(freeport)"
	"$bin" --listen "127.0.0.1:$port" --data-dir "$dir/kbroker-data" --log-level warn >"$dir/kbroker.log" 2>&1 &
	kbroker_pid=$!
	local i
	for i in $(seq 1 600); do
		if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
			addr="127.0.0.1:$port"
			pid="$kbroker_pid"
			return
		fi
		kill -0 "$kbroker_pid" 2>/dev/null || { cat "$dir/kbroker.log" >&2; exit 1; }
		sleep 0.05
	done
	echo "kbroker not listening after 30 s" >&2
	exit 1
}

stop_kbroker() {
	kill -TERM "$kbroker_pid"
	wait "$kbroker_pid" 2>/dev/null || true
	kbroker_pid=""
	rm -rf "$dir/kbroker-data"
}

start_kafka() {
	mkdir -p "$kafka_dir"
	# The classpath is already resolved: share it rather than run Maven
	# again for the new state directory.
	echo "$cp" >"$kafka_dir/classpath-${KAFKA_REF_VERSION:-4.4.0}"
	addr="$(KAFKA_REF_DIR="$kafka_dir" KAFKA_REF_HEAP="$heap" "$here/kafka-ref.sh" start)"
	pid="$(cat "$kafka_dir/pid")"
}

stop_kafka() {
	KAFKA_REF_DIR="$kafka_dir" "$here/kafka-ref.sh" stop >/dev/null
}

# measure runs a tool command ("$@") against the broker $pid and sets
# cpu_s (the broker's CPU seconds during it), peak_mb, rss_mb and anon_mb; the
# tool's output goes to $out.
measure() {
	local t0 t1 hwm rss anon
	echo 5 >"/proc/$pid/clear_refs" 2>/dev/null || true # reset VmHWM
	t0="$(cpu_ticks "$pid")"
	"$@" >"$out" 2>&1 || { cat "$out" >&2; exit 1; }
	t1="$(cpu_ticks "$pid")"
	read -r hwm rss anon < <(mem_kb "$pid")
	cpu_s="$(awk -v t=$((t1 - t0)) -v hz="$(getconf CLK_TCK)" 'BEGIN {printf "%.2f", t / hz}')"
	peak_mb=$((hwm / 1024))
	rss_mb=$((rss / 1024))
	anon_mb=$((anon / 1024))
}

rows=()
run_cases() {
	local name="$1" c size n topic gb
	for c in $cases; do
		size="${c%%:*}"
		n="${c##*:}"
		topic="perf-$size-$(date +%s%N)"
		gb="$(awk -v n="$n" -v s="$size" 'BEGIN {print n * s / 1e9}')"
		java "${tool_opts[@]}" org.apache.kafka.tools.TopicCommand --bootstrap-server "$addr" --create \
			--topic "$topic" --partitions "$partitions" --replication-factor 1 >"$dir/topic.log" 2>&1 ||
			{ cat "$dir/topic.log" >&2; exit 1; }
		echo "$name: producer perf test, $n × $size B" >&2
		out="$dir/producer-$name-$size.log"
		# shellcheck disable=SC2086
		measure java "${tool_opts[@]}" org.apache.kafka.tools.ProducerPerformance --bootstrap-server "$addr" \
			--topic "$topic" --num-records "$n" --record-size "$size" --throughput -1 \
			--command-property $producer_props
		# "N records sent, R records/sec (M MB/sec), A ms avg latency, X ms
		# max latency, P50 ms 50th, P95 ms 95th, P99 ms 99th, P999 ms 99.9th."
		rows+=("$(awk -v b="$name" -v n="$n" -v s="$size" -v cpu="$cpu_s" -v gb="$gb" -v pk="$peak_mb" -v rs="$rss_mb" -v an="$anon_mb" '
			/records sent,/ && /50th/ {
				gsub(/[(),]/, "")
				printf "| producer | %d × %d B | %s | %.0f | %.1f | %s | %s | %.2f | %d | %d | %d |\n",
					n, s, b, $4, $6, $16, $22, cpu / gb, pk, rs, an
			}' "$out")")
		echo "$name: consumer perf test, $n × $size B" >&2
		out="$dir/consumer-$name-$size.log"
		measure java "${tool_opts[@]}" org.apache.kafka.tools.ConsumerPerformance --bootstrap-server "$addr" \
			--topic "$topic" --num-records "$n" --timeout 60000 --hide-header
		# start.time, end.time, MB, MB.sec, nMsg, nMsg.sec, rebalance.time.ms,
		# fetch.time.ms, fetch.MB.sec, fetch.nMsg.sec
		rows+=("$(awk -F', *' -v b="$name" -v n="$n" -v s="$size" -v cpu="$cpu_s" -v gb="$gb" -v pk="$peak_mb" -v rs="$rss_mb" -v an="$anon_mb" '
			NF == 10 && $5 + 0 > 0 {
				if ($5 + 0 < n) { print "consumed " $5 " of " n " records" > "/dev/stderr"; exit 1 }
				printf "| consumer | %d × %d B | %s | %.0f | %.1f | | | %.2f | %d | %d | %d |\n",
					n, s, b, $10, $9, cpu / gb, pk, rs, an
			}' "$out")")
	done
}

for b in $brokers; do
	case "$b" in
	kbroker)
		start_kbroker
		run_cases kbroker
		stop_kbroker
		;;
	kafka)
		start_kafka
		run_cases kafka
		stop_kafka
		;;
	*)
		echo "KAFKA_PERF_BROKERS: unknown broker $b (kbroker, kafka)" >&2
		exit 2
		;;
	esac
done

echo "| tool | records | broker | records/s | MB/s | p50 ms | p99 ms | broker CPU-s/GB | peak RSS MB | RSS MB | anon RSS MB |"
echo "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"
printf '%s\n' "${rows[@]}" | sort -s -t'|' -k2,3
