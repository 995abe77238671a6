package authn

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"crypto/pbkdf2"

	klog "github.com/kbroker/kbroker/log"
)

// Iteration bounds of SCRAM credentials: AlterUserScramCredentials accepts
// 4096–16384 as Kafka's ScramControlManager does (RFC 7677 asks for at
// least 4096); seeded users get the minimum.
const (
	MinIterations     = 4096
	MaxIterations     = 16384
	DefaultIterations = 4096
	saltLen           = 32
	maxNameLen        = 1024 // longest user name stored or looked up
)

// scramMechanism is one SCRAM variant.
type scramMechanism struct {
	name string
	// code is the mechanism's number in the SCRAM credential APIs.
	code int8
	hash func() hash.Hash
	size int
}

var (
	sha256Mech = &scramMechanism{name: ScramSHA256, code: 1, hash: sha256.New, size: sha256.Size}
	sha512Mech = &scramMechanism{name: ScramSHA512, code: 2, hash: sha512.New, size: sha512.Size}
	// scramMechanisms indexes the variants by name.
	scramMechanisms = map[string]*scramMechanism{ScramSHA256: sha256Mech, ScramSHA512: sha512Mech}
)

// MechanismName is the name of a SCRAM mechanism code of the credential
// APIs (1 SCRAM-SHA-256, 2 SCRAM-SHA-512), or "" for an unknown one.
func MechanismName(code int8) string {
	switch code {
	case 1:
		return ScramSHA256
	case 2:
		return ScramSHA512
	}
	return ""
}

// MechanismCode is the credential-API code of a SCRAM mechanism name.
func MechanismCode(name string) int8 {
	if m := scramMechanisms[name]; m != nil {
		return m.code
	}
	return 0
}

// Credential is what is kept of a SCRAM password: enough to verify a
// proof and to prove the server knows it, not enough to log in.
type Credential struct {
	Mechanism  string `json:"mechanism"`
	Iterations int    `json:"iterations"`
	Salt       []byte `json:"salt"`
	StoredKey  []byte `json:"stored_key"`
	ServerKey  []byte `json:"server_key"`
}

// record is one credential in the file.
type record struct {
	Name string `json:"name"`
	Credential
}

// users maps user name → mechanism → credential; a snapshot is never
// modified once published.
type users map[string]map[string]Credential

// Store holds the SCRAM credentials.
type Store struct {
	// path is the credentials file; "" keeps them in memory only.
	path string
	// writeMu serializes updates (build, write, publish).
	writeMu sync.Mutex
	snap    atomic.Pointer[users]
	// secret keys the fake salts of unknown users; random per process,
	// so they are stable within a run, which is what hides existence.
	secret [32]byte
	// kdf bounds concurrent PBKDF2 runs (PLAIN logins, seeding).
	kdf chan struct{}
}

// File format: magic, CRC-32C (Castagnoli) of the body, body (JSON). The
// file is only ever replaced whole, so a bad checksum means damage, not a
// torn write, and opening fails rather than dropping users.
var fileMagic = []byte("KBSCRAM1")

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// FileName is the credentials file's name in the metadata directory.
const FileName = "scram-credentials"

// maxFileSize bounds what Open reads.
const maxFileSize = 64 << 20

// Open loads the store kept at path (created at the first update), or an
// empty in-memory store when path is "".
func Open(path string) (*Store, error) {
	s := &Store{path: path, kdf: make(chan struct{}, max(1, runtime.GOMAXPROCS(0)/2))}
	if _, err := rand.Read(s.secret[:]); err != nil {
		return nil, fmt.Errorf("authn: random secret: %w", err)
	}
	u := users{}
	if path != "" {
		data, err := os.ReadFile(path)
		switch {
		case errors.Is(err, os.ErrNotExist):
		case err != nil:
			return nil, fmt.Errorf("authn: read %s: %w", path, err)
		default:
			if u, err = decodeFile(data); err != nil {
				return nil, fmt.Errorf("authn: %s: %w", path, err)
			}
		}
	}
	s.snap.Store(&u)
	return s, nil
}

