package broker

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"os"
	"runtime/pprof"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"github.com/kbroker/kbroker/fault"
	klog "github.com/kbroker/kbroker/log"
	"github.com/kbroker/kbroker/protocol"
	"github.com/kbroker/kbroker/sendfile"
)

// conn is one client connection. A reader goroutine reads, decodes and
// handles requests strictly in arrival order (the append of a produce
// happens before the next request is read, so idempotent sequences stay
// ordered); a writer goroutine sends the responses in the same order,
// waiting for a pending one (a produce waiting for its group commit) before
// those behind it. The queue between them is bounded, which bounds the
// responses in flight per connection.
//
// A response that is complete when handled, with nothing queued before it,
// the reader writes itself (enqueue): handing it to the writer cost a
// goroutine wake-up per request, 7-10 % of the broker's CPU end to end
// (docs/BENCHMARKS.md).
type conn struct {
	b *Broker
	// l is the listener the connection arrived on.
	l *listener
	// nc is the accepted socket: deadlines and Close go to it.
	nc net.Conn
	// io is what requests are read from and responses written to: nc, or
	// the TLS connection over it. Set before the reader and writer start.
	io net.Conn
	// tls is set on TLS connections: fetch then copies record bytes out
	// of the mapping (fault-guarded) for the TLS writer to encrypt, since
	// sendfile cannot encrypt.
	tls bool
	lg  *zap.Logger

	// out carries responses to the writer in request order.
	out chan outgoing
	// queued counts the responses handed to the writer and not yet
	// written: the reader adds one before sending on out (or holding a
	// fetch, fetch_held.go), the writer
	// takes it off once the response is written (or dropped). Only the
	// reader adds, so when it reads 0 the writer holds nothing and will
	// get nothing until the reader queues again: the reader may write,
	// and everything the writer wrote happened before (the atomic orders
	// it), including its use of sw and the write deadline.
	queued atomic.Int64
	// held is the parked fetch the connection holds for the writer to
	// answer (fetch_held.go).
	held heldFetch
	// inlineBuf is the reader's buffer for the responses it writes
	// itself; reader goroutine only.
	inlineBuf []byte
	// ctx ends when the connection closes; cancel ends it.
	ctx    context.Context
	cancel context.CancelFunc
	// stopping is set when shutdown asked the reader to stop.
	stopping atomic.Bool
	// draining is set when the reader stopped at an unreadable request:
	// the writer sends the answers still due within drainTimeout.
	draining atomic.Bool

	// sw sends fetch responses: the writer, or the reader when it writes
	// (queued is 0), never both at once.
	sw *sendfile.Writer
	// mapped lists the commit-log spans the fetch response being sent is
	// written from through the mapping, to unmap once it is out; used as
	// sw is.
	mapped mappedSpans

	// clientID is the client id of the last request; only the reader
	// goroutine (and the handlers it runs) use it.
	clientID string
	// inject is the fault rule that fired on the request being handled,
	// while its handler runs (conn.injected); reader goroutine only.
	inject *fault.Decision
	// principal is who the connection is authenticated as ("User:alice";
	// User:ANONYMOUS without authentication); the reader goroutine and
	// its handlers use it.
	principal string
	// auth is the SASL state on SASL listeners, nil elsewhere.
	auth *saslState
	// host is the peer's IP address as Kafka prints it, which
	// host-restricted ACLs match (acl.HostAddress).
	host string
	// grow is growFrame, taken once (a method value allocates each
	// time).
	grow protocol.GrowFunc
	// produce is what the connection reuses for its Produce requests;
	// reader goroutine only.
	produce struct {
		// req is decoded anew into the same arrays for every produce
		// (parseBody).
		req *kmsg.ProduceRequest
		// scratch is handleProduce's.
		scratch produceScratch
	}
	// fetch holds the connection's Fetch states (fetch_state.go).
	fetch struct {
		// cur is the state of the fetch being handled until its handler
		// claims it; reader goroutine only.
		cur *fetchState
		// free is a state to decode the next fetch into; a parked fetch
		// puts its state back from its own goroutine.
		free atomic.Pointer[fetchState]
	}
}

// outgoing is one response waiting to be written.
type outgoing struct {
	corr int32
	res  result
	// t is when the request was handled, for the request metrics; zero
	// for an answer the dispatcher made without a handler.
	t timing
}

