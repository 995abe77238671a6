// Package compact holds the log cleaner's key map (Kafka's dedupe buffer):
// OffsetMap, a fixed-memory, pointer-free map from a key's 128-bit hash to
// the last offset seen for it during one cleaning pass. It is a leaf: the
// cleaner itself lives in package partition (cleaner.go), which owns the
// data it rewrites, and the batch rewrite in partition/batch (Retainer).
//
// Memory is bounded by construction: NewOffsetMap takes a byte budget
// (log.cleaner.dedupe.buffer.size divided by the cleaner threads) and Put
// refuses new keys past the load factor, so a pass over more distinct keys
// than fit ends early and the next pass continues (multi-pass cleaning).
package compact
