package broker_test

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kbroker/kbroker/broker"
)

// ExampleStartInProcess starts a broker inside the test process on a free
// port with a temporary data directory, produces a record and reads it
// back.
func ExampleStartInProcess() {
	b, err := broker.StartInProcess("", nil)
	if err != nil {
		panic(err)
	}
	defer b.Close()

	cl, err := kgo.NewClient(
		kgo.SeedBrokers(b.Addr()),
		kgo.AllowAutoTopicCreation(),
		kgo.ConsumeTopics("example"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
	)
	if err != nil {
		panic(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	r, err := cl.ProduceSync(ctx, &kgo.Record{Topic: "example", Value: []byte("hello")}).First()
	fmt.Println(r.Offset, err)
	fetches := cl.PollFetches(ctx)
	for _, rec := range fetches.Records() {
		fmt.Println(rec.Offset, string(rec.Value))
	}
	// Output:
	// 0 <nil>
	// 0 hello
}
