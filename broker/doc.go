// Package broker is the server: it accepts Kafka client connections,
// decodes requests, answers them from the packages below it (partition,
// topic, group, offsets, txn) and writes the responses back. It is where a
// newcomer starts; docs/ARCHITECTURE.md maps the rest of the tree.
//
// # Request lifecycle
//
//	acceptLoop, one per listener (broker.go: Start, per-IP connection limits)
//	  → conn.serve: TLS handshake on SSL/SASL_SSL listeners (conn_auth.go),
//	    then one reader and one writer goroutine per connection (conn.go)
//	  → readLoop: protocol.ReadSize / ReadBody, one frame at a time
//	  → handleFrame: protocol.ParseHeader, the SASL gate on SASL listeners
//	    (conn_auth.go), the API table (apikeys*.go), protocol.ParseBody
//	  → with fault rules set (Faults().Active, one atomic load), handleFault (fault.go)
//	  → the typed handler, handleXxx in handle_xxx.go
//	  → result → conn.enqueue (bounded queue, request order)
//	  → writeLoop: protocol.AppendResponse, or writeFetch with sendfile(2)
//
// The reader handles requests strictly in arrival order: a produce's
// append (offset assignment and the write into the mapping) is done before
// the next request is read, so idempotent sequences stay ordered. The
// writer sends responses in that same order, waiting for a pending one
// before those behind it. The queue between them holds at most
// MaxInFlightPerConnection responses, which bounds the memory a connection
// can pin.
//
// The API table (apiTable in apikeys.go, one file per family:
// apikeys_admin.go, _data, _group, _offsets, _txn) is the one list of what
// the broker serves: key, version range and handler. ApiVersions is
// generated from it, and the dispatcher refuses a key or version outside
// it before any handler runs. The typed adapter lets every handler take
// its own *kmsg.XxxRequest, so handler bodies never type-assert.
//
// # Security
//
// Each connection knows its listener (listener.go: the address Metadata,
// FindCoordinator and DescribeCluster advertise), its principal
// (User:ANONYMOUS, the SASL identity, or the mapped client-certificate
// subject) and, on SASL listeners, its authentication state
// (conn_auth.go, handle_sasl.go; mechanisms and credentials in
// security/authn). Handlers ask authorize.go's helpers what Kafka's
// KafkaApis asks, before existence checks; without
// authorizer.class.name they allow everything at the cost of a nil test
// (decisions in security/acl). A handler that must answer and then close
// (a failed login) returns errCloseAfterResponse with its result.
//
// # The result contract
//
// A handler returns (result, error):
//
//   - A non-nil error means the connection is broken (it cannot be
//     answered in Kafka's terms); conn logs it and closes the connection.
//     Every Kafka-level failure goes into the response as an error code
//     instead, through errorCode in errors.go, the one mapping from Go
//     errors to Kafka codes.
//   - result{resp: r} (built with respond) is a response ready now.
//   - result{resp: r, ready: ch} is pending: whoever completes it (the
//     group-commit callback of an acks=-1 produce, a coordinator write)
//     fills r and closes ch; until then r belongs to that completer and
//     the writer waits, in order.
//   - result{fetch: fr} is a fetch response in the chunks-and-ranges
//     form (with ready, a share fetch still being answered; with
//     fr.parked, a fetch parked for data, which the writer waits for,
//     reads and encodes when it reaches it): the framing bytes
//     are encoded by protocol, and the record bytes are sent by the writer
//     from the commit-log files with sendfile(2), or below the copy
//     threshold with writev straight from the commit-log mapping
//     (writeFetch), then the files are released.
//   - result{none: true} sends nothing (Produce with acks=0).
//
// Responses reach the socket in request order: a response ready now with
// nothing queued before it the reader writes itself (saving a goroutine
// wake-up per request); the rest go to the writer goroutine, which waits
// for each in turn (conn.enqueue). A handler validates,
// groups by partition, calls partition or a coordinator, and fills the
// response; it does no storage or socket work itself.
//
// # Logging
//
// zap, structured, quiet at info level: per-request lines are at Debug. A
// connection's logger carries "remote" (the client address); other keys
// are "api" (kmsg name of the key), "key", "version", "correlation_id",
// "client_id", "reason" (why a connection closed or was refused);
// "topic", "id" (the topic id), "partition", "partitions" and "configs"
// for topic changes; "group", "member" and "instance" for groups; "dir",
// "addr" and "advertised" at start-up, with the recovery report's "clean",
// "end", "cut", "reindexed" and "took"; "rule" (a fault rule's id);
// "listener" and "protocol" for listeners; "principal", "mechanism",
// "subject" for authentication; "operation", "resource_type" and
// "resource" for authorization denials. Secrets (passwords, tokens,
// proofs, keys) are never logged. Use these names for the same things in
// new log lines.
//
// # Files
//
// Wiring, rather than request handling: broker.go (Broker, New, Start,
// Shutdown, start-up recovery, the crash-like stop), embed.go
// (StartInProcess for tests and embedding, Serve, Restart, Reset),
// control.go (the test controls over HTTP), fault.go (applying fault
// rules: delays, closes, swallowed requests, injected error answers,
// throttled writes), seed.go (kbroker.seed.topics), config.go and group_config.go (Config and its validation),
// conn.go (the connection loop), listener.go, security.go, principal.go,
// conn_auth.go and authorize.go (listeners, TLS, SASL state, principals,
// authorization), budget.go (the broker-wide byte budget of
// requests in flight), apikeys*.go (the API table), errors.go (error
// codes), auto_create.go (topic auto-creation), fetch_session.go
// (KIP-227 fetch sessions), group_hooks.go and offset_commits.go (the
// group coordinators and the committed-offsets store) and txn_wiring.go
// (the transaction coordinator).
// Each handle_xxx.go serves one API key and starts with a comment giving
// its versions, the KIPs per version and any deviation from Kafka.
package broker
