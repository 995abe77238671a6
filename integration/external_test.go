package integration

import (
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/kbroker/kbroker/internal/testenv"
)

// bootstrapEnv names an external broker to run the integration tests
// against instead of kbroker: any Kafka-compatible one, for example the
// Apache Kafka that scripts/kafka-ref.sh starts (issue 14, item 5). Tests
// that start, restart, kill or look inside a kbroker of their own skip.
const bootstrapEnv = "KBROKER_TEST_BOOTSTRAP"

// externalRunSuffix ends every topic name (and so group and transactional
// id) when the tests run against an external broker, which keeps what
// earlier runs created.
var externalRunSuffix = fmt.Sprintf(".r%d", time.Now().UnixNano()%1e9)

// externalBootstrap is the address in KBROKER_TEST_BOOTSTRAP, or "". A
// value that is not a host:port fails the test (testenv.Addr).
func externalBootstrap(t testing.TB) string {
	t.Helper()
	return testenv.Addr(t, bootstrapEnv)
}

// skipIfExternal skips a test of kbroker-only behaviour when the tests run
// against an external broker.
func skipIfExternal(t testing.TB, what string) {
	t.Helper()
	if addr := externalBootstrap(t); addr != "" {
		t.Skipf("kbroker only (%s): %s=%s", what, bootstrapEnv, addr)
	}
}

// externalProps are the broker settings an external broker is assumed to
// run with: those scripts/kafka-ref.sh starts Kafka with. A test that needs
// other settings skips against it.
var externalProps = map[string]string{
	"group.initial.rebalance.delay.ms":                            "0",
	"group.min.session.timeout.ms":                                "1000",
	"group.consumer.min.heartbeat.interval.ms":                    "100",
	"group.consumer.heartbeat.interval.ms":                        "250",
	"transaction.abort.timed.out.transaction.cleanup.interval.ms": "500",
	"transaction.max.timeout.ms":                                  "60000",
}

// externalMismatch says why o cannot be met by an external broker running
// with externalProps, or "" if it can. The flush mode is kbroker's own and
// does not matter to a test's expectations.
func (o brokerOpts) externalMismatch() string {
	var why []string
	if o.noAutoCreate {
		why = append(why, "auto.create.topics.enable=false")
	}
	if o.partitions != 0 {
		why = append(why, fmt.Sprintf("num.partitions=%d", o.partitions))
	}
	for k, v := range o.props {
		if externalProps[k] != v {
			why = append(why, k+"="+v)
		}
	}
	if len(why) == 0 {
		return ""
	}
	sort.Strings(why)
	return "needs broker settings the external broker does not have: " + strings.Join(why, ", ")
}

// externalBroker is the broker named by KBROKER_TEST_BOOTSTRAP.
type externalBroker string

func (b externalBroker) Addr() string { return string(b) }

// Restart skips the test: an external broker is not ours to restart.
func (b externalBroker) Restart(t *testing.T) {
	t.Helper()
	t.Skipf("kbroker only (restarts the broker): %s=%s", bootstrapEnv, string(b))
}

// TestExternalMismatch: the settings check that decides which tests run
// against an external broker.
func TestExternalMismatch(t *testing.T) {
	for _, tt := range []struct {
		name string
		o    brokerOpts
		want string
	}{
		{"defaults", brokerOpts{}, ""},
		{"flush mode is kbroker's own", brokerOpts{flush: "sync"}, ""},
		{"group settings", groupOpts(nil), ""},
		{"transaction settings", txnOpts(), ""},
		{"kip848 settings", groupOpts(kip848Props), ""},
		{"partitions", brokerOpts{partitions: 2}, "num.partitions=2"},
		{"no auto-create", brokerOpts{noAutoCreate: true}, "auto.create.topics.enable=false"},
		{"other props", brokerOpts{props: map[string]string{"offsets.retention.minutes": "1", "group.min.session.timeout.ms": "1000"}}, "offsets.retention.minutes=1"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.o.externalMismatch()
			if (tt.want == "") != (got == "") || !strings.Contains(got, tt.want) {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

// awaitTopicReady waits until every partition of topic has a leader that
// serves it (ListOffsets answers without error). kbroker creates a topic
// before it answers CreateTopics; Kafka applies the creation to its
// broker's metadata a moment later and makes the broker the partitions'
// leader after that, so a client that produces at once may see
// UNKNOWN_TOPIC_OR_PARTITION or NOT_LEADER_OR_FOLLOWER.
func awaitTopicReady(t *testing.T, addr, topic string) {
	t.Helper()
	adm := newAdmin(t, addr)
	deadline := time.Now().Add(groupWait)
	for {
		td, err := adm.ListTopics(testCtx(t), topic)
		if err == nil {
			d := td[topic]
			ready := d.Err == nil && len(d.Partitions) > 0
			for _, p := range d.Partitions {
				ready = ready && p.Err == nil && p.Leader >= 0
			}
			if ready {
				var lo kadm.ListedOffsets
				lo, err = adm.ListEndOffsets(testCtx(t), topic)
				if err == nil && lo.Error() == nil && len(lo[topic]) == len(d.Partitions) {
					return
				}
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("topic %s not ready within %v (%v)", topic, groupWait, err)
		}
		time.Sleep(20 * time.Millisecond) // polling the broker's metadata
	}
}
