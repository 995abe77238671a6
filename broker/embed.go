package broker

import (
	"context"
	"os"
	"time"

	"go.uber.org/zap"
)

// InProcess is a broker started inside the calling process, on a free
// loopback port, with its own data directory: a real Kafka endpoint for
// tests. Stop it with Close.
type InProcess struct {
	*Broker
	dir     string
	ownsDir bool
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
	b, err := New(cfg, append([]Option{WithLogger(zap.NewNop())}, opts...)...)
	if err != nil {
		ip.cleanup()
		return nil, err
	}
	if err := b.Start(); err != nil {
		b.Shutdown(context.Background())
		ip.cleanup()
		return nil, err
	}
	ip.Broker = b
	return ip, nil
}

// Close shuts the broker down (waiting up to 10 s for in-flight requests)
// and removes its temporary data directory.
func (ip *InProcess) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := ip.Shutdown(ctx)
	ip.cleanup()
	return err
}

func (ip *InProcess) cleanup() {
	if ip.ownsDir {
		os.RemoveAll(ip.dir)
	}
}
