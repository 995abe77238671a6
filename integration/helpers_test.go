package integration

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"

	"github.com/kbroker/kbroker/broker"
	"github.com/kbroker/kbroker/internal/testenv"
	kblog "github.com/kbroker/kbroker/log"
)

// Bounds on waiting for a broker process.
const (
	startTimeout = 30 * time.Second // until the listening line
	stopTimeout  = 10 * time.Second // after SIGTERM, before SIGKILL
)

// build is the kbroker binary, built once per test process by
// kbrokerBinary; TestMain removes its directory.
var build struct {
	once sync.Once
	dir  string
	path string
	err  error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if build.dir != "" {
		os.RemoveAll(build.dir)
	}
	os.Exit(code)
}

// kbrokerBinary returns the path of a kbroker binary built from this
// module, building it on first use. Under -short with
// KBROKER_SKIP_BINARY=1 it skips the test instead.
func kbrokerBinary(t *testing.T) string {
	t.Helper()
	skipIfExternal(t, "starts the kbroker binary")
	if testing.Short() && testenv.Flag(t, "KBROKER_SKIP_BINARY") {
		t.Skip("needs the kbroker binary: skipped under -short with KBROKER_SKIP_BINARY=1")
	}
	build.once.Do(func() {
		gomod, err := exec.Command("go", "env", "GOMOD").Output()
		if err != nil {
			build.err = fmt.Errorf("go env GOMOD: %w", err)
			return
		}
		root := filepath.Dir(strings.TrimSpace(string(gomod)))
		if build.dir, build.err = os.MkdirTemp("", "kbroker-bin-"); build.err != nil {
			return
		}
		path := filepath.Join(build.dir, "kbroker")
		args := []string{"build", "-o", path}
		if raceEnabled {
			args = append(args, "-race")
		}
		cmd := exec.Command("go", append(args, "./cmd/kbroker")...)
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			build.err = fmt.Errorf("go build ./cmd/kbroker: %w\n%s", err, out)
			return
		}
		build.path = path
	})
	if build.err != nil {
		t.Fatal(build.err)
	}
	return build.path
}

// testBroker is a running broker under test: the binary or in-process.
type testBroker interface {
	// Addr is where clients connect (it changes across a restart).
	Addr() string
	// Restart stops the broker cleanly and starts it again on the same
	// data directory with the same settings.
	Restart(t *testing.T)
}

// brokerOpts are the settings a test needs, for either kind of broker.
type brokerOpts struct {
	flush        string // sync, async or pool; "" is the default (async)
	noAutoCreate bool
	partitions   int32 // num.partitions; 0 is the default (1)
	// props are further settings by Kafka property name: a --config file
	// for the binary, Config.Set in-process.
	props map[string]string
}

