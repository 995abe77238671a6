package broker

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/kbroker/kbroker/group"
	klog "github.com/kbroker/kbroker/log"
	"github.com/kbroker/kbroker/partition"
	"github.com/kbroker/kbroker/topic"
)

//go:generate go test -run ^TestConfigDoc$ -update .

// Config holds every broker setting. Each field's kafka tag is its Kafka
// property name (server.properties), or a kbroker.* name where Kafka has
// none; the same tags drive the config file, DescribeConfigs for the broker
// and the start-up dump.
type Config struct {
	// Listen is listeners: either one host:port (a PLAINTEXT listener,
	// the simple case) or Kafka's comma-separated NAME://host:port list,
	// for example "PLAINTEXT://127.0.0.1:9092,SASL_SSL://127.0.0.1:9093".
	// Port 0 picks a free port (Broker.Listeners reports it).
	Listen string `kafka:"listeners"`
	// AdvertisedListener is advertised.listeners: what clients are told
	// to connect to, per listener in the NAME://host:port form (a plain
	// host:port when there is one listener). A listener left out
	// advertises the address it is bound to.
	AdvertisedListener string `kafka:"advertised.listeners"`
	// ListenerSecurityProtocolMap is listener.security.protocol.map:
	// NAME:PROTOCOL pairs. The default is Kafka's, each protocol's name
	// mapped to itself.
	ListenerSecurityProtocolMap string `kafka:"listener.security.protocol.map"`
	// ControllerListenerNames is controller.listener.names: listeners of
	// Kafka's KRaft controllers, comma-separated. kbroker is its own
	// controller and serves no controller requests, so listeners and
	// advertised.listeners entries of these names are not bound (a Kafka
	// server.properties runs as it is).
	ControllerListenerNames string `kafka:"controller.listener.names"`

	// SASLEnabledMechanisms is sasl.enabled.mechanisms, the mechanisms
	// SASL_PLAINTEXT and SASL_SSL listeners offer: PLAIN, SCRAM-SHA-256,
	// SCRAM-SHA-512, OAUTHBEARER. Unlike Kafka (default GSSAPI, which
	// kbroker does not implement) it has no default: a SASL listener
	// needs it set.
	SASLEnabledMechanisms string `kafka:"sasl.enabled.mechanisms"`
	// SASLUsers seeds SASL users at start-up: comma-separated NAME:PASSWORD
	// pairs (a password cannot hold a comma here; use
	// AlterUserScramCredentials for such). Each user gets SCRAM-SHA-256
	// and SCRAM-SHA-512 credentials, which PLAIN logins are checked
	// against too; passwords are hashed at once and never stored.
	SASLUsers string `kafka:"kbroker.sasl.users" sensitive:"true"`
	// ConnectionsMaxReauth is connections.max.reauth.ms (KIP-368): the
	// longest a SASL session lasts before the client must
	// re-authenticate; 0 means sessions do not expire (unless an
	// OAUTHBEARER token does).
	ConnectionsMaxReauth time.Duration `kafka:"connections.max.reauth.ms"`
	// FailedAuthenticationDelay is
	// connection.failed.authentication.delay.ms: how long the answer to a
	// failed login and the close that follows it are held back, to slow
	// password guessing.
	FailedAuthenticationDelay time.Duration `kafka:"connection.failed.authentication.delay.ms"`

	// SSLKeystoreType is ssl.keystore.type; only PEM (KIP-651) is
	// supported.
	SSLKeystoreType string `kafka:"ssl.keystore.type"`
	// SSLKeystoreLocation is ssl.keystore.location: a PEM file holding the
	// private key and the certificate chain of SSL and SASL_SSL
	// listeners.
	SSLKeystoreLocation string `kafka:"ssl.keystore.location"`
	// SSLKeystoreCertificateChain is ssl.keystore.certificate.chain: the
	// certificate chain in PEM, instead of a file.
	SSLKeystoreCertificateChain string `kafka:"ssl.keystore.certificate.chain"`
	// SSLKeystoreKey is ssl.keystore.key: the private key in PEM
	// (unencrypted), instead of a file.
	SSLKeystoreKey string `kafka:"ssl.keystore.key" sensitive:"true"`
	// SSLTruststoreType is ssl.truststore.type; only PEM is supported.
	SSLTruststoreType string `kafka:"ssl.truststore.type"`
	// SSLTruststoreLocation is ssl.truststore.location: a PEM file of the
	// CA certificates client certificates are checked against.
	SSLTruststoreLocation string `kafka:"ssl.truststore.location"`
	// SSLTruststoreCertificates is ssl.truststore.certificates: the CA
	// certificates in PEM, instead of a file.
	SSLTruststoreCertificates string `kafka:"ssl.truststore.certificates"`
	// SSLClientAuth is ssl.client.auth: none, requested or required, for
	// SSL listeners. As in Kafka, it applies to a SASL_SSL listener only
	// listener-prefixed (ListenerOverrides); otherwise SASL_SSL listeners
	// never ask for a client certificate.
	SSLClientAuth string `kafka:"ssl.client.auth"`
	// SSLPrincipalMappingRules is ssl.principal.mapping.rules (KIP-371):
	// how the subject of a client certificate becomes the principal name.
	SSLPrincipalMappingRules string `kafka:"ssl.principal.mapping.rules"`
	// ListenerOverrides are Kafka's per-listener settings, keyed by their
	// full property name listener.name.<listener>.<property> (the listener
	// name in lower case, as Kafka writes it): sasl.enabled.mechanisms,
	// connections.max.reauth.ms (also per mechanism, as
	// <mechanism>.connections.max.reauth.ms with the mechanism in lower
	// case), and the ssl.keystore.*, ssl.truststore.*, ssl.client.auth and
	// ssl.principal.mapping.rules settings. A listener without an override
	// uses the unprefixed setting; ssl.client.auth applies to a SASL_SSL
	// listener only through its override, as in Kafka. Set them in the
	// config file or with --set; Config.Set and Validate check the names.
	ListenerOverrides map[string]string `kafka:"listener.name.<listener>.<property>"`
	// AuthorizerClassName is authorizer.class.name: empty for no
	// authorization (everything allowed; the ACL APIs answer
	// SECURITY_DISABLED), or Kafka's StandardAuthorizer
	// (org.apache.kafka.metadata.authorizer.StandardAuthorizer; the
	// ZooKeeper-era kafka.security.authorizer.AclAuthorizer is accepted
	// too) for kbroker's ACL authorizer, with ACLs kept in the metadata
	// directory.
	AuthorizerClassName string `kafka:"authorizer.class.name"`
	// SuperUsers is super.users: principals separated by ';' (DNs hold
	// commas) that every check allows.
	SuperUsers string `kafka:"super.users"`
	// AllowEveryoneIfNoACLFound is allow.everyone.if.no.acl.found: whether
	// a resource without any ACL is open to everyone.
	AllowEveryoneIfNoACLFound bool `kafka:"allow.everyone.if.no.acl.found"`
	// TLSHandshakeTimeout bounds the time from accept to the end of the
	// TLS handshake and of SASL authentication, so that a peer that
	// stalls mid-handshake holds a connection no longer than this.
	TLSHandshakeTimeout time.Duration `kafka:"kbroker.authentication.timeout.ms"`
	// DataDir holds the commit log, consume queues and metadata.
	DataDir string `kafka:"log.dirs"`
	// FlushMode is "sync" (group commit before acknowledging), "async"
	// (page cache, flushed every 500 ms) or "pool" (transient store pool).
	FlushMode string `kafka:"kbroker.flush.mode"`
	// SegmentBytes is the size of every commit-log file.
	SegmentBytes int64 `kafka:"log.segment.bytes"`
	// LogAppend is how produced batches reach the commit-log files:
	// "pwrite" (one pwritev(2) per batch, the default) or "mapped" (copied
	// into the files' memory mappings, RocketMQ's way: cheaper for tiny
	// batches, dearer for large ones; docs/BENCHMARKS.md). See
	// log.AppendMode.
	LogAppend string `kafka:"kbroker.log.append"`
	// LogWarm is how each new commit-log file is pre-faulted before
	// mapped appends reach its pages: "fault" (a write fault per page, the
	// default), "populate" (madvise MADV_POPULATE_WRITE), "touch" (a zero
	// written per page, RocketMQ's way) or "none". Unused with pwrite
	// appends, which never fault.
	LogWarm string `kafka:"kbroker.log.warm"`
	// LogHugePages maps the commit-log segments for transparent huge
	// pages and fills their page cache with 2 MiB folios ahead of pwrite
	// appends, once the appends average 8 KiB or more: appends then copy into the page cache without allocating it,
	// and fetches map and unmap 2 MiB per page-table entry. Fetches at the
	// tail of such pages read them through the mapping, where readahead
	// marks cannot set off a zero-fill past the write position
	// (docs/BENCHMARKS.md, "Huge pages for the commit log" and "Huge
	// pages without the readahead stalls"). It does
	// nothing with mapped appends, with the transient store pool, or
	// where the kernel has transparent huge pages turned off.
	LogHugePages bool `kafka:"kbroker.log.huge.pages"`
	// LogAllocateAhead is the least disk the commit log keeps allocated
	// ahead of its write position. Under load the lead follows the write
	// rate up to two segments, and a segment the lead reaches into is
	// allocated whole before it is written to, so an idle broker holds a
	// few MiB and a busy one never waits for the disk
	// (log.Config.AllocateAhead).
	LogAllocateAhead int64 `kafka:"kbroker.log.allocate.ahead.bytes"`
	// DefaultPartitions is num.partitions: partitions of auto-created
	// topics and of CreateTopics with -1.
	DefaultPartitions int32 `kafka:"num.partitions"`
	// AutoCreateTopics is auto.create.topics.enable.
	AutoCreateTopics bool `kafka:"auto.create.topics.enable"`
	// MaxRequestBytes is socket.request.max.bytes: the largest frame.
	MaxRequestBytes int32 `kafka:"socket.request.max.bytes"`
	// QueuedMaxRequestBytes is queued.max.request.bytes: request bytes in
	// memory across all connections; reading pauses above it.
	QueuedMaxRequestBytes int64 `kafka:"queued.max.request.bytes"`
	// ConnectionsMaxIdle is connections.max.idle.ms.
	ConnectionsMaxIdle time.Duration `kafka:"connections.max.idle.ms"`
	// MaxConnections is max.connections: the most client connections at
	// once; a connection beyond it is closed right after accept (Kafka's
	// acceptor instead waits for a slot). Default effectively unlimited
	// (Kafka: Integer.MAX_VALUE).
	MaxConnections int `kafka:"max.connections"`
	// MaxConnectionsPerIP is max.connections.per.ip: the most connections
	// from one IP address; a connection beyond it is closed right after
	// accept, as Kafka does. Default Integer.MAX_VALUE.
	MaxConnectionsPerIP int `kafka:"max.connections.per.ip"`
	// MaxInFlightPerConnection bounds responses waiting to be written on
	// one connection; reading from it pauses above it.
	MaxInFlightPerConnection int `kafka:"kbroker.max.inflight.requests.per.connection"`
	// MessageMaxBytes is message.max.bytes, the broker-wide default of
	// max.message.bytes.
	MessageMaxBytes int `kafka:"message.max.bytes"`
	// RetentionMs is log.retention.ms; -1 keeps data forever.
	RetentionMs int64 `kafka:"log.retention.ms"`
	// RetentionBytes is log.retention.bytes; -1 means no limit.
	RetentionBytes int64 `kafka:"log.retention.bytes"`
	// RetentionCheckInterval is log.retention.check.interval.ms.
	RetentionCheckInterval time.Duration `kafka:"log.retention.check.interval.ms"`
	// LogCleanupPolicy is log.cleanup.policy, the default cleanup.policy
	// of topics: "delete", "compact", "compact,delete" or empty (keep
	// everything).
	LogCleanupPolicy string `kafka:"log.cleanup.policy"`
	// LogRollMs is log.roll.ms, the default segment.ms of topics: on the
	// shared commit log it only bounds a compacted partition's
	// uncleanable head (docs/COMPACTION.md).
	LogRollMs int64 `kafka:"log.roll.ms"`
	// LogCleanerEnable is log.cleaner.enable: whether the log cleaner
	// runs. Off, compacted topics are still accepted, and not cleaned.
	LogCleanerEnable bool `kafka:"log.cleaner.enable"`
	// LogCleanerThreads is log.cleaner.threads; the dedupe buffer and the
	// I/O budget are shared between them.
	LogCleanerThreads int `kafka:"log.cleaner.threads"`
	// LogCleanerBackoff is log.cleaner.backoff.ms: how long a cleaner
	// thread sleeps when no partition needs cleaning.
	LogCleanerBackoff time.Duration `kafka:"log.cleaner.backoff.ms"`
	// LogCleanerDedupeBufferSize is log.cleaner.dedupe.buffer.size: the
	// memory of all cleaner threads' key maps together, 24 bytes per key;
	// a dirty range with more keys is cleaned in several passes.
	LogCleanerDedupeBufferSize int64 `kafka:"log.cleaner.dedupe.buffer.size"`
	// LogCleanerIOMaxBytesPerSecond is log.cleaner.io.max.bytes.per.second:
	// the cleaners' read plus write rate (unlimited by default).
	LogCleanerIOMaxBytesPerSecond float64 `kafka:"log.cleaner.io.max.bytes.per.second"`
	// LogCleanerMinCleanableRatio is log.cleaner.min.cleanable.ratio, the
	// default min.cleanable.dirty.ratio of topics.
	LogCleanerMinCleanableRatio float64 `kafka:"log.cleaner.min.cleanable.ratio"`
	// LogCleanerDeleteRetentionMs is log.cleaner.delete.retention.ms, the
	// default delete.retention.ms of topics.
	LogCleanerDeleteRetentionMs int64 `kafka:"log.cleaner.delete.retention.ms"`
	// LogCleanerMinCompactionLagMs is log.cleaner.min.compaction.lag.ms,
	// the default min.compaction.lag.ms of topics.
	LogCleanerMinCompactionLagMs int64 `kafka:"log.cleaner.min.compaction.lag.ms"`
	// LogCleanerMaxCompactionLagMs is log.cleaner.max.compaction.lag.ms,
	// the default max.compaction.lag.ms of topics.
	LogCleanerMaxCompactionLagMs int64 `kafka:"log.cleaner.max.compaction.lag.ms"`
	// FullValidation decompresses compressed batches on produce to check
	// every record, as Kafka does (off: trusted to their CRC).
	FullValidation bool `kafka:"kbroker.produce.full.validation"`
	// SyncFlushTimeout bounds the wait for a group commit (sync mode); a
	// produce that waits longer gets REQUEST_TIMED_OUT.
	SyncFlushTimeout time.Duration `kafka:"kbroker.sync.flush.timeout.ms"`
	// FetchSessionCacheSlots is max.incremental.fetch.session.cache.slots:
	// how many fetch sessions (KIP-227) the broker keeps; 0 disables them.
	FetchSessionCacheSlots int `kafka:"max.incremental.fetch.session.cache.slots"`
	// FetchCopyThreshold is the size below which a record range of a fetch
	// response is written with the response's writev, copied by the kernel
	// straight from the commit-log mapping, instead of sent with its own
	// sendfile call (0: always sendfile); for small batches the copy
	// measured 5–14× faster (docs/BENCHMARKS.md). TLS connections copy
	// every range.
	FetchCopyThreshold int `kafka:"kbroker.fetch.copy.threshold.bytes"`
	// MetricsPartitionSeriesMax bounds the per-partition series of the
	// admin listener's /metrics (offsets, sizes, consumer-group lag per
	// partition): with more partitions than this, or more committed
	// group offsets, only per-topic and per-group series are exported, so
	// a broker with many partitions cannot swamp Prometheus. 0 turns the
	// per-partition series off.
	MetricsPartitionSeriesMax int `kafka:"kbroker.metrics.partition.series.max"`
	// MaxRequestPartitionSizeLimit is max.request.partition.size.limit:
	// the most partitions one DescribeTopicPartitions response carries
	// (KIP-966); a client that asks for more gets a cursor to page on.
	MaxRequestPartitionSizeLimit int32 `kafka:"max.request.partition.size.limit"`
	// ClusterID is reported in Metadata and DescribeCluster.
	ClusterID string `kafka:"cluster.id"`
	// SeedTopics are topics created at start (and again after a Reset)
	// when missing: comma-separated name[:partitions], partitions
	// defaulting to num.partitions ("orders:3,audit").
	SeedTopics string `kafka:"kbroker.seed.topics"`
	// NodeID is this broker's id; in a simulated cluster the first
	// node's, the others counting up from it.
	NodeID int32 `kafka:"node.id"`
	// Nodes above 1 simulate a cluster of that many nodes on the one
	// store, for testing clients (docs/TESTING-CONTROLS.md): each node
	// has its own port on every listener (the configured port plus the
	// node's index, or a free port for port 0), partition leaders and
	// coordinators spread over the nodes, a request to the wrong node
	// fails as on Kafka, and test controls move leaders and coordinators
	// and stop and start nodes. It is not replication.
	Nodes int `kafka:"kbroker.nodes"`

	// GroupInitialRebalanceDelay is how long the first rebalance of an
	// empty group waits for more members. kbroker defaults to 0 (Kafka:
	// 3000), as Kafka's development images do: a single-node broker for
	// development and tests gains nothing from the wait.
	GroupInitialRebalanceDelay time.Duration `kafka:"group.initial.rebalance.delay.ms"`
	// GroupMinSessionTimeout and GroupMaxSessionTimeout bound the session
	// timeout a member may ask for.
	GroupMinSessionTimeout time.Duration `kafka:"group.min.session.timeout.ms"`
	GroupMaxSessionTimeout time.Duration `kafka:"group.max.session.timeout.ms"`
	// GroupMaxSize is group.max.size, the most members of one group.
	GroupMaxSize int `kafka:"group.max.size"`
	// OffsetsTopicPartitions is offsets.topic.num.partitions, used when
	// __consumer_offsets is first created. kbroker defaults to 1 (Kafka:
	// 50): every partition shares the one commit log anyway, and each
	// costs a consume-queue file.
	OffsetsTopicPartitions int32 `kafka:"offsets.topic.num.partitions"`
	// OffsetsRetentionMinutes is offsets.retention.minutes: how long the
	// offsets of a group without members are kept.
	OffsetsRetentionMinutes int64 `kafka:"offsets.retention.minutes"`
	// OffsetsRetentionCheckInterval is offsets.retention.check.interval.ms.
	OffsetsRetentionCheckInterval time.Duration `kafka:"offsets.retention.check.interval.ms"`
	// OffsetsSnapshotInterval is how often the committed offsets are
	// snapshotted into the metadata directory, so that the commit-log
	// files holding older commits can be deleted and recovery replays only
	// what follows the snapshot.
	OffsetsSnapshotInterval time.Duration `kafka:"kbroker.offsets.snapshot.interval.ms"`

	// TransactionTopicPartitions is transaction.state.log.num.partitions,
	// used when __transaction_state is first created; 1 by default
	// (Kafka: 50), as for the offsets topic. The snapshot interval of the
	// transaction state is kbroker.offsets.snapshot.interval.ms.
	TransactionTopicPartitions int32 `kafka:"transaction.state.log.num.partitions"`
	// TransactionMaxTimeout is transaction.max.timeout.ms: the longest
	// transaction.timeout.ms a producer may ask for.
	TransactionMaxTimeout time.Duration `kafka:"transaction.max.timeout.ms"`
	// TransactionAbortCheckInterval is
	// transaction.abort.timed.out.transaction.cleanup.interval.ms: how
	// often transactions past their timeout are looked for and aborted.
	TransactionAbortCheckInterval time.Duration `kafka:"transaction.abort.timed.out.transaction.cleanup.interval.ms"`
	// TransactionalIDExpiration is transactional.id.expiration.ms: how
	// long an idle transactional id is remembered.
	TransactionalIDExpiration time.Duration `kafka:"transactional.id.expiration.ms"`

	// GroupCoordinatorRebalanceProtocols is
	// group.coordinator.rebalance.protocols: the group protocols served,
	// "classic" (always) and "consumer" (KIP-848: ConsumerGroupHeartbeat
	// and ConsumerGroupDescribe are advertised in ApiVersions only with
	// it). The default is Kafka 4.4's, "classic,consumer,streams";
	// "streams" and "share" are accepted, and those groups follow their
	// features, as in Kafka 4.2 and later.
	GroupCoordinatorRebalanceProtocols string `kafka:"group.coordinator.rebalance.protocols"`
	// ConsumerGroup* are the settings of consumer-protocol groups
	// (group.consumer.*), with Kafka 4's defaults and bounds.
	ConsumerGroupSessionTimeout       time.Duration `kafka:"group.consumer.session.timeout.ms"`
	ConsumerGroupMinSessionTimeout    time.Duration `kafka:"group.consumer.min.session.timeout.ms"`
	ConsumerGroupMaxSessionTimeout    time.Duration `kafka:"group.consumer.max.session.timeout.ms"`
	ConsumerGroupHeartbeatInterval    time.Duration `kafka:"group.consumer.heartbeat.interval.ms"`
	ConsumerGroupMinHeartbeatInterval time.Duration `kafka:"group.consumer.min.heartbeat.interval.ms"`
	ConsumerGroupMaxHeartbeatInterval time.Duration `kafka:"group.consumer.max.heartbeat.interval.ms"`
	ConsumerGroupMaxSize              int           `kafka:"group.consumer.max.size"`
	// ConsumerGroupAssignors is group.consumer.assignors: the server-side
	// assignors, comma-separated, the first the default.
	ConsumerGroupAssignors string `kafka:"group.consumer.assignors"`

	// GroupStreams* are the settings of streams groups (KIP-1071,
	// group.streams.*), with Kafka 4's defaults and bounds; the GROUP
	// config resource overrides session timeout, heartbeat interval and
	// standby replicas per group.
	GroupStreamsSessionTimeout       time.Duration `kafka:"group.streams.session.timeout.ms"`
	GroupStreamsMinSessionTimeout    time.Duration `kafka:"group.streams.min.session.timeout.ms"`
	GroupStreamsMaxSessionTimeout    time.Duration `kafka:"group.streams.max.session.timeout.ms"`
	GroupStreamsHeartbeatInterval    time.Duration `kafka:"group.streams.heartbeat.interval.ms"`
	GroupStreamsMinHeartbeatInterval time.Duration `kafka:"group.streams.min.heartbeat.interval.ms"`
	GroupStreamsMaxHeartbeatInterval time.Duration `kafka:"group.streams.max.heartbeat.interval.ms"`
	GroupStreamsMaxSize              int           `kafka:"group.streams.max.size"`
	GroupStreamsNumStandbyReplicas   int           `kafka:"group.streams.num.standby.replicas"`
	GroupStreamsMaxStandbyReplicas   int           `kafka:"group.streams.max.standby.replicas"`
	// GroupStreamsInitialRebalanceDelay holds back a new streams group's
	// first task assignment (ASSIGNMENT_DELAYED) so that instances that
	// start together share one rebalance.
	GroupStreamsInitialRebalanceDelay time.Duration `kafka:"group.streams.initial.rebalance.delay.ms"`

	// GroupShare* are the settings of share groups (KIP-932,
	// group.share.*), with Kafka 4.2's defaults; share_config.go checks
	// them. The record lock duration may go below Kafka's 15 s minimum,
	// for tests.
	GroupShareSessionTimeout          time.Duration `kafka:"group.share.session.timeout.ms"`
	GroupShareHeartbeatInterval       time.Duration `kafka:"group.share.heartbeat.interval.ms"`
	GroupShareRecordLockDuration      time.Duration `kafka:"group.share.record.lock.duration.ms"`
	GroupShareDeliveryCountLimit      int           `kafka:"group.share.delivery.count.limit"`
	GroupSharePartitionMaxRecordLocks int           `kafka:"group.share.partition.max.record.locks"`
	GroupShareMaxSize                 int           `kafka:"group.share.max.size"`
	GroupShareMaxShareSessions        int           `kafka:"group.share.max.share.sessions"`
	// ShareStateTopicPartitions is
	// share.coordinator.state.topic.num.partitions: the partitions of
	// __share_group_state (Kafka's default is 50; one is plenty here).
	ShareStateTopicPartitions int32 `kafka:"share.coordinator.state.topic.num.partitions"`
}

