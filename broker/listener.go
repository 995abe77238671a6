package broker

// Listeners (Kafka's listeners, advertised.listeners and
// listener.security.protocol.map). The broker accepts on every listener;
// each connection remembers the listener it arrived on, and Metadata,
// FindCoordinator and DescribeCluster answer with that listener's
// advertised address, as Kafka's KafkaApis does with
// request.context.listenerName: a client bootstrapped on the SASL port
// must be told the SASL port, or its next connection would start a SASL
// handshake on a plaintext listener.

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
)

// Security protocols of Kafka's SecurityProtocol enum (GSSAPI-free).
const (
	protoPlaintext     = "PLAINTEXT"
	protoSSL           = "SSL"
	protoSASLPlaintext = "SASL_PLAINTEXT"
	protoSASLSSL       = "SASL_SSL"
)

// defaultProtocolMap is Kafka's default listener.security.protocol.map:
// each protocol's name maps to itself.
const defaultProtocolMap = "PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL"

// listenerSpec is one configured listener before it is bound.
type listenerSpec struct {
	// name is the listener name, upper case (Kafka's ListenerName).
	name string
	// protocol is its security protocol, one of proto*.
	protocol string
	// addr is the host:port to bind.
	addr string
	// adv is the advertised host:port, or "" for the bound address.
	adv string
}

// tls reports whether connections of the listener speak TLS.
func (s *listenerSpec) tls() bool { return s.protocol == protoSSL || s.protocol == protoSASLSSL }

// sasl reports whether connections of the listener must authenticate
// with SASL before anything but ApiVersions and SaslHandshake.
func (s *listenerSpec) sasl() bool {
	return s.protocol == protoSASLPlaintext || s.protocol == protoSASLSSL
}

// listener is a bound listener.
type listener struct {
	listenerSpec
	ln net.Listener
	// bound is the address ln is bound to, with the port chosen for 0;
	// a simulated node binds the same one again when it starts.
	bound string
	// node is the index of the simulated node the listener is one of
	// (nodes.go), 0 on a single node; index is its place in the
	// listeners setting.
	node, index int
	// advHost and advPort are what clients are told.
	advHost string
	advPort int32
	// tlsConfig is the server TLS configuration of SSL and SASL_SSL
	// listeners, nil otherwise (sec.tlsConfig).
	tlsConfig *tls.Config
	// sec is the listener's security settings, its overrides applied.
	sec *listenerSecurity
	// accepted and refused count this listener's connections, accepted and
	// closed at accept by the connection limits.
	accepted, refused atomic.Int64
}

// ListenerInfo describes a bound listener for embedders and tests.
type ListenerInfo struct {
	// Name is the listener name (PLAINTEXT, CLIENT, ...).
	Name string
	// Protocol is its security protocol: PLAINTEXT, SSL, SASL_PLAINTEXT or
	// SASL_SSL.
	Protocol string
	// Addr is the bound address, with the port chosen when 0 was asked.
	Addr string
	// Advertised is the host:port clients are told to connect to.
	Advertised string
}

// parseListenerList parses Kafka's "NAME://host:port,..." form. A value
// without "://" is the simple one-listener case: a host:port served as
// PLAINTEXT.
func parseListenerList(prop, value string) ([]listenerSpec, error) {
	value = strings.TrimSpace(value)
	if value == "" {
		return nil, nil
	}
	if !strings.Contains(value, "://") {
		if _, _, err := net.SplitHostPort(value); err != nil {
			return nil, fmt.Errorf("%s %q: %w", prop, value, err)
		}
		return []listenerSpec{{name: protoPlaintext, addr: value}}, nil
	}
	var out []listenerSpec
	seen := map[string]bool{}
	for _, part := range strings.Split(value, ",") {
		part = strings.TrimSpace(part)
		name, addr, ok := strings.Cut(part, "://")
		if !ok || name == "" {
			return nil, fmt.Errorf("%s: %q is not NAME://host:port", prop, part)
		}
		name = strings.ToUpper(name)
		if seen[name] {
			return nil, fmt.Errorf("%s: listener name %s appears twice", prop, name)
		}
		seen[name] = true
		if _, port, err := net.SplitHostPort(addr); err != nil {
			return nil, fmt.Errorf("%s: %q: %w", prop, part, err)
		} else if p, err := strconv.Atoi(port); err != nil || p < 0 || p > 65535 {
			return nil, fmt.Errorf("%s: %q: bad port", prop, part)
		}
		out = append(out, listenerSpec{name: name, addr: addr})
	}
	return out, nil
}

