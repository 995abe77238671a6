package broker

import (
	"context"
	"errors"
	"fmt"
	"github.com/kbroker/kbroker/group/streams"
	"net"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/kbroker/kbroker/cluster"
	"github.com/kbroker/kbroker/fault"
	"github.com/kbroker/kbroker/flush"
	"github.com/kbroker/kbroker/group"
	"github.com/kbroker/kbroker/group/share"
	klog "github.com/kbroker/kbroker/log"
	"github.com/kbroker/kbroker/offsets"
	"github.com/kbroker/kbroker/partition"
	"github.com/kbroker/kbroker/sendfile"
	"github.com/kbroker/kbroker/topic"
	"github.com/kbroker/kbroker/txn"
)

// Broker is a Kafka-compatible broker: the listener, its connections, the
// topic registry and the partition store.
type Broker struct {
	cfg  Config
	lg   *zap.Logger
	apis []api
	idx  *apiIndex

	topics *topic.Registry
	// cluster holds the settings admin requests change at run time:
	// finalized features, client quotas, dynamic broker and group configs.
	cluster  *cluster.Store
	store    *partition.Store
	pids     *partition.ProducerIDs
	sessions *fetchSessions
	groups   *group.Coordinator
	// offsets is the committed-offsets store, opened at start-up or when
	// a group first needs it (groupOffsets).
	offsets   atomic.Pointer[offsets.Store]
	offsetsMu sync.Mutex
	// groupRecordMu makes taking a group's state and appending its
	// records one step, so that the records of __consumer_offsets follow
	// the order of the states they describe (onGroupState). Lock order:
	// groupRecordMu, then the coordinators' locks, then the log's.
	groupRecordMu sync.Mutex
	// groupWrites holds each group's latest pending append of records
	// (group_writes.go), under groupWritesMu.
	groupWritesMu sync.Mutex
	groupWrites   map[string]*groupWrite
	// txns is the transaction coordinator, opened at start-up or when a
	// transaction first needs it (transactions).
	txns   atomic.Pointer[txn.Coordinator]
	txnsMu sync.Mutex
	// shares is the share-group coordinator (KIP-932); its store is
	// attached at start-up or when a share group first needs it
	// (shareState), under sharesMu.
	shares *share.Coordinator
	// streamsCo is the streams-group coordinator (KIP-1071).
	streamsCo *streams.Coordinator
	sharesMu  sync.Mutex
	budget    *byteBudget
	// frames holds request buffers larger than keptFrame between
	// requests (frame_cache.go).
	frames frameCache
	// sent holds the commit-log spans fetch responses were written from
	// until they are unmapped (mapped_spans.go).
	sent sentSpans
	// faults holds the fault-injection rules; never nil.
	faults *fault.Injector
	// allocHook is the commit log's AllocateHook (log.Config): tests set
	// it through an Option to simulate a full disk.
	allocHook func(path string, size int64) error

	// listeners are bound by Start, in the order of the listeners
	// setting; the first is the one Addr reports. In a simulated cluster
	// they are node 0's.
	listeners []*listener
	// nodes is the simulated cluster of kbroker.nodes above 1 (nodes.go),
	// nil for one node; nodeListeners are its nodes' listeners,
	// [node][listener], their ln guarded by nodes.mu.
	nodes         *simCluster
	nodeListeners [][]*listener
	// security holds what authentication needs: the SASL mechanisms,
	// the credential store, TLS settings (security.go).
	security  *security
	startedAt time.Time

	mu struct {
		sync.Mutex
		conns    map[*conn]struct{}
		perIP    map[string]int // open connections by remote IP
		shutdown bool
	}
	// maxConns and maxConnsPerIP are max.connections and
	// max.connections.per.ip, which dynamic broker configs change at run
	// time (dynamic_config.go).
	maxConns, maxConnsPerIP atomic.Int64
	// refused counts connections closed at accept by max.connections or
	// max.connections.per.ip.
	refused atomic.Int64
	// copiedBytes counts record bytes copied out of the mapping for small
	// fetch ranges (the rest go with sendfile).
	copiedBytes atomic.Int64
	// accepted counts connections accepted and served.
	accepted atomic.Int64
	// metrics are the per-API-key request counters (metrics.go).
	metrics *requestMetrics
	// started is set when the listener accepts; Ready reports it.
	started atomic.Bool
	// reauthentications counts successful KIP-368 re-authentications;
	// expiredSessions the connections closed because their SASL session
	// expired (Kafka's expired-connections-killed-count).
	reauthentications atomic.Int64
	expiredSessions   atomic.Int64
	// authentications and failedAuthentications count SASL logins that
	// succeeded (re-authentications included) and that failed.
	authentications       atomic.Int64
	failedAuthentications atomic.Int64

	wg sync.WaitGroup
	// stop is closed when shutdown begins.
	stop chan struct{}
}

