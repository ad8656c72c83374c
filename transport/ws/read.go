package ws

import (
	"bufio"
	"time"

	"github.com/gorilla/websocket"
)

// Read starts the socket's reader: it passes each text or binary message to fn until the
// socket ends, then closes the Conn, waits for its last write and calls end. fn runs on
// the reader's goroutine, one message after another: it should hand the message on
// rather than work long. A panic in fn is reported (Config.Log) and closes the socket
// with 1011.
//
// An idle socket's reader is most of what the socket costs: its goroutine's stack. The
// runtime starts a goroutine's stack at 2 KiB (when the stacks it scanned are that small
// on average) and halves a grown one only while less than a quarter of it is in use, so a
// reader that once ran gorilla's frame reading (over 1 KiB of stack while it waits in it)
// holds 4 KiB for good. So the reader waits for each frame in a shallow call, a peek of
// one byte into the socket's read buffer (under 1 KiB of stack), handles what came, and
// goes on waiting in a new goroutine with a new small stack; it answers pings and pongs
// in full control frames itself, because gorilla would wait for the next data frame
// within.
func (p *Conn) Read(fn func([]byte), end func()) {
	var br *bufio.Reader
	if sc, ok := p.conn.NetConn().(*socketConn); ok {
		br = sc.br
	}
	p.conn.SetReadLimit(p.node.readLimit())
	_ = p.conn.SetReadDeadline(time.Now().Add(p.node.pongWait()))
	p.conn.SetPongHandler(func(string) error { return p.conn.SetReadDeadline(time.Now().Add(p.node.pongWait())) })
	go p.reader(br, fn, end)
}

// reader is one turn of a socket's reader: it waits for the next frame, handles what was
// read, and starts the next turn, or ends the socket.
func (p *Conn) reader(br *bufio.Reader, fn func([]byte), end func()) {
	ended := true
	defer func() {
		if v := recover(); v != nil {
			panicReport(p.node, "reader")(v)
			p.Close(websocket.CloseInternalServerErr, "internal error")
			ended = true
		}
		if ended {
			p.endReading(end)
		}
	}()
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
