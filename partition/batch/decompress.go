package batch

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/snappy"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
)

// DefaultMaxDecompressedBytes is the floor of the decompression bound: a
// compressed batch may expand to at most
// max(DefaultMaxDecompressedBytes, 16 × max.message.bytes) bytes unless
// ValidateOptions.MaxDecompressedBytes says otherwise. Kafka has no such bound
// (it streams records through the codec); kbroker decodes into one buffer, so
// a decompression bomb must stop here and not in the broker's memory.
const DefaultMaxDecompressedBytes = 64 << 20

// maxDecompressedCap caps the default bound for huge max.message.bytes.
const maxDecompressedCap = 1 << 30

// maxPooledBuffer is the largest decompression buffer kept for reuse; larger
// ones are dropped after use (STYLE.md §6, nats nbPool).
const maxPooledBuffer = 8 << 20

// decompressFree is how much output a decompression may produce on its own.
// One that needs more first takes a slot of bigDecompressions, held until
// its decompressor is put back, and its buffer is then dropped. Each
// connection decompresses its own produce requests, and a few KiB of zstd
// or gzip expand to the bound (64 MiB by default): without the slots, 50
// connections sending such bombs make the broker allocate 50 bounds at
// once, with the slots it is at most cap(bigDecompressions) of them,
// however many connections there are. A decompressor takes a slot at most
// once and nothing holding one waits for anything else, so they cannot
// deadlock. (What stays per connection is the codec's own state, such as
// an lz4 reader's block buffer of up to 4 MiB, and up to decompressFree of
// output.)
const decompressFree = 1 << 20

// bigDecompressions holds the slots of decompressions past decompressFree:
// one, as batches that expand past 1 MiB are rare (Kafka's producers
// default to 16 KiB batches, kgo to 1 MB) and each slot may cost twice the
// bound while its buffer grows.
var bigDecompressions = make(chan struct{}, 1)

// zstdStep is the output a zstd decompression with a slot may produce
// before it is decoded again with the whole bound (see zstd).
const zstdStep = 8 << 20

// errTooLarge reports output past the bound; callers turn it into
// MESSAGE_TOO_LARGE.
var errTooLarge = errors.New("batch: decompressed data exceeds the bound")

// errStopped reports a decompression past decompressFree given up
// because its stop signal closed (ValidateOptions.Stop): the broker is
// shutting down and must not wait for bombs queued behind one slot.
var errStopped = errors.New("batch: decompression stopped: the broker is shutting down")

// xerialMagic starts a snappy stream framed by the xerial snappy-java
// SnappyOutputStream, which Kafka's Java producer writes (Kafka's
// SnappyCompression): 8 magic bytes, int32 version, int32 minimum compatible
// version, then blocks of [int32 length][raw snappy block].
var xerialMagic = []byte{0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0}

const xerialHeaderSize = 16

// decompressor holds a reusable output buffer and codec state. It is not
// safe for concurrent use; pooled ones come from decompressors.
type decompressor struct {
	buf   []byte
	src   bytes.Reader
	lim   io.LimitedReader
	gz    gzip.Reader
	lz    *lz4.Reader
	zs    *zstd.Decoder
	zsMax uint64 // WithDecoderMaxMemory last applied to zs
	// big is set while d holds a slot of bigDecompressions.
	big bool
	// spent is the output the last decompress produced, refused output
	// and zstd's retries with a larger bound included: the work a
	// request's decompression budget is charged.
	spent int
}

var decompressors = sync.Pool{New: func() any { return new(decompressor) }}

func getDecompressor() *decompressor { return decompressors.Get().(*decompressor) }

func putDecompressor(d *decompressor) {
	if cap(d.buf) > maxPooledBuffer || (d.big && cap(d.buf) > decompressFree) {
		d.buf = nil
	}
	if d.big {
		d.big = false
		<-bigDecompressions
	}
	d.src.Reset(nil)
	d.lim.R = nil
	decompressors.Put(d)
}