// Option configures a Broker's dependencies (settings live in Config).
type Option func(*Broker)

// WithLogger sets the logger; the default discards everything.
func WithLogger(lg *zap.Logger) Option { return func(b *Broker) { b.lg = lg } }

// New opens the broker's data directory (topics, commit log, recovery)
// without listening yet.
func New(cfg Config, opts ...Option) (*Broker, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("broker: invalid config: %w", err)
	}
	b := &Broker{cfg: cfg, lg: zap.NewNop(), stop: make(chan struct{})}
	var err error
	for _, o := range opts {
		o(b)
	}
	if b.security, err = newSecurity(&cfg, filepath.Join(cfg.DataDir, "metadata")); err != nil {
		return nil, fmt.Errorf("broker: %w", err)
	}
	b.apis = apiTable()
	b.idx = indexAPIs(b.apis)
	b.metrics = newRequestMetrics(b.apis)
	b.budget = newByteBudget(cfg.QueuedMaxRequestBytes)
	b.frames.limit = 2 * cfg.QueuedMaxRequestBytes
	b.sent.lg = b.lg
	if b.faults == nil {
		b.faults = newFaults()
	}
	b.sessions = newFetchSessions(cfg.FetchSessionCacheSlots)
	b.mu.conns = map[*conn]struct{}{}
	b.mu.perIP = map[string]int{}

	b.maxConns.Store(int64(cfg.MaxConnections))
	b.maxConnsPerIP.Store(int64(cfg.MaxConnectionsPerIP))
	if b.cluster, err = cluster.Open(filepath.Join(cfg.DataDir, "metadata")); err != nil {
		return nil, fmt.Errorf("broker: open cluster state: %w", err)
	}
	defaults, err := b.topicDefaults(b.cluster.Load())
	if err != nil {
		// Kafka too starts with a dynamic config it cannot apply, and
		// says so.
		b.lg.Warn("dynamic broker configs not applied", zap.Error(err))
		defaults, err = b.topicDefaults(&cluster.State{})
		if err != nil {
			return nil, fmt.Errorf("broker: topic defaults: %w", err)
		}
	}
	reg, err := topic.Open(filepath.Join(cfg.DataDir, "metadata"), defaults, topic.WithOnChange(b.onTopicChange))
	if err != nil {
		return nil, fmt.Errorf("broker: open topics: %w", err)
	}
	b.topics = reg
	if err := b.applyDynamicConfigs(b.cluster.Load()); err != nil {
		b.lg.Warn("dynamic broker configs not applied", zap.Error(err)) // the static values stay
	}
	if b.pids, err = partition.OpenProducerIDs(filepath.Join(cfg.DataDir, "metadata")); err != nil {
		reg.Close()
		return nil, fmt.Errorf("broker: open producer ids: %w", err)
	}
	mode, _ := cfg.flushMode()
	warm, _ := klog.ParseWarmMode(cfg.LogWarm)
	appendMode, _ := klog.ParseAppendMode(cfg.LogAppend)
	var specs []partition.TopicSpec
	for _, t := range reg.List() {
		specs = append(specs, topicSpec(&t))
	}
	start := time.Now()
	store, report, err := partition.Open(partition.Config{
		Dir:                    cfg.DataDir,
		Log:                    klog.Config{FileSize: cfg.SegmentBytes, Append: appendMode, Warm: warm, AllocateAhead: cfg.LogAllocateAhead, HugePages: cfg.LogHugePages, AllocateHook: b.allocHook},
		FlushMode:              mode,
		GroupCommit:            flush.GroupCommitConfig{Timeout: cfg.SyncFlushTimeout},
		FullValidation:         cfg.FullValidation,
		RetentionCheckInterval: cfg.RetentionCheckInterval,
		Cleaner: partition.CleanerConfig{
			Enable:              cfg.LogCleanerEnable,
			Threads:             cfg.LogCleanerThreads,
			Backoff:             cfg.LogCleanerBackoff,
			DedupeBufferSize:    cfg.LogCleanerDedupeBufferSize,
			IOMaxBytesPerSecond: cfg.LogCleanerIOMaxBytesPerSecond,
		},
	}, specs, partition.WithLogger(b.lg))
	if err != nil {
		reg.Close()
		return nil, fmt.Errorf("broker: open store: %w", err)
	}
	b.store = store
	if b.groups, err = group.New(cfg.groupConfig(), group.WithStateHook(b.onGroupState), group.WithConsumerChangeHook(b.onConsumerGroupChange)); err != nil {
		store.Close()
		reg.Close()
		return nil, fmt.Errorf("broker: group coordinator: %w", err)
	}
	b.groups.Consumer().SetGroupConfigs(b.groupConfigFor)
	if b.shares, err = share.New(cfg.shareConfig(), share.WithGroupConfigs(b.shareGroupConfigFor),
		share.WithTaken(b.groupIDTaken), share.WithRecorder(b.recordShareGroup), share.WithLogger(b.lg)); err != nil {
		b.groups.Close()
		store.Close()
		reg.Close()
		return nil, fmt.Errorf("broker: share group coordinator: %w", err)
	}
	if b.streamsCo, err = streams.New(cfg.streamsConfig(), streams.WithTopicCreator(b.createStreamsTopics),
		streams.WithGroupConfigs(b.streamsGroupConfigFor), streams.WithChangeHook(b.onStreamsGroupChange)); err != nil {
		b.shares.Close()
		b.groups.Close()
		store.Close()
		reg.Close()
		return nil, fmt.Errorf("broker: streams group coordinator: %w", err)
	}
	if _, err := b.groupOffsets(false); err != nil {
		b.shares.Close()
		b.streamsCo.Close()
		b.groups.Close()
		store.Close()
		reg.Close()
		return nil, fmt.Errorf("broker: group offsets: %w", err)
	}
	if _, err := b.transactions(false); err != nil {
		if s := b.offsets.Load(); s != nil {
			s.Close()
		}
		b.shares.Close()
		b.streamsCo.Close()
		b.groups.Close()
		store.Close()
		reg.Close()
		return nil, fmt.Errorf("broker: transaction coordinator: %w", err)
	}
	if _, err := b.shareState(false); err != nil {
		b.closeStores()
		return nil, fmt.Errorf("broker: share group state: %w", err)
	}
	if err := b.seedTopics(); err != nil {
		b.closeStores()
		return nil, err
	}
	if err := b.openNodes(); err != nil {
		b.closeStores()
		return nil, err
	}
	b.lg.Info("store opened",
		zap.String("dir", cfg.DataDir),
		zap.Bool("clean", report.Log.Clean),
		zap.Int64("end", report.Log.End),
		zap.Bool("cut", report.Log.Cut),
		zap.Int("reindexed", report.Indexed),
		zap.Duration("took", time.Since(start)))
	return b, nil
}

