package broker

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"
)

// aclServer is a broker with the authorizer on, a SASL_PLAINTEXT listener
// and the users admin (super user), alice and bob.
func aclServer(t *testing.T, dir string) *InProcess {
	t.Helper()
	if dir == "" {
		dir = t.TempDir()
	}
	srv, err := StartInProcess(dir, func(c *Config) {
		c.Listen = "SASL_PLAINTEXT://127.0.0.1:0"
		c.SASLEnabledMechanisms = "PLAIN"
		c.SASLUsers = "admin:admin-pw,alice:alice-pw,bob:bob-pw"
		c.AuthorizerClassName = standardAuthorizer
		c.SuperUsers = "User:admin"
		c.FailedAuthenticationDelay = time.Millisecond
	}, WithLogger(zaptest.NewLogger(t, zaptest.Level(zap.InfoLevel))))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	return srv
}

func userClient(t *testing.T, srv *InProcess, user string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	opts = append([]kgo.Opt{
		kgo.SeedBrokers(srv.Addr()),
		kgo.SASL(plain.Auth{User: user, Pass: user + "-pw"}.AsMechanism()),
		kgo.RequestTimeoutOverhead(5 * time.Second),
		kgo.RetryTimeout(3 * time.Second),
	}, opts...)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

func TestACLsPerAPIFamily(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	srv := aclServer(t, dir)
	ctx := testCtx(t)
	adminCl := userClient(t, srv, "admin")
	admin := kadm.NewClient(adminCl)
	if _, err := admin.CreateTopic(ctx, 1, 1, nil, "orders"); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.CreateTopic(ctx, 1, 1, nil, "secret"); err != nil {
		t.Fatal(err)
	}
	res, err := admin.CreateACLs(ctx, kadm.NewACLs().Allow("User:alice").AllowHosts("*").
		Topics("orders").Groups("g").Operations(kadm.OpRead, kadm.OpWrite).ResourcePatternType(kadm.ACLPatternLiteral))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res {
		if r.Err != nil {
			t.Fatalf("create ACL: %v", r.Err)
		}
	}
	if _, err := admin.CreateACLs(ctx, kadm.NewACLs().Allow("User:alice").AllowHosts("*").
		TransactionalIDs("tx-").Operations(kadm.OpWrite, kadm.OpDescribe).ResourcePatternType(kadm.ACLPatternPrefixed)); err != nil {
		t.Fatal(err)
	}

	// Produce: WRITE on the topic (and KIP-679: it also allows the
	// idempotent producer id).
	alice := userClient(t, srv, "alice", kgo.DefaultProduceTopic("orders"), kgo.ConsumeTopics("orders"), kgo.ConsumerGroup("g"),
		kgo.FetchMaxWait(500*time.Millisecond))
	if err := alice.ProduceSync(ctx, &kgo.Record{Value: []byte("a")}).FirstErr(); err != nil {
		t.Fatalf("alice produce: %v", err)
	}
	// Fetch in a group: READ on the topic and the group.
	fs := alice.PollRecords(ctx, 1)
	if err := fs.Err(); err != nil || fs.NumRecords() != 1 {
		t.Fatalf("alice consume: %v %d", err, fs.NumRecords())
	}
	if err := alice.CommitUncommittedOffsets(ctx); err != nil {
		t.Fatalf("alice commit: %v", err)
	}

	bob := userClient(t, srv, "bob", kgo.DefaultProduceTopic("orders"), kgo.DisableIdempotentWrite())
	if err := bob.ProduceSync(ctx, &kgo.Record{Value: []byte("b")}).FirstErr(); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("bob produce: %v, want TOPIC_AUTHORIZATION_FAILED", err)
	}
	idem := userClient(t, srv, "bob", kgo.DefaultProduceTopic("orders"))
	if err := idem.ProduceSync(ctx, &kgo.Record{Value: []byte("b")}).FirstErr(); !errors.Is(err, kerr.ClusterAuthorizationFailed) &&
		!errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("bob idempotent produce: %v, want an authorization error", err)
	}

	// Fetch without READ.
	f := kmsg.NewPtrFetchRequest()
	f.MaxWaitMillis, f.MaxBytes = 10, 1<<20
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic = "orders"
	td, err := admin.ListTopics(ctx, "orders")
	if err != nil {
		t.Fatal(err)
	}
	ft.TopicID = td["orders"].ID // kgo sends the newest Fetch, by topic id
	fp := kmsg.NewFetchRequestTopicPartition()
	fp.PartitionMaxBytes = 1 << 20
	ft.Partitions = append(ft.Partitions, fp)
	f.Topics = append(f.Topics, ft)
	f.SessionEpoch = -1
	fr, err := f.RequestWith(ctx, bob)
	if err != nil || fr.Topics[0].Partitions[0].ErrorCode != kerr.TopicAuthorizationFailed.Code {
		t.Fatalf("bob fetch: %v %+v", err, fr)
	}

	// Metadata: all topics filtered; a named one denied, an unknown one
	// denied rather than unknown.
	md, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, alice)
	if err != nil || len(md.Topics) != 1 || *md.Topics[0].Topic != "orders" {
		t.Fatalf("alice all-topics metadata: %v %+v", err, md.Topics)
	}
	mreq := kmsg.NewPtrMetadataRequest()
	for _, name := range []string{"secret", "nonexistent"} {
		mt := kmsg.NewMetadataRequestTopic()
		mt.Topic = kmsg.StringPtr(name)
		mreq.Topics = append(mreq.Topics, mt)
	}
	md, err = mreq.RequestWith(ctx, alice)
	if err != nil || md.Topics[0].ErrorCode != kerr.TopicAuthorizationFailed.Code || md.Topics[1].ErrorCode != kerr.TopicAuthorizationFailed.Code {
		t.Fatalf("alice named metadata: %v %+v", err, md.Topics)
	}

	// Groups: bob has no READ on g.
	jg := kmsg.NewPtrJoinGroupRequest()
	jg.Group, jg.ProtocolType, jg.SessionTimeoutMillis, jg.RebalanceTimeoutMillis = "g", "consumer", 6000, 6000
	jg.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range"}}
	jr, err := jg.RequestWith(ctx, bob)
	if !errors.Is(err, kerr.GroupAuthorizationFailed) && (err != nil || jr.ErrorCode != kerr.GroupAuthorizationFailed.Code) {
		t.Fatalf("bob join: %v %+v", err, jr)
	}
	fc := kmsg.NewPtrFindCoordinatorRequest()
	fc.CoordinatorKeys = []string{"g"}
	fcr, err := fc.RequestWith(ctx, bob)
	if !errors.Is(err, kerr.GroupAuthorizationFailed) && (err != nil || fcr.Coordinators[0].ErrorCode != kerr.GroupAuthorizationFailed.Code) {
		t.Fatalf("bob find coordinator: %v %+v", err, fcr)
	}
	groups, err := kadm.NewClient(bob).ListGroups(ctx)
	if err != nil || len(groups) != 0 {
		t.Fatalf("bob lists %v, %v; want no groups", groups, err)
	}

	// Transactions: alice may use tx-*, not other ids.
	ip := kmsg.NewPtrInitProducerIDRequest()
	ip.TransactionalID, ip.TransactionTimeoutMillis = kmsg.StringPtr("other"), 10000
	ipr, err := ip.RequestWith(ctx, alice)
	if !errors.Is(err, kerr.TransactionalIDAuthorizationFailed) && (err != nil || ipr.ErrorCode != kerr.TransactionalIDAuthorizationFailed.Code) {
		t.Fatalf("alice init other txn id: %v %+v", err, ipr)
	}
	tx := userClient(t, srv, "alice", kgo.TransactionalID("tx-1"), kgo.DefaultProduceTopic("orders"), kgo.TransactionTimeout(10*time.Second))
	if err := tx.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := tx.ProduceSync(ctx, &kgo.Record{Value: []byte("t")}).FirstErr(); err != nil {
		t.Fatalf("alice transactional produce: %v", err)
	}
	if err := tx.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatalf("alice commit transaction: %v", err)
	}

	// CREATE on a prefix creates; the configs in the answer need
	// DESCRIBE_CONFIGS.
	if _, err := admin.CreateACLs(ctx, kadm.NewACLs().Allow("User:alice").AllowHosts("*").
		Topics("al-").Operations(kadm.OpCreate).ResourcePatternType(kadm.ACLPatternPrefixed)); err != nil {
		t.Fatal(err)
	}
	ctr := kmsg.NewPtrCreateTopicsRequest()
	ctr.TimeoutMillis = 5000
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = "al-x", 1, 1
	ctr.Topics = append(ctr.Topics, rt)
	if cr, err := ctr.RequestWith(ctx, alice); err != nil || cr.Topics[0].ErrorCode != 0 ||
		cr.Topics[0].ConfigErrorCode != kerr.TopicAuthorizationFailed.Code || len(cr.Topics[0].Configs) != 0 {
		t.Fatalf("alice creates al-x: %v %+v", err, cr)
	}

	// Admin: bob may not create topics, describe ACLs or SCRAM users.
	bobAdm := kadm.NewClient(bob)
	ct, err := bobAdm.CreateTopic(ctx, 1, 1, nil, "bobs")
	if err == nil {
		err = ct.Err
	}
	if !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("bob create topic: %v", err)
	}
	dreq := kmsg.NewPtrDescribeACLsRequest()
	dreq.ResourceType, dreq.ResourcePatternType = kmsg.ACLResourceTypeAny, kmsg.ACLResourcePatternTypeAny
	dreq.Operation, dreq.PermissionType = kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
	if dr, err := dreq.RequestWith(ctx, bob); !errors.Is(err, kerr.ClusterAuthorizationFailed) && (err != nil || dr.ErrorCode != kerr.ClusterAuthorizationFailed.Code) {
		t.Fatalf("bob describe ACLs: %v %+v", err, dr)
	}
	if _, err := bobAdm.DescribeUserSCRAMs(ctx); !errors.Is(err, kerr.ClusterAuthorizationFailed) {
		t.Fatalf("bob describe SCRAM users: %v", err)
	}
	dc, err := bobAdm.DescribeTopicConfigs(ctx, "orders")
	if !errors.Is(err, kerr.TopicAuthorizationFailed) && (err != nil || !errors.Is(dc[0].Err, kerr.TopicAuthorizationFailed)) {
		t.Fatalf("bob describe configs: %v %+v", err, dc)
	}
	// The admin sees the ACLs; alice's READ implies DESCRIBE in her
	// authorized operations.
	dr, err := dreq.RequestWith(ctx, adminCl)
	if err != nil || dr.ErrorCode != 0 || len(dr.Resources) != 4 {
		t.Fatalf("admin describe ACLs: %v %+v", err, dr)
	}
	mo := kmsg.NewPtrMetadataRequest()
	mo.IncludeTopicAuthorizedOperations = true
	mt := kmsg.NewMetadataRequestTopic()
	mt.Topic = kmsg.StringPtr("orders")
	mo.Topics = append(mo.Topics, mt)
	mor, err := mo.RequestWith(ctx, alice)
	if want := int32(1<<opRead | 1<<opWrite | 1<<opDescribe); err != nil || mor.Topics[0].AuthorizedOperations != want {
		t.Fatalf("alice's operations on orders: %v %b, want %b", err, mor.Topics[0].AuthorizedOperations, want)
	}

	// Removing an ACL takes effect at the next request; ACLs survive a
	// restart.
	if _, err := admin.DeleteACLs(ctx, kadm.NewACLs().Allow("User:alice").AllowHosts("*").Topics("orders").
		Operations(kadm.OpWrite).ResourcePatternType(kadm.ACLPatternLiteral)); err != nil {
		t.Fatal(err)
	}
	if err := alice.ProduceSync(ctx, &kgo.Record{Value: []byte("a")}).FirstErr(); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("alice produce after the ACL went: %v", err)
	}
	srv.Close()
	srv2 := aclServer(t, dir)
	alice2 := userClient(t, srv2, "alice", kgo.DefaultProduceTopic("orders"))
	md2, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, alice2)
	if err != nil || len(md2.Topics) != 1 {
		t.Fatalf("after restart, alice sees %v, %v; want orders only (al-x: CREATE implies no DESCRIBE)", md2, err)
	}
	ctx2, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	// With WRITE on no topic left, not even an idempotent producer id.
	if err := alice2.ProduceSync(ctx2, &kgo.Record{Value: []byte("a")}).FirstErr(); !errors.Is(err, kerr.ClusterAuthorizationFailed) {
		t.Fatalf("after restart, alice produce: %v", err)
	}
}

