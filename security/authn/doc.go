// Package authn is SASL authentication for kbroker: the server side of the
// PLAIN (RFC 4616), SCRAM-SHA-256 and SCRAM-SHA-512 (RFC 5802, RFC 7677)
// and OAUTHBEARER (RFC 7628, with Kafka's unsecured-token validator)
// mechanisms, and the store of SCRAM credentials.
//
// # Exchanges
//
// Each mechanism is a byte-in, byte-out state machine ([Exchange]): the
// broker hands it the auth bytes of each SaslAuthenticate request (or raw
// v0 token) and sends back what it returns. The package does no I/O on
// connections, so every parser here is fuzzed directly.
//
// A failed exchange returns an [*Error] whose Public text is what the
// client is told. It never says whether the user exists: SCRAM answers an
// unknown user with a deterministic fake salt and fails at the final step
// with the same message as a wrong password (Kafka fails at the first
// step, which reveals existence by timing of the failure).
//
// # Credentials
//
// The [Store] keeps per user and SCRAM mechanism only salt, iterations,
// StoredKey and ServerKey — never the password, never SaltedPassword
// (which would let its holder log in). PLAIN logins are checked against the
// same credentials: the password is run through PBKDF2 with the stored salt
// and iterations and the resulting StoredKey compared in constant time.
// Those PBKDF2 runs are bounded by a semaphore, so a storm of PLAIN logins
// cannot take every core.
//
// The store lives in one file (metadata/scram-credentials), versioned and
// checksummed, replaced atomically (temporary file, fsync, rename, directory
// fsync) with mode 0600; an update is answered only once durable, and
// readers see an immutable snapshot swapped atomically, so an update
// affects only authentications that start after it.
//
// Secrets (passwords, proofs, keys, tokens) are never logged and never
// appear in error texts.
package authn
