package broker

// Principals from client certificates: the subject as Java's
// X500Principal.getName() prints it (RFC 2253, most specific RDN first),
// then ssl.principal.mapping.rules (KIP-371, Kafka's SslPrincipalMapper),
// so that rules and ACLs written for Kafka ("User:CN=app,OU=eng") match.

import (
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/hex"
	"errors"
	"fmt"
	"regexp"
	"strings"
)

// rdnKeywords are the attribute types Java prints by keyword; every other
// one is printed as its dotted OID and "#" hex DER value.
var rdnKeywords = map[string]string{
	"2.5.4.3":                    "CN",
	"2.5.4.6":                    "C",
	"2.5.4.7":                    "L",
	"2.5.4.8":                    "ST",
	"2.5.4.10":                   "O",
	"2.5.4.11":                   "OU",
	"2.5.4.9":                    "STREET",
	"0.9.2342.19200300.100.1.25": "DC",
	"0.9.2342.19200300.100.1.1":  "UID",
}

// subjectDN is a certificate's subject as RFC 2253 text, Java's way.
func subjectDN(cert *x509.Certificate) string {
	var seq pkix.RDNSequence
	if _, err := asn1.Unmarshal(cert.RawSubject, &seq); err != nil {
		return cert.Subject.String()
	}
	var b strings.Builder
	for i := len(seq) - 1; i >= 0; i-- {
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		for j, atv := range seq[i] {
			if j > 0 {
				b.WriteByte('+')
			}
			oid := atv.Type.String()
			kw, ok := rdnKeywords[oid]
			s, isString := atv.Value.(string)
			if !ok || !isString {
				der, err := asn1.Marshal(atv.Value)
				if err != nil {
					der = nil
				}
				b.WriteString(oid + "=#" + hex.EncodeToString(der))
				continue
			}
			b.WriteString(kw + "=" + escapeDNValue(s))
		}
	}
	return b.String()
}

// escapeDNValue escapes an attribute value as RFC 2253 section 2.4 does.
func escapeDNValue(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case strings.IndexByte(",+\"\\<>;", c) >= 0,
			i == 0 && (c == '#' || c == ' '),
			i == len(s)-1 && c == ' ':
			b.WriteByte('\\')
		}
		b.WriteByte(c)
	}
	return b.String()
}

// principalRule is one ssl.principal.mapping.rules entry.
type principalRule struct {
	// def is the DEFAULT rule: the DN unchanged.
	def     bool
	re      *regexp.Regexp
	replace string
	// toCase is 'L', 'U' or 0.
	toCase byte
}

// principalMapper applies rules in order; the first that matches wins.
type principalMapper struct{ rules []principalRule }

var errNoPrincipalRule = errors.New("no ssl.principal.mapping.rules rule matches the certificate subject")

// name maps a DN to a principal name.
func (m *principalMapper) name(dn string) (string, error) {
	for _, r := range m.rules {
		if r.def {
			return dn, nil
		}
		if !r.re.MatchString(dn) {
			continue
		}
		out := r.re.ReplaceAllString(dn, r.replace)
		switch r.toCase {
		case 'L':
			out = strings.ToLower(out)
		case 'U':
			out = strings.ToUpper(out)
		}
		return out, nil
	}
	return "", errNoPrincipalRule
}

// ruleSyntax matches one rule: RULE:pattern/replacement/[LU] or DEFAULT,
// as Kafka's SslPrincipalMapper.RULE_PARSER (slashes inside pattern and
// replacement escaped as \/ are not supported; Kafka's are not either).
var ruleSyntax = regexp.MustCompile(`^\s*(?:(DEFAULT)|RULE:((?:\\.|[^\\/])*)/((?:\\.|[^\\/])*)/([LU]?))\s*(?:,|$)`)

// javaGroupRef turns Java's $1 into Go's ${1}, so "$1x" is not read as a
// group named "1x".
var javaGroupRef = regexp.MustCompile(`\$(\d+)`)

// parsePrincipalRules parses ssl.principal.mapping.rules.
func parsePrincipalRules(s string) (*principalMapper, error) {
	m := &principalMapper{}
	rest := strings.TrimSpace(s)
	if rest == "" {
		rest = "DEFAULT"
	}
	for rest != "" {
		loc := ruleSyntax.FindStringSubmatchIndex(rest)
		if loc == nil {
			return nil, fmt.Errorf("ssl.principal.mapping.rules: invalid rule at %q", rest)
		}
		sub := func(i int) string {
			if loc[2*i] < 0 {
				return ""
			}
			return rest[loc[2*i]:loc[2*i+1]]
		}
		if sub(1) == "DEFAULT" {
			m.rules = append(m.rules, principalRule{def: true})
		} else {
			// Kafka matches the whole DN (Matcher.matches).
			re, err := regexp.Compile(`^(?:` + sub(2) + `)$`)
			if err != nil {
				return nil, fmt.Errorf("ssl.principal.mapping.rules: pattern %q: %w (Go's RE2 has no back-references or look-around)", sub(2), err)
			}
			r := principalRule{re: re, replace: javaGroupRef.ReplaceAllString(sub(3), `$${$1}`)}
			if c := sub(4); c != "" {
				r.toCase = c[0]
			}
			m.rules = append(m.rules, r)
		}
		rest = strings.TrimSpace(rest[loc[1]:])
	}
	return m, nil
}
