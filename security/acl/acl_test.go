package acl

import (
	"net"
	"os"
	"path/filepath"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func bind(typ kmsg.ACLResourceType, name string, pat kmsg.ACLResourcePatternType, principal, host string, op kmsg.ACLOperation, perm kmsg.ACLPermissionType) Binding {
	return Binding{ResourceType: typ, ResourceName: name, PatternType: pat, Principal: principal, Host: host, Operation: op, Permission: perm}
}

const (
	topic   = kmsg.ACLResourceTypeTopic
	lit     = kmsg.ACLResourcePatternTypeLiteral
	pre     = kmsg.ACLResourcePatternTypePrefixed
	allow   = kmsg.ACLPermissionTypeAllow
	deny    = kmsg.ACLPermissionTypeDeny
	read    = kmsg.ACLOperationRead
	write   = kmsg.ACLOperationWrite
	desc    = kmsg.ACLOperationDescribe
	alterC  = kmsg.ACLOperationAlterConfigs
	descC   = kmsg.ACLOperationDescribeConfigs
	opAll   = kmsg.ACLOperationAll
	aliceP  = "User:alice"
	bobP    = "User:bob"
	localV4 = "127.0.0.1"
)

func TestAuthorize(t *testing.T) {
	t.Parallel()
	a, err := Open("", "User:admin;User:CN=x,OU=y", false)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Create([]Binding{
		bind(topic, "orders", lit, aliceP, "*", read, allow),
		bind(topic, "orders", lit, aliceP, "*", desc, deny), // DENY DESCRIBE, READ still allowed
		bind(topic, "pay-", pre, WildcardPrincipal, "*", write, allow),
		bind(topic, "pay-secret", lit, bobP, "*", opAll, deny),
		bind(topic, "conf", lit, aliceP, localV4, alterC, allow),
		bind(topic, "deny-read", lit, aliceP, "*", read, deny),
		bind(topic, "deny-read", lit, aliceP, "*", opAll, allow),
		bind(topic, "other", lit, bobP, "*", read, allow),
	}); err != nil {
		t.Fatal(err)
	}
	v4, v6 := localV4, HostAddress(net.ParseIP("::1"))
	for _, tt := range []struct {
		principal string
		ip        string
		op        kmsg.ACLOperation
		name      string
		want      bool
	}{
		{aliceP, v4, read, "orders", true},
		{aliceP, v4, desc, "orders", false}, // explicit DENY DESCRIBE
		{aliceP, v4, write, "orders", false},
		{bobP, v4, write, "pay-in", true},      // prefixed, User:*
		{bobP, v4, desc, "pay-in", true},       // WRITE implies DESCRIBE
		{bobP, v4, write, "pay-secret", false}, // DENY ALL wins
		{aliceP, v4, write, "pay-secret", true},
		{aliceP, v4, descC, "conf", true},  // ALTER_CONFIGS implies DESCRIBE_CONFIGS
		{aliceP, v6, descC, "conf", false}, // host mismatch
		{aliceP, v4, read, "deny-read", false},
		{aliceP, v4, desc, "deny-read", true}, // DENY READ does not deny DESCRIBE
		{aliceP, v4, read, "no-acls", false},  // allow.everyone off
		{aliceP, v4, read, "other", false},    // an ACL for someone else
		{"User:admin", v4, write, "pay-secret", true},
		{"User:CN=x,OU=y", v4, write, "anything", true},
	} {
		if got := a.Authorize(tt.principal, tt.ip, tt.op, topic, tt.name); got != tt.want {
			t.Errorf("%s %v %v %s: got %v, want %v", tt.principal, tt.ip, tt.op, tt.name, got, tt.want)
		}
	}
	everyone, _ := Open("", "", true)
	everyone.Create([]Binding{bind(topic, "other", lit, bobP, "*", read, allow)})
	if !everyone.Authorize(aliceP, v4, read, topic, "free") || everyone.Authorize(aliceP, v4, read, topic, "other") {
		t.Fatal("allow.everyone.if.no.acl.found: topics without ACLs open, with ACLs closed")
	}
	if ops := a.Operations(aliceP, v4, topic, "orders"); ops != 1<<read {
		t.Fatalf("authorized operations %b, want only READ", ops)
	}
	// KIP-679: WRITE on some topic.
	if !a.AuthorizeAny(bobP, v4, write, topic) {
		t.Fatal("bob may write pay-*")
	}
	if a.AuthorizeAny("User:carol", v4, kmsg.ACLOperationIdempotentWrite, kmsg.ACLResourceTypeCluster) {
		t.Fatal("carol has no IDEMPOTENT_WRITE")
	}
}

func TestFiltersAndPersistence(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), FileName)
	a, _ := Open(path, "", false)
	bs := []Binding{
		bind(topic, "orders", lit, aliceP, "*", read, allow),
		bind(topic, "ord", pre, bobP, "*", write, allow),
		bind(topic, "*", lit, bobP, "*", desc, allow),
		bind(kmsg.ACLResourceTypeGroup, "g", lit, aliceP, "*", read, allow),
	}
	for _, b := range bs {
		if err := b.Validate(); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.Create(append(bs, bs[0])); err != nil {
		t.Fatal(err)
	}
	s := func(v string) *string { return &v }
	for _, tt := range []struct {
		f    Filter
		want int
	}{
		{Filter{ResourceType: kmsg.ACLResourceTypeAny, PatternType: kmsg.ACLResourcePatternTypeAny, Operation: kmsg.ACLOperationAny, Permission: kmsg.ACLPermissionTypeAny}, 4},
		{Filter{ResourceType: topic, ResourceName: s("orders"), PatternType: kmsg.ACLResourcePatternTypeMatch, Operation: kmsg.ACLOperationAny, Permission: kmsg.ACLPermissionTypeAny}, 3},
		{Filter{ResourceType: topic, ResourceName: s("orders"), PatternType: lit, Operation: kmsg.ACLOperationAny, Permission: kmsg.ACLPermissionTypeAny}, 1},
		{Filter{ResourceType: topic, ResourceName: s("ord"), PatternType: kmsg.ACLResourcePatternTypeAny, Operation: kmsg.ACLOperationAny, Permission: kmsg.ACLPermissionTypeAny}, 1},
		{Filter{ResourceType: kmsg.ACLResourceTypeAny, PatternType: kmsg.ACLResourcePatternTypeAny, Principal: s(bobP), Operation: write, Permission: allow}, 1},
		{Filter{ResourceType: kmsg.ACLResourceTypeAny, PatternType: kmsg.ACLResourcePatternTypeAny, Host: s("127.0.0.1"), Operation: kmsg.ACLOperationAny, Permission: kmsg.ACLPermissionTypeAny}, 0},
	} {
		if got := a.Describe(&tt.f); len(got) != tt.want {
			t.Errorf("filter %+v: %d bindings, want %d", tt.f, len(got), tt.want)
		}
	}
	del, err := a.Delete([]Filter{{ResourceType: kmsg.ACLResourceTypeGroup, PatternType: kmsg.ACLResourcePatternTypeAny, Operation: kmsg.ACLOperationAny, Permission: kmsg.ACLPermissionTypeAny}})
	if err != nil || len(del[0]) != 1 {
		t.Fatalf("delete: %v %v", err, del)
	}
	b, err := Open(path, "", false)
	if err != nil {
		t.Fatal(err)
	}
	if got := b.Describe(&Filter{ResourceType: kmsg.ACLResourceTypeAny, PatternType: kmsg.ACLResourcePatternTypeAny, Operation: kmsg.ACLOperationAny, Permission: kmsg.ACLPermissionTypeAny}); len(got) != 3 {
		t.Fatalf("after reopen: %d bindings, want 3", len(got))
	}
	data, _ := os.ReadFile(path)
	data[len(data)-2] ^= 1
	os.WriteFile(path, data, 0o600)
	if _, err := Open(path, "", false); err == nil {
		t.Fatal("a damaged ACL file opened")
	}
	for _, bad := range []Binding{
		bind(kmsg.ACLResourceTypeAny, "x", lit, aliceP, "*", read, allow),
		bind(topic, "x", kmsg.ACLResourcePatternTypeMatch, aliceP, "*", read, allow),
		bind(topic, "x", lit, aliceP, "*", kmsg.ACLOperationAny, allow),
		bind(topic, "x", lit, aliceP, "*", read, kmsg.ACLPermissionTypeAny),
		bind(topic, "", lit, aliceP, "*", read, allow),
		bind(kmsg.ACLResourceTypeCluster, "c", lit, aliceP, "*", read, allow),
		bind(topic, "x", lit, "alice", "*", read, allow),
	} {
		if err := bad.Validate(); err == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
}

// Hosts match as Kafka's StandardAuthorizer matches them: the binding's
// string against the client's address string, so a host name, a CIDR or
// a compressed IPv6 form is accepted and never matches.
func TestHostMatching(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		ip, want string
	}{
		{"127.0.0.1", "127.0.0.1"},
		{"::ffff:10.1.2.3", "10.1.2.3"}, // IPv4-mapped: Java makes it an Inet4Address
		{"::1", "0:0:0:0:0:0:0:1"},
		{"2001:db8::ff00:42:8329", "2001:db8:0:0:0:ff00:42:8329"},
		{"fe80::0abc:0001", "fe80:0:0:0:0:0:abc:1"},
	} {
		if got := HostAddress(net.ParseIP(tt.ip)); got != tt.want {
			t.Errorf("HostAddress(%s) = %q, want %q", tt.ip, got, tt.want)
		}
	}
	if got := HostAddress(nil); got != "" {
		t.Errorf("HostAddress(nil) = %q, want empty", got)
	}
	a, _ := Open("", "", false)
	hosts := []string{"localhost", "127.0.0.0/8", "::1", "0:0:0:0:0:0:0:1", "10.0.0.9"}
	for _, h := range hosts {
		b := bind(topic, "t-"+h, lit, aliceP, h, read, allow)
		if err := b.Validate(); err != nil {
			t.Fatalf("host %q refused (Kafka stores any host string): %v", h, err)
		}
		if err := a.Create([]Binding{b}); err != nil {
			t.Fatal(err)
		}
	}
	for _, tt := range []struct {
		host, client string
		want         bool
	}{
		{"localhost", "127.0.0.1", false},
		{"127.0.0.0/8", "127.0.0.1", false},
		{"::1", HostAddress(net.ParseIP("::1")), false},
		{"0:0:0:0:0:0:0:1", HostAddress(net.ParseIP("::1")), true},
		{"10.0.0.9", "10.0.0.9", true},
		{"10.0.0.9", "10.0.0.10", false},
	} {
		if got := a.Authorize(aliceP, tt.client, read, topic, "t-"+tt.host); got != tt.want {
			t.Errorf("ACL host %q, client %s: allowed %v, want %v", tt.host, tt.client, got, tt.want)
		}
	}
}
