package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// brokerSpec is one broker to benchmark.
type brokerSpec struct {
	// name is how results call it: the kind, with "-sync" appended for
	// sync flushing.
	name string
	// kind is kbroker (in a child kbench serve), kbroker-bin (the
	// kbroker command), kfake-disk, kfake-mem, the floors, kafka (Apache
	// Kafka's broker) or external (--addr).
	kind string
	// flush is async or sync.
	flush string
}

// specFor is the spec of a kind with the given flush mode.
func specFor(kind, flush string) brokerSpec {
	name := kind
	if flush == "sync" {
		name += "-sync"
	}
	return brokerSpec{name: name, kind: kind, flush: flush}
}

// brokerKinds are the kinds --brokers accepts.
var brokerKinds = []string{"kbroker", "kbroker-bin", "kfake-disk", "kfake-mem", "floor-null", "floor-write", "floor-read", "kafka"}

// brokerProc is a running broker: a child process, or an external one.
type brokerProc struct {
	spec brokerSpec
	addr string
	// pid is the broker's process (0: unknown, no CPU figures).
	pid int
	// debug is kbroker-bin's --debug-listen address.
	debug string
	// open is how long the broker took to open, as the child measured it
	// (serve kinds); ready is from exec to answering ApiVersions and
	// Metadata.
	open, ready time.Duration

	cmd    *exec.Cmd
	stdin  io.WriteCloser
	lines  chan string // the serve child's replies
	stderr *syncBuffer
	exited chan struct{}
	err    error // cmd.Wait's, once exited is closed
}

// env is what starting brokers needs from the command line.
type env struct {
	self    string // this executable, for kbench serve
	kbroker string // the kbroker binary, built on first use
	addr    string // --addr
	pid     int    // --pid
	// segmentBytes is kbroker's commit-log file size.
	segmentBytes int64
	// kbrokerSet are settings for the in-process kbroker (--kbroker-set).
	kbrokerSet []string
	buildOnce  sync.Once
	buildErr   error
	// kafkaCP is Apache Kafka's classpath, resolved once.
	kafkaCP   string
	kafkaOnce sync.Once
	kafkaErr  error
}

// startBroker starts spec on dir (made if missing) and waits until it
// answers ApiVersions and Metadata.
func startBroker(e *env, spec brokerSpec, dir string) (*brokerProc, error) {
	if spec.kind == "external" {
		return &brokerProc{spec: spec, addr: e.addr, pid: e.pid}, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	bp := &brokerProc{spec: spec, addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)),
		stderr: &syncBuffer{}, exited: make(chan struct{}), lines: make(chan string, 16)}
	switch spec.kind {
	case "kbroker-bin":
		path, err := e.kbrokerBinary()
		if err != nil {
			return nil, err
		}
		dport, err := freePort()
		if err != nil {
			return nil, err
		}
		bp.debug = net.JoinHostPort("127.0.0.1", strconv.Itoa(dport))
		bp.cmd = exec.Command(path, "--listen", bp.addr, "--data-dir", dir, "--flush", spec.flush,
			"--segment-bytes", strconv.FormatInt(e.segmentBytes, 10), "--log-level", "warn", "--debug-listen", bp.debug)
	case "kafka":
		if bp.cmd, err = kafkaCommand(e, spec, bp.addr, dir); err != nil {
			return nil, err
		}
	default:
		args := []string{"serve", "--kind", spec.kind, "--listen", bp.addr, "--dir", dir, "--flush", spec.flush,
			"--segment-bytes", strconv.FormatInt(e.segmentBytes, 10)}
		if spec.kind == "kbroker" {
			for _, p := range e.kbrokerSet {
				args = append(args, "--set", p)
			}
		}
		bp.cmd = exec.Command(e.self, args...)
	}
	bp.cmd.Stderr = bp.stderr
	// If kbench dies, so does the broker (SIGTERM: it still stops cleanly).
	bp.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	if bp.stdin, err = bp.cmd.StdinPipe(); err != nil {
		return nil, err
	}
	stdout, err := bp.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	t0 := time.Now()
	if err := bp.cmd.Start(); err != nil {
		return nil, err
	}
	bp.pid = bp.cmd.Process.Pid
	go bp.readLines(stdout)
	go func() {
		bp.err = bp.cmd.Wait()
		close(bp.exited)
	}()
	if err := probeReady(bp.addr, 5*time.Minute, bp.exited); err != nil {
		bp.kill()
		return nil, fmt.Errorf("%s did not become ready: %w\n%s", spec.name, err, bp.stderr)
	}
	bp.ready = time.Since(t0)
	if spec.kind != "kbroker-bin" && spec.kind != "kafka" {
		line, err := bp.reply()
		if err != nil {
			bp.kill()
			return nil, err
		}
		ns, err := strconv.ParseInt(strings.TrimPrefix(line, "ready "), 10, 64)
		if err != nil {
			bp.kill()
			return nil, fmt.Errorf("%s: unexpected line %q", spec.name, line)
		}
		bp.open = time.Duration(ns)
	}
	return bp, nil
}

// readLines passes the child's standard output on, line by line.
func (bp *brokerProc) readLines(r io.Reader) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		select {
		case bp.lines <- sc.Text():
		default: // nobody asked (kbroker-bin's listening line)
		}
	}
}

