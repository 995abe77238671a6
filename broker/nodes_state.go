package broker

// The simulated cluster's leader epochs on disk, <data>/metadata/nodes:
// batches written after a move carry its epoch, and clients remember
// epochs (in committed offsets, in their metadata cache), so a new
// process on the same data must not go back to epoch 0. A client that
// saw epoch 2 and is told 0 refuses the older metadata, or takes its
// position for truncated. The file is small JSON, replaced atomically
// (log.WriteFileAtomic) on every change before the change is answered:
//
//	{"version": 1, "nodes": 3, "leaders": [
//	  {"topic": "<topic id, hex>", "partition": 0, "node": 2, "epoch": 1,
//	   "epochs": [[1, 40]]}]}
//
// Which nodes are stopped and where coordinators were moved is not kept:
// a new process starts every node, coordinators at their spread nodes.

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	klog "github.com/kbroker/kbroker/log"
	"github.com/kbroker/kbroker/topic"
)

// nodesStateFile is the file's name under the metadata directory.
const nodesStateFile = "nodes"

// maxNodesStateBytes bounds the file read at start-up.
const maxNodesStateBytes = 64 << 20

type nodesStateJSON struct {
	Version int               `json:"version"`
	Nodes   int               `json:"nodes"`
	Leaders []leaderStateJSON `json:"leaders"`
}

type leaderStateJSON struct {
	Topic     string     `json:"topic"`
	Partition int32      `json:"partition"`
	Node      int        `json:"node"`
	Epoch     int32      `json:"epoch"`
	Epochs    [][2]int64 `json:"epochs,omitempty"`
}

// decodeNodesState parses and checks the file.
func decodeNodesState(data []byte) (*nodesStateJSON, map[partKey]*leadership, error) {
	var st nodesStateJSON
	if err := json.Unmarshal(data, &st); err != nil {
		return nil, nil, err
	}
	if st.Version != 1 {
		return nil, nil, fmt.Errorf("version %d, want 1", st.Version)
	}
	if st.Nodes < 1 || st.Nodes > maxNodes {
		return nil, nil, fmt.Errorf("%d nodes", st.Nodes)
	}
	out := make(map[partKey]*leadership, len(st.Leaders))
	for _, l := range st.Leaders {
		raw, err := hex.DecodeString(l.Topic)
		if err != nil || len(raw) != len(topic.ID{}) {
			return nil, nil, fmt.Errorf("topic id %q", l.Topic)
		}
		if l.Partition < 0 || l.Node < 0 || l.Node >= st.Nodes || l.Epoch < 0 {
			return nil, nil, fmt.Errorf("leader %+v out of range", l)
		}
		k := partKey{topic.ID(raw), l.Partition}
		if _, dup := out[k]; dup {
			return nil, nil, fmt.Errorf("partition %s-%d twice", l.Topic, l.Partition)
		}
		ld := &leadership{node: l.Node, epoch: l.Epoch}
		for i, e := range l.Epochs {
			es := epochStart{int32(e[0]), e[1]}
			if e[0] < 1 || e[0] > int64(l.Epoch) || e[1] < 0 ||
				(i > 0 && (es.epoch <= ld.epochs[i-1].epoch || es.start < ld.epochs[i-1].start)) {
				return nil, nil, fmt.Errorf("partition %s-%d: epoch history %v", l.Topic, l.Partition, l.Epochs)
			}
			ld.epochs = append(ld.epochs, es)
		}
		out[k] = ld
	}
	return &st, out, nil
}

// loadNodesState reads the file of an earlier run: the leaders of
// partitions that still exist, with their epochs. Leaders on nodes this
// run does not have are spread again. A missing file is no state.
func (b *Broker) loadNodesState() (map[partKey]*leadership, error) {
	data, err := os.ReadFile(filepath.Join(b.cfg.DataDir, "metadata", nodesStateFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if len(data) > maxNodesStateBytes {
		return nil, fmt.Errorf("%d bytes", len(data))
	}
	_, leaders, err := decodeNodesState(data)
	if err != nil {
		return nil, err
	}
	for k := range leaders {
		if t, ok := b.topics.ByID(k.id); !ok || k.partition >= t.Partitions {
			delete(leaders, k)
		}
	}
	return leaders, nil
}

// saveLocked replaces the file with the current leaders; the caller
// holds s.mu and has changed them.
func (s *simCluster) saveLocked(dataDir string) error {
	st := nodesStateJSON{Version: 1, Nodes: s.n, Leaders: make([]leaderStateJSON, 0, len(s.leaders))}
	for k, l := range s.leaders {
		ls := leaderStateJSON{Topic: hex.EncodeToString(k.id[:]), Partition: k.partition, Node: l.node, Epoch: l.epoch}
		for _, e := range l.epochs {
			ls.Epochs = append(ls.Epochs, [2]int64{int64(e.epoch), e.start})
		}
		st.Leaders = append(st.Leaders, ls)
	}
	slices.SortFunc(st.Leaders, func(a, b leaderStateJSON) int {
		if a.Topic != b.Topic {
			if a.Topic < b.Topic {
				return -1
			}
			return 1
		}
		return int(a.Partition - b.Partition)
	})
	data, err := json.Marshal(st)
	if err != nil {
		return err
	}
	if err := klog.WriteFileAtomic(filepath.Join(dataDir, "metadata", nodesStateFile), data); err != nil {
		return fmt.Errorf("broker: save the simulated cluster's leaders: %w", err)
	}
	return nil
}

// openNodes sets up the simulated cluster at New: continued from an
// earlier broker of this process (WithNodes), or fresh with the leaders
// and epochs an earlier run left on disk. A one-node broker whose data
// has leader epochs above 0 from such a run keeps them too, as a cluster
// of one.
func (b *Broker) openNodes() error {
	if b.nodes != nil {
		b.nodes.restoreEpochs(b)
		return nil
	}
	leaders, err := b.loadNodesState()
	if err != nil {
		return fmt.Errorf("broker: read %s: %w", filepath.Join(b.cfg.DataDir, "metadata", nodesStateFile), err)
	}
	n := max(b.cfg.Nodes, 1)
	if n == 1 && !slices.ContainsFunc(mapValues(leaders), func(l *leadership) bool { return l.epoch > 0 }) {
		return nil
	}
	b.nodes = newSimCluster(n, b.cfg.NodeID)
	for k, l := range leaders {
		if l.node >= n {
			l.node = b.nodes.spreadLocked(hashBytes(k.id[:]) + uint32(k.partition))
		}
		b.nodes.leaders[k] = l
	}
	b.nodes.restoreEpochs(b)
	return nil
}

func mapValues[K comparable, V any](m map[K]V) []V {
	out := make([]V, 0, len(m))
	for _, v := range m {
		out = append(out, v)
	}
	return out
}
