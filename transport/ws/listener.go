package ws

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"runtime/debug"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/keyward/keyward/internal/workpool"
)

// Listener is the API's listener with the sockets' upgrades taken off net/http's
// connection machinery. A connection whose request is a socket's (a bodiless GET of a
// path ListenerConfig.Match takes) is served here, on a pooled worker goroutine: its
// request head is read into a pooled buffer and handed, as an *http.Request, to the same
// handler net/http would call (the API's router, with every middleware), through a
// ResponseWriter whose Hijack answers the connection with the least buffers. Every other
// connection, and any request this reading finds unusual (a body, a head past headBuffer
// bytes, a parse error, data after the head), goes to net/http (Accept) with the bytes
// read so far put back in front of it, and is served as before.
//
// Why: a socket's upgrade is the whole life of the connection's HTTP side, and net/http
// spends on it what a connection of many requests needs: 8 KiB of buffers it never takes
// back once hijacked, a new goroutine whose stack grows twice on the router's and the
// admission's depth, and its per-connection state. That was a fifth of a socket's
// opening CPU (its garbage, the stack copies); the workers here keep their grown stacks
// and the head's buffers go back to their pools.
//
// The Listener owns its goroutines: the accept loop, started by the first Accept, and the
// workers (internal/workpool); Close stops them (a worker ends the request it serves) and
// Wait waits for them. A panic in a worker closes its connection and is reported
// (ListenerConfig.Recovered); the node keeps serving.
type Listener struct {
	inner net.Listener
	cfg   ListenerConfig

	start     sync.Once
	handoff   chan net.Conn // connections for net/http
	errs      chan error    // the accept loop's last error
	done      chan struct{} // closed by Close
	closeOnce sync.Once
	loop      sync.WaitGroup // the accept loop
	workers   *workpool.Pool // each serves one connection at a time

	heads   sync.Pool // *[headBuffer]byte: a request head as read
	readers sync.Pool // *bufio.Reader: the request head's parser
}

// ListenerConfig is what a Listener serves and how.
type ListenerConfig struct {
	// Handler serves the requests the listener takes: the same handler net/http serves.
	Handler http.Handler
	// Match reports whether a request path (without its query) is a socket's: only GET
	// requests of those paths are served here.
	Match func(path string) bool
	// HeadTimeout bounds the wait for a connection's request head, as net/http's
	// ReadHeaderTimeout does (default 10 s).
	HeadTimeout time.Duration
	// Recovered reports a panic a worker recovered (nil: it is logged).
	Recovered func(v any, stack []byte)
	// Log receives what the listener cannot report otherwise (nil: slog.Default()).
	Log *slog.Logger
}

const (
	// headBuffer bounds a socket's request head read here; a larger one goes to net/http.
	headBuffer = 4096
	// maxIdleWorkers bounds the parked workers; more end once done.
	maxIdleWorkers = 128
	// defaultHeadTimeout is ListenerConfig.HeadTimeout's default.
	defaultHeadTimeout = 10 * time.Second
)

// NewListener wraps ln. Serve the answer with net/http (http.Server.Serve) as ln would be.
func NewListener(ln net.Listener, cfg ListenerConfig) *Listener {
	if cfg.HeadTimeout <= 0 {
		cfg.HeadTimeout = defaultHeadTimeout
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	l := &Listener{inner: ln, cfg: cfg, handoff: make(chan net.Conn), errs: make(chan error, 1), done: make(chan struct{})}
	// serveConn recovers its own panics; the pool's recover is the last resort.
	l.workers = workpool.New(workpool.Config{MaxIdle: maxIdleWorkers, Recovered: l.recovered})
	return l
}

// Accept answers the next connection for net/http.
func (l *Listener) Accept() (net.Conn, error) {
	l.start.Do(func() {
		l.loop.Add(1)
		go l.acceptLoop()
	})
	select {
	case c := <-l.handoff:
		return c, nil
	case err := <-l.errs:
		l.errs <- err // every later Accept answers it too
		return nil, err
	case <-l.done:
		return nil, net.ErrClosed
	}
}

// Close stops accepting: the accept loop and the parked workers end, a busy worker ends
// once its request is served.
func (l *Listener) Close() error {
	err := net.ErrClosed
	l.closeOnce.Do(func() {
		close(l.done)
		err = l.inner.Close()
		l.workers.Close()
	})
	return err
}

// Addr is the wrapped listener's address.
func (l *Listener) Addr() net.Addr { return l.inner.Addr() }

// Wait waits, after Close, for the accept loop and the workers to end, or for ctx.
func (l *Listener) Wait(ctx context.Context) error {
	ended := make(chan struct{})
	go func() {
		l.loop.Wait()
		l.workers.Wait()
		close(ended)
	}()
	select {
	case <-ended:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("ws listener: requests still served: %w", ctx.Err())
	}
}

// acceptLoop hands each accepted connection to a worker until Close or a lasting error,
// which Accept then answers (net/http's Serve returns it). Errors that pass (too many
// open files, an aborted connection) are waited out, as net/http does.
func (l *Listener) acceptLoop() {
	defer l.loop.Done()
	defer func() {
		if r := recover(); r != nil {
			l.recovered(r, debug.Stack())
			l.errs <- fmt.Errorf("ws listener: accept loop panicked: %v", r)
		}
	}()
	var pause time.Duration
	for {
		c, err := l.inner.Accept()
		if err != nil {
			select {
			case <-l.done:
				return
			default:
			}
			if !passing(err) {
				l.errs <- err
				return
			}
			pause = min(max(2*pause, 5*time.Millisecond), time.Second)
			l.cfg.Log.Warn("ws listener: accept failed; trying again", "err", err, "in", pause)
			select {
			case <-l.done:
				return
			case <-time.After(pause):
			}
			continue
		}
		pause = 0
		l.workers.Go(func() { l.serveConn(c) })
	}
}

// passing reports whether an accept error is one to wait out.
func passing(err error) bool {
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return true
	}
	return errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE) || errors.Is(err, syscall.ECONNABORTED) ||
		errors.Is(err, syscall.ENOBUFS) || errors.Is(err, syscall.ENOMEM)
}