func decodeFile(data []byte) (users, error) {
	if len(data) > maxFileSize {
		return nil, fmt.Errorf("file of %d bytes is too large", len(data))
	}
	if len(data) < len(fileMagic)+4 || !bytes.Equal(data[:len(fileMagic)], fileMagic) {
		return nil, errors.New("not a kbroker credentials file (bad magic)")
	}
	sum := binary.BigEndian.Uint32(data[len(fileMagic):])
	body := data[len(fileMagic)+4:]
	if crc32.Checksum(body, castagnoli) != sum {
		return nil, errors.New("checksum mismatch: the file is damaged")
	}
	var recs []record
	if err := json.Unmarshal(body, &recs); err != nil {
		return nil, fmt.Errorf("decode: %w", err)
	}
	u := users{}
	for _, r := range recs {
		m := scramMechanisms[r.Mechanism]
		if m == nil || r.Name == "" || len(r.StoredKey) != m.size || len(r.ServerKey) != m.size ||
			r.Iterations < MinIterations || r.Iterations > MaxIterations || len(r.Salt) == 0 {
			return nil, fmt.Errorf("invalid credential for user %q", r.Name)
		}
		if u[r.Name] == nil {
			u[r.Name] = map[string]Credential{}
		}
		u[r.Name][r.Mechanism] = r.Credential
	}
	return u, nil
}

func encodeFile(u users) ([]byte, error) {
	recs := []record{}
	for name, ms := range u {
		for _, c := range ms {
			recs = append(recs, record{Name: name, Credential: c})
		}
	}
	slices.SortFunc(recs, func(a, b record) int {
		if c := strings.Compare(a.Name, b.Name); c != 0 {
			return c
		}
		return strings.Compare(a.Mechanism, b.Mechanism)
	})
	body, err := json.Marshal(recs)
	if err != nil {
		return nil, err
	}
	out := append([]byte{}, fileMagic...)
	out = binary.BigEndian.AppendUint32(out, crc32.Checksum(body, castagnoli))
	return append(out, body...), nil
}

// lookup returns the credential of user for mech.
func (s *Store) lookup(user, mech string) (Credential, bool) {
	c, ok := (*s.snap.Load())[user][mech]
	return c, ok
}

// UserInfo describes one user's credentials without secrets.
type UserInfo struct {
	Name string
	// Mechanisms maps mechanism name → iterations.
	Mechanisms map[string]int
}