// DefaultConfig returns the defaults of the kbroker command.
func DefaultConfig() Config {
	return Config{
		Listen:                       "localhost:9092",
		ListenerSecurityProtocolMap:  defaultProtocolMap,
		FailedAuthenticationDelay:    100 * time.Millisecond,
		SSLKeystoreType:              "PEM",
		SSLTruststoreType:            "PEM",
		SSLClientAuth:                "none",
		SSLPrincipalMappingRules:     "DEFAULT",
		TLSHandshakeTimeout:          30 * time.Second,
		DataDir:                      "./kbroker-data",
		FlushMode:                    "async",
		MaxRequestPartitionSizeLimit: 2000,
		SegmentBytes:                 128 << 20,
		DefaultPartitions:            1,
		AutoCreateTopics:             true,
		MaxRequestBytes:              100 << 20,
		QueuedMaxRequestBytes:        256 << 20,
		ConnectionsMaxIdle:           10 * time.Minute,
		MaxConnections:               math.MaxInt32,
		MaxConnectionsPerIP:          math.MaxInt32,
		MaxInFlightPerConnection:     128,
		MessageMaxBytes:              1048588,
		RetentionMs:                  7 * 24 * 3600 * 1000,
		RetentionBytes:               -1,
		RetentionCheckInterval:       5 * time.Minute,
		LogCleanupPolicy:             "delete",
		LogRollMs:                    7 * 24 * 3600 * 1000,

		LogCleanerEnable:              true,
		LogCleanerThreads:             1,
		LogCleanerBackoff:             15 * time.Second,
		LogCleanerDedupeBufferSize:    128 << 20,
		LogCleanerIOMaxBytesPerSecond: math.MaxFloat64,
		LogCleanerMinCleanableRatio:   0.5,
		LogCleanerDeleteRetentionMs:   24 * 3600 * 1000,
		LogCleanerMinCompactionLagMs:  0,
		LogCleanerMaxCompactionLagMs:  math.MaxInt64,

		SyncFlushTimeout:          5 * time.Second,
		LogAppend:                 klog.AppendPwrite.String(),
		LogWarm:                   klog.WarmFault.String(),
		LogHugePages:              true,
		LogAllocateAhead:          4 << 20,
		FetchSessionCacheSlots:    defaultFetchSessionSlots,
		FetchCopyThreshold:        defaultFetchCopyThreshold,
		MetricsPartitionSeriesMax: 1000,
		ClusterID:                 "kbroker-cluster",
		NodeID:                    0,
		Nodes:                     1,

		GroupInitialRebalanceDelay:    0,
		GroupMinSessionTimeout:        6 * time.Second,
		GroupMaxSessionTimeout:        30 * time.Minute,
		GroupMaxSize:                  math.MaxInt32,
		OffsetsTopicPartitions:        1,
		OffsetsRetentionMinutes:       7 * 24 * 60,
		OffsetsRetentionCheckInterval: 10 * time.Minute,
		OffsetsSnapshotInterval:       time.Minute,

		TransactionTopicPartitions:    1,
		TransactionMaxTimeout:         15 * time.Minute,
		TransactionAbortCheckInterval: 10 * time.Second,
		TransactionalIDExpiration:     7 * 24 * time.Hour,

		GroupCoordinatorRebalanceProtocols: defaultRebalanceProtocols,
		ConsumerGroupSessionTimeout:        45 * time.Second,
		ConsumerGroupMinSessionTimeout:     45 * time.Second,
		ConsumerGroupMaxSessionTimeout:     60 * time.Second,
		ConsumerGroupHeartbeatInterval:     5 * time.Second,
		ConsumerGroupMinHeartbeatInterval:  5 * time.Second,
		ConsumerGroupMaxHeartbeatInterval:  15 * time.Second,
		ConsumerGroupMaxSize:               math.MaxInt32,
		ConsumerGroupAssignors:             "uniform,range",

		GroupStreamsSessionTimeout:        45 * time.Second,
		GroupStreamsMinSessionTimeout:     45 * time.Second,
		GroupStreamsMaxSessionTimeout:     60 * time.Second,
		GroupStreamsHeartbeatInterval:     5 * time.Second,
		GroupStreamsMinHeartbeatInterval:  5 * time.Second,
		GroupStreamsMaxHeartbeatInterval:  15 * time.Second,
		GroupStreamsMaxSize:               math.MaxInt32,
		GroupStreamsNumStandbyReplicas:    0,
		GroupStreamsMaxStandbyReplicas:    2,
		GroupStreamsInitialRebalanceDelay: 3 * time.Second,

		GroupShareSessionTimeout:          45 * time.Second,
		GroupShareHeartbeatInterval:       5 * time.Second,
		GroupShareRecordLockDuration:      30 * time.Second,
		GroupShareDeliveryCountLimit:      5,
		GroupSharePartitionMaxRecordLocks: 2000,
		GroupShareMaxSize:                 200,
		GroupShareMaxShareSessions:        2000,
		ShareStateTopicPartitions:         1,
	}
}