// closeStores closes what New opened, after a failure later in New.
func (b *Broker) closeStores() {
	if c := b.txns.Load(); c != nil {
		c.Close()
	}
	if s := b.offsets.Load(); s != nil {
		s.Close()
	}
	b.shares.Close()
	b.streamsCo.Close()
	if s := b.shares.Store(); s != nil {
		s.Close()
	}
	b.groups.Close()
	b.store.Close()
}

// topicSpec translates a registry topic for the partition store.
func topicSpec(t *topic.Topic) partition.TopicSpec {
	return partition.TopicSpec{ID: partition.TopicID(t.ID), Name: t.Name, Partitions: t.Partitions, Config: partitionConfig(t)}
}

// partitionConfig is what the partitions apply of a topic's configs.
// retention.ms and retention.bytes apply only while cleanup.policy has
// "delete" (Kafka's LogConfig: a compact-only or empty policy keeps data
// from retention). The internal topics keep everything whatever their
// configs say: their coordinators' snapshots move the log start, and
// retention must never drop records no snapshot covers yet.
func partitionConfig(t *topic.Topic) partition.TopicConfig {
	c := t.Configs
	policy := c.CleanupPolicy()
	cfg := partition.TopicConfig{
		MaxMessageBytes:      int(c.MaxMessageBytes()),
		LogAppendTime:        c.TimestampType() == topic.LogAppendTime,
		RetentionMs:          -1,
		RetentionBytes:       -1,
		TimestampBeforeMaxMs: c.TimestampBeforeMaxMs(),
		TimestampAfterMaxMs:  c.TimestampAfterMaxMs(),
		Compact:              policy.Compact && !t.Internal,
		MinCleanableRatio:    c.MinCleanableDirtyRatio(),
		DeleteRetentionMs:    c.DeleteRetentionMs(),
		MinCompactionLagMs:   c.MinCompactionLagMs(),
		MaxCompactionLagMs:   c.MaxCompactionLagMs(),
		SegmentMs:            c.SegmentMs(),
		SegmentBytes:         int64(c.SegmentBytes()),
	}
	if policy.Delete && !t.Internal {
		cfg.RetentionMs, cfg.RetentionBytes = c.RetentionMs(), c.RetentionBytes()
	}
	return cfg
}

