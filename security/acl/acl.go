package acl

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/twmb/franz-go/pkg/kmsg"

	klog "github.com/kbroker/kbroker/log"
)

// Kafka's names.
const (
	// ClusterName is the only name of the CLUSTER resource.
	ClusterName = "kafka-cluster"
	// Wildcard matches every resource name (LITERAL), principal
	// ("User:*") or host.
	Wildcard = "*"
	// WildcardPrincipal is the principal that matches every user.
	WildcardPrincipal = "User:*"
	// FileName is the ACL file's name in the metadata directory.
	FileName = "acls"
)

// Binding is one ACL: a resource pattern and an access control entry.
type Binding struct {
	ResourceType kmsg.ACLResourceType        `json:"resource_type"`
	ResourceName string                      `json:"resource_name"`
	PatternType  kmsg.ACLResourcePatternType `json:"pattern_type"`
	Principal    string                      `json:"principal"`
	Host         string                      `json:"host"`
	Operation    kmsg.ACLOperation           `json:"operation"`
	Permission   kmsg.ACLPermissionType      `json:"permission"`
}

// Filter selects bindings (DescribeAcls, DeleteAcls); nil strings match
// anything.
type Filter struct {
	ResourceType kmsg.ACLResourceType
	ResourceName *string
	PatternType  kmsg.ACLResourcePatternType
	Principal    *string
	Host         *string
	Operation    kmsg.ACLOperation
	Permission   kmsg.ACLPermissionType
}

// ErrInvalid marks a binding or filter Kafka would refuse
// (INVALID_REQUEST).
var ErrInvalid = errors.New("acl: invalid")

// Validate checks a binding to create as Kafka's AclControlManager does.
func (b *Binding) Validate() error {
	switch {
	case b.ResourceType < kmsg.ACLResourceTypeTopic || b.ResourceType > kmsg.ACLResourceTypeUser:
		return fmt.Errorf("%w: resource type %v", ErrInvalid, b.ResourceType)
	case b.PatternType != kmsg.ACLResourcePatternTypeLiteral && b.PatternType != kmsg.ACLResourcePatternTypePrefixed:
		return fmt.Errorf("%w: pattern type %v (LITERAL or PREFIXED)", ErrInvalid, b.PatternType)
	case b.Operation <= kmsg.ACLOperationAny || b.Operation > kmsg.ACLOperationDescribeTokens:
		return fmt.Errorf("%w: operation %v", ErrInvalid, b.Operation)
	case b.Permission != kmsg.ACLPermissionTypeAllow && b.Permission != kmsg.ACLPermissionTypeDeny:
		return fmt.Errorf("%w: permission %v (ALLOW or DENY)", ErrInvalid, b.Permission)
	case b.ResourceName == "":
		return fmt.Errorf("%w: empty resource name", ErrInvalid)
	case b.ResourceType == kmsg.ACLResourceTypeCluster && b.ResourceName != ClusterName:
		return fmt.Errorf("%w: the cluster resource is named %s", ErrInvalid, ClusterName)
	}
	if typ, name, ok := strings.Cut(b.Principal, ":"); !ok || typ == "" || name == "" {
		return fmt.Errorf("%w: principal %q is not Type:name", ErrInvalid, b.Principal)
	}
	// The host is not checked, as in Kafka: any string is stored, and
	// one that is not an address as HostAddress prints it never matches.
	return nil
}

// Validate checks a filter: no UNKNOWN field (Kafka refuses them when
// parsing).
func (f *Filter) Validate() error {
	if f.ResourceType == kmsg.ACLResourceTypeUnknown || f.PatternType == kmsg.ACLResourcePatternTypeUnknown ||
		f.Operation == kmsg.ACLOperationUnknown || f.Permission == kmsg.ACLPermissionTypeUnknown {
		return fmt.Errorf("%w: a filter field is UNKNOWN", ErrInvalid)
	}
	return nil
}

