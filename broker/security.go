package broker

// Security settings resolved at start-up: the SASL mechanisms and the
// credential store, the TLS configuration of SSL and SASL_SSL listeners
// and the mapping of client-certificate subjects to principals.

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/kbroker/kbroker/security/acl"
	"github.com/kbroker/kbroker/security/authn"
)

// Authorizer class names that turn on the ACL authorizer.
const (
	standardAuthorizer = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
	aclAuthorizer      = "kafka.security.authorizer.AclAuthorizer"
)

// anonymous is the principal of an unauthenticated connection (PLAINTEXT,
// or SSL without a client certificate), as Kafka's
// DefaultKafkaPrincipalBuilder.
const anonymous = "User:ANONYMOUS"

// security is what connections need to authenticate.
type security struct {
	// store holds the SCRAM credentials (PLAIN is checked against them).
	store *authn.Store
	// listeners are each listener's own settings, by listener name.
	listeners map[string]*listenerSecurity
	// authz is the ACL authorizer, nil when authorizer.class.name is
	// empty (everything allowed).
	authz *acl.Authorizer
}

// validateSecurity checks the listener and security settings: the
// global ones, the per-listener overrides, and each listener's effective
// settings against its protocol.
func (c *Config) validateSecurity() error {
	specs, err := c.listenerSpecs()
	if err != nil {
		return err
	}
	var errs []error
	errs = append(errs, c.validateSecuritySettings("")...)
	if _, err := parseSASLUsers(c.SASLUsers); err != nil {
		errs = append(errs, err)
	}
	if c.FailedAuthenticationDelay < 0 {
		errs = append(errs, errors.New("connection.failed.authentication.delay.ms is negative"))
	}
	if c.TLSHandshakeTimeout <= 0 {
		errs = append(errs, errors.New("kbroker.authentication.timeout.ms must be positive"))
	}
	switch c.AuthorizerClassName {
	case "", standardAuthorizer, aclAuthorizer:
	default:
		errs = append(errs, fmt.Errorf("authorizer.class.name %q: only %s is supported", c.AuthorizerClassName, standardAuthorizer))
	}
	if err := c.validateListenerOverrides(specs); err != nil {
		return errors.Join(append(errs, err)...)
	}
	for _, s := range specs {
		lc, _ := c.forListener(s.name)
		if hasOverrides(c, s.name) {
			errs = append(errs, lc.validateSecuritySettings("listener "+s.name+": ")...)
		}
		mechs, err := authn.ParseMechanisms(lc.SASLEnabledMechanisms)
		if s.sasl() && len(mechs) == 0 && err == nil {
			errs = append(errs, fmt.Errorf("%s: sasl.enabled.mechanisms: a SASL listener needs at least one of %s (kbroker has no GSSAPI default)",
				s.name, strings.Join(authn.Supported, ", ")))
		}
		if s.tls() && lc.SSLKeystoreLocation == "" && lc.SSLKeystoreCertificateChain == "" {
			errs = append(errs, fmt.Errorf("%s: an SSL or SASL_SSL listener needs ssl.keystore.location or ssl.keystore.certificate.chain and ssl.keystore.key", s.name))
		}
	}
	return errors.Join(errs...)
}

// hasOverrides reports whether c has listener.name.* settings for the
// listener named name.
func hasOverrides(c *Config, name string) bool {
	prefix := listenerPrefix + strings.ToLower(name) + "."
	for k := range c.ListenerOverrides {
		if strings.HasPrefix(k, prefix) {
			return true
		}
	}
	return false
}

// validateSecuritySettings checks the settings a listener may override;
// where prefixes each problem (a listener's name, or "" for the global
// settings).
func (c *Config) validateSecuritySettings(where string) []error {
	var errs []error
	if _, err := authn.ParseMechanisms(c.SASLEnabledMechanisms); err != nil {
		errs = append(errs, fmt.Errorf("%s%w", where, err))
	}
	if c.ConnectionsMaxReauth < 0 {
		errs = append(errs, errors.New(where+"connections.max.reauth.ms is negative"))
	}
	switch c.SSLClientAuth {
	case "none", "requested", "required":
	default:
		errs = append(errs, fmt.Errorf("%sssl.client.auth %q must be none, requested or required", where, c.SSLClientAuth))
	}
	if !strings.EqualFold(c.SSLKeystoreType, "PEM") || !strings.EqualFold(c.SSLTruststoreType, "PEM") {
		errs = append(errs, errors.New(where+"ssl.keystore.type and ssl.truststore.type: only PEM is supported (KIP-651)"))
	}
	if _, err := parsePrincipalRules(c.SSLPrincipalMappingRules); err != nil {
		errs = append(errs, fmt.Errorf("%s%w", where, err))
	}
	return errs
}