// onTopicChange keeps the partition store in step with the registry. It
// runs under the registry's writer lock, after the change is durable.
func (b *Broker) onTopicChange(old, cur *topic.Topic) {
	if b.store == nil {
		return
	}
	switch {
	case cur == nil:
		if err := b.store.DeleteTopic(partition.TopicID(old.ID)); err != nil {
			b.lg.Error("delete topic data", zap.String("topic", old.Name), zap.Error(err))
		}
		if b.shares != nil {
			// Not under the registry's lock: the tombstones go through the
			// commit log.
			b.wg.Add(1)
			go func() {
				defer b.wg.Done()
				b.shares.DeleteTopic(share.TopicID(old.ID), func(err error) {
					if err != nil {
						b.lg.Warn("share-group state of a deleted topic not removed", zap.String("topic", old.Name), zap.Error(err))
					}
				})
			}()
		}
	default:
		if err := b.store.AddTopic(topicSpec(cur)); err != nil {
			b.lg.Error("add topic partitions", zap.String("topic", cur.Name), zap.Error(err))
		}
		cfg := partitionConfig(cur)
		for _, p := range b.store.Partitions(partition.TopicID(cur.ID)) {
			p.SetConfig(cfg)
		}
	}
}

// Start binds every listener and serves connections in the background.
// In a simulated cluster each live node binds its own port on every
// listener.
func (b *Broker) Start() error {
	specs, err := b.cfg.listenerSpecs()
	if err != nil {
		return fmt.Errorf("broker: %w", err)
	}
	b.startedAt = time.Now()
	if b.nodes != nil {
		return b.startNodes(specs)
	}
	for _, spec := range specs {
		l, err := b.bindListener(spec)
		if err != nil {
			for _, l := range b.listeners {
				l.ln.Close()
			}
			b.listeners = nil
			return err
		}
		b.listeners = append(b.listeners, l)
	}
	for _, l := range b.listeners {
		b.serveListener(l)
	}
	b.started.Store(true)
	return nil
}

