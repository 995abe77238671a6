// Package sendfile moves byte ranges of commit-log files to client sockets
// without copying them through the Go heap: on Linux with sendfile(2), the
// kernel reads the page cache and hands the pages to the socket.
//
// # Explicit offsets
//
// io.Copy from an *os.File to a *net.TCPConn also reaches sendfile(2), but the
// standard library passes a nil offset there (internal/poll.SendFile), so the
// kernel reads from the file's shared position and advances it. Every fetch
// in the broker reads from the same few open segment files at once; with a
// shared position two concurrent fetches would read each other's bytes.
// [Copy] therefore calls sendfile(2) itself with an explicit offset
// (pread-like: the file position never moves), inside the socket's
// syscall.RawConn.Write, so the Go netpoller parks the goroutine whenever the
// socket buffer is full (EAGAIN) instead of blocking a thread or spinning.
// The file's descriptor is held through its own RawConn for the whole send,
// so a concurrent Close cannot let the number be reused mid-send (the log's
// reference counts already forbid that; this is the second line of defence,
// because a reused descriptor would leak another file's bytes to a client).
//
// # Fallback
//
// sendfile needs a real socket under the net.Conn: a TLS connection encrypts
// in user space, a net.Pipe has no descriptor, and other systems than Linux
// are not a target. Copy then reads the range with pread (File.ReadAt) into a
// pooled 64 KiB buffer and writes it with conn.Write (Kafka's TLS transport
// does the same with 32 KiB reads). It also falls back when the kernel
// refuses the descriptor pair (EINVAL, ENOSYS, EOPNOTSUPP), continuing from
// wherever sendfile stopped.
//
// # Responses and TCP_CORK
//
// A fetch response is framing bytes interleaved with file ranges. [Writer]
// queues both and writes them in order: runs of byte slices with one writev
// (net.Buffers), ranges with Copy. Each sendfile call pushes its last partial
// segment out on its own, so around a response of more than one piece the
// Writer sets TCP_CORK on a TCP socket (the sendfile(2) man page's advice)
// and clears it at the end; headers and record bytes then share full-size
// packets. Failing to set the option only costs packets, so it is ignored.
//
// Neither Copy nor Writer is safe for use by several goroutines on one
// connection: a response must reach the socket contiguously, and the
// broker's per-connection writer goroutine is the only writer.
package sendfile
