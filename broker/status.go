package broker

import (
	"cmp"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	"github.com/kbroker/kbroker/offsets"
	"github.com/kbroker/kbroker/partition"
	"github.com/kbroker/kbroker/txn"
)

// Status is a snapshot of what the broker holds, for the admin listener's
// status page and metrics. Taking one reads atomics and takes each
// coordinator's lock briefly; it costs O(topics + partitions + groups'
// committed offsets + open transactions), and partition sizes O(batches
// appended since the last snapshot) (partition.Partition.Size).
type Status struct {
	// Version is the module version the binary was built from, or
	// "(devel)".
	Version string
	// GoVersion is the Go release the binary was built with.
	GoVersion string
	// StartedAt is when the listener started accepting.
	StartedAt time.Time
	// Listen and Advertised are the address listened on and the one
	// clients are told.
	Listen, Advertised string
	// FlushMode is the durability mode (sync, async or pool).
	FlushMode string
	// Changed are the settings whose values differ from the defaults, as
	// name=value pairs sorted by name.
	Changed [][2]string
	// Topics are sorted by name, internal ones included.
	Topics []TopicStatus
	// Groups are consumer groups, classic and KIP-848, and groups known
	// only by their committed offsets, sorted by id.
	Groups []GroupStatus
	// Transactions are the transactions in flight (Ongoing,
	// PrepareCommit, PrepareAbort), sorted by transactional id.
	Transactions []TxnStatus
	// CommitLog describes the shared commit log's files.
	CommitLog CommitLogStatus
	// Stats are the fetch and connection counters.
	Stats Stats
}

// TopicStatus is one topic in a Status.
type TopicStatus struct {
	Name     string
	ID       string
	Internal bool
	// RetentionMs and RetentionBytes are the effective retention.ms and
	// retention.bytes (-1: unlimited).
	RetentionMs, RetentionBytes int64
	Partitions                  []PartitionStatus
}

// PartitionStatus is one partition in a Status.
type PartitionStatus struct {
	Index                                             int32
	LogStart, LogEnd, HighWatermark, LastStable, Size int64
	BytesIn, RecordsIn, BytesOut                      int64
}

// GroupStatus is one consumer group in a Status.
type GroupStatus struct {
	ID string
	// Type is "classic", "consumer" (KIP-848) or "" for a group known
	// only by its committed offsets (a client that commits without
	// joining).
	Type    string
	State   string
	Members int
	// Offsets are the committed offsets, sorted by topic and partition.
	Offsets []GroupOffset
}

// Lag is the group's total lag over its committed partitions.
func (g *GroupStatus) Lag() int64 {
	var n int64
	for _, o := range g.Offsets {
		n += o.Lag
	}
	return n
}

// GroupOffset is a committed offset and the lag behind it: the
// partition's high watermark minus the offset (0 when the topic or
// partition is gone), as kafka-exporter's kafka_consumergroup_lag.
type GroupOffset struct {
	Topic     string
	Partition int32
	Offset    int64
	Lag       int64
}

// TxnStatus is one transaction in flight in a Status.
type TxnStatus struct {
	ID         string
	ProducerID int64
	Epoch      int16
	State      string
	// Started is when the transaction started (zero if unknown).
	Started    time.Time
	Partitions int
}

// CommitLogStatus describes the commit log in a Status.
type CommitLogStatus struct {
	// FileSize is the size of every file (log.segment.bytes).
	FileSize int64
	// Files are the mapped files, oldest first.
	Files []CommitLogFile
	// Wrote and Flushed are global positions: the end of the data and
	// the end of what is durable.
	Wrote, Flushed int64
	// DeletedFiles counts files deleted by retention since the start.
	DeletedFiles int64
	// Flushes are the flush latency and group-commit batch histograms
	// since the start.
	Flushes partition.FlushStats `json:"-"`
}

// CommitLogFile is one commit-log file: positions are relative to its
// start, from 0 to Size.
type CommitLogFile struct {
	Name                      string
	From, Size                int64
	Wrote, Committed, Flushed int64
}

// Status takes a snapshot of the broker.
func (b *Broker) Status() Status {
	s := Status{
		Version:    buildVersion(),
		GoVersion:  goVersion(),
		StartedAt:  b.startedAt,
		Listen:     b.cfg.Listen,
		FlushMode:  b.cfg.FlushMode,
		Advertised: b.cfg.AdvertisedListener,
		Stats:      b.Stats(),
	}
	if len(b.listeners) > 0 {
		s.Listen, s.Advertised = b.Addr(), b.AdvertisedAddr()
	}
	changed := b.cfg.changedProperties()
	for _, p := range b.cfg.Properties() {
		if changed[p[0]] {
			s.Changed = append(s.Changed, p)
		}
	}
	slices.SortFunc(s.Changed, func(a, b [2]string) int { return strings.Compare(a[0], b[0]) })
	s.Topics = b.topicStatus()
	s.Groups = b.groupStatus(s.Topics)
	s.Transactions = b.txnStatus()
	s.CommitLog = b.commitLogStatus()
	return s
}

