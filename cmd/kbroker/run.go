package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/kbroker/kbroker/admin"
	"github.com/kbroker/kbroker/broker"
)

// shutdownTimeout bounds a graceful stop: in-flight requests that have not
// finished by then lose their connection, and the store is closed anyway.
const shutdownTimeout = 30 * time.Second

// run is the whole command: parse args, start the broker, print the
// listening line to stdout, and stop cleanly when ctx ends or on SIGINT or
// SIGTERM. A second signal during the stop makes run return at once with an
// error (the process then exits 1 without a clean stop; the next start
// recovers the store).
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	o, err := parseArgs(args, stderr)
	if err != nil {
		return err
	}
	lg := newLogger(stderr, o.logLevel, o.logJSON)
	defer func() { _ = lg.Sync() }() // a failed sync of stderr is nothing to act on

	// Signals are caught from here on: one that arrives while the store is
	// being opened (recovery may take a while) still counts.
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)

	fields := make([]zap.Field, 0, 24)
	for _, p := range o.cfg.Properties() {
		fields = append(fields, zap.String(p[0], p[1]))
	}
	lg.Info("starting kbroker", fields...)
	if len(o.ignored) > 0 {
		lg.Info("Kafka settings that do not apply to kbroker, ignored", zap.Strings("settings", o.ignored))
	}

	var adm *admin.Server
	if o.adminListen != "" {
		// Started before the store is opened, so that /healthz answers
		// and /readyz says why not during a long recovery; stopped after
		// the broker (deferred first, run last).
		adm = admin.New(nil, admin.WithLogger(lg.Named("admin")))
		if err := adm.Start(o.adminListen); err != nil {
			return err
		}
		defer adm.Close()
		lg.Info("admin listening on", zap.String("addr", adm.Addr()),
			zap.Strings("paths", []string{"/", "/metrics", "/healthz", "/readyz", "/status.json", "/debug/vars", "/debug/pprof/"}))
	}

	b, err := openBroker(ctx, o.cfg, lg, sigs)
	if err != nil {
		return err
	}
	if adm != nil {
		adm.SetBroker(b)
	}
	if err := b.Start(); err != nil {
		return errors.Join(err, stop(ctx, b)) // release the store cleanly
	}
	// Restart and Reset replace the broker; ip knows the current one.
	ip := broker.Serve(b, o.cfg, broker.WithLogger(lg))
	if adm != nil && o.controlsOn() {
		ip.OnRestart(adm.SetBroker)
		h := ip.ControlHandler()
		for _, pattern := range []string{"/faults", "/faults/", "POST /reset", "POST /restart",
			"/nodes", "/nodes/", "/leaders", "/coordinators"} {
			adm.Handle(pattern, h)
		}
		lg.Info("test controls on the admin listener",
			zap.Strings("paths", []string{"/faults", "/reset", "/restart", "/nodes", "/leaders", "/coordinators"}))
	}
	// The first line names the first listener (scripts wait for it); with
	// several listeners, one more line each names them all.
	out := fmt.Sprintf("kbroker listening on %s\n", b.Addr())
	if ls := b.Listeners(); len(ls) > 1 {
		for _, l := range ls {
			out += fmt.Sprintf("kbroker listener %s (%s) on %s\n", l.Name, l.Protocol, l.Addr)
		}
	}
	// A simulated cluster names every node's listeners, and tests
	// driving the controls from another language need the admin port.
	if nodes := b.Nodes(); len(nodes) > 1 {
		for _, n := range nodes {
			for _, l := range n.Listeners {
				out += fmt.Sprintf("kbroker node %d listener %s (%s) on %s\n", n.ID, l.Name, l.Protocol, l.Addr)
			}
		}
	}
	if adm != nil {
		out += fmt.Sprintf("kbroker admin listening on %s\n", adm.Addr())
	}
	if _, err := io.WriteString(stdout, out); err != nil {
		return errors.Join(fmt.Errorf("write to stdout: %w", err), stopServed(ctx, ip))
	}

	select {
	case <-ctx.Done():
		lg.Info("shutting down", zap.NamedError("reason", context.Cause(ctx)))
	case s := <-sigs:
		lg.Info("shutting down (a second signal exits at once)", zap.Stringer("signal", s))
	}
	done := make(chan error, 1)
	go func() { done <- stopServed(ctx, ip) }()
	select {
	case err := <-done:
		return err
	case s := <-sigs:
		return fmt.Errorf("%v during shutdown: exiting without a clean stop", s)
	}
}