// bindListener binds one listener.
func (b *Broker) bindListener(spec listenerSpec) (*listener, error) {
	ln, err := net.Listen("tcp", spec.addr)
	if err != nil {
		return nil, fmt.Errorf("broker: listen on %s (%s): %w", spec.addr, spec.name, err)
	}
	l := &listener{listenerSpec: spec, ln: ln, bound: ln.Addr().String(), sec: b.security.listeners[spec.name]}
	l.advHost, l.advPort = spec.advertised(l.bound)
	l.tlsConfig = l.sec.tlsConfig
	return l, nil
}

// serveListener starts accepting on a bound listener.
func (b *Broker) serveListener(l *listener) {
	b.wg.Add(1)
	go b.acceptLoop(l, l.ln)
	b.lg.Info("listening", zap.String("listener", l.name), zap.String("protocol", l.protocol),
		zap.Int32("node", b.cfg.NodeID+int32(l.node)),
		zap.String("addr", l.bound),
		zap.String("advertised", net.JoinHostPort(l.advHost, strconv.Itoa(int(l.advPort)))))
	if l.protocol == protoSASLPlaintext && slices.Contains(l.sec.mechanisms, "PLAIN") {
		b.lg.Warn("SASL PLAIN on a SASL_PLAINTEXT listener sends passwords in clear", zap.String("listener", l.name))
	}
}

// Addr is the address the first listener is bound to.
func (b *Broker) Addr() string { return b.listeners[0].bound }

// AdvertisedAddr is the host:port clients of the first listener are told
// to connect to.
func (b *Broker) AdvertisedAddr() string {
	l := b.listeners[0]
	return net.JoinHostPort(l.advHost, strconv.Itoa(int(l.advPort)))
}

// Listeners describes the bound listeners, in configuration order, with
// the ports chosen for port 0.
func (b *Broker) Listeners() []ListenerInfo {
	out := make([]ListenerInfo, 0, len(b.listeners))
	for _, l := range b.listeners {
		out = append(out, ListenerInfo{Name: l.name, Protocol: l.protocol, Addr: l.bound,
			Advertised: net.JoinHostPort(l.advHost, strconv.Itoa(int(l.advPort)))})
	}
	return out
}

// ListenerAddr is the bound address of the named listener, or "" if there
// is none of that name.
func (b *Broker) ListenerAddr(name string) string {
	for _, l := range b.listeners {
		if l.name == strings.ToUpper(name) {
			return l.bound
		}
	}
	return ""
}

func (b *Broker) acceptLoop(l *listener, ln net.Listener) {
	defer b.wg.Done()
	for {
		nc, err := ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			b.lg.Warn("accept", zap.Error(err))
			time.Sleep(10 * time.Millisecond)
			continue
		}
		ip := remoteIP(nc)
		b.mu.Lock()
		// A simulated node stopping (StopNode) cuts the connections it
		// finds under b.mu; one accepted meanwhile is cut here.
		if b.mu.shutdown || (b.nodes != nil && !b.nodes.isLive(l.node)) {
			b.mu.Unlock()
			nc.Close()
			continue
		}
		if why := b.overLimitLocked(ip); why != "" {
			b.mu.Unlock()
			nc.Close()
			b.refused.Add(1)
			l.refused.Add(1)
			b.lg.Info("refused connection", zap.String("remote", nc.RemoteAddr().String()), zap.String("reason", why))
			continue
		}
		c := newConn(b, l, nc)
		b.accepted.Add(1)
		l.accepted.Add(1)
		b.mu.conns[c] = struct{}{}
		b.mu.perIP[ip]++
		b.wg.Add(1)
		b.mu.Unlock()
		go func() {
			defer b.wg.Done()
			c.serve()
			// Share sessions end with their connection (KIP-932).
			b.shares.CloseOwned(c)
			b.mu.Lock()
			delete(b.mu.conns, c)
			if b.mu.perIP[ip]--; b.mu.perIP[ip] <= 0 {
				delete(b.mu.perIP, ip)
			}
			b.mu.Unlock()
		}()
	}
}