// Matches reports whether the filter selects b, by Kafka's
// ResourcePatternFilter and AccessControlEntryFilter rules.
func (f *Filter) Matches(b *Binding) bool {
	if f.ResourceType != kmsg.ACLResourceTypeAny && f.ResourceType != b.ResourceType {
		return false
	}
	switch f.PatternType {
	case kmsg.ACLResourcePatternTypeAny:
		if f.ResourceName != nil && *f.ResourceName != b.ResourceName {
			return false
		}
	case kmsg.ACLResourcePatternTypeMatch:
		if f.ResourceName != nil && !covers(b, *f.ResourceName) {
			return false
		}
	default:
		if f.PatternType != b.PatternType || f.ResourceName != nil && *f.ResourceName != b.ResourceName {
			return false
		}
	}
	if f.Principal != nil && *f.Principal != b.Principal {
		return false
	}
	if f.Host != nil && *f.Host != b.Host {
		return false
	}
	if f.Operation != kmsg.ACLOperationAny && f.Operation != b.Operation {
		return false
	}
	return f.Permission == kmsg.ACLPermissionTypeAny || f.Permission == b.Permission
}

// covers reports whether b's pattern applies to a resource named name.
func covers(b *Binding, name string) bool {
	switch b.PatternType {
	case kmsg.ACLResourcePatternTypeLiteral:
		return b.ResourceName == name || b.ResourceName == Wildcard
	case kmsg.ACLResourcePatternTypePrefixed:
		return strings.HasPrefix(name, b.ResourceName)
	}
	return false
}

// implies reports whether an ALLOW of granted allows op.
func implies(granted, op kmsg.ACLOperation) bool {
	if granted == op || granted == kmsg.ACLOperationAll {
		return true
	}
	switch op {
	case kmsg.ACLOperationDescribe:
		switch granted {
		case kmsg.ACLOperationRead, kmsg.ACLOperationWrite, kmsg.ACLOperationDelete, kmsg.ACLOperationAlter:
			return true
		}
	case kmsg.ACLOperationDescribeConfigs:
		return granted == kmsg.ACLOperationAlterConfigs
	}
	return false
}

// hostMatches compares a binding's host with the requester's address
// string, as Kafka's StandardAuthorizerData.findResult: "*" or the same
// string, nothing else (no name resolution, no parsing).
func hostMatches(host, client string) bool {
	return host == Wildcard || host == client
}

// HostAddress is ip as Java's InetAddress.getHostAddress prints it, the
// string Kafka matches ACL hosts against: dotted quad for IPv4 (IPv4-mapped
// IPv6 addresses included, which Java turns into IPv4 addresses), and for
// IPv6 eight groups of lower-case hex without leading zeros and without
// "::" compression ("::1" is "0:0:0:0:0:0:0:1"). A zone is dropped: kbroker
// never sees link-local peers in practice, and Java would print the
// interface's name, which a test could not rely on either. nil is "".
func HostAddress(ip net.IP) string {
	if ip4 := ip.To4(); ip4 != nil {
		return ip4.String()
	}
	if len(ip) != net.IPv6len {
		return ""
	}
	buf := make([]byte, 0, 39)
	for i := 0; i < net.IPv6len; i += 2 {
		if i > 0 {
			buf = append(buf, ':')
		}
		buf = strconv.AppendUint(buf, uint64(ip[i])<<8|uint64(ip[i+1]), 16)
	}
	return string(buf)
}

// Authorizer decides requests against the stored bindings.
type Authorizer struct {
	path          string
	superUsers    map[string]bool
	allowEveryone bool
	writeMu       sync.Mutex
	bindings      atomic.Pointer[[]Binding]
}

var fileMagic = []byte("KBACLS01")

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Open loads the bindings stored at path ("" keeps them in memory).
// superUsers is super.users (principals separated by ';').
func Open(path, superUsers string, allowEveryone bool) (*Authorizer, error) {
	a := &Authorizer{path: path, superUsers: map[string]bool{}, allowEveryone: allowEveryone}
	for _, p := range strings.Split(superUsers, ";") {
		if p = strings.TrimSpace(p); p != "" {
			a.superUsers[p] = true
		}
	}
	var bs []Binding
	if path != "" {
		data, err := os.ReadFile(path)
		switch {
		case errors.Is(err, os.ErrNotExist):
		case err != nil:
			return nil, fmt.Errorf("acl: read %s: %w", path, err)
		default:
			if bs, err = decode(data); err != nil {
				return nil, fmt.Errorf("acl: %s: %w", path, err)
			}
		}
	}
	a.bindings.Store(&bs)
	return a, nil
}

