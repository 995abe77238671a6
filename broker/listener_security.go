package broker

// Per-listener security settings, Kafka's listener.name.<listener>.*
// overrides (KIP-103's listener prefix): one listener can offer other
// SASL mechanisms, another keystore or require client certificates while
// the others do not. A listener's effective settings are the global ones
// with its overrides applied (Config.forListener); everything else reads
// them from the listener's listenerSecurity, resolved once at start.
//
// Only the settings below take a listener prefix; any other
// listener.name.* property (sasl.jaas.config above all: kbroker has no
// JAAS, users come from kbroker.sasl.users and the SCRAM APIs) is refused
// by name, so a copied Kafka server.properties fails loudly rather than
// running with settings silently ignored.

import (
	"crypto/tls"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/kbroker/kbroker/security/authn"
)

// listenerPrefix starts every per-listener property.
const listenerPrefix = "listener.name."

// reauthProperty is connections.max.reauth.ms, which Kafka also reads per
// mechanism (SaslChannelBuilder.createConnectionsMaxReauthMsMap).
const reauthProperty = "connections.max.reauth.ms"

// listenerProperties are the settings a listener prefix may override.
var listenerProperties = []string{
	"sasl.enabled.mechanisms",
	reauthProperty,
	"ssl.keystore.type",
	"ssl.keystore.location",
	"ssl.keystore.certificate.chain",
	"ssl.keystore.key",
	"ssl.truststore.type",
	"ssl.truststore.location",
	"ssl.truststore.certificates",
	"ssl.client.auth",
	"ssl.principal.mapping.rules",
}

// splitListenerProperty splits listener.name.<listener>.<property> into
// the listener name (upper case, as listeners are kept) and the property,
// checking that the property may be overridden per listener.
func splitListenerProperty(name string) (listener, prop string, err error) {
	rest, _ := strings.CutPrefix(name, listenerPrefix)
	listener, prop, ok := strings.Cut(rest, ".")
	if !ok || listener == "" || prop == "" {
		return "", "", fmt.Errorf("%s: want listener.name.<listener>.<property>", name)
	}
	if slices.Contains(listenerProperties, prop) {
		return strings.ToUpper(listener), prop, nil
	}
	if mech, ok := strings.CutSuffix(prop, "."+reauthProperty); ok && slices.Contains(authn.Supported, strings.ToUpper(mech)) {
		return strings.ToUpper(listener), strings.ToLower(mech) + "." + reauthProperty, nil
	}
	return "", "", fmt.Errorf("%s: %s cannot be set per listener (kbroker supports %s and <mechanism>.%s)",
		name, prop, strings.Join(listenerProperties, ", "), reauthProperty)
}

// unprefixedProperty is the global setting a listener property
// overrides: <mechanism>.connections.max.reauth.ms is
// connections.max.reauth.ms.
func unprefixedProperty(prop string) string {
	if strings.HasSuffix(prop, "."+reauthProperty) {
		return reauthProperty
	}
	return prop
}

// setListenerOverride records one listener.name.* setting after checking
// its name and its value (as the unprefixed setting would be checked).
// The map is copied, never changed in place: Config values are copied
// freely and must not share later edits.
func (c *Config) setListenerOverride(name, value string) error {
	listener, prop, err := splitListenerProperty(name)
	if err != nil {
		return err
	}
	scratch := DefaultConfig()
	if err := scratch.Set(unprefixedProperty(prop), value); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	next := maps.Clone(c.ListenerOverrides)
	if next == nil {
		next = map[string]string{}
	}
	next[listenerPrefix+strings.ToLower(listener)+"."+prop] = strings.TrimSpace(value)
	c.ListenerOverrides = next
	return nil
}

// listenerOverrideProperties lists the overrides for Properties, sorted,
// with keys and passwords hidden.
func (c *Config) listenerOverrideProperties() [][2]string {
	out := make([][2]string, 0, len(c.ListenerOverrides))
	for _, k := range slices.Sorted(maps.Keys(c.ListenerOverrides)) {
		v := c.ListenerOverrides[k]
		if v != "" && sensitiveProperty(k) {
			v = hiddenValue
		}
		out = append(out, [2]string{k, v})
	}
	return out
}