func newConn(b *Broker, l *listener, nc net.Conn) *conn {
	ctx, cancel := context.WithCancel(context.Background())
	c := &conn{
		b:         b,
		l:         l,
		nc:        nc,
		io:        nc,
		lg:        b.lg.With(zap.String("remote", nc.RemoteAddr().String()), zap.String("listener", l.name)),
		out:       make(chan outgoing, b.cfg.MaxInFlightPerConnection),
		ctx:       ctx,
		cancel:    cancel,
		principal: anonymous,
		host:      connHost(nc),
	}
	c.grow = c.growFrame
	c.initHeld()
	if l.sasl() {
		c.auth = &saslState{deadline: time.Now().Add(b.authTimeout())}
	}
	return c
}

// advertised is the host and port of the connection's listener as
// clients are told (Metadata, FindCoordinator, DescribeCluster).
func (c *conn) advertised() (string, int32) { return c.l.advHost, c.l.advPort }

// stopReading makes the reader stop after the request it is handling; the
// writer still sends every response already due.
func (c *conn) stopReading() {
	c.stopping.Store(true)
	c.nc.SetReadDeadline(time.Now())
}

// serve runs the connection until it closes.
func (c *conn) serve() {
	if c.l.tlsConfig != nil && !c.startTLS() {
		c.cancel()
		c.nc.Close()
		return
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		pprof.Do(c.ctx, pprof.Labels("conn", "writer"), func(context.Context) { c.writeLoop() })
	}()
	var gone bool
	pprof.Do(c.ctx, pprof.Labels("conn", "reader"), func(context.Context) { gone = c.readLoop() })
	c.b.frames.disown(c)
	switch {
	case c.stopping.Load():
	case gone:
		// The client went away: nobody will read the responses still
		// due, so end the parked fetches now rather than at their
		// max_wait.
		c.cancel()
	default:
		// The client sent something unreadable. Kafka reads a
		// connection's next request only after answering the last, so
		// a client there gets every answer due before the close; so
		// here: the writer sends what is queued, then the connection
		// closes. A parked fetch may wait for data no longer than
		// drainTimeout, and so may each write.
		c.draining.Store(true)
		t := time.AfterFunc(drainTimeout, c.cancel)
		defer t.Stop()
	}
	close(c.out) // the writer drains what is queued, then exits
	wg.Wait()
	c.cancel()
	c.nc.Close()
}

// readLoop reads and handles requests until an error or shutdown. It
// reports whether it stopped because the client went away (or the
// connection was idle), as opposed to sending something unreadable.
func (c *conn) readLoop() (gone bool) {
	br := bufio.NewReaderSize(c.io, 64<<10)
	var buf []byte
	for {
		if c.stopping.Load() {
			return false
		}
		deadline, limit, budgeted := time.Now().Add(c.b.cfg.ConnectionsMaxIdle), c.b.cfg.MaxRequestBytes, true
		if c.auth != nil && !c.auth.authenticated {
			// Until authenticated: small frames, outside the shared
			// budget, and a deadline for the whole login.
			deadline, limit, budgeted = c.auth.deadline, min(limit, saslMaxReceive), false
		}
		c.nc.SetReadDeadline(deadline)
		n, err := protocol.ReadSize(br, limit)
		if err != nil {
			c.readFailed("read request size", err)
			return !errors.Is(err, protocol.ErrFrameTooLarge)
		}
		if budgeted {
			if err := c.b.budget.acquire(c.ctx, int64(n)); err != nil {
				return true
			}
		}
		frame := buf[:0]
		if int(n) > cap(buf) {
			if f := c.b.frames.get(int(n), int(n), c); f != nil {
				frame = f
			}
		}
		frame, err = protocol.ReadBodyGrow(br, n, frame, c.grow)
		if err == nil {
			err = c.handleFrame(frame)
		} else {
			c.readFailed("read request", err)
			gone = true
		}
		if budgeted {
			c.b.budget.release(int64(n))
		}
		if errors.Is(err, errSwallowed) {
			// A fault rule swallowed the request: like a hung broker,
			// answer nothing more, and read (and drop) what the client
			// still sends until it gives up.
			c.discardInput(br)
			return true
		}
		if cap(frame) > keptFrame {
			// Not kept for an idle connection, but cached, for this
			// connection's next request first (frameCache.get); buf
			// stays for the small ones.
			c.b.frames.put(frame, c)
		} else {
			buf = frame
		}
		if err != nil {
			return gone
		}
	}
}

