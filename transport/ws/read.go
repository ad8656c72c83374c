package ws

import (
	"bufio"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"
)

// Read starts the socket's reader: it passes each text or binary message to fn until the
// socket ends, then closes the Conn, waits for its last write and calls end. fn runs on
// the reader's goroutine, one message after another: it should hand the message on
// rather than work long. A panic in fn is reported (Config.Log) and closes the socket
// with 1011.
//
// An idle socket's reader was most of what the socket cost: a goroutine waiting for the
// next frame (its stack, 2 KiB at least, and its descriptor). So on Linux an idle socket
// has no reader goroutine: it waits in the node's read poller (readPoller, one epoll
// instance), and a goroutine starts when data came, reads what came and ends
// (readPolled). Elsewhere (and for a connection Transport.Upgrade did not answer) the
// reader waits for each frame in a goroutine, in a shallow call, a peek of one byte into
// the socket's read buffer (under 1 KiB of stack: a reader that once ran gorilla's frame
// reading would hold 4 KiB for good), handles what came, and goes on waiting in a new
// goroutine with a new small stack. Either way the reader answers pings and pongs in
// full control frames itself, because gorilla would wait for the next data frame within.
//
// A socket that sent nothing, not even a pong, for Config.PongWait ends: the blocking
// reader's deadline, or for a polled socket the pinger, at its first ping after then.
func (p *Conn) Read(fn func([]byte), end func()) {
	p.conn.SetReadLimit(p.node.readLimit())
	_ = p.conn.SetReadDeadline(time.Now().Add(p.node.pongWait()))
	sc, _ := p.conn.NetConn().(*socketConn)
	if sc != nil && sc.rd != nil && canPollReads && p.node.readPoller() != nil && sc.fd >= 0 {
		p.readPolling(sc, fn, end)
		return
	}
	var br *bufio.Reader
	if sc != nil && sc.rd != nil {
		br = sc.rd.br
	}
	p.conn.SetPongHandler(func(string) error { return p.conn.SetReadDeadline(time.Now().Add(p.node.pongWait())) })
	go p.reader(br, fn, end)
}

// reading is a socket's reading: the buffer it is read through and, when it waits in
// the read poller, the reader's state.
type reading struct {
	br  *bufio.Reader
	fn  func([]byte)
	end func()
	id  uint64 // the socket's number in the read poller (0: not there)
	// lastRead is when the socket last became readable (Unix seconds): the pinger ends
	// a polled socket silent for longer than Config.PongWait.
	lastRead atomic.Int64
	state    readState // under Conn.mu
}

type readState uint8

const (
	readNone    readState = iota // not polled (yet)
	readWaiting                  // waits in the poller
	readReading                  // a goroutine reads (readPolled)
	readEnded                    // the socket's end was called by finish
)

// readPolling registers the socket in the node's read poller.
func (p *Conn) readPolling(sc *socketConn, fn func([]byte), end func()) {
	rd := sc.rd
	rd.fn, rd.end = fn, end
	rd.lastRead.Store(time.Now().Unix())
	p.mu.Lock()
	registered := false
	if sc.useFd() {
		// The descriptor is held: finish, which closes it first, cannot take the socket's
		// end before it is registered.
		id, err := p.node.readPoller().register(p, sc.fd)
		sc.releaseFd()
		if err == nil {
			rd.id, rd.state, registered = id, readWaiting, true
			rd.dropBuffer()
		} else {
			p.node.log().Warn("socket transport: cannot poll a socket's reads", "err", err)
		}
	}
	p.mu.Unlock()
	if !registered {
		// Closed already (or no poller): the socket ends as a reader's would.
		p.Close(websocket.CloseAbnormalClosure, "")
		go p.endReading(end)
	}
}

// dropBuffer lets go of the read buffer of a polled socket that waits in the poller
// with nothing buffered (its 288 bytes are a tenth of what an idle socket costs); its
// reader takes a new one when data comes (takeBuffer). gorilla/websocket holds the
// bufio.Reader itself, not its buffer: the Reader is emptied in place. Conn.mu is held,
// or the caller is the socket's only reader.
func (rd *reading) dropBuffer() {
	if rd.br.Buffered() == 0 {
		*rd.br = bufio.Reader{}
	}
}

// takeBuffer gives a polled socket's reader a read buffer again, reading from sc.
func (rd *reading) takeBuffer(sc *socketConn) {
	if rd.br.Size() == 0 {
		*rd.br = *bufio.NewReaderSize(sc, wsReadBuffer)
	}
}

// readable is the read poller's word that the socket has data (or ended): a goroutine
// reads it.
func (p *Conn) readable() {
	sc, _ := p.conn.NetConn().(*socketConn)
	p.mu.Lock()
	if sc == nil || sc.rd.state != readWaiting {
		p.mu.Unlock()
		return
	}
	sc.rd.state = readReading
	p.mu.Unlock()
	go p.readPolled(sc)
}

