// Package integration holds end-to-end tests: real Kafka clients (franz-go,
// sarama, segmentio/kafka-go, confluent-kafka-go through cgo and its
// bundled librdkafka, kcat) against the real kbroker binary, built once per
// test run, and against the in-process broker (broker.StartInProcess).
//
// Every test runs in CI. Locally, `go test -short` with
// KBROKER_SKIP_BINARY=1 skips the tests that need the binary (building it
// takes a while on a cold cache); kcat tests skip when kcat is not on PATH
// (.ci/run installs it).
//
// The consumer-group tests (group_*_test.go) run each client's group
// consumer (kgo with the range and cooperative-sticky balancers and static
// members, sarama, kafka-go, confluent-kafka-go, kcat -G) through joins,
// splits, leaves and restarts, checking that every record is consumed
// exactly once; TestGroupCrashKill9 kills the binary under a committing
// member (KBROKER_GROUP_KILLS rounds, 3 by default). With
// KBROKER_GROUP_DEBUG=1, kgo logs at debug level and librdkafka with its
// cgrp debug context; a failed test prints its members' logs.
//
// The reliability tests (reliability_helpers_test.go) prove that the
// binary loses nothing it acknowledged, under a full load at once: an
// idempotent producer, a committing group member and a transactional
// producer that commits, aborts and sometimes holds a transaction open.
// Every acknowledged record, group commit and transaction outcome is
// recorded and checked after each restart (records dense and in place,
// committed offsets not behind, committed transactions wholly visible to
// read_committed and aborted or open ones not at all, open ones aborted by
// the broker's timeout). TestReliabilityCrash SIGKILLs the binary in sync
// (KBROKER_RELIABILITY_KILLS, 20 by default), async and pool mode (a
// quarter as often, at least 5; pool mode's losses are measured, and
// bounded by its commit interval); TestPowerLoss destroys, after a SIGKILL
// in sync mode, what a power loss could take (commit log past the
// checkpoint's durable position, consume queues past that or kept stale;
// KBROKER_POWER_LOSS_ROUNDS, 2 by default); TestShutdown sends SIGTERM
// under the load in each mode (KBROKER_SHUTDOWN_ROUNDS, 2 by default) and
// wants a clean stop. KBROKER_RELIABILITY_DEBUG=1 prints the broker's log.
//
// Hostile input and limits: TestHostileInput fuzzes the running binary
// from 50 connections with mutated real request frames and hostile byte
// streams while kgo clients work (KBROKER_HOSTILE_DURATION, 12s by
// default; KBROKER_HOSTILE_SEED, 1; testdata/hostile holds inputs sent
// first); limits_test.go opens 2,000 connections claiming 100 MiB frames,
// runs clients that never read, and checks max.connections and
// max.connections.per.ip; TestDiskFullTmpfs fills a 64 MiB tmpfs under
// the binary (root only). They read the broker's memory from
// /proc/<pid>/status (Linux).
//
// docs/TESTING.md lists every KBROKER_* setting; internal/testenv reads
// them.
package integration