// Validate reports every problem at once.
func (c *Config) Validate() error {
	var errs []error
	if err := c.validateSecurity(); err != nil {
		errs = append(errs, err)
	}
	if _, err := parseSeedTopics(c.SeedTopics, 1); err != nil {
		errs = append(errs, err)
	}
	if c.Nodes < 0 || c.Nodes > maxNodes {
		errs = append(errs, fmt.Errorf("kbroker.nodes %d must be between 1 and %d (0 means 1)", c.Nodes, maxNodes))
	}
	if c.DataDir == "" {
		errs = append(errs, errors.New("log.dirs is empty"))
	}
	if _, err := c.flushMode(); err != nil {
		errs = append(errs, err)
	}
	if _, err := klog.ParseAppendMode(c.LogAppend); err != nil {
		errs = append(errs, fmt.Errorf("kbroker.log.append: %w", err))
	}
	if _, err := klog.ParseWarmMode(c.LogWarm); err != nil {
		errs = append(errs, fmt.Errorf("kbroker.log.warm: %w", err))
	}
	if c.SegmentBytes < 1<<20 || c.SegmentBytes%4096 != 0 || c.SegmentBytes > 1<<30 {
		errs = append(errs, fmt.Errorf("log.segment.bytes %d must be a multiple of 4096 between 1 MiB and 1 GiB", c.SegmentBytes))
	}
	if c.LogAllocateAhead < 4096 || c.LogAllocateAhead > 1<<30 {
		// Above log.segment.bytes it means one segment.
		errs = append(errs, fmt.Errorf("kbroker.log.allocate.ahead.bytes %d must be between 4096 and 1 GiB", c.LogAllocateAhead))
	}
	if c.DefaultPartitions < 1 {
		errs = append(errs, fmt.Errorf("num.partitions %d must be at least 1", c.DefaultPartitions))
	}
	if c.MaxRequestBytes < 1024 {
		errs = append(errs, fmt.Errorf("socket.request.max.bytes %d is too small", c.MaxRequestBytes))
	}
	if c.QueuedMaxRequestBytes < int64(c.MaxRequestBytes) {
		errs = append(errs, fmt.Errorf("queued.max.request.bytes %d is below socket.request.max.bytes %d", c.QueuedMaxRequestBytes, c.MaxRequestBytes))
	}
	if c.MaxRequestPartitionSizeLimit < 1 {
		errs = append(errs, fmt.Errorf("max.request.partition.size.limit %d must be at least 1", c.MaxRequestPartitionSizeLimit))
	}
	if c.ConnectionsMaxIdle <= 0 {
		errs = append(errs, errors.New("connections.max.idle.ms must be positive"))
	}
	if c.MaxConnections < 1 || c.MaxConnectionsPerIP < 1 {
		errs = append(errs, fmt.Errorf("max.connections %d and max.connections.per.ip %d must be at least 1", c.MaxConnections, c.MaxConnectionsPerIP))
	}
	if c.MaxInFlightPerConnection < 1 {
		errs = append(errs, errors.New("max in-flight requests per connection must be at least 1"))
	}
	if c.MessageMaxBytes < 0 {
		errs = append(errs, errors.New("message.max.bytes is negative"))
	}
	if c.MetricsPartitionSeriesMax < 0 {
		errs = append(errs, fmt.Errorf("kbroker.metrics.partition.series.max: %d is negative", c.MetricsPartitionSeriesMax))
	}
	if c.FetchCopyThreshold < 0 || c.FetchCopyThreshold > 1<<20 {
		errs = append(errs, errors.New("kbroker.fetch.copy.threshold.bytes must be between 0 and 1 MiB"))
	}
	if c.FetchSessionCacheSlots < 0 {
		errs = append(errs, errors.New("max.incremental.fetch.session.cache.slots is negative"))
	}
	if c.SyncFlushTimeout <= 0 {
		errs = append(errs, errors.New("the sync flush timeout must be positive"))
	}
	errs = append(errs, c.validateCleaner()...)
	gc := c.groupConfig()
	if err := gc.Validate(); err != nil {
		errs = append(errs, err)
	}
	if _, err := c.consumerProtocolEnabled(); err != nil {
		errs = append(errs, err)
	}
	if err := c.streamsConfig().Validate(); err != nil {
		errs = append(errs, err)
	}
	if err := c.validateShare(); err != nil {
		errs = append(errs, err)
	}
	if c.OffsetsTopicPartitions < 1 || c.OffsetsTopicPartitions > 1000 {
		errs = append(errs, fmt.Errorf("offsets.topic.num.partitions %d must be between 1 and 1000", c.OffsetsTopicPartitions))
	}
	if c.OffsetsRetentionMinutes < 1 {
		errs = append(errs, fmt.Errorf("offsets.retention.minutes %d must be at least 1", c.OffsetsRetentionMinutes))
	}
	if c.TransactionTopicPartitions < 1 || c.TransactionTopicPartitions > 1000 {
		errs = append(errs, fmt.Errorf("transaction.state.log.num.partitions %d must be between 1 and 1000", c.TransactionTopicPartitions))
	}
	if c.TransactionMaxTimeout <= 0 || c.TransactionAbortCheckInterval <= 0 || c.TransactionalIDExpiration <= 0 {
		errs = append(errs, errors.New("transaction.max.timeout.ms, transaction.abort.timed.out.transaction.cleanup.interval.ms and transactional.id.expiration.ms must be positive"))
	}
	if c.OffsetsRetentionCheckInterval <= 0 || c.OffsetsSnapshotInterval <= 0 {
		errs = append(errs, errors.New("offsets.retention.check.interval.ms and kbroker.offsets.snapshot.interval.ms must be positive"))
	}
	return errors.Join(errs...)
}

