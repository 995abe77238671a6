//go:build !cgo

package integration

import (
	"context"
	"errors"
	"testing"
)

// confluentBuilt: without cgo, confluent-kafka-go (librdkafka) cannot be
// built; its tests skip, or fail in CI.
const confluentBuilt = false

func produceConfluent(t *testing.T, addr, topic string, recs []consRec, c consCodec, o consumeOpts) {
	t.Helper()
	t.Fatal("confluent-kafka-go needs cgo")
}

func consumeConfluent(ctx context.Context, t *testing.T, addr, topic string, from int64, n int, o consumeOpts, out chan<- consRec) error {
	return errors.New("confluent-kafka-go needs cgo")
}