func (l *Listener) recovered(v any, stack []byte) {
	if l.cfg.Recovered != nil {
		l.cfg.Recovered(v, stack)
		return
	}
	l.cfg.Log.Error("ws listener: panic", "panic", fmt.Sprint(v), "stack", string(stack))
}

// serveConn reads c's request head and serves it here or hands c to net/http. A panic
// closes c and is reported.
func (l *Listener) serveConn(c net.Conn) {
	head := l.head()
	defer l.heads.Put(head)
	defer func() {
		if r := recover(); r != nil {
			_ = c.Close()
			l.recovered(r, debug.Stack())
		}
	}()
	n, end, ours := l.readHead(c, head[:])
	switch {
	case n == 0 && !ours:
		_ = c.Close() // nothing came: net/http would close it too
	case !ours:
		l.toHTTP(c, head[:n])
	default:
		l.serveRequest(c, head[:n], end)
	}
}

func (l *Listener) head() *[headBuffer]byte {
	if h, ok := l.heads.Get().(*[headBuffer]byte); ok {
		return h
	}
	return new([headBuffer]byte)
}

// readHead reads c until its request head ends (end: its length) or proves not to be a
// socket's (ours false); n is what was read.
func (l *Listener) readHead(c net.Conn, buf []byte) (n, end int, ours bool) {
	_ = c.SetReadDeadline(time.Now().Add(l.cfg.HeadTimeout))
	defer func() { _ = c.SetReadDeadline(time.Time{}) }()
	const get = "GET "
	for n < len(buf) {
		m, err := c.Read(buf[n:])
		n += m
		if k := min(n, len(get)); !bytes.Equal(buf[:k], []byte(get)[:k]) {
			return n, 0, false
		}
		if line := bytes.Index(buf[:n], []byte("\r\n")); line >= 0 {
			target, _, _ := bytes.Cut(buf[len(get):line], []byte(" "))
			path, _, _ := bytes.Cut(target, []byte("?"))
			if l.cfg.Match == nil || !l.cfg.Match(string(path)) {
				return n, 0, false
			}
			if e := bytes.Index(buf[line:n], []byte("\r\n\r\n")); e >= 0 {
				return n, line + e + 4, true
			}
		}
		if err != nil {
			return n, 0, false
		}
	}
	return n, 0, false // a head larger than headBuffer
}

// toHTTP hands c to net/http with read put back in front of it.
func (l *Listener) toHTTP(c net.Conn, read []byte) {
	var conn net.Conn = c
	if len(read) > 0 {
		conn = &replayConn{WrappedConn: WrappedConn{c}, pending: bytes.Clone(read)}
	}
	select {
	case l.handoff <- conn:
	case <-l.done:
		_ = c.Close()
	}
}

// serveRequest serves the socket request whose head is read[:end] here, or hands it to
// net/http when it is anything but a plain bodiless GET with nothing after its head.
func (l *Listener) serveRequest(c net.Conn, read []byte, end int) {
	br := l.reader(bytes.NewReader(read[:end]))
	req, err := http.ReadRequest(br)
	l.putReader(br)
	if err != nil || end != len(read) || req.Method != http.MethodGet || req.ProtoMajor != 1 || req.ContentLength != 0 ||
		len(req.TransferEncoding) > 0 || (req.ProtoAtLeast(1, 1) && req.Host == "") {
		l.toHTTP(c, read)
		return
	}
	req.RemoteAddr = c.RemoteAddr().String()
	// The request keeps ReadRequest's background context: the handler serves it whole
	// before serveRequest returns, and a socket's admission has deadlines of its own.
	w := &responseWriter{conn: c, header: make(http.Header, 4)}
	l.cfg.Handler.ServeHTTP(w, req)
	w.finish()
}