// validateCleaner checks the log cleaner's settings; the ones topics
// inherit are checked again, by their topic configs' rules, when the topic
// registry opens (topic.Defaults.Validate).
func (c *Config) validateCleaner() []error {
	var errs []error
	if c.LogCleanerThreads < 1 {
		errs = append(errs, fmt.Errorf("log.cleaner.threads %d must be at least 1", c.LogCleanerThreads))
	}
	if c.LogCleanerBackoff <= 0 {
		errs = append(errs, errors.New("log.cleaner.backoff.ms must be positive"))
	}
	// Each thread's key map needs room for a useful number of keys; Kafka
	// fails its cleaner thread at start when the map has no slot.
	if c.LogCleanerThreads >= 1 && c.LogCleanerDedupeBufferSize/int64(c.LogCleanerThreads) < minDedupeBufferPerThread {
		errs = append(errs, fmt.Errorf("log.cleaner.dedupe.buffer.size %d must be at least %d per cleaner thread",
			c.LogCleanerDedupeBufferSize, minDedupeBufferPerThread))
	}
	if !(c.LogCleanerIOMaxBytesPerSecond > 0) {
		errs = append(errs, fmt.Errorf("log.cleaner.io.max.bytes.per.second %v must be positive", c.LogCleanerIOMaxBytesPerSecond))
	}
	if !(c.LogCleanerMinCleanableRatio >= 0 && c.LogCleanerMinCleanableRatio <= 1) {
		errs = append(errs, fmt.Errorf("log.cleaner.min.cleanable.ratio %v must be between 0 and 1", c.LogCleanerMinCleanableRatio))
	}
	if c.LogCleanerDeleteRetentionMs < 0 || c.LogCleanerMinCompactionLagMs < 0 || c.LogCleanerMaxCompactionLagMs < 1 {
		errs = append(errs, errors.New("log.cleaner.delete.retention.ms and log.cleaner.min.compaction.lag.ms must be at least 0, log.cleaner.max.compaction.lag.ms at least 1"))
	}
	if c.LogRollMs < 1 {
		errs = append(errs, fmt.Errorf("log.roll.ms %d must be at least 1", c.LogRollMs))
	}
	return errs
}

