package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/kbroker/kbroker/broker"
)

// The hidden serve subcommand runs one broker in this process for a
// parent kbench, so that the broker's CPU time (/proc/<pid>/stat) is
// measured apart from the clients':
//
//	kbench serve --kind kbroker|kfake-disk|kfake-mem|floor-null|floor-write|floor-read --listen 127.0.0.1:PORT --dir DIR [--flush async|sync] [--set name=value]...
//
// kbroker is started with broker.StartInProcess (with the command's
// defaults, not the small in-process commit-log files), kfake with
// kfake.NewCluster (one node; DataDir for kfake-disk, plus SyncWrites for
// --flush sync). Once listening it prints one line, "ready <ns>", the time
// the broker took to open, and then answers commands on standard input,
// one line each:
//
//	profile FILE   start a CPU profile into FILE      → "ok"
//	unprofile      stop it                            → "ok"
//
// (with the allocation profile at both moments, FILE.allocs-base and
// FILE.allocs: go tool pprof -sample_index=alloc_space -base FILE.allocs-base FILE.allocs;
// and at the end the live heap, FILE.heap, with the runtime's memory
// figures in FILE.heap.txt)
//
//	stats          the Go heap's totals so far        → "stats <TotalAlloc bytes> <Mallocs>"
//
// End of input, SIGTERM or SIGINT stops the broker cleanly (kbroker
// flushes and checkpoints, kfake saves its state) and exits 0.
func serveMain(args []string) error {
	fs := flag.NewFlagSet("kbench serve", flag.ContinueOnError)
	kind := fs.String("kind", "kbroker", "kbroker, kfake-disk, kfake-mem, floor-null, floor-write or floor-read")
	listen := fs.String("listen", "127.0.0.1:0", "address to listen on (kfake: 127.0.0.1 and this port)")
	dir := fs.String("dir", "", "data directory (kbroker, kfake-disk)")
	flush := fs.String("flush", "async", "async or sync")
	segment := fs.Int64("segment-bytes", 128<<20, "kbroker commit-log file size")
	var props []string
	fs.Func("set", "kbroker setting `name=value` (Kafka property name; repeatable)", func(v string) error {
		props = append(props, v)
		return nil
	})
	if err := fs.Parse(args); err != nil {
		return err
	}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, os.Interrupt)

	start := time.Now()
	stop, err := openServed(*kind, *listen, *dir, *flush, *segment, props)
	if err != nil {
		return err
	}
	fmt.Printf("ready %d\n", time.Since(start).Nanoseconds())

	done := make(chan struct{})
	go func() {
		defer close(done)
		serveCommands(os.Stdin, os.Stdout)
	}()
	select {
	case <-done:
	case <-sigs:
	}
	pprof.StopCPUProfile()
	return stop()
}

// openServed starts the broker of kind and returns the function that
// stops it cleanly.
func openServed(kind, listen, dir, flush string, segment int64, props []string) (func() error, error) {
	switch kind {
	case "kbroker":
		if dir == "" {
			return nil, errors.New("kbroker needs --dir")
		}
		var setErr error
		ip, err := broker.StartInProcess(dir, func(c *broker.Config) {
			c.Listen = listen
			c.FlushMode = flush
			c.SegmentBytes = segment
			for _, p := range props {
				name, value, _ := strings.Cut(p, "=")
				if err := c.Set(name, value); err != nil && setErr == nil {
					setErr = err
				}
			}
		})
		if err == nil && setErr != nil {
			ip.Close()
			err = setErr
		}
		if err != nil {
			return nil, err
		}
		return ip.Close, nil
	case "kfake-disk", "kfake-mem":
		_, portText, err := net.SplitHostPort(listen)
		if err != nil {
			return nil, err
		}
		port, err := strconv.Atoi(portText)
		if err != nil {
			return nil, err
		}
		opts := []kfake.Opt{kfake.NumBrokers(1), kfake.Ports(port)}
		if kind == "kfake-disk" {
			if dir == "" {
				return nil, errors.New("kfake-disk needs --dir")
			}
			opts = append(opts, kfake.DataDir(dir))
			if flush == "sync" {
				opts = append(opts, kfake.SyncWrites())
			}
		}
		c, err := kfake.NewCluster(opts...)
		if err != nil {
			return nil, err
		}
		return func() error { c.Close(); return nil }, nil
	case "floor-read":
		s, err := startFloorRead(listen)
		if err != nil {
			return nil, err
		}
		return s.stop, nil
	case "floor-null", "floor-write":
		if kind == "floor-null" {
			dir = "" // stores nothing
		} else if dir == "" {
			return nil, errors.New("floor-write needs --dir")
		}
		s, err := startFloor(listen, dir)
		if err != nil {
			return nil, err
		}
		return s.stop, nil
	}
	return nil, fmt.Errorf("unknown kind %q", kind)
}

