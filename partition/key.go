package partition

import "encoding/binary"

// KeySize is the size of the key stored with every commit-log entry: the
// topic id (16 bytes) and the partition index (4 bytes, big-endian). It
// tells recovery which partition an entry belongs to.
const KeySize = 20

// TopicID is a Kafka topic id (a UUID). The zero id means "none".
type TopicID [16]byte

// entryKey is the commit-log key of a partition.
func entryKey(id TopicID, index int32) [KeySize]byte {
	var k [KeySize]byte
	copy(k[:16], id[:])
	binary.BigEndian.PutUint32(k[16:], uint32(index))
	return k
}
