// Package integration holds end-to-end tests: real Kafka clients (franz-go,
// sarama, segmentio/kafka-go, confluent-kafka-go through cgo and its
// bundled librdkafka, kcat) against the real kbroker binary, built once per
// test run, and against the in-process broker (broker.StartInProcess).
//
// Every test runs in CI. Locally, `go test -short` with
// KBROKER_SKIP_BINARY=1 skips the tests that need the binary (building it
// takes a while on a cold cache); kcat tests skip when kcat is not on PATH
// (.ci/run installs it).
package integration