// openBroker opens the store (and recovers it after a crash) while
// watching for a signal, which abandons the start. When ctx ends instead,
// the broker is opened and closed again so that nothing is left running.
func openBroker(ctx context.Context, cfg broker.Config, lg *zap.Logger, sigs <-chan os.Signal) (*broker.Broker, error) {
	type opened struct {
		b   *broker.Broker
		err error
	}
	ch := make(chan opened, 1)
	go func() {
		b, err := broker.New(cfg, broker.WithLogger(lg))
		ch <- opened{b, err}
	}()
	select {
	case r := <-ch:
		return r.b, r.err
	case s := <-sigs:
		return nil, fmt.Errorf("%v while opening the store: exiting", s)
	case <-ctx.Done():
		r := <-ch
		if r.err == nil {
			r.err = stop(ctx, r.b)
		}
		return nil, errors.Join(context.Cause(ctx), r.err)
	}
}

// stop shuts b down gracefully, waiting at most shutdownTimeout.
func stop(ctx context.Context, b *broker.Broker) error {
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownTimeout)
	defer cancel()
	if err := b.Shutdown(sctx); err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	return nil
}

// stopServed shuts down the broker ip serves now (a restart may have
// replaced the first), waiting at most shutdownTimeout.
func stopServed(ctx context.Context, ip *broker.InProcess) error {
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownTimeout)
	defer cancel()
	if err := ip.Stop(sctx); err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	return nil
}

// newLogger is zap's production logger (sampling, stack traces from Error
// up) writing to w, in JSON or, for people, the console encoding.
func newLogger(w io.Writer, level zapcore.Level, json bool) *zap.Logger {
	ec := zap.NewProductionEncoderConfig()
	var enc zapcore.Encoder
	if json {
		enc = zapcore.NewJSONEncoder(ec)
	} else {
		ec.EncodeTime = zapcore.ISO8601TimeEncoder
		ec.EncodeLevel = zapcore.CapitalLevelEncoder
		ec.EncodeDuration = zapcore.StringDurationEncoder
		enc = zapcore.NewConsoleEncoder(ec)
	}
	ws := zapcore.Lock(zapcore.AddSync(w))
	core := zapcore.NewSamplerWithOptions(zapcore.NewCore(enc, ws, level), time.Second, 100, 100)
	return zap.New(core, zap.AddCaller(), zap.AddStacktrace(zapcore.ErrorLevel), zap.ErrorOutput(ws))
}

// options is everything the command line decides.
type options struct {
	cfg      broker.Config
	logLevel zapcore.Level
	logJSON  bool
	// adminListen is the --admin-listen address (or the older
	// --debug-listen); empty: no admin server.
	adminListen string
	// adminControls is --admin-controls: auto, on or off.
	adminControls string
	// ignored are the Kafka settings the config file or --set gave that
	// do not apply to kbroker (broker.InapplicableSetting), as
	// "name=value (why)", logged at start-up.
	ignored []string
}

