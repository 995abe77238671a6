package batch

// walkFast is Validate's record walk for the common case, a well-formed
// batch: one pass over the record framing that decodes only what the rules
// need (lengths, the timestamp delta, the offset delta, key nullness) with
// one-byte varints decoded inline, and no Record built per record. It
// reports ok only when the slow walk (walk, over scanner.next) would accept
// data with the same options; it stops at the first fault of any kind, and
// Validate then runs the slow walk to find the fault Kafka would report and
// its code. A valid batch is therefore walked once, an invalid one twice.
//
// On ok, maxTs and maxDelta are what walk computes: the largest record
// timestamp (from NoTimestamp) and the offset delta of its first record,
// -1 if none exceeds NoTimestamp.
//
// FuzzWalkFast holds the two walks to that contract.
func walkFast(data []byte, h *Header, opts *ValidateOptions) (maxTs int64, maxDelta int32, ok bool) {
	maxTs, maxDelta = NoTimestamp, -1
	count := h.NumRecords
	appendTime := h.TimestampType() == LogAppendTime
	pos := 0
	for i := range count {
		// Record length.
		size, n := fastVarint(data[pos:])
		if n <= 0 || size < 0 || int(size) > len(data)-pos-n {
			return 0, 0, false
		}
		body := data[pos+n : pos+n+int(size)]
		pos += n + int(size)
		if len(body) < minRecordSize-1 {
			return 0, 0, false // attributes and five one-byte varints at least
		}
		// body[0] is the attributes byte, which nothing checks.
		p := 1
		tsDelta, n := fastVarlong(body[p:])
		if n <= 0 {
			return 0, 0, false
		}
		p += n
		offDelta, n := fastVarint(body[p:])
		if n <= 0 || offDelta != i {
			return 0, 0, false
		}
		p += n
		klen, n := fastVarint(body[p:])
		if n <= 0 || klen < -1 || int(klen) > len(body)-p-n {
			return 0, 0, false
		}
		if klen == -1 && opts.RequireKeys {
			return 0, 0, false
		}
		p += n + max(int(klen), 0)
		vlen, n := fastVarint(body[p:])
		if n <= 0 || vlen < -1 || int(vlen) > len(body)-p-n {
			return 0, 0, false
		}
		p += n + max(int(vlen), 0)
		numHeaders, n := fastVarint(body[p:])
		if n <= 0 {
			return 0, 0, false
		}
		p += n
		if numHeaders < 0 || int(numHeaders) > (len(body)-p)/2 {
			return 0, 0, false
		}
		for range numHeaders {
			hk, n := fastVarint(body[p:])
			if n <= 0 || hk < 0 || int(hk) > len(body)-p-n {
				return 0, 0, false
			}
			p += n + int(hk)
			hv, n := fastVarint(body[p:])
			if n <= 0 || hv < -1 || int(hv) > len(body)-p-n {
				return 0, 0, false
			}
			p += n + max(int(hv), 0)
		}
		if p != len(body) {
			return 0, 0, false
		}

		ts := h.BaseTimestamp + tsDelta // wraps like Java's long addition
		if appendTime {
			ts = h.MaxTimestamp
		}
		if ts > maxTs {
			maxTs, maxDelta = ts, offDelta
		}
		if opts.CheckTimestamps && ts != NoTimestamp {
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

// fastVarint is readVarint with the one-byte case (values -64..63: most
// lengths of small fields, every offset delta below 64) decoded inline.
func fastVarint(b []byte) (int32, int) {
	if len(b) > 0 && b[0] < 0x80 {
		x := uint32(b[0])
		return int32(x>>1) ^ -int32(x&1), 1
	}
	return readVarint(b)
}

// fastVarlong is readVarlong with the one-byte case decoded inline.
func fastVarlong(b []byte) (int64, int) {
	if len(b) > 0 && b[0] < 0x80 {
		x := uint64(b[0])
		return int64(x>>1) ^ -int64(x&1), 1
	}
	return readVarlong(b)
}
