// Package acl is kbroker's ACL authorizer: Kafka's StandardAuthorizer
// semantics over a durable list of ACL bindings.
//
// A binding grants or denies one operation on resources of one type whose
// names match a LITERAL name, the LITERAL wildcard "*", or a PREFIXED
// prefix, to one principal ("User:alice", or the wildcard "User:*") from
// one host ("*", or the client's IP address as a string).
//
// # Decision (Authorize)
//
//  1. A super user (super.users) is allowed everything, DENY ACLs
//     included.
//  2. The candidates are the bindings of the resource's type whose pattern
//     covers its name.
//  3. A candidate applies when its principal is the requester or "User:*",
//     its host is "*" or the requester's address string, and its operation is ALL, the
//     requested one, or — for ALLOW bindings only — one that implies it
//     (READ, WRITE, DELETE and ALTER imply DESCRIBE; ALTER_CONFIGS implies
//     DESCRIBE_CONFIGS).
//  4. An applicable DENY denies; else an applicable ALLOW allows; else, if
//     there was no candidate at all, allow.everyone.if.no.acl.found decides;
//     else deny.
//
// Hosts are compared as strings, exactly as Kafka's StandardAuthorizer
// does: the binding's host against the client's IP address printed the
// way Java's InetAddress.getHostAddress prints it (HostAddress: "10.0.0.7",
// "0:0:0:0:0:0:0:1"). A host name, a CIDR range or a compressed IPv6 form
// ("::1") is stored as given and never matches, the same surprise Kafka
// users get; kafka-acls.sh documents hosts as IP addresses.
//
// # Storage
//
// The bindings live in one file (metadata/acls: magic, CRC-32C, JSON),
// replaced atomically; a change is answered only once durable, and
// authorization reads an immutable snapshot swapped atomically, so a
// removed ACL stops applying at the next request.
package acl