// controlsOn reports whether the admin listener serves the test controls
// (fault rules, reset, restart): with --admin-controls=auto only on a
// loopback address, since they can wipe the broker.
func (o *options) controlsOn() bool {
	switch o.adminControls {
	case "on":
		return true
	case "off":
		return false
	}
	host, _, _ := net.SplitHostPort(o.adminListen)
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// setting is a flag that sets one broker.Config field, named by its Kafka
// property; the value is checked when the flag is parsed and applied after
// the config file, so an explicit flag overrides the file.
type setting struct {
	prop   string
	value  string
	isBool bool
	// check further restricts values that Config.Set would accept.
	check func(string) error
}

func (s *setting) String() string   { return s.value }
func (s *setting) IsBoolFlag() bool { return s.isBool }

func (s *setting) Set(v string) error {
	c := broker.DefaultConfig()
	if err := c.Set(s.prop, v); err != nil {
		return err
	}
	if s.check != nil {
		if err := s.check(v); err != nil {
			return err
		}
	}
	s.value = v
	return nil
}

// oneOf accepts only the listed values.
func oneOf(values ...string) func(string) error {
	return func(v string) error {
		for _, ok := range values {
			if v == ok {
				return nil
			}
		}
		return fmt.Errorf("%q is not one of %s", v, strings.Join(values, ", "))
	}
}

// settingFlags are the Config fields with flags of their own, in the order
// of the usage text. The rest are set with --config.
var settingFlags = []struct {
	flag, prop, usage string
	isBool            bool
	check             func(string) error
}{
	{flag: "listen", prop: "listeners", usage: "`address` to listen on, host:port (port 0 picks a free one), or Kafka's list NAME://host:port,..."},
	{flag: "advertised-listener", prop: "advertised.listeners", usage: "`host:port` clients are told to connect to, or NAME://host:port,... per listener (default: the address listened on)"},
	{flag: "sasl-mechanisms", prop: "sasl.enabled.mechanisms", usage: "SASL `mechanisms` of SASL_PLAINTEXT and SASL_SSL listeners: PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, OAUTHBEARER"},
	{flag: "data-dir", prop: "log.dirs", usage: "`directory` for the commit log, consume queues and metadata"},
	{flag: "flush", prop: "kbroker.flush.mode", usage: "flush `mode`: sync (group commit before acknowledging), async (page cache) or pool (transient store pool)", check: oneOf("sync", "async", "pool")},
	{flag: "segment-bytes", prop: "log.segment.bytes", usage: "size of each commit-log file in `bytes` (a multiple of 4096, 1 MiB to 1 GiB)"},
	{flag: "default-partitions", prop: "num.partitions", usage: "`partitions` of auto-created topics and of CreateTopics with -1"},
	{flag: "auto-create-topics", prop: "auto.create.topics.enable", isBool: true, usage: "create a topic when a client produces to or asks metadata for one that does not exist"},
	{flag: "seed-topics", prop: "kbroker.seed.topics", usage: "`topics` to create at start when missing: comma-separated name[:partitions]"},
	{flag: "nodes", prop: "kbroker.nodes", usage: "simulate a cluster of `N` nodes on the one store, for testing clients (not replication): each node listens on its own port\n" +
		"(the configured port plus its index, or a free one for port 0); leaders and coordinators spread over them; see docs/TESTING-CONTROLS.md"},
}

// parseArgs turns the command line into options: defaults, then the config
// file, then the flags given explicitly. The result has been validated.
func parseArgs(args []string, stderr io.Writer) (options, error) {
	o := options{logLevel: zapcore.InfoLevel}
	fs := flag.NewFlagSet("kbroker", flag.ContinueOnError)
	fs.SetOutput(io.Discard) // errors are returned; usage is printed for -h only

	defaults := map[string]string{}
	def := broker.DefaultConfig()
	for _, p := range def.Properties() {
		defaults[p[0]] = p[1]
	}
	settings := map[string]*setting{}
	for _, sf := range settingFlags {
		s := &setting{prop: sf.prop, value: defaults[sf.prop], isBool: sf.isBool, check: sf.check}
		settings[sf.flag] = s
		fs.Var(s, sf.flag, sf.usage+" ("+sf.prop+")")
	}
	var saslUsers []string
	fs.Func("sasl-user", "seed a SASL user, `NAME:PASSWORD` (repeatable): SCRAM-SHA-256 and -512 credentials, also used for PLAIN;\n"+
		"added to kbroker.sasl.users of the config file. Passwords are hashed at start-up and never stored", func(v string) error {
		name, pw, ok := strings.Cut(v, ":")
		if !ok || name == "" || pw == "" || strings.Contains(v, ",") {
			return errors.New("want NAME:PASSWORD, neither empty, without commas")
		}
		saslUsers = append(saslUsers, v)
		return nil
	})
	var sets [][2]string
	fs.Func("set", "set one broker setting, `PROPERTY=VALUE` with a Kafka property name (repeatable), for example\n"+
		"listener.name.sasl_ssl.ssl.client.auth=required; applied after --config, before the flags above", func(v string) error {
		k, val, ok := strings.Cut(v, "=")
		k = strings.TrimSpace(k)
		if !ok || k == "" {
			return errors.New("want PROPERTY=VALUE")
		}
		c := broker.DefaultConfig()
		if err := c.Set(k, val); err != nil {
			return err
		}
		sets = append(sets, [2]string{k, val})
		return nil
	})
	configFile := fs.String("config", "", "`file` of key=value lines with Kafka property names (server.properties); flags override it")
	logLevel := fs.String("log-level", "info", "log `level`: debug, info, warn or error")
	logFormat := fs.String("log-format", "console", "log `format`: console or json")
	adminListen := fs.String("admin-listen", "", "serve the admin endpoints over HTTP on `address` host:port: the status page (/), Prometheus\n"+
		"metrics (/metrics), probes (/healthz, /readyz), /status.json, expvar (/debug/vars) and pprof (/debug/pprof/).\n"+
		"Port 0 picks a free one (logged as \"admin listening on\"); off by default. Anyone who can reach it\n"+
		"can profile the broker: bind it to localhost unless it is protected otherwise")
	debugListen := fs.String("debug-listen", "", "the former name of --admin-listen, which serves /debug/ too (`address`)")
	adminControls := fs.String("admin-controls", "auto", "serve the test controls on the admin listener: fault rules (/faults), POST /reset and\n"+
		"POST /restart (docs/TESTING-CONTROLS.md). `mode` auto serves them when the admin listener is on a loopback\n"+
		"address, on and off always and never. They can wipe the broker")

	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprintf(stderr, "Usage: kbroker [flags]\n\nA single-node Kafka-compatible broker. Flags:\n\n")
			fs.SetOutput(stderr)
			fs.PrintDefaults()
		}
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected arguments %q (run kbroker -h for usage)", fs.Args())
	}

	switch *logLevel {
	case "debug", "info", "warn", "error":
		if err := o.logLevel.UnmarshalText([]byte(*logLevel)); err != nil {
			return o, err
		}
	default:
		return o, fmt.Errorf("invalid value %q for flag -log-level: must be debug, info, warn or error", *logLevel)
	}
	switch *logFormat {
	case "console":
	case "json":
		o.logJSON = true
	default:
		return o, fmt.Errorf("invalid value %q for flag -log-format: must be console or json", *logFormat)
	}

	for _, f := range []struct{ name, value string }{{"admin-listen", *adminListen}, {"debug-listen", *debugListen}} {
		if f.value == "" {
			continue
		}
		if _, _, err := net.SplitHostPort(f.value); err != nil {
			return o, fmt.Errorf("invalid value %q for flag -%s: %w", f.value, f.name, err)
		}
		if o.adminListen != "" && o.adminListen != f.value {
			return o, fmt.Errorf("flags -admin-listen %q and -debug-listen %q differ: they name the same listener", o.adminListen, f.value)
		}
		o.adminListen = f.value
	}

	switch *adminControls {
	case "auto", "on", "off":
		o.adminControls = *adminControls
	default:
		return o, fmt.Errorf("invalid value %q for flag -admin-controls: must be auto, on or off", *adminControls)
	}

	o.cfg = broker.DefaultConfig()
	if *configFile != "" {
		props, err := loadConfigFile(&o.cfg, *configFile)
		if err != nil {
			return o, err
		}
		for _, p := range props {
			o.noteIgnored(p.Name, p.Value)
		}
	}
	var errs []error
	for _, kv := range sets {
		if err := o.cfg.Set(kv[0], kv[1]); err != nil {
			errs = append(errs, fmt.Errorf("flag -set %s: %w", kv[0], err))
		}
		o.noteIgnored(kv[0], kv[1])
	}
	fs.Visit(func(f *flag.Flag) {
		if s, ok := settings[f.Name]; ok {
			if err := o.cfg.Set(s.prop, s.value); err != nil {
				errs = append(errs, fmt.Errorf("flag -%s: %w", f.Name, err))
			}
		}
	})
	if err := errors.Join(errs...); err != nil {
		return o, err
	}
	if len(saslUsers) > 0 {
		if o.cfg.SASLUsers != "" {
			saslUsers = append([]string{o.cfg.SASLUsers}, saslUsers...)
		}
		o.cfg.SASLUsers = strings.Join(saslUsers, ",")
	}
	if err := o.cfg.Validate(); err != nil {
		return o, fmt.Errorf("invalid configuration: %w", err)
	}
	return o, nil
}

// loadConfigFile sets cfg from a properties file and returns its lines.
func loadConfigFile(cfg *broker.Config, name string) ([]broker.Property, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, fmt.Errorf("config file: %w", err)
	}
	defer f.Close()
	props, err := broker.ParseProperties(f)
	if err = errors.Join(err, cfg.SetAll(props)); err != nil {
		return nil, fmt.Errorf("config file %s: %w", name, err)
	}
	return props, nil
}

// noteIgnored remembers a Kafka setting that does not apply to kbroker.
func (o *options) noteIgnored(name, value string) {
	if why, ok := broker.InapplicableSetting(name); ok {
		o.ignored = append(o.ignored, fmt.Sprintf("%s=%s (%s)", name, strings.TrimSpace(value), why))
	}
}