// decompress decodes src with codec into d's buffer, refusing output longer
// than limit with errTooLarge. The result aliases d.buf until the next call.
// stop, when closed, makes a decompression past decompressFree give up
// with errStopped; nil never does. (A parameter, not a field of d: stored
// in d it would make Validate's options escape, one allocation per
// produced batch.)
func (d *decompressor) decompress(codec Codec, src []byte, limit int, stop <-chan struct{}) ([]byte, error) {
	var err error
	d.spent = 0
	declared, ok := declaredSize(codec, src)
	if ok && declared > int64(limit) {
		return nil, errTooLarge // a bomb that says so: nothing decoded, nothing allocated
	}
	hint := 0
	if ok {
		hint = int(declared)
	}
	switch codec {
	case CodecGzip:
		// Java's GZIPInputStream also reads concatenated members, as
		// does this reader (multistream is its default).
		d.src.Reset(src)
		if err = d.gz.Reset(&d.src); err != nil {
			return nil, err
		}
		d.buf, err = d.readAll(&d.gz, limit, hint, stop)
	case CodecLZ4:
		// Kafka's Lz4BlockInputStream reads the LZ4 frame format.
		d.src.Reset(src)
		if d.lz == nil {
			d.lz = lz4.NewReader(nil)
		}
		d.lz.Reset(&d.src)
		d.buf, err = d.readAll(d.lz, limit, hint, stop)
	case CodecZstd:
		d.buf, err = d.zstd(src, limit, hint, stop)
	case CodecSnappy:
		d.buf, err = d.snappy(src, limit, stop)
	default:
		return nil, fmt.Errorf("batch: cannot decompress %v", codec)
	}
	if err != nil {
		return nil, err
	}
	return d.buf, nil
}

// takeBig waits for a slot of bigDecompressions, unless d holds one: d is
// about to hold more than decompressFree bytes of output. It gives up
// with errStopped when stop closes first.
func (d *decompressor) takeBig(stop <-chan struct{}) error {
	if d.big {
		return nil
	}
	if stopped(stop) {
		return errStopped
	}
	select {
	case bigDecompressions <- struct{}{}:
		d.big = true
		return nil
	case <-stop:
		return errStopped
	}
}

// stopped reports whether stop has closed.
func stopped(stop <-chan struct{}) bool {
	select {
	case <-stop:
		return true
	default:
		return false
	}
}

// declaredSize is the decompressed size src says it has, where the
// format says one without decoding: a lower bound on the output, so that
// more than the limit is refused before anything is allocated or decoded
// (a bomb usually says what it is), and otherwise a size hint for the
// output buffer. gzip's trailer holds the last member's size (mod 2^32,
// which is checked when the member ends: the output is at least that);
// an lz4 frame and a zstd frame may declare their content size. Snappy
// is checked block by block (appendSnappyBlock).
func declaredSize(codec Codec, src []byte) (int64, bool) {
	switch codec {
	case CodecGzip:
		if len(src) >= 18 && src[0] == 0x1f && src[1] == 0x8b {
			return int64(binary.LittleEndian.Uint32(src[len(src)-4:])), true
		}
	case CodecLZ4:
		// Magic, then FLG (bit 3: content size present), BD, and the
		// content size as 8 bytes little-endian.
		if len(src) >= 14 && binary.LittleEndian.Uint32(src) == 0x184d2204 && src[4]&0x08 != 0 {
			if n := binary.LittleEndian.Uint64(src[6:]); n <= 1<<62 {
				return int64(n), true
			}
			return 1 << 62, true
		}
	case CodecZstd:
		return zstdDeclared(src)
	}
	return 0, false
}

