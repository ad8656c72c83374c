package ws

import (
	"bufio"
	"encoding/binary"
	"net"
	"net/http"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/gorilla/websocket"
)

// wsDeadlineSlack is how much later than the write deadline in place a new one may be
// and still not be set: a socket's writer asks for now+Config.WriteWait before every frame,
// and setting a deadline re-arms a runtime timer each time (about a tenth of a
// broadcast's server CPU per socket). A write then times out after at least
// Config.WriteWait-wsDeadlineSlack.
const wsDeadlineSlack = time.Second

// wsReadBuffer is the size of a socket's read buffer: the size class of anything over
// 256 bytes, the least gorilla/websocket takes as the reader of a hijacked connection
// (Upgrader.ReadBufferSize 0). The socket's reader peeks into this buffer itself, which
// lets it wait for a frame in a shallow call (Conn.reader). It holds a control frame
// (at most 131 bytes with its header); a larger message is read past it straight into
// the message (bufio reads directly into a destination larger than its buffer).
const wsReadBuffer = 288

// SocketConner is a connection wrapper that a socket's frames may skip: one that only
// changes what net/http itself writes (the http package's EnvelopeListener rewrites
// net/http's plain-text refusals). The upgrade writes to the connection it answers, so
// that a socket's frames pass no wrapper, and writes through to a plain socket.
type SocketConner interface {
	SocketConn() net.Conn
}

// socketWriter is the ResponseWriter handed to the upgrader: its Hijack answers the
// connection as a socketConn, read through the buffer it keeps (socketConn.rd.br) for
// the socket's reader.
type socketWriter struct {
	http.ResponseWriter
}

func (w *socketWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	conn, brw, err := http.NewResponseController(w.ResponseWriter).Hijack()
	if err != nil {
		return nil, nil, err
	}
	// The socket's frames skip the wrappers of net/http's answers (the http package's
	// envelope, the upgrade listener's replay): they are never those.
	for {
		e, ok := conn.(SocketConner)
		if !ok {
			break
		}
		inner := e.SocketConn()
		if inner == conn {
			break
		}
		conn = inner
	}
	sc := newSocketConn(conn)
	if brw.Reader.Buffered() > 0 {
		// The client sent data before the handshake's answer: the upgrader refuses it.
		return sc, brw, nil
	}
	sc.rd = &reading{br: bufio.NewReaderSize(sc, wsReadBuffer)}
	return sc, bufio.NewReadWriter(sc.rd.br, brw.Writer), nil
}

// newSocketConn wraps an upgraded connection; a plain socket's descriptor is kept for
// tryWrite.
func newSocketConn(conn net.Conn) *socketConn {
	c := &socketConn{Conn: conn, fd: -1}
	if !canSendNow {
		return c
	}
	if sys, ok := conn.(syscall.Conn); ok {
		if raw, err := sys.SyscallConn(); err == nil {
			_ = raw.Control(func(fd uintptr) { c.fd = int32(fd) })
		}
	}
	return c
}

// socketConn is a socket's connection once upgraded. Every write to the network passes
// here, one whole frame a call: gorilla/websocket writes only control frames (pings,
// pongs, close frames: one Write each) and the handshake, and the Conn writes its data
// frames itself (writeData, tryWrite: frames encoded by appendFrame), so that frames
// from different writers never interleave (mu orders them). It leaves out write deadlines
// that hardly move the one in place; while corked it gathers the frames written into one
// write to the network (the frames a writer found queued together: one system call
// instead of one per frame); it can write a frame without blocking (tryWrite), keeping
// what the network did not take for the writer to flush; and once a close frame went out
// it refuses data frames (RFC 6455 5.5.1), as gorilla does for the frames it writes.
type socketConn struct {
	net.Conn
	// writeDeadline is the write deadline in place (Unix nanoseconds; 0: none), under mu.
	writeDeadline int64

	mu sync.Mutex
	// fd is the socket's descriptor for tryWrite and the read poller (-1: not a plain
	// socket). It is used outside the runtime's own accounting of the descriptor, so raw
	// guards it (useFd): Close waits for a send or a re-arm under way, and none starts
	// once it began.
	fd        int32
	raw       atomic.Int32 // users of fd (low bits) | rawClosed
	corked    bool
	closeSent bool
	// pending is what was gathered while corked, or the rest of a frame tryWrite could
	// not write whole (not corked then): the next write sends it first.
	pending []byte
	// rd is the socket's reading: the buffer it is read through and the reader's state
	// (nil when the client sent data before the handshake's answer: the upgrade is
	// refused then).
	rd *reading
}

// maxCorked bounds what a corked socket gathers before it writes.
const maxCorked = 64 << 10

// Write writes what gorilla/websocket writes: the handshake and control frames.
func (c *socketConn) Write(b []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(b) > 1 && b[0] == finalBit|websocket.CloseMessage {
		c.closeSent = true
	}
	if err := c.write(b); err != nil {
		return 0, err
	}
	return len(b), nil
}

const finalBit = 1 << 7

// writeData writes one data frame (appendFrame's), or refuses it once a close frame went
// out.
func (c *socketConn) writeData(frame []byte) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closeSent {
		return websocket.ErrCloseSent
	}
	return c.write(frame)
}

// writeText writes a data frame holding msg (a text message), or refuses it once a close
// frame went out.
func (c *socketConn) writeText(msg []byte) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closeSent {
		return websocket.ErrCloseSent
	}
	if c.corked {
		c.pending = appendFrame(c.pending, msg)
		if len(c.pending) >= maxCorked {
			return c.flush()
		}
		return nil
	}
	return c.write(appendFrame(make([]byte, 0, frameSize(msg)), msg))
}