// Describe returns the named users' credentials (every user when names
// is empty), sorted by name; a named user without any is left out.
func (s *Store) Describe(names ...string) []UserInfo {
	u := *s.snap.Load()
	var out []UserInfo
	add := func(name string) {
		ms := u[name]
		if len(ms) == 0 {
			return
		}
		ui := UserInfo{Name: name, Mechanisms: map[string]int{}}
		for m, c := range ms {
			ui.Mechanisms[m] = c.Iterations
		}
		out = append(out, ui)
	}
	if len(names) == 0 {
		for name := range u {
			add(name)
		}
	} else {
		for _, n := range names {
			add(n)
		}
	}
	slices.SortFunc(out, func(a, b UserInfo) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// Upsert sets a user's credential for a mechanism from a salted password
// (what AlterUserScramCredentials carries: the client salts).
type Upsert struct {
	User           string
	Mechanism      string
	Iterations     int
	Salt           []byte
	SaltedPassword []byte
}

// Deletion removes a user's credential for a mechanism.
type Deletion struct {
	User      string
	Mechanism string
}

// Validation errors of Apply, matched with errors.Is.
var (
	ErrUnacceptable      = errors.New("authn: unacceptable credential")
	ErrUnknownMechanism  = errors.New("authn: unknown SCRAM mechanism")
	ErrNoSuchCredential  = errors.New("authn: no such credential")
	ErrTooManyIterations = errors.New("authn: iterations out of range")
)

// CheckUpsert validates one upsertion against the bounds Kafka applies.
func CheckUpsert(u Upsert) error {
	m := scramMechanisms[u.Mechanism]
	switch {
	case m == nil:
		return ErrUnknownMechanism
	case u.User == "" || len(u.User) > maxNameLen:
		return fmt.Errorf("%w: username must not be empty", ErrUnacceptable)
	case u.Iterations < MinIterations || u.Iterations > MaxIterations:
		return fmt.Errorf("%w: iterations %d must be between %d and %d", ErrTooManyIterations, u.Iterations, MinIterations, MaxIterations)
	case len(u.Salt) == 0 || len(u.SaltedPassword) == 0:
		return fmt.Errorf("%w: salt and salted password must not be empty", ErrUnacceptable)
	}
	return nil
}

// Apply makes upsertions and deletions take effect together, durably
// (the file is replaced before Apply returns), then publishes them to new
// authentications. Each must have passed CheckUpsert; a deletion of a
// credential that does not exist is ErrNoSuchCredential and nothing
// changes.
func (s *Store) Apply(ups []Upsert, dels []Deletion) error {
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	old := *s.snap.Load()
	next := make(users, len(old))
	for name, ms := range old {
		next[name] = ms // maps are copied on write below
	}
	cow := func(name string) map[string]Credential {
		m := make(map[string]Credential, len(next[name])+1)
		for k, v := range next[name] {
			m[k] = v
		}
		next[name] = m
		return m
	}
	for _, d := range dels {
		if _, ok := next[d.User][d.Mechanism]; !ok {
			return fmt.Errorf("%w: %s for user %q", ErrNoSuchCredential, d.Mechanism, d.User)
		}
		m := cow(d.User)
		delete(m, d.Mechanism)
		if len(m) == 0 {
			delete(next, d.User)
		}
	}
	for _, u := range ups {
		if err := CheckUpsert(u); err != nil {
			return err
		}
		mech := scramMechanisms[u.Mechanism]
		stored, server := deriveKeys(mech, u.SaltedPassword)
		cow(u.User)[u.Mechanism] = Credential{
			Mechanism: u.Mechanism, Iterations: u.Iterations,
			Salt: bytes.Clone(u.Salt), StoredKey: stored, ServerKey: server,
		}
	}
	if s.path != "" {
		data, err := encodeFile(next)
		if err != nil {
			return fmt.Errorf("authn: encode credentials: %w", err)
		}
		if err := klog.WriteFileAtomicMode(s.path, data, 0o600); err != nil {
			return fmt.Errorf("authn: write credentials: %w", err)
		}
	}
	s.snap.Store(&next)
	return nil
}

// SetPasswords gives each user (name → password) SCRAM-SHA-256 and
// SCRAM-SHA-512 credentials with fresh random salts and the default
// iterations; the passwords themselves are dropped. Used to seed users at
// start-up (--sasl-user).
func (s *Store) SetPasswords(passwords map[string]string) error {
	var ups []Upsert
	for name, pw := range passwords {
		for _, mech := range []*scramMechanism{sha256Mech, sha512Mech} {
			salt := make([]byte, saltLen)
			if _, err := rand.Read(salt); err != nil {
				return fmt.Errorf("authn: random salt: %w", err)
			}
			sp, err := s.saltPassword(mech, pw, salt, DefaultIterations)
			if err != nil {
				return err
			}
			ups = append(ups, Upsert{User: name, Mechanism: mech.name, Iterations: DefaultIterations, Salt: salt, SaltedPassword: sp})
		}
	}
	return s.Apply(ups, nil)
}

// SaltPassword is RFC 5802's Hi(): PBKDF2 with the mechanism's HMAC. It is
// what clients send in AlterUserScramCredentials; exported for tests and
// tools.
func SaltPassword(mech, password string, salt []byte, iterations int) ([]byte, error) {
	m := scramMechanisms[mech]
	if m == nil {
		return nil, ErrUnknownMechanism
	}
	return pbkdf2.Key(m.hash, password, salt, iterations, m.size)
}

// saltPassword is SaltPassword within the store's PBKDF2 bound.
func (s *Store) saltPassword(m *scramMechanism, password string, salt []byte, iterations int) ([]byte, error) {
	s.kdf <- struct{}{}
	defer func() { <-s.kdf }()
	return pbkdf2.Key(m.hash, password, salt, iterations, m.size)
}

// deriveKeys computes StoredKey = H(HMAC(SaltedPassword, "Client Key"))
// and ServerKey = HMAC(SaltedPassword, "Server Key").
func deriveKeys(m *scramMechanism, saltedPassword []byte) (stored, server []byte) {
	clientKey := hmacSum(m, saltedPassword, []byte("Client Key"))
	h := m.hash()
	h.Write(clientKey)
	return h.Sum(nil), hmacSum(m, saltedPassword, []byte("Server Key"))
}

func hmacSum(m *scramMechanism, key, msg []byte) []byte {
	mac := hmac.New(m.hash, key)
	mac.Write(msg)
	return mac.Sum(nil)
}

// fakeCredential is what an unknown user is answered with: a salt
// derived from the process secret and the name, so that asking twice gives
// the same salt as for a real user, and keys no proof can match.
func (s *Store) fakeCredential(m *scramMechanism, user string) Credential {
	mac := hmac.New(sha256.New, s.secret[:])
	mac.Write([]byte(m.name))
	mac.Write([]byte{0})
	mac.Write([]byte(user))
	salt := mac.Sum(nil)
	return Credential{Mechanism: m.name, Iterations: DefaultIterations, Salt: salt[:saltLen],
		StoredKey: make([]byte, m.size), ServerKey: make([]byte, m.size)}
}