// discardInput reads and drops the connection's input until the client
// closes it, the idle timeout passes or shutdown stops the reader.
func (c *conn) discardInput(br *bufio.Reader) {
	c.nc.SetReadDeadline(time.Now().Add(c.b.cfg.ConnectionsMaxIdle))
	if c.stopping.Load() {
		return
	}
	io.Copy(io.Discard, br)
}

// drainTimeout bounds how long the answers still due may take to write
// once a connection sent an unreadable request.
const drainTimeout = 5 * time.Second

// growFrame is the reader's protocol.GrowFunc: the broker's frames.grow
// for this connection, which has first claim on the buffer it puts back.
func (c *conn) growFrame(buf []byte, need, size int) []byte {
	return c.b.frames.grow(buf, need, size, c)
}

// keptFrame is the largest request buffer a connection keeps between
// requests; larger ones go back to the broker's frames (frame_cache.go)
// after each request.
const keptFrame = 1 << 20

// readFailed logs why reading stopped, quietly for ordinary closes.
func (c *conn) readFailed(what string, err error) {
	switch {
	case c.stopping.Load(), errors.Is(err, io.EOF), errors.Is(err, net.ErrClosed):
		return
	case errors.Is(err, os.ErrDeadlineExceeded):
		c.lg.Debug("closing idle connection")
	default:
		c.lg.Info("closing connection", zap.String("reason", what), zap.Error(err))
	}
}

// handleFrame decodes and handles one request; an error closes the
// connection.
func (c *conn) handleFrame(frame []byte) error {
	if c.auth != nil && c.auth.stage == stageRawToken {
		return c.handleRawToken(frame)
	}
	h, rest, err := protocol.ParseHeaderReusing(frame, &c.clientID)
	if err != nil {
		c.lg.Info("closing connection: unreadable request header", zap.Error(err))
		return err
	}
	if c.auth != nil {
		if err := c.gateSASL(&h); err != nil {
			if errors.Is(err, errAnswerIllegalSASLState) {
				return c.answerIllegalSASLState(&h, rest)
			}
			return err
		}
	}
	if h.ClientID != nil {
		c.clientID = *h.ClientID
	}
	a := c.b.idx.lookup(h.Key, h.Version)
	if a == nil {
		if h.Key == 18 {
			// Kafka answers an ApiVersions version it does not know with
			// UNSUPPORTED_VERSION in a v0 body listing what it supports.
			resp := kmsg.NewPtrApiVersionsResponse()
			resp.ErrorCode = kerr.UnsupportedVersion.Code
			c.b.fillApiVersions(resp)
			return c.enqueue(h.CorrelationID, result{resp: resp}, timing{})
		}
		c.lg.Info("closing connection: unsupported request",
			zap.String("api", kmsg.NameForKey(h.Key)), zap.Int16("key", h.Key), zap.Int16("version", h.Version),
			zap.String("client_id", c.clientID))
		return errUnsupported
	}
	req, err := c.parseBody(h, rest)
	if err != nil {
		c.lg.Info("closing connection: unreadable request", zap.String("client_id", c.clientID), zap.Error(err))
		return err
	}
	if req == c.produce.req {
		defer c.releaseProduce()
	}
	if c.fetch.cur != nil {
		defer c.releaseUnclaimedFetch()
	}
	if ce := c.lg.Check(zap.DebugLevel, "request"); ce != nil {
		ce.Write(zap.String("api", kmsg.NameForKey(h.Key)), zap.Int16("version", h.Version), zap.Int32("correlation_id", h.CorrelationID))
	}
	c.b.metrics.request(h.Key, h.Version)
	t := timing{key: h.Key, version: h.Version, started: time.Now()}
	if c.b.faults.Active() {
		if d := c.b.faults.Decide(c.faultRequest(h.Key, h.Version, req)); d != nil {
			return c.handleFault(h.CorrelationID, a, req, d, t)
		}
	}
	var res result
	if c.b.nodes != nil {
		// A simulated node that does not coordinate what the request
		// names answers NOT_COORDINATOR (nodes_check.go).
		if resp := c.notCoordinator(req); resp != nil {
			res.resp = resp
		}
	}
	if res.resp == nil {
		res, err = a.handle(c.b, c, req)
	}
	t.handled = time.Now()
	c.b.metrics.apis[h.Key].Handle.ObserveDuration(t.handled.Sub(t.started))
	if errors.Is(err, errCloseAfterResponse) {
		// Send the answer (a failed login, a refused mechanism), then
		// close: the drain path writes what is queued.
		if qerr := c.enqueue(h.CorrelationID, res, t); qerr != nil {
			return qerr
		}
		return err
	}
	if err != nil {
		c.lg.Info("closing connection: handler failed", zap.String("api", kmsg.NameForKey(h.Key)), zap.Error(err))
		return err
	}
	if res.none {
		return nil
	}
	return c.enqueue(h.CorrelationID, res, t)
}