// reply is the child's next line.
func (bp *brokerProc) reply() (string, error) {
	select {
	case l := <-bp.lines:
		return l, nil
	case <-bp.exited:
		return "", fmt.Errorf("%s exited: %v\n%s", bp.spec.name, bp.err, bp.stderr)
	case <-time.After(time.Minute):
		return "", fmt.Errorf("%s: no answer", bp.spec.name)
	}
}

// command sends a command to a serve child and returns its answer.
func (bp *brokerProc) command(cmd string) (string, error) {
	if _, err := fmt.Fprintln(bp.stdin, cmd); err != nil {
		return "", err
	}
	l, err := bp.reply()
	if err == nil && strings.HasPrefix(l, "error ") {
		err = fmt.Errorf("%s: %s: %s", bp.spec.name, cmd, l)
	}
	return l, err
}

// cpu is the broker process's CPU time so far; ok is false when unknown.
func (bp *brokerProc) cpu() (d time.Duration, ok bool) {
	if bp.pid == 0 {
		return 0, false
	}
	d, err := processCPU(bp.pid)
	return d, err == nil
}

// heap is the bytes and objects the broker's Go heap has allocated so
// far; ok is false when unknown (external brokers).
func (bp *brokerProc) heap() (bytes, objects uint64, ok bool) {
	switch bp.spec.kind {
	case "external", "kafka":
		return 0, 0, false
	case "kbroker-bin":
		res, err := http.Get("http://" + bp.debug + "/debug/vars")
		if err != nil {
			return 0, 0, false
		}
		defer res.Body.Close()
		var v struct {
			Memstats struct{ TotalAlloc, Mallocs uint64 }
		}
		if json.NewDecoder(res.Body).Decode(&v) != nil {
			return 0, 0, false
		}
		return v.Memstats.TotalAlloc, v.Memstats.Mallocs, true
	}
	l, err := bp.command("stats")
	if err != nil {
		return 0, 0, false
	}
	_, err = fmt.Sscanf(l, "stats %d %d", &bytes, &objects)
	return bytes, objects, err == nil
}

// profile starts (file != "") or stops (file == "") a CPU profile of a
// serve child; other brokers are not profiled.
func (bp *brokerProc) profile(file string) error {
	if bp.cmd == nil || bp.spec.kind == "kbroker-bin" || bp.spec.kind == "kafka" {
		return nil
	}
	if file == "" {
		_, err := bp.command("unprofile")
		return err
	}
	_, err := bp.command("profile " + file)
	return err
}

// stop stops the broker cleanly (end of input for serve children,
// SIGTERM for kbroker-bin) and waits for it to exit with status 0.
func (bp *brokerProc) stop() error {
	if bp.cmd == nil {
		return nil
	}
	bp.stdin.Close()
	if bp.spec.kind == "kbroker-bin" || bp.spec.kind == "kafka" {
		bp.cmd.Process.Signal(syscall.SIGTERM)
	}
	select {
	case <-bp.exited:
	case <-time.After(2 * time.Minute):
		bp.kill()
		return fmt.Errorf("%s did not stop within 2 minutes: killed", bp.spec.name)
	}
	if bp.err != nil && !(bp.spec.kind == "kafka" && kafkaStopped(bp.err)) {
		return fmt.Errorf("%s: %v\n%s", bp.spec.name, bp.err, bp.stderr)
	}
	return nil
}

// kill ends the child at once.
func (bp *brokerProc) kill() {
	if bp.cmd != nil && bp.cmd.Process != nil {
		bp.cmd.Process.Kill()
		<-bp.exited
	}
}

// kbrokerBinary builds ./cmd/kbroker of the module kbench was started in,
// once, unless --kbroker-bin named a binary.
func (e *env) kbrokerBinary() (string, error) {
	e.buildOnce.Do(func() {
		if e.kbroker != "" {
			return
		}
		gomod, err := exec.Command("go", "env", "GOMOD").Output()
		if err != nil || len(bytes.TrimSpace(gomod)) == 0 || string(bytes.TrimSpace(gomod)) == os.DevNull {
			e.buildErr = fmt.Errorf("kbroker-bin: run from the kbroker module or pass --kbroker-bin (go env GOMOD: %v)", err)
			return
		}
		dir, err := os.MkdirTemp("", "kbench-bin-")
		if err != nil {
			e.buildErr = err
			return
		}
		path := filepath.Join(dir, "kbroker")
		cmd := exec.Command("go", "build", "-o", path, "./cmd/kbroker")
		cmd.Dir = filepath.Dir(string(bytes.TrimSpace(gomod)))
		if out, err := cmd.CombinedOutput(); err != nil {
			e.buildErr = fmt.Errorf("go build ./cmd/kbroker: %v\n%s", err, out)
			return
		}
		e.kbroker = path
	})
	return e.kbroker, e.buildErr
}

// freePort is a TCP port on 127.0.0.1 that was free a moment ago.
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// syncBuffer is a bytes.Buffer safe for a child's writes and our reads.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// errExternal is returned by workloads that need to start brokers
// themselves.
var errExternal = errors.New("not possible with --addr")