func (l *Listener) reader(r *bytes.Reader) *bufio.Reader {
	if br, ok := l.readers.Get().(*bufio.Reader); ok {
		br.Reset(r)
		return br
	}
	return bufio.NewReaderSize(r, headBuffer)
}

func (l *Listener) putReader(br *bufio.Reader) {
	br.Reset(nil)
	l.readers.Put(br)
}

// responseWriter answers one request served by a Listener: an answer is buffered and
// written whole with the connection's close when the handler returns; a hijacker (the
// upgrade) takes the connection with buffers of its own.
type responseWriter struct {
	conn     net.Conn
	header   http.Header
	status   int
	body     []byte
	hijacked bool
}

func (w *responseWriter) Header() http.Header { return w.header }

func (w *responseWriter) WriteHeader(code int) {
	if w.status == 0 && !w.hijacked && code >= 200 {
		w.status = code
	}
}

func (w *responseWriter) Write(p []byte) (int, error) {
	if w.hijacked {
		return 0, http.ErrHijacked
	}
	w.WriteHeader(http.StatusOK)
	w.body = append(w.body, p...)
	return len(p), nil
}

// Flush is a no-op: the answer is written whole when the handler returns.
func (w *responseWriter) Flush() {}

// Hijack hands the connection to the caller with buffers of bufio's least size (the head
// was read whole: nothing is buffered yet). A hijacker reads and writes through buffers
// of its own: gorilla/websocket takes a hijacked buffer for its connection only when it
// is larger than 256 bytes, and writes its answer to the upgrade in a slice it grows.
func (w *responseWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	if w.hijacked {
		return nil, nil, http.ErrHijacked
	}
	w.hijacked = true
	return w.conn, bufio.NewReadWriter(bufio.NewReaderSize(w.conn, minBuffer), bufio.NewWriterSize(w.conn, minBuffer)), nil
}

// minBuffer is bufio's least buffer size.
const minBuffer = 16

// SetReadDeadline and SetWriteDeadline serve http.ResponseController.
func (w *responseWriter) SetReadDeadline(t time.Time) error  { return w.conn.SetReadDeadline(t) }
func (w *responseWriter) SetWriteDeadline(t time.Time) error { return w.conn.SetWriteDeadline(t) }

// finish ends the request once its handler returned: unless hijacked, its answer is
// written with Connection: close and the connection closed.
func (w *responseWriter) finish() {
	if w.hijacked {
		return
	}
	if w.status == 0 {
		w.status = http.StatusOK
	}
	h := w.header
	if len(w.body) > 0 && h.Get("Content-Type") == "" {
		h.Set("Content-Type", http.DetectContentType(w.body))
	}
	h.Set("Content-Length", strconv.Itoa(len(w.body)))
	h.Set("Connection", "close")
	if _, ok := h["Date"]; !ok {
		h.Set("Date", time.Now().UTC().Format(http.TimeFormat))
	}
	var out bytes.Buffer
	out.Grow(256 + len(w.body))
	fmt.Fprintf(&out, "HTTP/1.1 %03d %s\r\n", w.status, http.StatusText(w.status))
	_ = h.Write(&out)
	out.WriteString("\r\n")
	out.Write(w.body)
	_ = w.conn.SetWriteDeadline(time.Now().Add(DefaultWriteWait))
	_, _ = w.conn.Write(out.Bytes())
	_ = w.conn.Close()
}

// replayConn is a connection handed to net/http with the bytes read from it first.
type replayConn struct {
	WrappedConn
	pending []byte
}

func (c *replayConn) Read(p []byte) (int, error) {
	if len(c.pending) == 0 {
		return c.Conn.Read(p)
	}
	n := copy(p, c.pending)
	c.pending = c.pending[n:]
	if len(c.pending) == 0 {
		c.pending = nil
	}
	return n, nil
}

// SocketConn answers the connection itself once what was put back is read (an upgrade
// net/http served: its frames skip this wrapper, and the socket's descriptor is found).
func (c *replayConn) SocketConn() net.Conn {
	if len(c.pending) == 0 {
		return c.Conn
	}
	return c
}

// WrappedConn is embedded by a connection wrapper that changes what is read or written
// (the replay here, the http package's envelope of net/http's answers) and keeps what
// net/http takes from a plain connection: the kernel copy (sendfile, splice) of bodies,
// which bypasses the wrapper's Write, and the half-close it does after some answers.
type WrappedConn struct{ net.Conn }

// ReadFrom copies r to the wrapped connection.
func (c WrappedConn) ReadFrom(r io.Reader) (int64, error) { return io.Copy(c.Conn, r) }

// CloseWrite half-closes the wrapped connection, when it can.
func (c WrappedConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}