func (b *Broker) topicStatus() []TopicStatus {
	var out []TopicStatus
	for _, t := range b.topics.List() {
		ts := TopicStatus{Name: t.Name, ID: t.ID.String(), Internal: t.Internal,
			RetentionMs: t.Configs.RetentionMs(), RetentionBytes: t.Configs.RetentionBytes()}
		for _, p := range b.store.Partitions(partition.TopicID(t.ID)) {
			tr := p.Traffic()
			ts.Partitions = append(ts.Partitions, PartitionStatus{
				Index: p.Index(), LogStart: p.LogStartOffset(), LogEnd: p.LogEndOffset(),
				HighWatermark: p.HighWatermark(), LastStable: p.LastStableOffset(), Size: p.Size(),
				BytesIn: tr.BytesIn.Load(), RecordsIn: tr.RecordsIn.Load(), BytesOut: tr.BytesOut.Load(),
			})
		}
		out = append(out, ts)
	}
	slices.SortFunc(out, func(a, b TopicStatus) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// groupStatus lists the groups with their lag, computed against the
// partitions of topics (a Status's).
func (b *Broker) groupStatus(topics []TopicStatus) []GroupStatus {
	byID := map[string]*GroupStatus{}
	get := func(id string) *GroupStatus {
		g := byID[id]
		if g == nil {
			g = &GroupStatus{ID: id}
			byID[id] = g
		}
		return g
	}
	if list, err := b.groups.List(nil); err == nil {
		for _, o := range list {
			g := get(o.Group)
			g.Type, g.State = classicGroupType, o.State.String()
			if d, err := b.groups.Describe(o.Group); err == nil {
				g.Members = len(d.Members)
			}
		}
	}
	if list, err := b.groups.Consumer().List(); err == nil {
		md := b.consumerMetadata()
		for _, o := range list {
			g := get(o.Group)
			g.Type, g.State = consumerGroupType, o.State.String()
			if d, err := b.groups.Consumer().Describe(o.Group, md); err == nil {
				g.Members = len(d.Members)
			}
		}
	}
	hw := map[offsets.TopicPartition]int64{}
	for _, t := range topics {
		for _, p := range t.Partitions {
			hw[offsets.TopicPartition{Topic: t.Name, Partition: p.Index}] = p.HighWatermark
		}
	}
	if st := b.offsets.Load(); st != nil {
		for _, info := range st.Groups() {
			committed := st.Fetch(info.Group)
			if len(committed) == 0 && byID[info.Group] == nil {
				continue
			}
			g := get(info.Group)
			for tp, o := range committed {
				lag := int64(0)
				if end, ok := hw[tp]; ok && o.Offset >= 0 {
					lag = max(end-o.Offset, 0)
				}
				g.Offsets = append(g.Offsets, GroupOffset{Topic: tp.Topic, Partition: tp.Partition, Offset: o.Offset, Lag: lag})
			}
			slices.SortFunc(g.Offsets, func(a, b GroupOffset) int {
				return cmp.Or(strings.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
			})
		}
	}
	out := make([]GroupStatus, 0, len(byID))
	for _, g := range byID {
		if g.State == "" {
			g.State = "Empty"
		}
		out = append(out, *g)
	}
	slices.SortFunc(out, func(a, b GroupStatus) int { return strings.Compare(a.ID, b.ID) })
	return out
}

func (b *Broker) txnStatus() []TxnStatus {
	c := b.txns.Load()
	if c == nil {
		return nil
	}
	list := c.List([]string{txn.Ongoing.String(), txn.PrepareCommit.String(), txn.PrepareAbort.String()}, nil, -1)
	ids := make([]string, len(list.Transactions))
	for i, l := range list.Transactions {
		ids[i] = l.TransactionalID
	}
	var out []TxnStatus
	for _, d := range c.Describe(ids) {
		if d.Err != nil {
			continue // ended meanwhile
		}
		t := TxnStatus{ID: d.TransactionalID, ProducerID: d.ProducerID, Epoch: d.Epoch, State: d.State.String(), Partitions: len(d.Partitions)}
		if d.StartTimeMs > 0 {
			t.Started = time.UnixMilli(d.StartTimeMs)
		}
		out = append(out, t)
	}
	return out
}

func (b *Broker) commitLogStatus() CommitLogStatus {
	clog := b.store.CommitLog()
	s := CommitLogStatus{
		FileSize:     b.cfg.SegmentBytes,
		Wrote:        clog.WrotePosition(),
		Flushed:      clog.FlushedPosition(),
		DeletedFiles: b.store.DeletedFiles(),
		Flushes:      b.store.FlushStats(),
	}
	for _, m := range clog.Files() {
		s.Files = append(s.Files, CommitLogFile{
			Name: m.Path()[strings.LastIndexByte(m.Path(), '/')+1:], From: m.From(), Size: m.Size(),
			Wrote: m.WrotePosition(), Committed: m.CommittedPosition(), Flushed: m.FlushedPosition(),
		})
	}
	return s
}

// buildVersion is the main module's version from the build information.
func buildVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		return bi.Main.Version
	}
	return "(devel)"
}

func goVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		return bi.GoVersion
	}
	return ""
}
