package protocol

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// ErrMalformed is returned for a frame that cannot be parsed: the
// connection it came from must be closed.
var ErrMalformed = errors.New("protocol: malformed request")

// Header is a request header (Kafka's RequestHeader v0–v2).
type Header struct {
	Key           int16
	Version       int16
	CorrelationID int32
	// ClientID is nil when the client sent a null client id.
	ClientID *string
}

// ParseHeader decodes the fixed part of a request header: key, version,
// correlation id and client id. It returns the rest of the frame, which
// still holds the header's tagged fields when the request version is
// flexible (see SkipTags).
func ParseHeader(frame []byte) (Header, []byte, error) { return ParseHeaderReusing(frame, nil) }

// ParseHeaderReusing is ParseHeader for a connection's reader: when the
// client id equals *last (the previous request's, which it almost always
// is), the header's ClientID is last itself, so that no string is
// allocated per request. last may be nil.
func ParseHeaderReusing(frame []byte, last *string) (Header, []byte, error) {
	if len(frame) < 10 {
		return Header{}, nil, fmt.Errorf("%w: header of %d bytes", ErrMalformed, len(frame))
	}
	h := Header{
		Key:           int16(binary.BigEndian.Uint16(frame[0:])),
		Version:       int16(binary.BigEndian.Uint16(frame[2:])),
		CorrelationID: int32(binary.BigEndian.Uint32(frame[4:])),
	}
	n := int16(binary.BigEndian.Uint16(frame[8:]))
	rest := frame[10:]
	if n >= 0 {
		if int(n) > len(rest) {
			return h, nil, fmt.Errorf("%w: client id of %d bytes, %d left", ErrMalformed, n, len(rest))
		}
		if id := rest[:n]; last != nil && *last == string(id) {
			h.ClientID = last
		} else {
			s := string(id)
			h.ClientID = &s
		}
		rest = rest[n:]
	} else if n != -1 {
		return h, nil, fmt.Errorf("%w: client id length %d", ErrMalformed, n)
	}
	return h, rest, nil
}

// SkipTags skips a tagged-field section (KIP-482): an unsigned varint
// count, then for each field a tag and a length-prefixed value.
func SkipTags(b []byte) ([]byte, error) {
	count, n := binary.Uvarint(b)
	if n <= 0 || count > uint64(len(b)) {
		return nil, fmt.Errorf("%w: tagged field count", ErrMalformed)
	}
	b = b[n:]
	for i := uint64(0); i < count; i++ {
		if _, n = binary.Uvarint(b); n <= 0 {
			return nil, fmt.Errorf("%w: tag", ErrMalformed)
		}
		b = b[n:]
		size, n := binary.Uvarint(b)
		if n <= 0 || size > uint64(len(b)-n) {
			return nil, fmt.Errorf("%w: tagged field size", ErrMalformed)
		}
		b = b[n+int(size):]
	}
	return b, nil
}

// Request is a parsed request.
type Request struct {
	Header Header
	// Body is the decoded request, of the kmsg type for Header.Key, with
	// its version set.
	Body kmsg.Request
}

// ParseBody decodes the body of a request whose header is h; rest is what
// ParseHeader returned. The caller has checked that the key and version are
// supported. Byte slices in the decoded request (record batches) alias rest.
func ParseBody(h Header, rest []byte) (kmsg.Request, error) {
	req := kmsg.RequestForKey(h.Key)
	if req == nil {
		return nil, fmt.Errorf("%w: unknown api key %d", ErrMalformed, h.Key)
	}
	req.SetVersion(h.Version)
	if req.IsFlexible() && !isHeaderV0(h.Key, h.Version) {
		var err error
		if rest, err = SkipTags(rest); err != nil {
			return nil, err
		}
	}
	if err := readFrom(req, rest); err != nil {
		return nil, fmt.Errorf("%w: %s v%d body: %v", ErrMalformed, kmsg.NameForKey(h.Key), h.Version, err)
	}
	return req, nil
}

// isHeaderV0 reports the one request whose header never has tagged fields
// even in flexible versions: ControlledShutdown v0 (Kafka's special case).
func isHeaderV0(key, version int16) bool { return key == 7 && version == 0 }

// readFrom decodes b into req. kmsg's decoders are bounds-checked and
// report errors; recover guards the broker against a decoder bug, so a bad
// frame costs its connection, never the process.
func readFrom(req kmsg.Request, b []byte) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("decoder panic: %v", r)
		}
	}()
	return req.ReadFrom(b)
}

// parseKept is ParseProduceBody and ParseFetchBody: it checks that h is a
// request of key, readies dst for h's version, skips a flexible request's
// header tags and decodes the rest of the body into dst with decode. A
// generic function value rather than a closure, so that the steady path
// allocates nothing.
func parseKept[R kmsg.Request](h Header, rest []byte, dst R, key int16, name string, decode func(R, []byte) error) error {
	if h.Key != key {
		return fmt.Errorf("%w: api key %d is not %s", ErrMalformed, h.Key, name)
	}
	dst.SetVersion(h.Version)
	if dst.IsFlexible() {
		var err error
		if rest, err = SkipTags(rest); err != nil {
			return err
		}
	}
	if err := decode(dst, rest); err != nil {
		return fmt.Errorf("%w: %s v%d body: %v", ErrMalformed, name, h.Version, err)
	}
	return nil
}
