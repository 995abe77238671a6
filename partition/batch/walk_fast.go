package batch

// walkFast is Validate's record walk for the common case, a well-formed
// batch: one pass over the record framing that decodes only what the rules
// need (lengths, the timestamp delta, the offset delta, key nullness) and
// builds no Record. It reports ok only when the slow walk (walk, over
// scanner.next) would accept data with the same options; it stops at the
// first fault of any kind, and Validate then runs the slow walk to find the
// fault Kafka would report and its code. A valid batch is therefore walked
// once, an invalid one twice.
//
// The loop is what a batch of small records costs per record (issue 18), so
// it is written for that: positions are indexes into one slice per record,
// every varint of one or two bytes (all lengths below 8 KiB, offset deltas
// below 8,192, timestamp deltas within ±8 s) is decoded inline by
// varint2At with no call, longer ones go through the general decoder, and
// the only per-record branches that depend on the options are two flags
// read once. TestWalkFastLargeBatches covers the general decoder's share
// (offset deltas from 8,192) that a fuzz corpus is too small to reach.
//
// On ok, maxTs and maxDelta are what walk computes: the largest record
// timestamp (from NoTimestamp) and the offset delta of its first record,
// -1 if none exceeds NoTimestamp.
//
// FuzzWalkFast holds the two walks to that contract.
func walkFast(data []byte, h *Header, opts *ValidateOptions) (maxTs int64, maxDelta int32, ok bool) {
	maxTs, maxDelta = NoTimestamp, -1
	count := h.NumRecords
	base := h.BaseTimestamp
	appendTime := h.TimestampType() == LogAppendTime
	requireKeys := opts.RequireKeys
	checkTs := opts.CheckTimestamps
	pos := 0
	for i := int32(0); i < count; i++ {
		// Record length. Every record has at least the attributes byte
		// and five one-byte varints after its length, so a length below
		// that is a fault as well (the slow walk finds which).
		size, p := varint2At(data, pos)
		if p < 0 {
			if size, p = varintSlow(data, pos); p < 0 {
				return 0, 0, false
			}
		}
		if size < minRecordSize-1 || int(size) > len(data)-p {
			return 0, 0, false
		}
		pos = p + int(size)
		rec := data[p:pos]

		// rec[0] is the attributes byte, which nothing checks.
		tsDelta, p := varlong2At(rec, 1)
		if p < 0 {
			if tsDelta, p = varlongSlow(rec, 1); p < 0 {
				return 0, 0, false
			}
		}
		offDelta, q := varint2At(rec, p)
		if q < 0 {
			if offDelta, q = varintSlow(rec, p); q < 0 {
				return 0, 0, false
			}
		}
		if offDelta != i {
			return 0, 0, false
		}
		klen, p := varint2At(rec, q)
		if p < 0 {
			if klen, p = varintSlow(rec, q); p < 0 {
				return 0, 0, false
			}
		}
		if klen < -1 || int(klen) > len(rec)-p {
			return 0, 0, false
		}
		if klen == -1 {
			if requireKeys {
				return 0, 0, false
			}
		} else {
			p += int(klen)
		}
		vlen, q := varint2At(rec, p)
		if q < 0 {
			if vlen, q = varintSlow(rec, p); q < 0 {
				return 0, 0, false
			}
		}
		if vlen < -1 || int(vlen) > len(rec)-q {
			return 0, 0, false
		}
		if vlen > 0 {
			q += int(vlen)
		}
		// The header count, most often a zero as the record's last byte.
		if q != len(rec)-1 || rec[q] != 0 {
			if !headersFit(rec, q) {
				return 0, 0, false
			}
		}

		ts := base + tsDelta // wraps like Java's long addition
		if appendTime {
			ts = h.MaxTimestamp
		}
		if ts > maxTs {
			maxTs, maxDelta = ts, offDelta
		}
		if checkTs && ts != NoTimestamp {
			if d := opts.Now - ts; d > opts.TimestampBeforeMaxMs || -d > opts.TimestampAfterMaxMs {
				return 0, 0, false
			}
		}
	}
	if pos != len(data) {
		return 0, 0, false
	}
	return maxTs, maxDelta, true
}

// varint2At decodes the zig-zag varint int32 at b[p:] when it takes one or
// two bytes and b holds at least two bytes from p, and returns it with the
// position after it; otherwise it returns position -1 and the caller asks
// varintSlow (so a one-byte varint in b's last byte takes the slow way:
// walkFast checks the header count, the usual last byte, in place). It
// has no call in it so that the compiler inlines it (cost 74 of 80): a
// call per field was most of the walk's time on small records.
func varint2At(b []byte, p int) (int32, int) {
	if p+1 < len(b) {
		c, d := uint32(b[p]), uint32(b[p+1])
		if c < 0x80 {
			return int32(c>>1) ^ -int32(c&1), p + 1
		}
		if d < 0x80 {
			u := c&0x7f | d<<7
			return int32(u>>1) ^ -int32(u&1), p + 2
		}
	}
	return 0, -1
}

// varintSlow decodes the zig-zag varint int32 at b[p:] (p ≤ len(b)) in any
// valid form, or returns position -1 if it is truncated or too long. It is
// kept out of line so that its callers stay small.
//
//go:noinline
func varintSlow(b []byte, p int) (int32, int) {
	if p > len(b) {
		return 0, -1
	}
	v, n := readVarint(b[p:])
	if n <= 0 {
		return 0, -1
	}
	return v, p + n
}

// varlong2At is varint2At for a zig-zag varint int64 (readVarlong).
func varlong2At(b []byte, p int) (int64, int) {
	if p+1 < len(b) {
		c, d := uint64(b[p]), uint64(b[p+1])
		if c < 0x80 {
			return int64(c>>1) ^ -int64(c&1), p + 1
		}
		if d < 0x80 {
			u := c&0x7f | d<<7
			return int64(u>>1) ^ -int64(u&1), p + 2
		}
	}
	return 0, -1
}

// varlongSlow is varintSlow for a zig-zag varint int64.
//
//go:noinline
func varlongSlow(b []byte, p int) (int64, int) {
	if p > len(b) {
		return 0, -1
	}
	v, n := readVarlong(b[p:])
	if n <= 0 {
		return 0, -1
	}
	return v, p + n
}

// headersFit reports whether rec[p:] is a header count and that many
// record headers ending exactly at the end of rec, as the slow walk checks
// them. Records with headers are the less common shape; readVarint is
// inlined here.
func headersFit(rec []byte, p int) bool {
	numHeaders, n := readVarint(rec[p:])
	if n <= 0 {
		return false
	}
	p += n
	// Each header needs at least two bytes; this also bounds the loop.
	if numHeaders < 0 || int(numHeaders) > (len(rec)-p)/2 {
		return false
	}
	for range numHeaders {
		hk, n := readVarint(rec[p:])
		if n <= 0 || hk < 0 || int(hk) > len(rec)-p-n {
			return false
		}
		p += n + int(hk)
		hv, n := readVarint(rec[p:])
		if n <= 0 || hv < -1 || int(hv) > len(rec)-p-n {
			return false
		}
		p += n + max(int(hv), 0)
	}
	return p == len(rec)
}