func decode(data []byte) ([]Binding, error) {
	if len(data) < len(fileMagic)+4 || !bytes.Equal(data[:len(fileMagic)], fileMagic) {
		return nil, errors.New("not a kbroker ACL file (bad magic)")
	}
	body := data[len(fileMagic)+4:]
	if crc32.Checksum(body, castagnoli) != binary.BigEndian.Uint32(data[len(fileMagic):]) {
		return nil, errors.New("checksum mismatch: the file is damaged")
	}
	var bs []Binding
	if err := json.Unmarshal(body, &bs); err != nil {
		return nil, fmt.Errorf("decode: %w", err)
	}
	for i := range bs {
		if err := bs[i].Validate(); err != nil {
			return nil, err
		}
	}
	return bs, nil
}

func encode(bs []Binding) ([]byte, error) {
	if bs == nil {
		bs = []Binding{}
	}
	body, err := json.Marshal(bs)
	if err != nil {
		return nil, err
	}
	out := append([]byte{}, fileMagic...)
	out = binary.BigEndian.AppendUint32(out, crc32.Checksum(body, castagnoli))
	return append(out, body...), nil
}

// IsSuperUser reports whether principal is in super.users.
func (a *Authorizer) IsSuperUser(principal string) bool { return a.superUsers[principal] }

// Authorize decides whether principal, connected from host (its address
// as HostAddress prints it), may perform op on the resource of type typ
// named name.
func (a *Authorizer) Authorize(principal, host string, op kmsg.ACLOperation, typ kmsg.ACLResourceType, name string) bool {
	if a.superUsers[principal] {
		return true
	}
	candidates, allowed := false, false
	for i, bs := 0, *a.bindings.Load(); i < len(bs); i++ {
		b := &bs[i]
		if b.ResourceType != typ || !covers(b, name) {
			continue
		}
		candidates = true
		if b.Principal != principal && b.Principal != WildcardPrincipal || !hostMatches(b.Host, host) {
			continue
		}
		switch b.Permission {
		case kmsg.ACLPermissionTypeDeny:
			if b.Operation == op || b.Operation == kmsg.ACLOperationAll {
				return false
			}
		case kmsg.ACLPermissionTypeAllow:
			allowed = allowed || implies(b.Operation, op)
		}
	}
	if allowed {
		return true
	}
	return !candidates && a.allowEveryone
}

