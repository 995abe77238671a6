package broker

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Kafka's own server.properties, and the files of images and tools built
// around it, set things a single kbroker node has no use for (controller
// quorums, thread pools, replication factors) and name retention in
// hours. kbroker takes such a file as it is: the settings below are
// accepted and ignored (InapplicableSetting says why, and the kbroker
// command logs them at start-up), and Kafka's coarser synonyms set the
// millisecond settings kbroker has.

// inapplicableSettings are Kafka broker settings that have no meaning for
// one kbroker node, with the reason.
var inapplicableSettings = map[string]string{
	"process.roles":                                    "kbroker is one node, broker and controller at once",
	"controller.quorum.voters":                         "no KRaft quorum: kbroker keeps its metadata in its data directory",
	"controller.quorum.bootstrap.servers":              "no KRaft quorum: kbroker keeps its metadata in its data directory",
	"inter.broker.listener.name":                       "no other brokers to talk to",
	"metadata.log.dir":                                 "metadata lives in the data directory",
	"num.network.threads":                              "a goroutine serves each connection",
	"num.io.threads":                                   "a goroutine serves each connection",
	"background.threads":                               "a goroutine serves each connection",
	"num.recovery.threads.per.data.dir":                "recovery reads one commit log",
	"socket.send.buffer.bytes":                         "the kernel's socket buffer sizes apply",
	"socket.receive.buffer.bytes":                      "the kernel's socket buffer sizes apply",
	"num.replica.fetchers":                             "no replication: one node keeps one copy",
	"replica.lag.time.max.ms":                          "no replication: one node keeps one copy",
	"default.replication.factor":                       "no replication: one node keeps one copy",
	"min.insync.replicas":                              "no replication: one node keeps one copy",
	"offsets.topic.replication.factor":                 "no replication: one node keeps one copy",
	"transaction.state.log.replication.factor":         "no replication: one node keeps one copy",
	"transaction.state.log.min.isr":                    "no replication: one node keeps one copy",
	"share.coordinator.state.topic.replication.factor": "no replication: one node keeps one copy",
	"share.coordinator.state.topic.min.isr":            "no replication: one node keeps one copy",
	"auto.leader.rebalance.enable":                     "one node leads every partition",
	"log.flush.interval.messages":                      "kbroker.flush.mode decides when data is durable",
	"log.flush.interval.ms":                            "kbroker.flush.mode decides when data is durable",
	"log.flush.scheduler.interval.ms":                  "kbroker.flush.mode decides when data is durable",
}

// InapplicableSetting reports whether name is a Kafka broker setting that
// kbroker accepts and ignores, and why.
func InapplicableSetting(name string) (reason string, ok bool) {
	reason, ok = inapplicableSettings[name]
	return reason, ok
}

// settingSynonym is a coarser Kafka name of a millisecond setting:
// log.retention.hours for log.retention.ms.
type settingSynonym struct {
	// of is the setting it sets, scale the milliseconds of one unit.
	of    string
	scale int64
	// rank orders the names of one setting from the least specific:
	// Kafka takes the most specific one that is set, wherever it
	// appears (SetAll applies them in this order).
	rank int
}

// settingSynonyms are Kafka's coarser names of kbroker's settings. node.id
// is broker.id's newer name, which Kafka takes when both are set.
var settingSynonyms = map[string]settingSynonym{
	"log.retention.hours":   {of: "log.retention.ms", scale: int64(time.Hour / time.Millisecond), rank: 1},
	"log.retention.minutes": {of: "log.retention.ms", scale: int64(time.Minute / time.Millisecond), rank: 2},
	"log.roll.hours":        {of: "log.roll.ms", scale: int64(time.Hour / time.Millisecond), rank: 1},
	"broker.id":             {of: "node.id", scale: 1, rank: 1},
}

// setSynonym sets the setting a synonym names.
func (c *Config) setSynonym(name, value string, syn settingSynonym) error {
	n, err := strconv.ParseInt(strings.TrimSpace(value), 10, 64)
	if err != nil {
		return fmt.Errorf("%s: %q is not a valid integer", name, value)
	}
	// -1 (keep forever) is not scaled.
	if n > 0 && n > (1<<63-1)/syn.scale {
		return fmt.Errorf("%s: %d is too large", name, n)
	}
	if n > 0 {
		n *= syn.scale
	}
	return c.Set(syn.of, strconv.FormatInt(n, 10))
}

// specificity is how late SetAll applies a property: a synonym by its
// rank, a setting itself after all of its synonyms.
func specificity(name string) int {
	if syn, ok := settingSynonyms[name]; ok {
		return syn.rank
	}
	return len(settingSynonyms) + 1
}