// parseBody decodes a request body. Produce requests are decoded into the
// connection's kept request, reusing its arrays, so that a producer's
// stream of requests allocates nothing to decode: their handler holds
// nothing of the request once it returns (the appends are done and the
// response is its own).
//
// Fetch requests likewise decode into a fetch state of the connection's
// (fetch_state.go), which the handler claims and recycles once the answer
// is encoded, after a park if it parks.
func (c *conn) parseBody(h protocol.Header, rest []byte) (kmsg.Request, error) {
	if h.Key == 1 {
		st := c.takeFetchState()
		if err := protocol.ParseFetchBody(h, rest, &st.req); err != nil {
			c.recycleFetch(st)
			return nil, err
		}
		c.fetch.cur = st
		return &st.req, nil
	}
	if h.Key != 0 {
		return protocol.ParseBody(h, rest)
	}
	if c.produce.req == nil {
		c.produce.req = kmsg.NewPtrProduceRequest()
	}
	if err := protocol.ParseProduceBody(h, rest, c.produce.req); err != nil {
		return nil, err
	}
	return c.produce.req, nil
}

// releaseProduce ends the handling of a produce request: the kept request
// lets go of the frame, and a request of more than keptProducePartitions
// partitions is not kept at all, so that one huge request does not cost
// its connection memory for as long as it lives.
func (c *conn) releaseProduce() {
	ts := c.produce.req.Topics[:cap(c.produce.req.Topics)]
	n := len(ts)
	for i := range ts {
		n += cap(ts[i].Partitions)
	}
	if n > keptProducePartitions {
		c.produce.req = nil
		c.produce.scratch = produceScratch{}
		return
	}
	protocol.ClearProduce(c.produce.req)
}

// keptProducePartitions bounds the topics and partitions (about 40 and
// 100 bytes each) of the produce request a connection keeps for reuse.
const keptProducePartitions = 1024

var errUnsupported = errors.New("broker: unsupported api key or version")

// errNoFetchResponse means a fetch result reached the writer unencoded, a
// broken invariant that closes the connection rather than the process.
var errNoFetchResponse = errors.New("broker: fetch response was not encoded")

// enqueue sends a response or hands it to the writer, waiting while the
// connection has MaxInFlightPerConnection responses queued.
//
// The reader sends it itself when the writer holds nothing (queued is 0:
// responses stay in request order) and it is complete now: not waiting
// for a group commit or a park, not throttled by a fault rule. While it
// writes it reads nothing more, as Kafka, which mutes a connection until
// its response is sent; a client that does not read its responses stops
// the reader once the socket's send buffer is full, where before it did
// MaxInFlightPerConnection responses later. A failed write closes the
// connection as the writer's does; the reader's next read then ends. A
// parked session fetch with nothing queued before it the connection holds
// for the writer to answer, without handing it over (fetch_held.go).
func (c *conn) enqueue(corr int32, res result, t timing) error {
	o := outgoing{corr: corr, res: res, t: t}
	if c.queued.Load() == 0 && c.ctx.Err() == nil {
		if inlineable(&res) {
			var err error
			if c.inlineBuf, err = c.send(o, c.inlineBuf); err != nil {
				c.writeFailed(err)
			}
			return nil
		}
		if holdable(&res) && c.hold(o) {
			return nil
		}
	}
	c.queued.Add(1)
	select {
	case c.out <- o:
		return nil
	case <-c.ctx.Done():
		c.queued.Add(-1)
		return c.ctx.Err()
	}
}

// inlineable reports whether a response can be written as soon as it is
// handled: nothing to wait for, and no throttled pacing to hold the
// reader.
func inlineable(res *result) bool {
	return res.ready == nil && res.throttle == 0 && (res.fetch == nil || res.fetch.parked == nil)
}