// ACL hosts are matched as Kafka's StandardAuthorizer matches them: the
// string against the client's address string. A host name is stored, and
// listed back, but never allows a client, even one connecting from the
// address the name resolves to.
func TestACLHostIsAnAddressString(t *testing.T) {
	t.Parallel()
	srv := aclServer(t, "")
	ctx := testCtx(t)
	admin := kadm.NewClient(userClient(t, srv, "admin"))
	for _, name := range []string{"by-name", "by-ip"} {
		if _, err := admin.CreateTopic(ctx, 1, 1, nil, name); err != nil {
			t.Fatal(err)
		}
	}
	for topic, host := range map[string]string{"by-name": "localhost", "by-ip": "127.0.0.1"} {
		res, err := admin.CreateACLs(ctx, kadm.NewACLs().Allow("User:alice").AllowHosts(host).
			Topics(topic).Operations(kadm.OpDescribe).ResourcePatternType(kadm.ACLPatternLiteral))
		if err != nil || len(res) != 1 || res[0].Err != nil {
			t.Fatalf("create ACL with host %q: %v %+v", host, err, res)
		}
	}
	described, err := admin.DescribeACLs(ctx, kadm.NewACLs().AnyResource().Allow("User:alice").AllowHosts("localhost").
		Operations(kadm.OpAny).ResourcePatternType(kadm.ACLPatternAny))
	if err != nil || len(described) != 1 || len(described[0].Described) != 1 {
		t.Fatalf("describe the host-name ACL: %v %+v", err, described)
	}
	md, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, userClient(t, srv, "alice"))
	if err != nil {
		t.Fatal(err)
	}
	var seen []string
	for _, mt := range md.Topics {
		seen = append(seen, *mt.Topic)
	}
	if len(seen) != 1 || seen[0] != "by-ip" {
		t.Fatalf("alice from 127.0.0.1 sees %v, want [by-ip] (a host-name ACL never matches)", seen)
	}
}