// minDedupeBufferPerThread is the smallest key map a cleaner thread may
// have: 1 KiB, about 40 keys a pass. Tests use tiny maps to force
// multi-pass cleaning; production wants megabytes.
const minDedupeBufferPerThread = 1024

// durationMinutes converts a *.minutes property.
func durationMinutes(m int64) time.Duration { return time.Duration(m) * time.Minute }

// groupConfig is what the group coordinator takes of the settings.
func (c *Config) groupConfig() group.Config {
	return group.Config{
		InitialRebalanceDelay: c.GroupInitialRebalanceDelay,
		MinSessionTimeout:     c.GroupMinSessionTimeout,
		MaxSessionTimeout:     c.GroupMaxSessionTimeout,
		MaxSize:               c.GroupMaxSize,
		Consumer:              c.consumerGroupConfig(),
	}
}

func (c *Config) flushMode() (partition.FlushMode, error) {
	switch c.FlushMode {
	case "sync":
		return partition.FlushSync, nil
	case "async":
		return partition.FlushAsync, nil
	case "pool":
		return partition.FlushAsyncPool, nil
	}
	return 0, fmt.Errorf("kbroker.flush.mode %q must be sync, async or pool", c.FlushMode)
}

// Set assigns a setting by its property name (the kafka tag), parsing the
// value by the field's type; durations are in milliseconds, as Kafka's
// *.ms properties are. Kafka's listener form "PLAINTEXT://host:port" is
// accepted for listeners and advertised.listeners.
func (c *Config) Set(name, value string) error {
	if strings.HasPrefix(name, listenerPrefix) {
		return c.setListenerOverride(name, value)
	}
	if syn, ok := settingSynonyms[name]; ok {
		return c.setSynonym(name, value, syn)
	}
	v := reflect.ValueOf(c).Elem()
	t := v.Type()
	for i := 0; i < t.NumField(); i++ {
		if t.Field(i).Tag.Get("kafka") != name {
			continue
		}
		f := v.Field(i)
		value = strings.TrimSpace(value)
		if name == "listeners" || name == "advertised.listeners" {
			// One PLAINTEXT listener is the simple case: keep it as
			// host:port.
			if rest, ok := strings.CutPrefix(value, "PLAINTEXT://"); ok && !strings.Contains(rest, ",") {
				value = rest
			}
		}
		switch f.Interface().(type) {
		case string:
			f.SetString(value)
		case bool:
			b, err := strconv.ParseBool(value)
			if err != nil {
				return fmt.Errorf("%s: %q is not a boolean", name, value)
			}
			f.SetBool(b)
		case time.Duration:
			ms, err := strconv.ParseInt(value, 10, 64)
			if err != nil {
				return fmt.Errorf("%s: %q is not a number of milliseconds", name, value)
			}
			f.SetInt(int64(time.Duration(ms) * time.Millisecond))
		case float64:
			x, err := strconv.ParseFloat(value, 64)
			if err != nil || math.IsNaN(x) {
				return fmt.Errorf("%s: %q is not a number", name, value)
			}
			f.SetFloat(x)
		case int, int32, int64:
			n, err := strconv.ParseInt(value, 10, 64)
			if err != nil || f.OverflowInt(n) {
				return fmt.Errorf("%s: %q is not a valid integer", name, value)
			}
			f.SetInt(n)
		}
		return nil
	}
	if _, ok := inapplicableSettings[name]; ok {
		return nil
	}
	return fmt.Errorf("unknown setting %q", name)
}

