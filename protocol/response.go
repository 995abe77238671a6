package protocol

import (
	"encoding/binary"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// AppendResponse appends a whole response frame to dst: the size prefix,
// the response header (correlation id, plus an empty tagged-field section
// for flexible versions, except for ApiVersions, whose response header is
// always v0 so that a client that does not know the broker's versions can
// read it), and the body.
func AppendResponse(dst []byte, correlationID int32, resp kmsg.Response) []byte {
	start := len(dst)
	dst = append(dst, 0, 0, 0, 0)
	dst = binary.BigEndian.AppendUint32(dst, uint32(correlationID))
	if resp.IsFlexible() && resp.Key() != 18 {
		dst = append(dst, 0)
	}
	dst = resp.AppendTo(dst)
	binary.BigEndian.PutUint32(dst[start:], uint32(len(dst)-start-4))
	return dst
}