// serveCommands answers the parent's commands until in ends.
func serveCommands(in io.Reader, out io.Writer) {
	sc := bufio.NewScanner(in)
	var prof *os.File
	for sc.Scan() {
		cmd, arg, _ := strings.Cut(sc.Text(), " ")
		reply := "ok"
		switch cmd {
		case "profile":
			f, err := os.Create(arg)
			if err == nil {
				err = pprof.StartCPUProfile(f)
			}
			if err == nil {
				err = writeAllocs(arg + ".allocs-base")
			}
			if err != nil {
				reply = "error " + err.Error()
				break
			}
			prof = f
		case "unprofile":
			pprof.StopCPUProfile()
			if prof != nil {
				if err := writeAllocs(prof.Name() + ".allocs"); err != nil {
					reply = "error " + err.Error()
				}
				if err := writeHeap(prof.Name() + ".heap"); err != nil {
					reply = "error " + err.Error()
				}
				prof.Close()
				prof = nil
			}
		case "stats":
			var m runtime.MemStats
			runtime.ReadMemStats(&m)
			reply = fmt.Sprintf("stats %d %d", m.TotalAlloc, m.Mallocs)
		default:
			reply = "error unknown command " + strconv.Quote(cmd)
		}
		fmt.Fprintln(out, reply)
	}
	if prof != nil {
		pprof.StopCPUProfile()
		prof.Close()
	}
}

// writeHeap writes, after a collection, the heap profile (what is live:
// go tool pprof -sample_index=inuse_space) to path and the runtime's
// memory figures to path.txt: where the broker's anonymous memory is at
// the end of a case (the live heap, the heap the runtime keeps without
// returning it, stacks), for the growth from case to case.
func writeHeap(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	runtime.GC()
	if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
		return err
	}
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	const mb = 1 << 20
	text := fmt.Sprintf("HeapAlloc %.1f MB\nHeapInuse %.1f MB\nHeapIdle %.1f MB\nHeapReleased %.1f MB\n"+
		"StackInuse %.1f MB\nMSpan+MCache %.1f MB\nOtherSys+GCSys+BuckHash %.1f MB\nSys %.1f MB\nNumGC %d\nGoroutines %d\n",
		float64(m.HeapAlloc)/mb, float64(m.HeapInuse)/mb, float64(m.HeapIdle)/mb, float64(m.HeapReleased)/mb,
		float64(m.StackInuse)/mb, float64(m.MSpanInuse+m.MCacheInuse)/mb, float64(m.OtherSys+m.GCSys+m.BuckHashSys)/mb,
		float64(m.Sys)/mb, m.NumGC, runtime.NumGoroutine())
	return os.WriteFile(path+".txt", []byte(text), 0o644)
}

// writeAllocs writes the allocation profile so far to path. The profile
// counts allocations as of the last garbage collection, so one runs
// first: a window without one would otherwise show nothing.
func writeAllocs(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	runtime.GC()
	return pprof.Lookup("allocs").WriteTo(f, 0)
}
