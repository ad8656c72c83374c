package httpapi

import (
	"bufio"
	"net"
	"net/http"
	"sync"
	"time"
)

// wsDeadlineSlack is how much later than the write deadline in place a new one may be
// and still not be set: a socket's writer asks for now+wsWriteWait before every frame,
// and setting a deadline re-arms a runtime timer each time (about a tenth of a
// broadcast's server CPU per socket). A write then times out after at least
// wsWriteWait-wsDeadlineSlack.
const wsDeadlineSlack = time.Second

// wsReadBuffer is the size of a socket's read buffer: the size class of anything over
// 256 bytes, the least gorilla/websocket takes as the reader of a hijacked connection
// (Upgrader.ReadBufferSize 0). The socket's reader peeks into this buffer itself, which
// lets it wait for a frame in a shallow call (peer.reader). It holds a control frame
// (at most 131 bytes with its header); a larger message is read past it straight into
// the message (bufio reads directly into a destination larger than its buffer).
const wsReadBuffer = 288

// socketWriter is the ResponseWriter handed to the upgrader: its Hijack answers the
// connection as a socketConn, read through br, which it keeps for the socket's reader.
type socketWriter struct {
	http.ResponseWriter
	br *bufio.Reader
}

func (w *socketWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	conn, brw, err := http.NewResponseController(w.ResponseWriter).Hijack()
	if err != nil {
		return nil, nil, err
	}
	// The socket's frames skip the envelope wrapper: they are never net/http's answers.
	if e, ok := conn.(*envelopeConn); ok {
		conn = e.Conn
	}
	sc := &socketConn{Conn: conn}
	if brw.Reader.Buffered() > 0 {
		// The client sent data before the handshake's answer: the upgrader refuses it.
		return sc, brw, nil
	}
	w.br = bufio.NewReaderSize(sc, wsReadBuffer)
	return sc, bufio.NewReadWriter(w.br, brw.Writer), nil
}

// socketConn is a socket's connection once upgraded: it leaves out write deadlines that
// hardly move the one in place (gorilla/websocket sets them only while it holds its write
// lock, and the upgrade before, so writeDeadline needs no lock of its own), and while
// corked it gathers the frames written into one write to the network (the frames a
// writer found queued together: one system call instead of one per frame).
type socketConn struct {
	net.Conn
	writeDeadline time.Time

	mu      sync.Mutex // corked and pending: a ping is written from the ping timer
	corked  bool
	pending []byte
}

// maxCorked bounds what a corked socket gathers before it writes.
const maxCorked = 64 << 10

func (c *socketConn) Write(b []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.corked {
		return c.Conn.Write(b)
	}
	c.pending = append(c.pending, b...)
	if len(c.pending) >= maxCorked {
		if err := c.flush(); err != nil {
			return 0, err
		}
	}
	return len(b), nil
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
	if !t.IsZero() && !c.writeDeadline.IsZero() && !t.Before(c.writeDeadline) && t.Sub(c.writeDeadline) < wsDeadlineSlack {
		return nil
	}
	c.writeDeadline = t
	return c.Conn.SetWriteDeadline(t)
}

func (c *socketConn) SetDeadline(t time.Time) error {
	c.writeDeadline = t
	return c.Conn.SetDeadline(t)
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
