package main

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kgo"
)

// runStart starts spec on dir, measures the time to ready and stops it
// cleanly again: ready_ms from exec to answering ApiVersions and Metadata
// (probeReady), open_ms the part the broker itself reports (serve kinds:
// from before opening the broker to listening), and its resident memory
// once ready (rss_mb, rss_anon_mb) and at most since exec (rss_peak_mb).
func runStart(e *env, spec brokerSpec, dir string) (metrics, error) {
	bp, err := startBroker(e, spec, dir)
	if err != nil {
		return nil, err
	}
	out := metrics{"ready_ms": ms(bp.ready)}
	if bp.open > 0 {
		out["open_ms"] = ms(bp.open)
	}
	if mem, err := readMemStatus(bp.pid); err == nil {
		out["rss_peak_mb"] = float64(mem.peak) / 1e6
		out["rss_mb"] = float64(mem.rss) / 1e6
		out["rss_anon_mb"] = float64(mem.anon) / 1e6
	}
	return out, bp.stop()
}

// fillForStart fills dir with volume bytes of 1 KiB record values in one
// partition through a broker of spec, then stops it cleanly, so that
// runStart measures a start with that much data after a clean stop.
func fillForStart(ctx context.Context, e *env, spec brokerSpec, dir string, volume int64) error {
	bp, err := startBroker(e, spec, dir)
	if err != nil {
		return err
	}
	const topic = "startup"
	err = createTopic(ctx, bp.addr, topic, 1)
	if err == nil {
		var cl *kgo.Client
		cl, err = kgo.NewClient(append(produceOpts(bp.addr), kgo.DefaultProduceTopic(topic))...)
		if err == nil {
			err = produceN(ctx, []*kgo.Client{cl}, randomValue(1024), volume/1024)
			cl.Close()
		}
	}
	if stopErr := bp.stop(); err == nil {
		err = stopErr
	}
	if err != nil {
		return fmt.Errorf("fill %s for the start-up measurement: %w", spec.name, err)
	}
	return nil
}