// parseProtocolMap parses listener.security.protocol.map.
func parseProtocolMap(value string) (map[string]string, error) {
	out := map[string]string{}
	for _, part := range strings.Split(value, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		name, proto, ok := strings.Cut(part, ":")
		if !ok {
			return nil, fmt.Errorf("listener.security.protocol.map: %q is not NAME:PROTOCOL", part)
		}
		proto = strings.ToUpper(strings.TrimSpace(proto))
		switch proto {
		case protoPlaintext, protoSSL, protoSASLPlaintext, protoSASLSSL:
		default:
			return nil, fmt.Errorf("listener.security.protocol.map: unknown security protocol %q", proto)
		}
		out[strings.ToUpper(strings.TrimSpace(name))] = proto
	}
	return out, nil
}

// listenerSpecs resolves listeners, advertised.listeners and the protocol
// map into the listeners to bind.
func (c *Config) listenerSpecs() ([]listenerSpec, error) {
	specs, err := parseListenerList("listeners", c.Listen)
	if err != nil {
		return nil, err
	}
	controllers := c.controllerListeners()
	specs = slices.DeleteFunc(specs, func(s listenerSpec) bool { return controllers[s.name] })
	if len(specs) == 0 {
		if len(controllers) > 0 {
			return nil, errors.New("listeners names only controller listeners (controller.listener.names)")
		}
		return nil, errors.New("listeners is empty")
	}
	pm, err := parseProtocolMap(c.ListenerSecurityProtocolMap)
	if err != nil {
		return nil, err
	}
	var errs []error
	for i := range specs {
		proto, ok := pm[specs[i].name]
		if !ok {
			errs = append(errs, fmt.Errorf("listeners: no security protocol for listener %s in listener.security.protocol.map", specs[i].name))
			continue
		}
		specs[i].protocol = proto
	}
	adv := strings.TrimSpace(c.AdvertisedListener)
	switch {
	case adv == "":
	case !strings.Contains(adv, "://"):
		// The simple form names the one (first) listener's address.
		if _, p, err := net.SplitHostPort(adv); err != nil {
			errs = append(errs, fmt.Errorf("advertised.listeners %q: %w", adv, err))
		} else if _, err := strconv.Atoi(p); err != nil {
			errs = append(errs, fmt.Errorf("advertised.listeners %q: bad port", adv))
		} else if len(specs) > 1 {
			errs = append(errs, fmt.Errorf("advertised.listeners %q: name the listener (NAME://host:port) when there are several", adv))
		} else {
			specs[0].adv = adv
		}
	default:
		advs, err := parseListenerList("advertised.listeners", adv)
		if err != nil {
			errs = append(errs, err)
			break
		}
		advs = slices.DeleteFunc(advs, func(s listenerSpec) bool { return controllers[s.name] })
		for _, a := range advs {
			found := false
			for i := range specs {
				if specs[i].name == a.name {
					specs[i].adv, found = a.addr, true
				}
			}
			if !found {
				errs = append(errs, fmt.Errorf("advertised.listeners: %s is not in listeners", a.name))
			}
			if h, _, _ := net.SplitHostPort(a.addr); h == "0.0.0.0" || h == "::" {
				errs = append(errs, fmt.Errorf("advertised.listeners: %s cannot be advertised", a.addr))
			}
		}
	}
	return specs, errors.Join(errs...)
}

// controllerListeners are the names in controller.listener.names, upper
// case as listener names are compared.
func (c *Config) controllerListeners() map[string]bool {
	out := map[string]bool{}
	for _, n := range strings.Split(c.ControllerListenerNames, ",") {
		if n = strings.ToUpper(strings.TrimSpace(n)); n != "" {
			out[n] = true
		}
	}
	return out
}

// advertised is the address to tell clients for a listener bound at
// bound: the configured one, else the bound address with the configured
// host (unless it is a wildcard).
func (s *listenerSpec) advertised(bound string) (string, int32) {
	adv := s.adv
	if adv == "" {
		adv = bound
		if host, _, _ := net.SplitHostPort(s.addr); host != "" && host != "0.0.0.0" && host != "::" {
			_, port, _ := net.SplitHostPort(bound)
			adv = net.JoinHostPort(host, port)
		}
	}
	host, port, _ := net.SplitHostPort(adv)
	p, _ := strconv.Atoi(port)
	return host, int32(p)
}

// pinnedListeners is the listeners setting with each listener's port
// replaced by the one it is bound to (and its configured host kept, which
// the advertised address may come from), so that a restart in place binds
// the same addresses even when port 0 was asked.
func (b *Broker) pinnedListeners() string {
	parts := make([]string, 0, len(b.listeners))
	for _, l := range b.listeners {
		host, _, _ := net.SplitHostPort(l.addr)
		_, port, _ := net.SplitHostPort(l.bound)
		parts = append(parts, l.name+"://"+net.JoinHostPort(host, port))
	}
	if len(parts) == 1 && !strings.Contains(b.cfg.Listen, "://") {
		_, addr, _ := strings.Cut(parts[0], "://")
		return addr // the simple one-listener form, as configured
	}
	return strings.Join(parts, ",")
}