// overLimitLocked says why a new connection from ip would exceed
// max.connections or max.connections.per.ip, or "" if it may be served.
// Like Kafka, a connection over a limit is closed right after accept
// (for max.connections Kafka's acceptor waits for a slot instead; closing
// tells the client at once rather than leaving it in the backlog).
func (b *Broker) overLimitLocked(ip string) string {
	switch {
	case int64(len(b.mu.conns)) >= b.maxConns.Load():
		return fmt.Sprintf("the broker has the configured maximum of %d connections (max.connections)", b.maxConns.Load())
	case int64(b.mu.perIP[ip]) >= b.maxConnsPerIP.Load():
		return fmt.Sprintf("%s has the configured maximum of %d connections (max.connections.per.ip)", ip, b.maxConnsPerIP.Load())
	}
	return ""
}

// remoteIP is the IP address a connection comes from, the key of the
// per-IP connection count.
func remoteIP(nc net.Conn) string {
	if a, ok := nc.RemoteAddr().(*net.TCPAddr); ok {
		return a.IP.String()
	}
	host, _, err := net.SplitHostPort(nc.RemoteAddr().String())
	if err != nil {
		return nc.RemoteAddr().String()
	}
	return host
}

// beginStop marks the broker stopping (once: false if a stop already
// began), stops accepting and closes the listeners, and returns the
// connections to end. Shutdown and crash differ only in how they end them.
func (b *Broker) beginStop() ([]*conn, bool) {
	b.mu.Lock()
	if b.mu.shutdown {
		b.mu.Unlock()
		return nil, false
	}
	b.mu.shutdown = true
	conns := make([]*conn, 0, len(b.mu.conns))
	for c := range b.mu.conns {
		conns = append(conns, c)
	}
	b.mu.Unlock()
	close(b.stop)
	if b.nodes != nil {
		b.closeNodeListeners()
	} else {
		for _, l := range b.listeners {
			l.ln.Close()
		}
	}
	return conns, true
}

