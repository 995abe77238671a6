package admin

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"

	"github.com/kbroker/kbroker/broker"
)

// TestAuthenticationMetrics: one good and one refused SASL PLAIN login show
// in the authentication counters, which are zero before, and the
// connection series are split by the listener a connection came in on.
func TestAuthenticationMetrics(t *testing.T) {
	b, s := startBroker(t, func(c *broker.Config) {
		c.Listen = "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0"
		c.SASLEnabledMechanisms = "PLAIN"
		c.SASLUsers = "alice:alice-secret"
		c.FailedAuthenticationDelay = time.Millisecond
	})
	const ok, failed = "kafka_server_socket_server_metrics_successful_authentication_total",
		"kafka_server_socket_server_metrics_failed_authentication_total"
	fams := scrape(t, s)
	for _, name := range []string{ok, failed} {
		if v, found := value(fams, name); !found || v != 0 {
			t.Fatalf("%s = %v (found %v) before any login, want 0", name, v, found)
		}
	}
	saslAddr := b.ListenerAddr("SASL_PLAINTEXT")
	login := func(pass string) error {
		cl, err := kgo.NewClient(kgo.SeedBrokers(saslAddr), kgo.SASL(plain.Auth{User: "alice", Pass: pass}.AsMechanism()),
			kgo.RequestRetries(0))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		return cl.Ping(ctx)
	}
	if err := login("alice-secret"); err != nil {
		t.Fatalf("good login: %v", err)
	}
	if err := login("wrong"); err == nil {
		t.Fatal("a wrong password was accepted")
	}
	fams = scrape(t, s)
	if v, _ := value(fams, ok); v < 1 {
		t.Errorf("%s = %v after a good login, want at least 1", ok, v)
	}
	if v, _ := value(fams, failed); v < 1 {
		t.Errorf("%s = %v after a refused login, want at least 1", failed, v)
	}
	const accepted = "kbroker_connections_accepted_total"
	if v, _ := value(fams, accepted, "listener", "SASL_PLAINTEXT"); v < 2 {
		t.Errorf("%s{listener=SASL_PLAINTEXT} = %v after two logins there, want at least 2", accepted, v)
	}
	if v, found := value(fams, accepted, "listener", "PLAINTEXT"); !found || v != 0 {
		t.Errorf("%s{listener=PLAINTEXT} = %v (found %v), want 0: no client used it", accepted, v, found)
	}
}