// write writes b after what is pending, or gathers it while corked; c.mu is held.
func (c *socketConn) write(b []byte) error {
	if !c.corked && len(c.pending) == 0 {
		_, err := c.Conn.Write(b)
		return err
	}
	c.pending = append(c.pending, b...)
	if !c.corked {
		err := c.flush()
		c.pending = nil // an idle socket holds no buffer
		return err
	}
	if len(c.pending) >= maxCorked {
		return c.flush()
	}
	return nil
}

// rawClosed is socketConn.raw's bit for a Close that began: fd is not used any more.
const rawClosed = 1 << 30

// useFd marks fd in use (a send, a re-arm of the read poller) until releaseFd; false
// when Close began (fd must not be used: it may be closed, its number taken by another
// file).
func (c *socketConn) useFd() bool {
	if c.fd < 0 {
		return false
	}
	if c.raw.Add(1)&rawClosed != 0 {
		c.raw.Add(-1)
		return false
	}
	return true
}

func (c *socketConn) releaseFd() { c.raw.Add(-1) }

// tryWrite writes a data frame now if that blocks nobody: when the socket is free (no
// write under way, nothing pending) and can be written without blocking (a plain
// socket), it sends what the network takes at once and keeps the rest pending. It
// answers whether it took the frame (false: the caller queues it for the writer), and
// whether some of it is pending (the writer must flush it, flushPending).
//
// It sends on the descriptor itself rather than through the runtime's poller
// (syscall.RawConn): that was a sixth of a delivery's CPU beside the send, spent on
// the poller's locks and state and on allocations. c.raw stands for the poller's guard
// of the descriptor (Close does not close it under a send).
func (c *socketConn) tryWrite(frame []byte) (taken, left bool, err error) {
	if c.fd < 0 || !c.mu.TryLock() {
		return false, false, nil
	}
	defer c.mu.Unlock()
	if c.closeSent {
		return true, false, websocket.ErrCloseSent
	}
	if c.corked || len(c.pending) > 0 {
		return false, false, nil
	}
	if !c.useFd() {
		return true, false, net.ErrClosed
	}
	n, err := sendNow(uintptr(c.fd), frame)
	c.releaseFd()
	if err != nil {
		return true, false, err
	}
	if n < len(frame) {
		c.pending = append(c.pending, frame[n:]...)
		return true, true, nil
	}
	return true, false, nil
}

// Close closes the connection once nobody uses its descriptor outside the runtime (a
// send or a re-arm does not block: the wait is short).
func (c *socketConn) Close() error {
	c.raw.Or(rawClosed)
	for c.raw.Load() != rawClosed {
		runtime.Gosched()
	}
	return c.Conn.Close()
}

// flushPending writes what tryWrite left, if anything, within wait; the caller is the
// socket's writer.
func (c *socketConn) flushPending(wait time.Duration) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.pending) == 0 || c.corked {
		return nil
	}
	if err := c.setWriteDeadline(time.Now().Add(wait)); err != nil {
		return err
	}
	err := c.flush()
	c.pending = nil
	return err
}

// cork gathers what is written from now on until uncork.
func (c *socketConn) cork() {
	c.mu.Lock()
	c.corked = true
	c.mu.Unlock()
}

// uncork writes what was gathered in one write and answers its error (the frames it held
// were answered as written: the caller treats an error as the socket's end).
func (c *socketConn) uncork() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.corked = false
	err := c.flush()
	c.pending = nil // an idle socket holds no buffer
	return err
}

// flush writes the gathered frames; c.mu is held.
func (c *socketConn) flush() error {
	if len(c.pending) == 0 {
		return nil
	}
	_, err := c.Conn.Write(c.pending)
	c.pending = c.pending[:0]
	return err
}

func (c *socketConn) SetWriteDeadline(t time.Time) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.setWriteDeadline(t)
}

// setWriteDeadline sets a write deadline unless it hardly moves the one in place; c.mu
// is held.
func (c *socketConn) setWriteDeadline(t time.Time) error {
	ns := unixNanos(t)
	if ns != 0 && c.writeDeadline != 0 && ns >= c.writeDeadline && ns-c.writeDeadline < int64(wsDeadlineSlack) {
		return nil
	}
	c.writeDeadline = ns
	return c.Conn.SetWriteDeadline(t)
}

func (c *socketConn) SetDeadline(t time.Time) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.writeDeadline = unixNanos(t)
	return c.Conn.SetDeadline(t)
}

// unixNanos is t in Unix nanoseconds, 0 for the zero time (no deadline).
func unixNanos(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

// appendFrame appends a server's unfragmented text frame holding msg to b (RFC 6455 5.2:
// no mask, no extension; the socket negotiates none).
func appendFrame(b, msg []byte) []byte {
	b = append(b, finalBit|websocket.TextMessage)
	switch n := len(msg); {
	case n <= 125:
		b = append(b, byte(n))
	case n <= 0xffff:
		b = append(b, 126)
		b = binary.BigEndian.AppendUint16(b, uint16(n))
	default:
		b = append(b, 127)
		b = binary.BigEndian.AppendUint64(b, uint64(n))
	}
	return append(b, msg...)
}

// frameSize is the size of msg's frame.
func frameSize(msg []byte) int {
	switch n := len(msg); {
	case n <= 125:
		return 2 + n
	case n <= 0xffff:
		return 4 + n
	default:
		return 10 + n
	}
}