// writeFetch sends a fetch response: the framing bytes and every record
// range, in order, corked so that they share full packets; then it
// releases the files. A range of at least the copy threshold goes with
// sendfile(2) from its commit-log file at an explicit offset, unless its
// page cache may carry readahead marks (mappedMinBytes). A smaller one
// goes with the writev of the framing around it, straight from the
// commit-log mapping: for such ranges a sendfile call costs more than
// copying them (docs/BENCHMARKS.md), and the kernel copies them from the
// page cache into the socket once, where reading them with pread(2) first
// copied every byte twice. Record bytes never enter the Go heap, and Go
// never touches the mapping: a fault on it (a media error) fails the
// writev and closes the connection instead of crashing the broker.
//
// The pages a response maps are unmapped after it is sent (Unmap,
// MADV_DONTNEED), in batches across connections (sentSpans): they stay in
// the page cache, but would otherwise count in the broker's resident
// memory, which then grew with everything small
// batches were read from (1.1 GB after reading 1 GB of 16 KiB batches),
// page cache that Kafka, which reads with system calls, uses without it
// counting as its own.
//
// On TLS every range is encrypted in Go, so it is read with pread into
// the write buffer instead, neighbours in one file together (copySpan).
func (c *conn) writeFetch(corr int32, fr *fetchResult) error {
	defer fr.recycle()
	f := &fr.frame
	if len(f.Bytes) < 8 {
		return errNoFetchResponse
	}
	binary.BigEndian.PutUint32(f.Bytes[4:], uint32(corr))
	if c.sw == nil {
		c.sw = sendfile.NewWriter(c.io)
	}
	// Before fr.recycle releases the files (deferred calls run last in,
	// first out), also when the response fails half-way.
	defer c.unmapSent()
	threshold := int64(c.b.cfg.FetchCopyThreshold)
	if c.tls {
		return c.writeFetchCopied(f, math.MaxInt64)
	}
	var small int64
	marked := false
	for _, s := range f.Splices {
		m := s.Range.Handle.(*klog.MappedFile)
		if m.ReadaheadMarked(s.Range.Offset) {
			marked = true
			small += s.Range.Len
		} else if s.Range.Len < threshold {
			small += s.Range.Len
		}
	}
	if small < mappedMinBytes && !marked {
		return c.writeFetchCopied(f, threshold)
	}
	var copied int64
	prev := 0
	for _, s := range f.Splices {
		m := s.Range.Handle.(*klog.MappedFile)
		c.sw.Bytes(f.Bytes[prev:s.At])
		prev = s.At
		if s.Range.Len >= threshold && !m.ReadaheadMarked(s.Range.Offset) {
			c.sw.File(m.File(), s.Range.Offset, s.Range.Len)
			continue
		}
		b, err := m.SyscallBytes(s.Range.Offset, s.Range.Len)
		if err != nil {
			c.sw.Discard()
			return err
		}
		c.sw.Bytes(b)
		c.mapped = c.mapped.add(m, s.Range.Offset, s.Range.Len)
		copied += s.Range.Len
	}
	c.sw.Bytes(f.Bytes[prev:])
	c.b.copiedBytes.Add(copied)
	_, err := c.sw.Flush()
	return err
}

// unmapSent hands the commit-log spans the last response was written from
// (writeFetch) to the broker's set of sent spans, and unmaps the ones the
// set says are due (sentSpans).
func (c *conn) unmapSent() {
	if len(c.mapped) == 0 {
		return
	}
	due := c.b.sent.add(c.mapped, time.Now())
	c.b.sent.unmap(due)
	clear(due)
	c.mapped = due[:0]
}

// mappedSpan is a span of one commit-log file that a response is written
// from through the mapping: the union of its ranges there, with the gaps
// between them (other partitions' batches, entry headers).
type mappedSpan struct {
	m      *klog.MappedFile
	lo, hi int64
}

// mappedSpans lists the spans of a response, at most one per file and
// stretch of it.
type mappedSpans []mappedSpan