// parseSASLUsers parses kbroker.sasl.users: NAME:PASSWORD pairs separated
// by commas.
func parseSASLUsers(s string) (map[string]string, error) {
	out := map[string]string{}
	for _, pair := range strings.Split(s, ",") {
		if strings.TrimSpace(pair) == "" {
			continue
		}
		name, pw, ok := strings.Cut(pair, ":")
		name = strings.TrimSpace(name)
		if !ok || name == "" || pw == "" {
			// The pair is not echoed: it holds a password.
			return nil, errors.New("kbroker.sasl.users: each user must be NAME:PASSWORD with neither empty")
		}
		out[name] = pw
	}
	return out, nil
}

// newSecurity resolves the (validated) settings; metaDir holds the
// credential store.
func newSecurity(cfg *Config, metaDir string) (*security, error) {
	s := &security{listeners: map[string]*listenerSecurity{}}
	if err := os.MkdirAll(metaDir, 0o755); err != nil {
		return nil, fmt.Errorf("metadata directory: %w", err)
	}
	store, err := authn.Open(filepath.Join(metaDir, authn.FileName))
	if err != nil {
		return nil, err
	}
	s.store = store
	users, _ := parseSASLUsers(cfg.SASLUsers)
	if len(users) > 0 {
		if err := store.SetPasswords(users); err != nil {
			return nil, fmt.Errorf("seed SASL users: %w", err)
		}
	}
	if cfg.AuthorizerClassName != "" {
		if s.authz, err = acl.Open(filepath.Join(metaDir, acl.FileName), cfg.SuperUsers, cfg.AllowEveryoneIfNoACLFound); err != nil {
			return nil, err
		}
	}
	specs, _ := cfg.listenerSpecs()
	for _, spec := range specs {
		ls, err := newListenerSecurity(cfg, spec)
		if err != nil {
			return nil, err
		}
		s.listeners[spec.name] = ls
	}
	return s, nil
}

// serverTLSConfig builds the TLS configuration from the PEM keystore and
// truststore settings (KIP-651): TLS 1.2 and 1.3, as Kafka's default
// ssl.enabled.protocols.
func serverTLSConfig(cfg *Config) (*tls.Config, error) {
	certPEM, keyPEM := []byte(cfg.SSLKeystoreCertificateChain), []byte(cfg.SSLKeystoreKey)
	if cfg.SSLKeystoreLocation != "" {
		// Kafka's PEM keystore file holds the key and the chain.
		data, err := os.ReadFile(cfg.SSLKeystoreLocation)
		if err != nil {
			return nil, fmt.Errorf("ssl.keystore.location: %w", err)
		}
		certPEM, keyPEM = data, data
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, fmt.Errorf("ssl keystore: %w (an unencrypted PKCS#8, PKCS#1 or EC key and its certificate chain in PEM)", err)
	}
	tc := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	trust := []byte(cfg.SSLTruststoreCertificates)
	if cfg.SSLTruststoreLocation != "" {
		if trust, err = os.ReadFile(cfg.SSLTruststoreLocation); err != nil {
			return nil, fmt.Errorf("ssl.truststore.location: %w", err)
		}
	}
	if len(trust) > 0 {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(trust) {
			return nil, errors.New("ssl truststore: no PEM certificate found")
		}
		tc.ClientCAs = pool
	}
	switch cfg.SSLClientAuth {
	case "requested":
		tc.ClientAuth = tls.VerifyClientCertIfGiven
	case "required":
		tc.ClientAuth = tls.RequireAndVerifyClientCert
	}
	if tc.ClientAuth != tls.NoClientCert && tc.ClientCAs == nil {
		return nil, errors.New("ssl.client.auth " + cfg.SSLClientAuth + " needs a truststore (ssl.truststore.location or ssl.truststore.certificates)")
	}
	return tc, nil
}

// authTimeout is how long a connection may take from accept to the end of
// its TLS handshake and SASL authentication.
func (b *Broker) authTimeout() time.Duration { return b.cfg.TLSHandshakeTimeout }