// Shutdown stops the broker gracefully: it stops accepting, stops reading
// new requests, lets in-flight requests finish and their responses go out
// until ctx ends, then closes the store cleanly (flush, checkpoint, abort
// marker removed) so the next start needs no recovery.
func (b *Broker) Shutdown(ctx context.Context) error {
	conns, ok := b.beginStop()
	if !ok {
		return nil
	}
	// Large decompressions in progress or queued give up (retriable):
	// several bombs waiting their turn would otherwise hold the stop for
	// seconds each.
	b.store.StopDecompressions()
	for _, c := range conns {
		c.stopReading()
	}
	// Parked JoinGroup and SyncGroup requests are answered
	// (NOT_COORDINATOR) so that their connections can finish.
	b.groups.Close()
	b.shares.Close()
	b.streamsCo.Close()
	// So are transactions v2 adds waiting for a previous transaction.
	if c := b.txns.Load(); c != nil {
		c.StopParking()
	}
	done := make(chan struct{})
	go func() { b.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		for _, c := range conns {
			c.nc.Close()
		}
		<-done
	}
	b.frames.close()
	b.sent.close()
	var errs []error
	// The transaction coordinator first: its markers may still write to
	// the offsets store.
	if c := b.txns.Load(); c != nil {
		if err := c.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	if s := b.offsets.Load(); s != nil {
		if err := s.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	if s := b.shares.Store(); s != nil {
		if err := s.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	if err := b.store.Close(); err != nil {
		errs = append(errs, err)
	}
	if err := b.topics.Close(); err != nil {
		errs = append(errs, err)
	}
	b.lg.Info("stopped")
	return errors.Join(errs...)
}

// ErrNotReady is Ready's answer before Start and from the beginning of
// Shutdown.
var ErrNotReady = errors.New("broker: not serving")

// Ready reports whether the broker serves clients: its store is open and
// its listener accepts connections (Start has run and Shutdown has not
// begun). It backs the admin listener's /readyz.
func (b *Broker) Ready() error {
	b.mu.Lock()
	shutdown := b.mu.shutdown
	b.mu.Unlock()
	if shutdown || !b.started.Load() || b.store == nil {
		return ErrNotReady
	}
	return nil
}

// crash stops the broker as a killed process stops, for crash-like
// restarts of a test broker: connections are cut without answering what
// is in flight, and the stores are abandoned (Store.Abandon): nothing is
// flushed, checkpointed or snapshotted that was not already, and the next
// New runs crash recovery.
func (b *Broker) crash() {
	conns, ok := b.beginStop()
	if !ok {
		return
	}
	b.store.StopDecompressions()
	for _, c := range conns {
		c.stopReading()
		c.cancel() // parked fetches and queued answers end now
		c.nc.Close()
	}
	b.groups.Close()
	b.shares.Close()
	b.streamsCo.Close()
	b.wg.Wait()
	b.frames.close()
	b.sent.close()
	if c := b.txns.Load(); c != nil {
		c.Abandon()
	}
	if s := b.offsets.Load(); s != nil {
		s.Abandon()
	}
	if s := b.shares.Store(); s != nil {
		s.Abandon()
	}
	b.store.Abandon()
	b.lg.Info("stopped as by a crash")
}

// Stats are counters of the broker's fetch path and accept loop.
type Stats struct {
	// SendfileBytes went from commit-log files to sockets with sendfile(2).
	SendfileBytes int64
	// FallbackBytes went through pread and write where sendfile could not.
	FallbackBytes int64
	// CopiedBytes were copied out of the mapping for ranges below the copy
	// threshold.
	CopiedBytes int64
	// RefusedConnections were closed at accept by max.connections or
	// max.connections.per.ip.
	RefusedConnections int64
	// AcceptedConnections were accepted and served.
	AcceptedConnections int64
	// OpenConnections are being served now.
	OpenConnections int
	// Reauthentications are successful SASL re-authentications (KIP-368).
	Reauthentications int64
	// ExpiredSessions are connections closed because their SASL session
	// expired before the client re-authenticated.
	ExpiredSessions int64
	// Authentications are successful SASL logins, re-authentications
	// included; FailedAuthentications are refused ones.
	Authentications, FailedAuthentications int64
	// Listeners are the connection counts of each listener, in the order
	// of the listeners setting.
	Listeners []ListenerStats
}

// ListenerStats are one listener's connection counts.
type ListenerStats struct {
	// Name is the listener name (PLAINTEXT, SASL_SSL, ...).
	Name string
	// Open connections are being served now.
	Open int
	// Accepted were accepted and served; Refused were closed at accept by
	// max.connections or max.connections.per.ip.
	Accepted, Refused int64
}

// Stats returns the fetch counters. The sendfile counters are process-wide.
func (b *Broker) Stats() Stats {
	sent, fallback := sendfile.Stats()
	ls := make([]ListenerStats, len(b.listeners))
	index := make(map[*listener]int, len(b.listeners))
	for i, l := range b.listeners {
		ls[i] = ListenerStats{Name: l.name, Accepted: l.accepted.Load(), Refused: l.refused.Load()}
		index[l] = i
	}
	// A simulated cluster's other nodes count under the same listener.
	for _, nls := range b.nodeListeners[min(1, len(b.nodeListeners)):] {
		for j, l := range nls {
			ls[j].Accepted += l.accepted.Load()
			ls[j].Refused += l.refused.Load()
			index[l] = j
		}
	}
	b.mu.Lock()
	open := len(b.mu.conns)
	for c := range b.mu.conns {
		if i, ok := index[c.l]; ok {
			ls[i].Open++
		}
	}
	b.mu.Unlock()
	return Stats{Listeners: ls, SendfileBytes: sent, FallbackBytes: fallback, CopiedBytes: b.copiedBytes.Load(),
		RefusedConnections: b.refused.Load(), AcceptedConnections: b.accepted.Load(), OpenConnections: open,
		Reauthentications: b.reauthentications.Load(), ExpiredSessions: b.expiredSessions.Load(),
		Authentications: b.authentications.Load(), FailedAuthentications: b.failedAuthentications.Load()}
}

// Topics is the topic registry.
func (b *Broker) Topics() *topic.Registry { return b.topics }

// Store is the partition store.
func (b *Broker) Store() *partition.Store { return b.store }

// Config is the broker's configuration.
func (b *Broker) Config() Config { return b.cfg }