// LoadProperties reads key=value lines (server.properties style: '#' and
// '!' start comments, blank lines are skipped) into c, Kafka's coarser
// synonyms before the settings they stand for (SetAll).
func (c *Config) LoadProperties(r io.Reader) error {
	props, err := ParseProperties(r) // the lines it could read are still set
	return errors.Join(err, c.SetAll(props))
}

// Property is one key=value line of a properties file.
type Property struct {
	// Line is its line number, 1 for the first.
	Line        int
	Name, Value string
}

// ParseProperties reads key=value lines (server.properties style: '#' and
// '!' start comments, blank lines are skipped).
func ParseProperties(r io.Reader) ([]Property, error) {
	sc := bufio.NewScanner(r)
	var errs []error
	var out []Property
	for line := 1; sc.Scan(); line++ {
		s := strings.TrimSpace(sc.Text())
		if s == "" || s[0] == '#' || s[0] == '!' {
			continue
		}
		k, v, ok := strings.Cut(s, "=")
		if !ok {
			errs = append(errs, fmt.Errorf("line %d: no '=' in %q", line, s))
			continue
		}
		out = append(out, Property{Line: line, Name: strings.TrimSpace(k), Value: v})
	}
	if err := sc.Err(); err != nil {
		errs = append(errs, err)
	}
	return out, errors.Join(errs...)
}