// forListener is c as the listener named name sees it: its overrides
// applied over the global settings (a bad override is left out here;
// Validate reports it). mechReauth holds the per-mechanism
// connections.max.reauth.ms overrides, by upper-case mechanism name.
func (c *Config) forListener(name string) (lc Config, mechReauth map[string]time.Duration) {
	lc = *c
	lc.ListenerOverrides = nil
	for k, v := range c.ListenerOverrides {
		listener, prop, err := splitListenerProperty(k)
		if err != nil || listener != strings.ToUpper(name) {
			continue
		}
		if mech, ok := strings.CutSuffix(prop, "."+reauthProperty); ok {
			var tmp Config
			if tmp.Set(reauthProperty, v) == nil {
				if mechReauth == nil {
					mechReauth = map[string]time.Duration{}
				}
				mechReauth[strings.ToUpper(mech)] = tmp.ConnectionsMaxReauth
			}
			continue
		}
		lc.Set(prop, v)
	}
	return lc, mechReauth
}

// listenerHas reports whether listener name overrides prop.
func (c *Config) listenerHas(name, prop string) bool {
	_, ok := c.ListenerOverrides[listenerPrefix+strings.ToLower(name)+"."+prop]
	return ok
}

// validateListenerOverrides checks every override's name, that it names
// a configured listener, and its value.
func (c *Config) validateListenerOverrides(specs []listenerSpec) error {
	var errs []error
	for _, k := range slices.Sorted(maps.Keys(c.ListenerOverrides)) {
		listener, prop, err := splitListenerProperty(k)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if !slices.ContainsFunc(specs, func(s listenerSpec) bool { return s.name == listener }) {
			errs = append(errs, fmt.Errorf("%s: no listener %s in listeners", k, listener))
			continue
		}
		scratch := DefaultConfig()
		if err := scratch.Set(unprefixedProperty(prop), c.ListenerOverrides[k]); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", k, err))
		}
	}
	return errors.Join(errs...)
}

// listenerSecurity is what one listener's connections need to
// authenticate, resolved at start from its effective settings.
type listenerSecurity struct {
	// mechanisms are its sasl.enabled.mechanisms.
	mechanisms []string
	// reauth is its connections.max.reauth.ms; mechReauth the
	// per-mechanism values, which win.
	reauth     time.Duration
	mechReauth map[string]time.Duration
	// tlsConfig serves an SSL or SASL_SSL listener; nil otherwise.
	tlsConfig *tls.Config
	// mapper turns a client certificate's subject into a principal name.
	mapper *principalMapper
}

// newListenerSecurity resolves spec's settings (already validated).
func newListenerSecurity(cfg *Config, spec listenerSpec) (*listenerSecurity, error) {
	lc, mechReauth := cfg.forListener(spec.name)
	ls := &listenerSecurity{reauth: lc.ConnectionsMaxReauth, mechReauth: mechReauth}
	ls.mechanisms, _ = authn.ParseMechanisms(lc.SASLEnabledMechanisms)
	var err error
	if ls.mapper, err = parsePrincipalRules(lc.SSLPrincipalMappingRules); err != nil {
		return nil, fmt.Errorf("listener %s: %w", spec.name, err)
	}
	if !spec.tls() {
		return ls, nil
	}
	if spec.protocol == protoSASLSSL && !cfg.listenerHas(spec.name, "ssl.client.auth") {
		// Kafka reads ssl.client.auth for a SASL_SSL listener only with
		// the listener prefix: the SASL login is the identity.
		lc.SSLClientAuth = "none"
	}
	if ls.tlsConfig, err = serverTLSConfig(&lc); err != nil {
		return nil, fmt.Errorf("listener %s: %w", spec.name, err)
	}
	return ls, nil
}

// sessionLimit is connections.max.reauth.ms for a session of mech on
// this listener (0: no limit).
func (ls *listenerSecurity) sessionLimit(mech string) time.Duration {
	if d, ok := ls.mechReauth[mech]; ok {
		return d
	}
	return ls.reauth
}
