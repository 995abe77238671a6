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
// KBROKER_GROUP_DEBUG set, kgo logs at debug level and librdkafka with its
// cgrp debug context; a failed test prints its members' logs.
package integration