// SetAll sets props, each of Kafka's coarser synonyms before the names
// more specific than it (log.retention.hours, then .minutes, then .ms), so
// that the most specific one set wins wherever it appears, as in Kafka;
// otherwise in order.
func (c *Config) SetAll(props []Property) error {
	sorted := slices.Clone(props)
	slices.SortStableFunc(sorted, func(a, b Property) int { return specificity(a.Name) - specificity(b.Name) })
	type failure struct {
		line int
		err  error
	}
	var failed []failure
	for _, p := range sorted {
		if err := c.Set(p.Name, p.Value); err != nil {
			failed = append(failed, failure{p.Line, fmt.Errorf("line %d: %w", p.Line, err)})
		}
	}
	slices.SortStableFunc(failed, func(a, b failure) int { return a.line - b.line }) // reported in line order
	errs := make([]error, len(failed))
	for i, f := range failed {
		errs[i] = f.err
	}
	return errors.Join(errs...)
}

// changedProperties names the settings whose values differ from
// DefaultConfig's: what DescribeConfigs reports as STATIC_BROKER_CONFIG,
// for the broker and for topic configs that inherit them.
func (c *Config) changedProperties() map[string]bool {
	defs := defaultProperties()
	out := map[string]bool{}
	for _, p := range c.Properties() {
		if defs[p[0]] != p[1] {
			out[p[0]] = true
		}
	}
	return out
}