// AuthorizeAny decides whether principal may perform op on some resource
// of type typ (Kafka's authorizeByResourceType, used by InitProducerId
// for KIP-679): an ALLOW for op (or ALL) on a literal or prefixed pattern
// not dominated by a DENY on the same literal name or a prefix of it.
func (a *Authorizer) AuthorizeAny(principal, host string, op kmsg.ACLOperation, typ kmsg.ACLResourceType) bool {
	if a.superUsers[principal] {
		return true
	}
	bs := *a.bindings.Load()
	applies := func(b *Binding) bool {
		return b.ResourceType == typ && (b.Principal == principal || b.Principal == WildcardPrincipal) &&
			hostMatches(b.Host, host) && (b.Operation == op || b.Operation == kmsg.ACLOperationAll)
	}
	any := false
	var denyLiteral, denyPrefix []string
	for i := range bs {
		b := &bs[i]
		if b.ResourceType == typ {
			any = true
		}
		if !applies(b) || b.Permission != kmsg.ACLPermissionTypeDeny {
			continue
		}
		if b.PatternType == kmsg.ACLResourcePatternTypeLiteral {
			if b.ResourceName == Wildcard {
				return false
			}
			denyLiteral = append(denyLiteral, b.ResourceName)
		} else {
			denyPrefix = append(denyPrefix, b.ResourceName)
		}
	}
	if !any && a.allowEveryone {
		return true
	}
	dominated := func(name string) bool {
		for _, p := range denyPrefix {
			if strings.HasPrefix(name, p) {
				return true
			}
		}
		return false
	}
	for i := range bs {
		b := &bs[i]
		if !applies(b) || b.Permission != kmsg.ACLPermissionTypeAllow {
			continue
		}
		if b.PatternType == kmsg.ACLResourcePatternTypeLiteral && b.ResourceName == Wildcard {
			return true
		}
		if dominated(b.ResourceName) {
			continue
		}
		if b.PatternType == kmsg.ACLResourcePatternTypeLiteral && contains(denyLiteral, b.ResourceName) {
			continue
		}
		return true
	}
	return false
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

// supportedOps are the operations of each resource type reported in
// authorized-operations fields (Kafka's AclEntry.supportedOperations).
var supportedOps = map[kmsg.ACLResourceType][]kmsg.ACLOperation{
	kmsg.ACLResourceTypeTopic: {kmsg.ACLOperationRead, kmsg.ACLOperationWrite, kmsg.ACLOperationCreate, kmsg.ACLOperationDescribe,
		kmsg.ACLOperationDelete, kmsg.ACLOperationAlter, kmsg.ACLOperationDescribeConfigs, kmsg.ACLOperationAlterConfigs},
	kmsg.ACLResourceTypeGroup: {kmsg.ACLOperationRead, kmsg.ACLOperationDescribe, kmsg.ACLOperationDelete,
		kmsg.ACLOperationDescribeConfigs, kmsg.ACLOperationAlterConfigs},
	kmsg.ACLResourceTypeCluster: {kmsg.ACLOperationCreate, kmsg.ACLOperationClusterAction, kmsg.ACLOperationDescribeConfigs,
		kmsg.ACLOperationAlterConfigs, kmsg.ACLOperationIdempotentWrite, kmsg.ACLOperationAlter, kmsg.ACLOperationDescribe},
	kmsg.ACLResourceTypeTransactionalId: {kmsg.ACLOperationDescribe, kmsg.ACLOperationWrite},
}

// AllOperations is the authorized-operations bit field of every supported
// operation of a resource type (the answer without an authorizer).
func AllOperations(typ kmsg.ACLResourceType) int32 {
	var v int32
	for _, op := range supportedOps[typ] {
		v |= 1 << op
	}
	return v
}

// Operations is the authorized-operations bit field (KIP-430) of a
// resource for principal: bit n for each supported operation n allowed.
func (a *Authorizer) Operations(principal, host string, typ kmsg.ACLResourceType, name string) int32 {
	var v int32
	for _, op := range supportedOps[typ] {
		if a.Authorize(principal, host, op, typ, name) {
			v |= 1 << op
		}
	}
	return v
}

// Describe returns the bindings the filter selects.
func (a *Authorizer) Describe(f *Filter) []Binding {
	var out []Binding
	for _, b := range *a.bindings.Load() {
		if f.Matches(&b) {
			out = append(out, b)
		}
	}
	return out
}

// Create adds the bindings (each must have passed Validate; existing ones
// are no-ops) and stores the result before returning.
func (a *Authorizer) Create(add []Binding) error {
	a.writeMu.Lock()
	defer a.writeMu.Unlock()
	old := *a.bindings.Load()
	next := append([]Binding(nil), old...)
	for _, b := range add {
		if !contains2(next, b) {
			next = append(next, b)
		}
	}
	return a.publishLocked(next)
}

func contains2(bs []Binding, b Binding) bool {
	for _, x := range bs {
		if x == b {
			return true
		}
	}
	return false
}

// MaxDeletions caps the bindings one DeleteAcls request may remove, as
// Kafka's AclControlManager does.
const MaxDeletions = 10000

// ErrTooManyDeletions is returned when filters match more than
// MaxDeletions bindings.
var ErrTooManyDeletions = errors.New("acl: too many ACLs to delete in one request")

// Delete removes every binding each filter selects and returns them per
// filter; the result is stored before returning.
func (a *Authorizer) Delete(filters []Filter) ([][]Binding, error) {
	a.writeMu.Lock()
	defer a.writeMu.Unlock()
	old := *a.bindings.Load()
	out := make([][]Binding, len(filters))
	removed := make([]bool, len(old))
	n := 0
	for i := range filters {
		for j := range old {
			if filters[i].Matches(&old[j]) {
				out[i] = append(out[i], old[j])
				if !removed[j] {
					removed[j] = true
					n++
				}
			}
		}
	}
	if n > MaxDeletions {
		return nil, ErrTooManyDeletions
	}
	if n == 0 {
		return out, nil
	}
	next := make([]Binding, 0, len(old)-n)
	for j := range old {
		if !removed[j] {
			next = append(next, old[j])
		}
	}
	return out, a.publishLocked(next)
}

// publishLocked stores next durably, then makes it current.
func (a *Authorizer) publishLocked(next []Binding) error {
	if a.path != "" {
		data, err := encode(next)
		if err != nil {
			return fmt.Errorf("acl: encode: %w", err)
		}
		if err := klog.WriteFileAtomicMode(a.path, data, 0o600); err != nil {
			return fmt.Errorf("acl: store: %w", err)
		}
	}
	a.bindings.Store(&next)
	return nil
}