// args are the command-line flags for o; props go to a --config file in
// a temporary directory of t.
func (o brokerOpts) args(t *testing.T) []string {
	t.Helper()
	var args []string
	if len(o.props) > 0 {
		keys := make([]string, 0, len(o.props))
		for k := range o.props {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		var file strings.Builder
		for _, k := range keys {
			fmt.Fprintf(&file, "%s=%s\n", k, o.props[k])
		}
		path := filepath.Join(t.TempDir(), "server.properties")
		if err := os.WriteFile(path, []byte(file.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		args = append(args, "--config", path)
	}
	if o.flush != "" {
		args = append(args, "--flush", o.flush)
	}
	if o.noAutoCreate {
		args = append(args, "--auto-create-topics=false")
	}
	if o.partitions != 0 {
		args = append(args, "--default-partitions", fmt.Sprint(o.partitions))
	}
	return args
}

// check fails the test if a setting of o.props is unknown or malformed
// (edit cannot report it).
func (o brokerOpts) check(t *testing.T) {
	t.Helper()
	c := broker.DefaultConfig()
	for k, v := range o.props {
		if err := c.Set(k, v); err != nil {
			t.Fatalf("brokerOpts.props: %v", err)
		}
	}
}

// edit applies o to an in-process broker's Config; check has vetted
// o.props.
func (o brokerOpts) edit(c *broker.Config) {
	for k, v := range o.props {
		c.Set(k, v)
	}
	if o.flush != "" {
		c.FlushMode = o.flush
	}
	if o.noAutoCreate {
		c.AutoCreateTopics = false
	}
	if o.partitions != 0 {
		c.DefaultPartitions = o.partitions
	}
}

// eachBroker runs f as two parallel subtests: against the kbroker binary
// and against the in-process broker, both started with o. With
// KBROKER_TEST_BOOTSTRAP set it runs f once against that broker instead,
// or skips if o needs settings it does not have.
func eachBroker(t *testing.T, o brokerOpts, f func(t *testing.T, b testBroker)) {
	t.Helper()
	o.check(t)
	if addr := externalBootstrap(t); addr != "" {
		t.Run("external", func(t *testing.T) {
			if why := o.externalMismatch(); why != "" {
				t.Skip(why)
			}
			f(t, externalBroker(addr))
		})
		return
	}
	t.Run("binary", func(t *testing.T) {
		t.Parallel()
		f(t, startBinary(t, o.args(t)...))
	})
	t.Run("in-process", func(t *testing.T) {
		t.Parallel()
		f(t, startInProcess(t, o.edit))
	})
}

// binaryBroker is a kbroker process.
type binaryBroker struct {
	path string
	args []string // after --listen and --data-dir
	dir  string
	logs *lockedBuffer // stderr of every run

	cmd    *exec.Cmd
	addr   string
	exited chan struct{} // closed when cmd.Wait returns
	err    error         // from cmd.Wait, once exited is closed
}

// startBinary starts the kbroker binary with --listen 127.0.0.1:0,
// --data-dir in a temporary directory, 4 MiB commit-log files and args,
// and waits (at most 30 s) for its listening line. At cleanup it is
// stopped with SIGTERM (SIGKILL after 10 s) and must have exited with
// status 0, leaving no abort marker; its log is printed if the test
// failed.
func startBinary(t *testing.T, args ...string) *binaryBroker {
	t.Helper()
	b := &binaryBroker{path: kbrokerBinary(t), args: args, dir: t.TempDir(), logs: &lockedBuffer{}}
	t.Cleanup(func() {
		b.stop(t)
		if t.Failed() {
			t.Logf("log of kbroker %s:\n%s", strings.Join(b.args, " "), b.logs)
		}
	})
	b.start(t)
	return b
}

func (b *binaryBroker) Addr() string { return b.addr }

func (b *binaryBroker) Restart(t *testing.T) {
	t.Helper()
	b.stop(t)
	b.start(t)
}

func (b *binaryBroker) start(t *testing.T) {
	t.Helper()
	// Commit-log files of 4 MiB, as in-process (the command's 128 MiB,
	// with two files allocated ahead, would take GiBs across parallel
	// tests); a test's own --segment-bytes comes later and wins.
	args := append([]string{"--listen", "127.0.0.1:0", "--data-dir", b.dir, "--segment-bytes", "4194304"}, b.args...)
	lines := &lineWriter{first: make(chan string, 1)}
	b.cmd = exec.Command(b.path, args...)
	b.cmd.Stdout = lines
	b.cmd.Stderr = b.logs
	// GOTRACEBACK=crash: the SIGQUIT of a hung stop then makes every
	// thread print the goroutine it is running, so a goroutine that
	// computes without end shows its stack instead of "running on other
	// thread; stack unavailable". (The runtime then aborts; a core dump
	// follows only where ulimit -c allows it.)
	b.cmd.Env = append(os.Environ(), "GOTRACEBACK=crash")
	dieWithParent(b.cmd)
	if err := b.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	b.exited = make(chan struct{})
	go func(cmd *exec.Cmd, exited chan struct{}) {
		b.err = cmd.Wait()
		close(exited)
	}(b.cmd, b.exited)

	timer := time.NewTimer(startTimeout)
	defer timer.Stop()
	select {
	case line := <-lines.first:
		addr, ok := strings.CutPrefix(line, "kbroker listening on ")
		if !ok {
			t.Fatalf("kbroker printed %q, want %q", line, "kbroker listening on <addr>")
		}
		b.addr = addr
	case <-b.exited:
		t.Fatalf("kbroker exited before listening: %v\n%s", b.err, b.logs)
	case <-timer.C:
		t.Fatalf("kbroker printed no listening line within %v:\n%s", startTimeout, b.logs)
	}
}

// stop sends SIGTERM and waits for the process; after stopTimeout it is
// dumped (SIGQUIT) and killed. A clean stop must exit with status 0.
func (b *binaryBroker) stop(t *testing.T) {
	t.Helper()
	if b.cmd == nil {
		return
	}
	defer func() { b.cmd = nil }()
	select {
	case <-b.exited:
		t.Errorf("kbroker exited on its own: %v", b.err)
		return
	default:
	}
	if err := b.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Errorf("SIGTERM: %v", err)
	}
	timer := time.NewTimer(stopTimeout)
	defer timer.Stop()
	select {
	case <-b.exited:
		if b.err != nil {
			t.Errorf("kbroker did not exit cleanly after SIGTERM: %v", b.err)
		}
		checkCleanStop(t, b.dir)
	case <-timer.C:
		// SIGQUIT first: the Go runtime then writes every goroutine's
		// stack to stderr (running ones too: GOTRACEBACK=crash, see
		// start), which lands in the log printed on failure and shows
		// what the stop was waiting for.
		t.Errorf("kbroker still running %v after SIGTERM: sending SIGQUIT for a goroutine dump, then SIGKILL", stopTimeout)
		b.cmd.Process.Signal(syscall.SIGQUIT)
		select {
		case <-b.exited:
		case <-time.After(5 * time.Second):
			b.cmd.Process.Kill()
			<-b.exited
		}
	}
}

// kill9 kills the broker with SIGKILL and waits for it to go, within
// timeout; what names the moment in failures ("round 3"). The broker
// must still be running: one that exited on its own is a failure, with
// its exit error.
func (b *binaryBroker) kill9(t testing.TB, what string, timeout time.Duration) {
	t.Helper()
	select {
	case <-b.exited:
		t.Fatalf("%s: kbroker exited on its own: %v", what, b.err)
	default:
	}
	testenv.Kill9(t, what+": kbroker", b.cmd.Process, b.exited, timeout)
	b.cmd = nil // killed: the cleanup must not stop it again
}

// lineWriter is a process's stdout: it hands the first line over.
type lineWriter struct {
	mu    sync.Mutex
	buf   []byte
	first chan string // gets the first complete line
	sent  bool
}

func (w *lineWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, p...)
	if i := bytes.IndexByte(w.buf, '\n'); i >= 0 && !w.sent {
		w.sent = true
		w.first <- string(w.buf[:i])
	}
	return len(p), nil
}

// lockedBuffer is a bytes.Buffer for concurrent writers.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// inProcessBroker is a broker.InProcess that can be restarted.
type inProcessBroker struct {
	dir  string
	edit func(*broker.Config)
	ip   *broker.InProcess
}

// startInProcess starts broker.StartInProcess in a temporary directory,
// closed at cleanup.
func startInProcess(t *testing.T, edit func(*broker.Config)) *inProcessBroker {
	t.Helper()
	skipIfExternal(t, "starts kbroker in-process")
	b := &inProcessBroker{dir: t.TempDir(), edit: edit}
	t.Cleanup(func() { b.close(t) })
	b.start(t)
	return b
}

func (b *inProcessBroker) Addr() string { return b.ip.Addr() }

func (b *inProcessBroker) Restart(t *testing.T) {
	t.Helper()
	b.close(t)
	b.start(t)
}

func (b *inProcessBroker) start(t *testing.T) {
	t.Helper()
	lg := zaptest.NewLogger(t, zaptest.Level(zap.InfoLevel))
	// The data directory's flock can outlive Close for a moment: a child
	// process that another test forks at the wrong time has a copy of the
	// lock's descriptor until it execs (O_CLOEXEC closes it only then).
	// So a restart retries the lock for a while.
	start := time.Now()
	for tries := 1; ; tries++ {
		ip, err := broker.StartInProcess(b.dir, b.edit, broker.WithLogger(lg))
		if errors.Is(err, kblog.ErrLocked) && time.Since(start) < 5*time.Second {
			time.Sleep(10 * time.Millisecond)
			continue
		}
		if err != nil {
			t.Fatalf("start in-process broker: %v", err)
		}
		if tries > 1 {
			t.Logf("in-process broker started at the %d. try, after %v: the data directory was locked", tries, time.Since(start).Round(time.Millisecond))
		}
		b.ip = ip
		return
	}
}

func (b *inProcessBroker) close(t *testing.T) {
	t.Helper()
	if b.ip == nil {
		return
	}
	if err := b.ip.Close(); err != nil {
		t.Errorf("close broker: %v", err)
	}
	b.ip = nil
	checkCleanStop(t, b.dir)
}

// checkCleanStop fails the test if the data directory still has the abort
// marker, which a clean stop removes (the next start would recover).
func checkCleanStop(t *testing.T, dir string) {
	t.Helper()
	if _, err := os.Stat(filepath.Join(dir, "abort")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s/abort after a clean stop (stat: %v)", dir, err)
	}
}

// testCtx ends with the test or after 30 s.
func testCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// newKgo returns a kgo client for addr with short timeouts, closed at
// cleanup.
func newKgo(t *testing.T, addr string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	opts = append([]kgo.Opt{
		kgo.SeedBrokers(addr),
		kgo.RequestTimeoutOverhead(5 * time.Second),
		kgo.RetryTimeout(10 * time.Second),
		kgo.RecordDeliveryTimeout(20 * time.Second),
		kgo.ProduceRequestTimeout(5 * time.Second),
	}, opts...)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// newAdmin returns a kadm client for addr.
func newAdmin(t *testing.T, addr string) *kadm.Client {
	t.Helper()
	return kadm.NewClient(newKgo(t, addr))
}

// topicName is a topic name unique to the test.
func topicName(t *testing.T) string {
	t.Helper()
	r := strings.NewReplacer("/", ".", " ", "_", "=", "_")
	name := strings.ToLower(r.Replace(t.Name()))
	if externalBootstrap(t) != "" {
		name += externalRunSuffix
	}
	return name
}

// endOffsets lists the end offsets of topic, by partition.
func endOffsets(t *testing.T, adm *kadm.Client, topic string) map[int32]int64 {
	t.Helper()
	lo, err := adm.ListEndOffsets(testCtx(t), topic)
	if err != nil {
		t.Fatalf("ListEndOffsets: %v", err)
	}
	if err := lo.Error(); err != nil {
		t.Fatalf("ListEndOffsets %s: %v", topic, err)
	}
	got := map[int32]int64{}
	lo.Each(func(o kadm.ListedOffset) { got[o.Partition] = o.Offset })
	return got
}

// checkEndOffsets fails unless topic's end offsets are want.
func checkEndOffsets(t *testing.T, adm *kadm.Client, topic string, want map[int32]int64) {
	t.Helper()
	got := endOffsets(t, adm, topic)
	if !equalOffsets(got, want) {
		t.Fatalf("end offsets of %s: got %v, want %v", topic, got, want)
	}
}

// awaitEndOffsets waits up to 20 s for topic's end offsets to reach want,
// for flush modes where visibility trails the acknowledgement; the caller
// then checks them. The bound is generous for a loaded machine: the wait
// ends as soon as they are there.
func awaitEndOffsets(t *testing.T, adm *kadm.Client, topic string, want map[int32]int64) {
	t.Helper()
	start := time.Now()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for time.Since(start) < 20*time.Second {
		if equalOffsets(endOffsets(t, adm, topic), want) {
			t.Logf("end offsets of %s reached after %v", topic, time.Since(start).Round(time.Millisecond))
			return
		}
		<-tick.C
	}
}

func equalOffsets(a, b map[int32]int64) bool {
	if len(a) != len(b) {
		return false
	}
	for p, o := range a {
		if bo, ok := b[p]; !ok || bo != o {
			return false
		}
	}
	return true
}