// defaultProperties are DefaultConfig's settings by their Kafka names, as
// Properties shows them.
func defaultProperties() map[string]string {
	def := DefaultConfig()
	out := map[string]string{}
	for _, p := range def.Properties() {
		out[p[0]] = p[1]
	}
	return out
}

// hiddenValue stands for a sensitive setting's value in Properties.
const hiddenValue = "[hidden]"

// sensitiveProperty reports whether a setting holds a secret (a password or
// a private key), which DescribeConfigs reports as sensitive, without value.
func sensitiveProperty(name string) bool {
	if _, prop, err := splitListenerProperty(name); err == nil {
		name = unprefixedProperty(prop) // listener.name.<l>.ssl.keystore.key is as secret
	}
	t := reflect.TypeFor[Config]()
	for i := range t.NumField() {
		if t.Field(i).Tag.Get("kafka") == name {
			return t.Field(i).Tag.Get("sensitive") == "true"
		}
	}
	return false
}

// Properties lists every setting as name=value, for the start-up log and
// DescribeConfigs of the broker; sensitive values are hidden.
func (c *Config) Properties() [][2]string {
	v := reflect.ValueOf(c).Elem()
	t := v.Type()
	out := make([][2]string, 0, t.NumField())
	for i := 0; i < t.NumField(); i++ {
		name := t.Field(i).Tag.Get("kafka")
		var s string
		switch x := v.Field(i).Interface().(type) {
		case map[string]string:
			// ListenerOverrides: one property each, by name.
			out = append(out, c.listenerOverrideProperties()...)
			continue
		case time.Duration:
			s = strconv.FormatInt(x.Milliseconds(), 10)
		case float64:
			s = topic.FormatDouble(x) // as Kafka prints a DOUBLE
		default:
			s = fmt.Sprint(x)
		}
		if s != "" && t.Field(i).Tag.Get("sensitive") == "true" {
			// Passwords and keys never reach logs or DescribeConfigs.
			s = hiddenValue
		}
		out = append(out, [2]string{name, s})
	}
	return out
}