// zstdDeclared is the sum of the content sizes that the frames of src
// declare, found by walking the frame and block headers without decoding
// (a bomb is typically many frames of a few bytes, each declaring a MiB
// of zeros). ok is false when a frame declares none or src does not
// parse as frames: the decoder then finds out.
func zstdDeclared(src []byte) (int64, bool) {
	const most = 1 << 62
	var total uint64
	for len(src) > 0 {
		var h zstd.Header
		if h.Decode(src) != nil || h.HeaderSize <= 0 || h.HeaderSize > len(src) {
			return 0, false
		}
		src = src[h.HeaderSize:]
		if h.Skippable {
			if uint64(h.SkippableSize) > uint64(len(src)) {
				return 0, false
			}
			src = src[h.SkippableSize:]
			continue
		}
		if !h.HasFCS {
			return 0, false
		}
		total = min(total+min(h.FrameContentSize, most), most)
		for last := false; !last; {
			// Block header: 3 bytes little-endian, bit 0 the last
			// block, bits 1-2 its type, the rest its size.
			if len(src) < 3 {
				return 0, false
			}
			bh := uint32(src[0]) | uint32(src[1])<<8 | uint32(src[2])<<16
			last = bh&1 == 1
			size := int(bh >> 3)
			switch (bh >> 1) & 3 {
			case 1: // RLE: one byte repeated size times
				size = 1
			case 3: // reserved
				return 0, false
			}
			if size > len(src)-3 {
				return 0, false
			}
			src = src[3+size:]
		}
		if h.HasCheckSum {
			if len(src) < 4 {
				return 0, false
			}
			src = src[4:]
		}
	}
	return int64(total), true
}

// readAll reads r into d.buf, growing it up to limit+1 bytes so that one
// byte past the bound is seen and refused without reading further. hint
// (0: none) is the size the data declared: the buffer starts there, so
// that a large output is not copied through every doubling.
func (d *decompressor) readAll(r io.Reader, limit, hint int, stop <-chan struct{}) ([]byte, error) {
	d.lim.R, d.lim.N = r, int64(limit)+1
	dst := d.buf[:0]
	if hint > 0 && cap(dst) < hint+1 {
		want := min(hint, limit) + 1
		if want > decompressFree {
			if err := d.takeBig(stop); err != nil {
				return dst, err
			}
		}
		dst = slices.Grow(dst, want)
	}
	for {
		if len(dst) == cap(dst) {
			grow := min(max(cap(dst), 32<<10), limit+1-len(dst))
			if len(dst)+grow > decompressFree {
				if err := d.takeBig(stop); err != nil {
					return dst, err
				}
			}
			dst = slices.Grow(dst, grow)
		}
		if d.big && stopped(stop) {
			return dst, errStopped
		}
		n, err := d.lim.Read(dst[len(dst):cap(dst)])
		dst = dst[:len(dst)+n]
		d.spent += n
		if len(dst) > limit {
			return dst, errTooLarge
		}
		if err == io.EOF {
			return dst, nil
		}
		if err != nil {
			return dst, err
		}
	}
}

// zstd decodes every frame of src at once. WithDecoderMaxMemory makes the
// decoder refuse a frame that declares, or grows to, more than limit bytes
// before it allocates them. Output beyond decompressFree needs a slot of
// bigDecompressions, so src is decoded within decompressFree first and,
// only if that is too little, again with a slot, within zstdStep and then
// within limit. With a slot the buffer is allocated for the whole step at
// once: DecodeAll grows its output by exactly each frame's content size, so
// a bomb of many small frames would otherwise cost allocations quadratic
// in its size.
//
// declared is the first frame's declared content size (0: none): a
// larger one starts there, with a buffer of that size.
func (d *decompressor) zstd(src []byte, limit, declared int, stop <-chan struct{}) ([]byte, error) {
	within := min(limit, max(decompressFree, declared))
	for {
		if within > decompressFree {
			if err := d.takeBig(stop); err != nil {
				return d.buf[:0], err
			}
			if stopped(stop) {
				return d.buf[:0], errStopped
			}
			if cap(d.buf) < within {
				d.buf = make([]byte, 0, within+64)
			}
		}
		out, err := d.zstdWithin(src, within)
		if !errors.Is(err, errTooLarge) || within == limit {
			return out, err
		}
		within = min(limit, max(within*8, zstdStep))
	}
}