// readPolled reads what came to a polled socket until its read buffer is empty, then
// has the poller report it again, or ends the socket.
func (p *Conn) readPolled(sc *socketConn) {
	rd := sc.rd
	ended := true
	defer p.endTurn(&ended, rd.end)
	rd.lastRead.Store(time.Now().Unix())
	rd.takeBuffer(sc)
	// Bounds the wait for the rest of a frame that came in part.
	_ = p.conn.SetReadDeadline(time.Now().Add(p.node.pongWait()))
	if !p.readBuffered(rd.br, rd.fn) {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if !sc.useFd() {
		return // closed meanwhile: the socket ends here, not in finish
	}
	rd.dropBuffer()
	err := p.node.readPoller().rearm(rd.id, sc.fd)
	sc.releaseFd()
	if err == nil {
		rd.state, ended = readWaiting, false
	}
}

// silent answers whether the socket waits in the read poller and was not readable for
// longer than Config.PongWait (a polled socket has no read deadline while it waits).
func (p *Conn) silent(now time.Time) bool {
	sc, ok := p.conn.NetConn().(*socketConn)
	if !ok || sc.rd == nil {
		return false
	}
	p.mu.Lock()
	polled := sc.rd.state == readWaiting || sc.rd.state == readReading
	p.mu.Unlock()
	return polled && now.Unix()-sc.rd.lastRead.Load() > int64(p.node.pongWait()/time.Second)
}

// endPolled, in finish (the socket is closed), takes the socket out of the read poller,
// and answers its end to call when it waited there (no reader is left to call it).
func (p *Conn) endPolled() (end func()) {
	sc, ok := p.conn.NetConn().(*socketConn)
	if !ok || sc.rd == nil {
		return nil
	}
	p.mu.Lock()
	rd := sc.rd
	id := rd.id
	if rd.state == readWaiting {
		rd.state, end = readEnded, rd.end
	}
	p.mu.Unlock()
	if id != 0 {
		p.node.readPoller().unregister(id)
	}
	return end
}

// endTurn ends a reading turn (deferred): a panic in it is reported and closes the
// socket with 1011; an ended turn (*ended, or a panic) ends the socket's reading with end.
func (p *Conn) endTurn(ended *bool, end func()) {
	if v := recover(); v != nil {
		panicReport(p.node, "reader")(v)
		p.Close(websocket.CloseInternalServerErr, "internal error")
		*ended = true
	}
	if *ended {
		p.endReading(end)
	}
}

// reader is one turn of a socket's reader: it waits for the next frame, handles what was
// read, and starts the next turn, or ends the socket.
func (p *Conn) reader(br *bufio.Reader, fn func([]byte), end func()) {
	ended := true
	defer p.endTurn(&ended, end)
	if br != nil {
		// Its error, if any, comes again to the next read (deadline, close, end of stream).
		_, _ = br.Peek(1)
	}
	if ended = !p.readBuffered(br, fn); !ended {
		go p.reader(br, fn, end)
	}
}

// endReading closes the socket once its reader ends.
func (p *Conn) endReading(end func()) {
	p.Close(websocket.CloseNormalClosure, "")
	p.Wait()
	end()
}

// readBuffered handles frames until br holds no more (for ever when br is nil); false
// when the socket ends.
//
//go:noinline
func (p *Conn) readBuffered(br *bufio.Reader, fn func([]byte)) bool {
	for {
		if handled, ok := p.readControl(br); !handled {
			kind, msg, err := p.conn.ReadMessage()
			if err != nil {
				return false
			}
			p.mu.Lock()
			closed := p.closed
			p.mu.Unlock()
			if closed {
				return false
			}
			_ = p.conn.SetReadDeadline(time.Now().Add(p.node.pongWait()))
			if kind == websocket.TextMessage || kind == websocket.BinaryMessage {
				fn(msg)
			}
		} else if !ok {
			return false
		}
		if br != nil && br.Buffered() == 0 {
			return true
		}
	}
}

// Bits of a frame's first two bytes (RFC 6455 5.2).
const (
	wsFinal  = 0x80
	wsMasked = 0x80
)

// readControl handles a ping or pong that starts br as gorilla would (its payload unmasked
// to the conn's handler): handled is false when br starts with anything else, or with a
// frame gorilla refuses (RSV bits, no FIN, unmasked, over 125 bytes), which gorilla then
// reads; ok is false when the handler failed, which ends the socket.
func (p *Conn) readControl(br *bufio.Reader) (handled, ok bool) {
	if br == nil {
		return false, false
	}
	h, err := br.Peek(2)
	if err != nil || (h[0] != wsFinal|websocket.PingMessage && h[0] != wsFinal|websocket.PongMessage) ||
		h[1]&wsMasked == 0 || int(h[1]&^wsMasked) > 125 {
		return false, false
	}
	n := int(h[1] &^ wsMasked)
	f, err := br.Peek(2 + 4 + n)
	if err != nil {
		return false, false
	}
	payload := make([]byte, n)
	for i := range payload {
		payload[i] = f[6+i] ^ f[2+i%4]
	}
	handler := p.conn.PongHandler()
	if f[0] == wsFinal|websocket.PingMessage {
		handler = p.conn.PingHandler()
	}
	_, _ = br.Discard(2 + 4 + n)
	return true, handler(string(payload)) == nil
}
