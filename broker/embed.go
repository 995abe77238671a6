package broker

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"go.uber.org/zap"
)

// InProcess is a broker started inside the calling process, on a free
// loopback port, with its own data directory: a real Kafka endpoint for
// tests. Stop it with Close.
//
// Restart and Reset replace the embedded *Broker: call them from the
// goroutine that owns ip, not while other goroutines use ip.Broker.
type InProcess struct {
	*Broker
	dir     string
	ownsDir bool
	cfg     Config
	opts    []Option
	// onRestart is called with each broker a restart starts (OnRestart).
	onRestart func(*Broker)
	// restartMu serializes Restart, Reset and Close.
	restartMu sync.Mutex
}

// StartInProcess starts a broker on 127.0.0.1 with a free port. dataDir
// may be empty, in which case a temporary directory is made and removed by
// Close. Settings take the in-process defaults (4 MiB commit-log files,
// async flush, auto-created topics); edit may change them before start.
func StartInProcess(dataDir string, edit func(*Config), opts ...Option) (*InProcess, error) {
	ip := &InProcess{dir: dataDir}
	if dataDir == "" {
		d, err := os.MkdirTemp("", "kbroker-")
		if err != nil {
			return nil, err
		}
		ip.dir, ip.ownsDir = d, true
	}
	cfg := DefaultConfig()
	cfg.Listen = "127.0.0.1:0"
	cfg.DataDir = ip.dir
	cfg.SegmentBytes = 4 << 20
	if edit != nil {
		edit(&cfg)
	}
	ip.cfg = cfg
	ip.opts = append([]Option{WithLogger(zap.NewNop())}, opts...)
	b, err := ip.start(cfg)
	if err != nil {
		ip.cleanup()
		return nil, err
	}
	ip.Broker = b
	return ip, nil
}

// Serve wraps a broker already started with cfg (the kbroker command's,
// say) so that it can be restarted and reset in place: Restart opens a
// new one with cfg and opts on the same address. The data directory is
// the caller's and Close leaves it.
func Serve(b *Broker, cfg Config, opts ...Option) *InProcess {
	return &InProcess{Broker: b, dir: cfg.DataDir, cfg: cfg, opts: opts}
}

// OnRestart registers f to be called with the new broker after each
// Restart or Reset, for whatever holds on to the old one (an admin
// server's status page, say). Call it before any restart.
func (ip *InProcess) OnRestart(f func(*Broker)) { ip.onRestart = f }

// start opens and starts a broker with cfg.
func (ip *InProcess) start(cfg Config, extra ...Option) (*Broker, error) {
	b, err := New(cfg, append(ip.opts[:len(ip.opts):len(ip.opts)], extra...)...)
	if err != nil {
		return nil, err
	}
	if err := b.Start(); err != nil {
		b.Shutdown(context.Background())
		return nil, err
	}
	return b, nil
}

// Restart stops the broker cleanly (in-flight requests finish until ctx
// ends, everything is flushed) and starts it again on the same address
// with the same data and the same fault rules, as clients see a real
// broker restart: their connections close and they reconnect.
func (ip *InProcess) Restart(ctx context.Context) error {
	return ip.restart(ctx, restartClean)
}

// RestartCrashed restarts the broker as after a crash: connections are
// cut without answers, nothing is flushed, checkpointed or snapshotted
// that was not already, and the broker comes back on the same address
// through crash recovery. As after a killed process, what was written to
// the commit log's mappings survives in the page cache; in pool flush
// mode what only the store pool held is lost.
func (ip *InProcess) RestartCrashed() error {
	return ip.restart(context.Background(), restartCrash)
}

// Reset deletes everything clients made: every topic (the seed topics of
// kbroker.seed.topics are made again), group, committed offset,
// transaction and producer state. It is a Restart onto an empty data
// directory, so it takes milliseconds and clients reconnect; fault rules
// stay (clear them with Faults().Clear).
func (ip *InProcess) Reset(ctx context.Context) error {
	return ip.restart(ctx, restartWipe)
}

// restartKind is how restart stops the old broker and what it keeps.
type restartKind int

const (
	restartClean restartKind = iota
	restartCrash
	restartWipe
)

func (ip *InProcess) restart(ctx context.Context, kind restartKind) error {
	ip.restartMu.Lock()
	defer ip.restartMu.Unlock()
	old := ip.Broker
	cfg := ip.cfg
	// The same port, also when the first was :0, and the same host as
	// configured, which the advertised address may come from.
	cfg.Listen = old.pinnedListeners()
	if kind == restartCrash {
		old.crash()
	} else if err := old.Shutdown(ctx); err != nil {
		return fmt.Errorf("broker: restart: stop: %w", err)
	}
	if kind == restartWipe {
		if err := emptyDir(ip.dir); err != nil {
			return fmt.Errorf("broker: reset: %w", err)
		}
	}
	b, err := ip.start(cfg, WithFaults(old.faults), WithNodes(old))
	if err != nil {
		return fmt.Errorf("broker: restart: %w", err)
	}
	ip.Broker = b
	if ip.onRestart != nil {
		ip.onRestart(b)
	}
	return nil
}

// emptyDir removes everything inside dir.
func emptyDir(dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	var errs []error
	for _, e := range entries {
		errs = append(errs, os.RemoveAll(filepath.Join(dir, e.Name())))
	}
	return errors.Join(errs...)
}

// Close shuts the broker down (waiting up to 10 s for in-flight requests)
// and removes its temporary data directory.
func (ip *InProcess) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := ip.Stop(ctx)
	ip.cleanup()
	return err
}

// Stop shuts down the broker ip serves now, after any restart in
// progress, letting in-flight requests finish until ctx ends; it keeps
// the data directory.
func (ip *InProcess) Stop(ctx context.Context) error {
	ip.restartMu.Lock()
	defer ip.restartMu.Unlock()
	return ip.Shutdown(ctx)
}

func (ip *InProcess) cleanup() {
	if ip.ownsDir {
		os.RemoveAll(ip.dir)
	}
}