// CreateAcls and DeleteAcls answer per entry: every entry fails without
// ALTER on the cluster; an invalid entry fails alone with INVALID_REQUEST
// while the others take effect.
func TestACLWritesPerEntry(t *testing.T) {
	t.Parallel()
	srv := aclServer(t, "")
	ctx := testCtx(t)
	admin, bob := userClient(t, srv, "admin"), userClient(t, srv, "bob")
	creation := func(principal string) kmsg.CreateACLsRequestCreation {
		cr := kmsg.NewCreateACLsRequestCreation()
		cr.ResourceType, cr.ResourceName, cr.ResourcePatternType = kmsg.ACLResourceTypeTopic, "t", kmsg.ACLResourcePatternTypeLiteral
		cr.Principal, cr.Host, cr.Operation, cr.PermissionType = principal, "*", kmsg.ACLOperationRead, kmsg.ACLPermissionTypeAllow
		return cr
	}
	create := kmsg.NewPtrCreateACLsRequest()
	create.Creations = []kmsg.CreateACLsRequestCreation{creation("User:alice"), creation("no-colon"), creation("User:carol")}
	filter := func(typ kmsg.ACLResourceType) kmsg.DeleteACLsRequestFilter {
		f := kmsg.NewDeleteACLsRequestFilter()
		f.ResourceType, f.ResourcePatternType = typ, kmsg.ACLResourcePatternTypeAny
		f.Principal, f.Operation, f.PermissionType = kmsg.StringPtr("User:carol"), kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
		return f
	}
	del := kmsg.NewPtrDeleteACLsRequest()
	del.Filters = []kmsg.DeleteACLsRequestFilter{filter(kmsg.ACLResourceTypeUnknown), filter(kmsg.ACLResourceTypeAny)}

	cr, err := create.RequestWith(ctx, bob)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range cr.Results {
		if r.ErrorCode != kerr.ClusterAuthorizationFailed.Code {
			t.Fatalf("bob's creation %d: %v, want CLUSTER_AUTHORIZATION_FAILED", i, kerr.ErrorForCode(r.ErrorCode))
		}
	}
	dr, err := del.RequestWith(ctx, bob)
	if err != nil || len(dr.Results) != 2 || dr.Results[1].ErrorCode != kerr.ClusterAuthorizationFailed.Code {
		t.Fatalf("bob's deletion: %v %+v, want CLUSTER_AUTHORIZATION_FAILED per filter", err, dr)
	}

	if cr, err = create.RequestWith(ctx, admin); err != nil {
		t.Fatal(err)
	}
	if got := []int16{cr.Results[0].ErrorCode, cr.Results[1].ErrorCode, cr.Results[2].ErrorCode}; got[0] != 0 || got[1] != kerr.InvalidRequest.Code || got[2] != 0 {
		t.Fatalf("admin's creations: codes %v, want [0 %d 0]", got, kerr.InvalidRequest.Code)
	}
	if dr, err = del.RequestWith(ctx, admin); err != nil {
		t.Fatal(err)
	}
	if dr.Results[0].ErrorCode != kerr.InvalidRequest.Code || dr.Results[1].ErrorCode != 0 || len(dr.Results[1].MatchingACLs) != 1 {
		t.Fatalf("admin's deletion: %+v, want INVALID_REQUEST then carol's one ACL", dr.Results)
	}
	dreq := kmsg.NewPtrDescribeACLsRequest()
	dreq.ResourceType, dreq.ResourcePatternType = kmsg.ACLResourceTypeAny, kmsg.ACLResourcePatternTypeAny
	dreq.Operation, dreq.PermissionType = kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
	described, err := dreq.RequestWith(ctx, admin)
	if err != nil || len(described.Resources) != 1 || len(described.Resources[0].ACLs) != 1 || described.Resources[0].ACLs[0].Principal != "User:alice" {
		t.Fatalf("ACLs left: %v %+v, want alice's only", err, described)
	}
}