// mappedSpanGap is the widest gap between a range and a span of the same
// file that add bridges rather than starting a new span. Partitions
// interleave in the commit log, so a consumer of several partitions reads
// ranges spread over one stretch of a file: one madvise for the stretch is
// cheaper than one per range, and the pages between were likely mapped by
// the kernel's fault-around (up to 64 KiB around a fault) anyway. Ranges
// further apart get their own span, so that one madvise never walks the
// page tables of a whole file for two distant ranges.
const mappedSpanGap = 1 << 20

// add records the range [off, off+n) of m.
func (ms mappedSpans) add(m *klog.MappedFile, off, n int64) mappedSpans {
	r := mappedSpan{m: m, lo: off, hi: off + n}
	for i := len(ms) - 1; i >= 0; i-- {
		if ms[i].absorb(r) {
			return ms
		}
	}
	return append(ms, r)
}

// absorb extends s to cover r, and reports true, when r is of s's file and
// overlaps s or lies within mappedSpanGap of it; otherwise it leaves s as
// it is.
func (s *mappedSpan) absorb(r mappedSpan) bool {
	if s.m != r.m || r.lo > s.hi+mappedSpanGap || r.hi < s.lo-mappedSpanGap {
		return false
	}
	s.lo, s.hi = min(s.lo, r.lo), max(s.hi, r.hi)
	return true
}

// mappedMinBytes is the least a response's ranges under the copy threshold
// add up to for writeFetch to write them from the mapping. A response of
// less (a consumer at the tail, one record each time) is read with pread
// instead: for a few KiB the copy costs less than the madvise that unmaps
// the pages and the faults that map them again for the next response.
// Not where the page cache may carry readahead marks (ReadaheadMarked:
// huge pages filled ahead with kbroker.log.huge.pages): a pread or a
// sendfile meeting one zero-fills the next readahead window past the
// write position while the consumer waits (20 ms every 8 MiB where
// read_ahead_kb is 8,192). A fault in the mapping ignores the marks, and
// maps 2 MiB at a time. Ranges there of any size go from the mapping.
const mappedMinBytes = 64 << 10

// writeFetchCopied is writeFetch for TLS connections and small responses:
// the ranges under threshold (every range on TLS, which encrypts in Go)
// are read with pread(2) into a pooled chunk, neighbours in one file with
// one call (copySpan); the others go with sendfile. The chunk is sent and
// reused whenever it fills, so the heap never grows with the response.
func (c *conn) writeFetchCopied(f *protocol.FetchFrame, threshold int64) error {
	var chunk *[]byte // taken from copyChunks at the first range to copy
	defer func() {
		if chunk != nil {
			putCopyChunk(chunk)
		}
	}()
	var cb []byte
	var copied int64
	prev := 0
	for i := 0; i < len(f.Splices); {
		s := f.Splices[i]
		m := s.Range.Handle.(*klog.MappedFile)
		if s.Range.Len >= threshold {
			c.sw.Bytes(f.Bytes[prev:s.At])
			prev = s.At
			c.sw.File(m.File(), s.Range.Offset, s.Range.Len)
			i++
			continue
		}
		if chunk == nil {
			chunk = takeCopyChunk(f.Splices[i:], threshold)
			cb = (*chunk)[:0]
		}
		if s.Range.Len > int64(cap(cb)) {
			// A batch larger than the chunk (on TLS, where every range is
			// copied) goes in chunk-sized pieces.
			c.sw.Bytes(f.Bytes[prev:s.At])
			prev = s.At
			var err error
			if cb, err = c.copyLarge(m, cb, s.Range.Offset, s.Range.Len); err != nil {
				c.sw.Discard()
				return err
			}
			copied += s.Range.Len
			i++
			continue
		}
		if len(cb)+int(s.Range.Len) > cap(cb) {
			// The chunk is full: send what is queued and reuse it.
			c.sw.Bytes(f.Bytes[prev:s.At])
			prev = s.At
			if _, err := c.sw.Flush(); err != nil {
				return err
			}
			cb = cb[:0]
		}
		j, span := copySpan(f.Splices, i, threshold, int64(cap(cb)-len(cb)))
		start := len(cb)
		cb = cb[:start+int(span)]
		if err := c.readRange(m, cb[start:], s.Range.Offset); err != nil {
			c.sw.Discard()
			return err
		}
		for _, t := range f.Splices[i:j] {
			c.sw.Bytes(f.Bytes[prev:t.At])
			prev = t.At
			at := start + int(t.Range.Offset-s.Range.Offset)
			c.sw.Bytes(cb[at : at+int(t.Range.Len)])
			copied += t.Range.Len
		}
		i = j
	}
	c.sw.Bytes(f.Bytes[prev:])
	c.b.copiedBytes.Add(copied)
	_, err := c.sw.Flush()
	return err
}