func (d *decompressor) zstdWithin(src []byte, limit int) ([]byte, error) {
	if d.zs == nil {
		zs, err := zstd.NewReader(nil,
			zstd.WithDecoderConcurrency(1), // synchronous: no goroutines to leak from the pool
			zstd.WithDecoderLowmem(true),
			zstd.WithDecoderMaxMemory(uint64(limit)))
		if err != nil {
			return nil, err
		}
		d.zs, d.zsMax = zs, uint64(limit)
	}
	if d.zsMax != uint64(limit) {
		if err := d.zs.ResetWithOptions(nil, zstd.WithDecoderMaxMemory(uint64(limit))); err != nil {
			return nil, err
		}
		d.zsMax = uint64(limit)
	}
	out, err := d.zs.DecodeAll(src, d.buf[:0])
	d.spent += len(out)
	if errors.Is(err, zstd.ErrDecoderSizeExceeded) || errors.Is(err, zstd.ErrWindowSizeExceeded) {
		return out, errTooLarge
	}
	if err == nil && len(out) > limit {
		return out, errTooLarge
	}
	return out, err
}

// snappy decodes Kafka's two snappy layouts, as snappy-java's
// SnappyInputStream.readHeader does: the xerial framing when src starts with
// its full 16-byte header, else one raw snappy block. Blocks are decoded with
// the strict decoder: Java's snappy refuses the s2 extensions that the
// lenient decoder would accept, and a batch a Java consumer cannot read must
// not pass full validation.
func (d *decompressor) snappy(src []byte, limit int, stop <-chan struct{}) ([]byte, error) {
	dst := d.buf[:0]
	if len(src) < xerialHeaderSize || !bytes.Equal(src[:len(xerialMagic)], xerialMagic) {
		return d.appendSnappyBlock(dst, src, limit, stop)
	}
	// snappy-java's SnappyInputStream.readHeader refuses a stream whose
	// version is below its MINIMUM_COMPATIBLE_VERSION, 1.
	if v := int32(binary.BigEndian.Uint32(src[len(xerialMagic):])); v < 1 {
		return dst, fmt.Errorf("batch: xerial snappy version %d", v)
	}
	rest := src[xerialHeaderSize:]
	for len(rest) > 0 {
		if len(rest) < 4 {
			return dst, errors.New("batch: xerial snappy: truncated block length")
		}
		n := int32(binary.BigEndian.Uint32(rest))
		rest = rest[4:]
		if n <= 0 || int(n) > len(rest) {
			return dst, fmt.Errorf("batch: xerial snappy: block length %d with %d bytes left", n, len(rest))
		}
		var err error
		if dst, err = d.appendSnappyBlock(dst, rest[:n], limit, stop); err != nil {
			return dst, err
		}
		rest = rest[n:]
	}
	return dst, nil
}

// appendSnappyBlock decodes one raw snappy block after dst. The block's
// decoded length comes first in its header, so the bound is checked before
// any allocation (and before taking a slot of bigDecompressions, which
// output beyond decompressFree needs).
func (d *decompressor) appendSnappyBlock(dst, block []byte, limit int, stop <-chan struct{}) ([]byte, error) {
	n, err := snappy.DecodedLen(block)
	if err != nil {
		return dst, err
	}
	if n > limit-len(dst) {
		return dst, errTooLarge
	}
	if len(dst)+n > decompressFree {
		if err := d.takeBig(stop); err != nil {
			return dst, err
		}
	}
	dst = slices.Grow(dst, n)
	out, err := snappy.DecodeStrict(dst[len(dst):len(dst)+n], block)
	d.spent += n
	if err != nil {
		return dst, err
	}
	if len(out) != n {
		return dst, errors.New("batch: snappy block decoded to an unexpected length")
	}
	return dst[:len(dst)+n], nil
}
