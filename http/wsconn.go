package httpapi

import (
	"bufio"
	"encoding/binary"
	"errors"
	"net"
	"net/http"
	"os"
	"sync"
	"syscall"
	"time"
	"unsafe"

	"github.com/gorilla/websocket"
)

// wsDeadlineSlack is how much later than the write deadline in place a new one may be
// and still not be set: a socket's writer asks for now+wsWriteWait before every frame,
// and setting a deadline re-arms a runtime timer each time (about a tenth of a
// broadcast's server CPU per socket). A write then times out after at least
// wsWriteWait-wsDeadlineSlack.
const wsDeadlineSlack = time.Second

// socketWriter is the ResponseWriter handed to the upgrader: its Hijack answers the
// connection as a socketConn.
type socketWriter struct{ http.ResponseWriter }

func (w socketWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	conn, brw, err := http.NewResponseController(w.ResponseWriter).Hijack()
	if err != nil {
		return nil, nil, err
	}
	// The socket's frames skip the envelope wrapper: they are never net/http's answers.
	if e, ok := conn.(*envelopeConn); ok {
		conn = e.Conn
	}
	return &socketConn{Conn: conn}, brw, nil
}

// socketConn is a socket's connection once upgraded. Every write to the network passes
// here, one whole frame a call: gorilla/websocket writes only control frames (pings,
// pongs, close frames: one Write each) and the handshake, and the peer writes its data
// frames itself (writeData, tryWrite: frames encoded by appendFrame), so that frames
// from different writers never interleave (mu orders them). It leaves out write deadlines
// that hardly move the one in place; while corked it gathers the frames written into one
// write to the network (the frames a writer found queued together: one system call
// instead of one per frame); it can write a frame without blocking (tryWrite), keeping
// what the network did not take for the writer to flush; and once a close frame went out
// it refuses data frames (RFC 6455 5.5.1), as gorilla does for the frames it writes.
type socketConn struct {
	net.Conn
	writeDeadline time.Time // under mu: set by gorilla's writes and the peer's

	mu        sync.Mutex
	corked    bool
	closeSent bool
	// pending is what was gathered while corked, or the rest of a frame tryWrite could
	// not write whole (not corked then): the next write sends it first.
	pending []byte
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

// tryWrite writes a data frame now if that blocks nobody: when the socket is free (no
// write under way, nothing pending) and can be written without blocking (a plain
// socket), it writes what the network takes at once and keeps the rest pending. It
// answers whether it took the frame (false: the caller queues it for the writer), and
// whether some of it is pending (the writer must flush it, flushPending).
func (c *socketConn) tryWrite(frame []byte) (taken, left bool, err error) {
	sys, ok := c.Conn.(syscall.Conn)
	if !ok || !c.mu.TryLock() {
		return false, false, nil
	}
	defer c.mu.Unlock()
	if c.closeSent {
		return true, false, websocket.ErrCloseSent
	}
	if c.corked || len(c.pending) > 0 {
		return false, false, nil
	}
	raw, err := sys.SyscallConn()
	if err != nil {
		return false, false, nil
	}
	n, err := writeNow(raw, frame)
	if errors.Is(err, os.ErrDeadlineExceeded) {
		// The deadline of an earlier write has passed (the socket was idle since): a
		// write that cannot block needs none.
		if err = c.Conn.SetWriteDeadline(time.Time{}); err != nil {
			return true, false, err
		}
		c.writeDeadline = time.Time{}
		n, err = writeNow(raw, frame)
	}
	if err != nil {
		return true, false, err
	}
	if n < len(frame) {
		c.pending = append(c.pending, frame[n:]...)
		return true, true, nil
	}
	return true, false, nil
}

// writeNow writes what the socket takes of b without waiting; a full socket takes nothing.
func writeNow(raw syscall.RawConn, b []byte) (int, error) {
	var n int
	var werr error
	err := raw.Write(func(fd uintptr) bool {
		n, werr = sendNow(fd, b)
		return true // never wait: the writer flushes the rest
	})
	if err == nil {
		err = werr
	}
	if n < 0 {
		n = 0
	}
	return n, err
}

// sendNow sends what the socket fd takes of b at once (send(2) rather than write(2): a
// socket's own call, shorter in the kernel; MSG_NOSIGNAL: a closed socket answers EPIPE
// without a signal).
func sendNow(fd uintptr, b []byte) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	for {
		n, _, errno := syscall.Syscall6(syscall.SYS_SENDTO, fd, uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)),
			syscall.MSG_NOSIGNAL|syscall.MSG_DONTWAIT, 0, 0)
		switch errno {
		case 0:
			return int(n), nil
		case syscall.EINTR:
			continue
		case syscall.EAGAIN:
			return 0, nil
		}
		return 0, errno
	}
}

// flushPending writes what tryWrite left, if anything; the caller is the socket's writer.
func (c *socketConn) flushPending() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.pending) == 0 || c.corked {
		return nil
	}
	if err := c.setWriteDeadline(time.Now().Add(wsWriteWait)); err != nil {
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
	if !t.IsZero() && !c.writeDeadline.IsZero() && !t.Before(c.writeDeadline) && t.Sub(c.writeDeadline) < wsDeadlineSlack {
		return nil
	}
	c.writeDeadline = t
	return c.Conn.SetWriteDeadline(t)
}

func (c *socketConn) SetDeadline(t time.Time) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.writeDeadline = t
	return c.Conn.SetDeadline(t)
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

// wsLinger is how long a socket's writer waits at most for more frames before it ends.
const wsLinger = 100 * time.Millisecond

// lingerClock wakes the writers that wait on it every wsLinger (from 0 to wsLinger after
// they start waiting). One timer for every writer of the node, armed only while one
// waits, and each writer waits on its own channel: a timer per wait, or a channel shared
// by every writer, would cost what the wait saves.
type lingerClock struct {
	mu      sync.Mutex
	armed   bool
	waiting []chan struct{}
}

// wake has wake (a channel of capacity 1) sent a token at the next tick.
func (c *lingerClock) wake(wake chan struct{}) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.waiting = append(c.waiting, wake)
	if !c.armed {
		c.armed = true
		time.AfterFunc(wsLinger, c.tick)
	}
}

func (c *lingerClock) tick() {
	c.mu.Lock()
	waiting := c.waiting
	c.waiting, c.armed = nil, false
	c.mu.Unlock()
	for _, w := range waiting {
		select {
		case w <- struct{}{}:
		default: // woken already
		}
	}
}