// copySpanGap is the most bytes between two small ranges of one file that
// copySpan reads along with them rather than issuing a second pread: a
// commit-log entry's header between batches of one partition (32 bytes),
// or a few small batches of other partitions.
const copySpanGap = 4 << 10

// copySpan returns the end j of the run of splices from i whose ranges
// can be read with one pread: below the copy threshold, in the file of
// splice i, in order, each starting at most copySpanGap after the last
// ended, and span, the bytes from the first range's start to the last
// one's end, at most room. Splice i alone always qualifies (the caller
// made room for it).
func copySpan(splices []protocol.Splice, i int, threshold, room int64) (j int, span int64) {
	first := splices[i].Range
	end := first.Offset + first.Len
	for j = i + 1; j < len(splices); j++ {
		r := splices[j].Range
		if r.Handle != first.Handle || r.Len >= threshold || r.Offset < end || r.Offset-end > copySpanGap ||
			r.Offset+r.Len-first.Offset > room {
			break
		}
		end = r.Offset + r.Len
	}
	return j, end - first.Offset
}

// readRange reads len(dst) bytes of m at file offset off with pread(2).
// The caller holds the file, and the bytes are readable (below its read
// position), so a short read is an error: the file was cut underneath or
// the disk failed. Where a pread would act on readahead marks
// (ReadaheadMarked; on TLS, which copies every range), it copies from the
// mapping instead, a fault there becoming an error, and leaves the pages
// to be unmapped with the response's spans.
func (c *conn) readRange(m *klog.MappedFile, dst []byte, off int64) error {
	if m.ReadaheadMarked(off) {
		if err := m.CopyTo(dst, off); err != nil {
			return fmt.Errorf("copy %d bytes at %d of %s: %w", len(dst), off, m.Path(), err)
		}
		c.mapped = c.mapped.add(m, off, int64(len(dst)))
		return nil
	}
	n, err := m.File().ReadAt(dst, off)
	if n == len(dst) {
		return nil
	}
	if err == nil || errors.Is(err, io.EOF) {
		err = io.ErrUnexpectedEOF
	}
	return fmt.Errorf("read %d bytes at %d of %s: %w", len(dst), off, m.File().Name(), err)
}

// copyLarge copies a range larger than a chunk out of the file in
// chunk-sized pieces, sending each before the next overwrites the chunk.
func (c *conn) copyLarge(m *klog.MappedFile, cb []byte, off, n int64) ([]byte, error) {
	for n > 0 {
		if len(cb) == cap(cb) {
			if _, err := c.sw.Flush(); err != nil {
				return cb, err
			}
			cb = cb[:0]
		}
		k := min(n, int64(cap(cb)-len(cb)))
		start := len(cb)
		cb = cb[:start+int(k)]
		if err := c.readRange(m, cb[start:], off); err != nil {
			return cb, err
		}
		c.sw.Bytes(cb[start:])
		off, n = off+k, n-k
	}
	return cb, nil
}

// copyChunk is the size of the buffers for fetch ranges below the copy
// threshold (at most 1 MiB, so one range always fits). They are pooled
// broker-wide and held only while a response is being sent, so idle
// connections and connections whose batches all go with sendfile hold
// none.
const copyChunk = 1 << 20

var copyChunks = sync.Pool{New: func() any { b := make([]byte, 0, copyChunk); return &b }}

// smallCopyChunk is the size of the buffers for responses whose ranges
// below the copy threshold add up to no more: a consumer that keeps up
// gets a record or a few per fetch, and a 1 MiB chunk for those, made
// anew whenever a collection emptied the pool, was a tenth of what the
// broker allocated end to end.
const smallCopyChunk = 64 << 10

var smallCopyChunks = sync.Pool{New: func() any { b := make([]byte, 0, smallCopyChunk); return &b }}

// takeCopyChunk is a buffer for the ranges of splices below threshold: a
// small one when they fit in it, else a full chunk.
func takeCopyChunk(splices []protocol.Splice, threshold int64) *[]byte {
	var n int64
	for _, s := range splices {
		if s.Range.Len < threshold {
			if n += s.Range.Len; n > smallCopyChunk {
				return copyChunks.Get().(*[]byte)
			}
		}
	}
	return smallCopyChunks.Get().(*[]byte)
}

