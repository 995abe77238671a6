#!/usr/bin/env bash
# kafka-ref.sh: Apache Kafka's own broker, single-node KRaft, as the
# reference kbroker is compared with (issue 14).
#
#   scripts/kafka-ref.sh start    resolve, format, start, wait until it
#                                 serves; prints the bootstrap address
#   scripts/kafka-ref.sh stop     SIGTERM, wait (SIGKILL after 30 s), remove
#                                 the data
#   scripts/kafka-ref.sh status   the bootstrap address if it runs
#   scripts/kafka-ref.sh classpath  the resolved classpath (for the perf tools)
#
# Nothing is vendored: Maven resolves kafka_2.13 (and kafka-tools) from
# Central into ~/.m2 (the first time, ~70 MB and 20-60 s). It needs Java 17+
# and mvn. Settings (environment):
#
#   KAFKA_REF_DIR=/tmp/kbroker-kafka-ref   state: config, data, log, pid
#   KAFKA_REF_VERSION=4.4.0                the kafka_2.13 version
#   KAFKA_REF_HEAP=512m                    -Xmx (and -Xms)
#   KAFKA_REF_PROPS="k=v ..."              more broker settings
#
# The broker listens on two free loopback ports (clients, controller). Its
# group and transaction settings are the short timeouts the tests use
# (integration/external_test.go's externalProps, integration/java's
# TestBroker.BROKER_SETTINGS), so tests see the same timeouts on both, and
# its modern groups compute a new target assignment at every group epoch
# (the assignment intervals 0), as kbroker's do; Kafka 4.4's default of
# 1000 ms batches them.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
dir="${KAFKA_REF_DIR:-/tmp/kbroker-kafka-ref}"
version="${KAFKA_REF_VERSION:-4.4.0}"
heap="${KAFKA_REF_HEAP:-512m}"

# classpath resolves the broker's jars with Maven and caches the classpath.
classpath() {
	local cp="$dir/classpath-$version"
	if [ ! -s "$cp" ]; then
		mkdir -p "$dir"
		# Quiet unless it fails (Debian's Maven 3.8 prints colour resets
		# even with -B -q).
		if ! mvn -B -q -ntp -f "$here/kafka-ref/pom.xml" -Dkafka.version="$version" \
			dependency:build-classpath -Dmdep.outputFile="$cp.tmp" >"$dir/maven.log" 2>&1; then
			cat "$dir/maven.log" >&2
			exit 1
		fi
		mv "$cp.tmp" "$cp"
	fi
	cat "$cp"
}

# freeport asks the kernel for a free loopback port. Another process could
# take it before Kafka binds it; start then fails and says so.
freeport() {
	if command -v python3 >/dev/null; then
		python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'
		return
	fi
	# Without python: a random high port nothing answers on.
	local p
	while :; do
		p=$((20000 + RANDOM % 40000))
		if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
			echo "$p"
			return
		fi
	done
}

running() {
	[ -f "$dir/pid" ] && kill -0 "$(cat "$dir/pid")" 2>/dev/null
}

start() {
	if running; then
		cat "$dir/bootstrap"
		return
	fi
	local cp port cport
	cp="$(classpath)"
	rm -rf "$dir/data" "$dir/kafka.log" "$dir/bootstrap"
	mkdir -p "$dir/data"
	port="$(freeport)"
	cport="$(freeport)"
	while [ "$cport" = "$port" ]; do cport="$(freeport)"; done
	cat >"$dir/server.properties" <<PROPS
process.roles=broker,controller
node.id=1
listeners=PLAINTEXT://127.0.0.1:$port,CONTROLLER://127.0.0.1:$cport
advertised.listeners=PLAINTEXT://127.0.0.1:$port
controller.listener.names=CONTROLLER
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
controller.quorum.bootstrap.servers=127.0.0.1:$cport
inter.broker.listener.name=PLAINTEXT
log.dirs=$dir/data
num.partitions=1
offsets.topic.replication.factor=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
group.initial.rebalance.delay.ms=0
group.min.session.timeout.ms=1000
group.consumer.min.heartbeat.interval.ms=100
group.consumer.heartbeat.interval.ms=250
group.consumer.min.session.timeout.ms=6000
group.consumer.session.timeout.ms=6000
group.consumer.assignment.interval.ms=0
group.share.assignment.interval.ms=0
group.streams.assignment.interval.ms=0
transaction.abort.timed.out.transaction.cleanup.interval.ms=500
transaction.max.timeout.ms=60000
PROPS
	for kv in ${KAFKA_REF_PROPS:-}; do echo "$kv" >>"$dir/server.properties"; done
	local java_opts=(-Xms"$heap" -Xmx"$heap" -XX:+UseG1GC -Djava.awt.headless=true
		-Dorg.slf4j.simpleLogger.defaultLogLevel=info -Dorg.slf4j.simpleLogger.showDateTime=true
		-Dorg.slf4j.simpleLogger.logFile=System.out)
	local t0 cluster
	t0="$(date +%s%N)"
	cluster="$(java -cp "$cp" kafka.tools.StorageTool random-uuid 2>/dev/null | tail -1)"
	java "${java_opts[@]}" -cp "$cp" kafka.tools.StorageTool format --standalone \
		-t "$cluster" -c "$dir/server.properties" >"$dir/format.log" 2>&1 ||
		{ cat "$dir/format.log" >&2; exit 1; }
	local t1
	t1="$(date +%s%N)"
	nohup java "${java_opts[@]}" -cp "$cp" kafka.Kafka "$dir/server.properties" >"$dir/kafka.log" 2>&1 &
	echo $! >"$dir/pid"
	# Ready when the broker logs that it started (its listener then takes
	# requests); bounded at 120 s.
	local i
	for i in $(seq 1 1200); do
		if grep -q 'Kafka Server started' "$dir/kafka.log" 2>/dev/null; then
			echo "127.0.0.1:$port" >"$dir/bootstrap"
			local t2
			t2="$(date +%s%N)"
			echo "kafka $version ready on 127.0.0.1:$port: format $(((t1 - t0) / 1000000)) ms, start $(((t2 - t1) / 1000000)) ms (log $dir/kafka.log)" >&2
			echo "127.0.0.1:$port"
			return
		fi
		if ! running; then
			echo "kafka exited while starting:" >&2
			tail -50 "$dir/kafka.log" >&2
			exit 1
		fi
		sleep 0.1
	done
	echo "kafka not started within 120 s:" >&2
	tail -50 "$dir/kafka.log" >&2
	stop
	exit 1
}

stop() {
	if running; then
		local pid i
		pid="$(cat "$dir/pid")"
		kill -TERM "$pid"
		for i in $(seq 1 300); do
			kill -0 "$pid" 2>/dev/null || break
			sleep 0.1
		done
		if kill -0 "$pid" 2>/dev/null; then
			echo "kafka still running 30 s after SIGTERM: killing it" >&2
			kill -KILL "$pid"
		fi
	fi
	rm -rf "$dir/data" "$dir/pid" "$dir/bootstrap"
}

case "${1:-}" in
start) start ;;
stop) stop ;;
status) if running; then cat "$dir/bootstrap"; else echo "not running" >&2; exit 1; fi ;;
classpath) classpath ;;
*) echo "usage: $0 start|stop|status|classpath" >&2; exit 2 ;;
esac