// putCopyChunk returns a buffer of takeCopyChunk's to its pool.
func putCopyChunk(b *[]byte) {
	if cap(*b) == smallCopyChunk {
		smallCopyChunks.Put(b)
		return
	}
	copyChunks.Put(b)
}

// writeLoop writes the queued responses in request order, and answers
// the held fetch (fetch_held.go) when it may be, or before the next
// response.
func (c *conn) writeLoop() {
	var buf []byte
	broken := false
	for {
		var done, stop <-chan struct{}
		if c.held.p.Load() != nil {
			done, stop = c.ctx.Done(), c.b.stop
		}
		var o outgoing
		open, got := true, false
		select {
		case o, open = <-c.out:
			got = open
		case <-c.held.wake:
		case <-done:
		case <-stop:
		}
		// Loaded again: the reader may have held a fetch while this
		// goroutine waited without its channels.
		if h := c.held.p.Load(); h != nil {
			if got || !open {
				// It goes first, or last.
				c.awaitHeld(h)
			}
			if got || !open || c.heldDone(h) {
				buf, broken = c.writeOne(c.releaseHeld(h), buf, broken)
			}
		}
		if !open {
			return
		}
		if got {
			buf, broken = c.writeOne(o, buf, broken)
		}
	}
}

// writeOne writes one queued response, after waiting for it to be complete
// (a group commit, a parked fetch); once the connection is broken it only
// lets the response go.
func (c *conn) writeOne(o outgoing, buf []byte, broken bool) ([]byte, bool) {
	if o.res.ready != nil {
		select {
		case <-o.res.ready:
		case <-c.ctx.Done():
		}
	}
	if fr := o.res.fetch; fr != nil && fr.parked != nil {
		// A parked fetch waits here (handleFetch): it returns at
		// once when the connection is gone.
		c.b.finishParked(c, fr)
	}
	if c.ctx.Err() != nil {
		// The connection is gone; a parked fetch that saw it has no
		// response to send (select may pick ready or Done first).
		broken = true
	}
	if broken {
		if o.res.fetch != nil {
			// A parked fetch still owns its result until it is ready;
			// it ends soon once the connection's context is done.
			if o.res.ready != nil {
				<-o.res.ready
			}
			o.res.fetch.recycle()
		}
		c.queued.Add(-1)
		return buf, true // drain: the connection is gone
	}
	var err error
	buf, err = c.send(o, buf)
	if err != nil {
		broken = true
		c.writeFailed(err)
	}
	c.queued.Add(-1) // after the write: the reader may write next
	return buf, broken
}

// send writes one complete response, with the request metrics, and
// returns buf (the caller's, reused for the next) to keep.
func (c *conn) send(o outgoing, buf []byte) ([]byte, error) {
	deadline := c.b.cfg.ConnectionsMaxIdle
	if c.draining.Load() {
		deadline = min(deadline, drainTimeout)
	}
	writing := time.Now()
	if !o.t.started.IsZero() {
		c.b.metrics.observeWriting(o.t, o.res.resp, writing)
	}
	c.nc.SetWriteDeadline(writing.Add(deadline))
	var err error
	switch {
	case o.res.throttle > 0:
		buf, err = c.writeThrottled(o.corr, o.res, buf)
	case o.res.fetch != nil:
		err = c.writeFetch(o.corr, o.res.fetch)
	case o.res.raw:
		buf = appendRawToken(buf[:0], o.res.rawToken)
		_, err = c.io.Write(buf)
	default:
		buf = protocol.AppendResponse(buf[:0], o.corr, o.res.resp)
		_, err = c.io.Write(buf)
	}
	if o.res.produce != nil {
		o.res.produce.recycle()
	}
	if err == nil && !o.t.started.IsZero() {
		c.b.metrics.observeSent(o.t, writing, time.Now())
	}
	if cap(buf) > 1<<20 {
		buf = nil
	}
	return buf, err
}

// writeFailed closes the connection after a failed write: nothing more
// can reach the client in order.
func (c *conn) writeFailed(err error) {
	if !errors.Is(err, net.ErrClosed) {
		c.lg.Info("closing connection: write failed", zap.Error(err))
	}
	c.cancel()
	c.nc.Close()
}
