package ws

import (
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"
)

// Conn is a socket's writer, and its reader once Read starts it. It holds little while
// the socket is idle: a queue that is allocated when something is queued (bounded:
// Config.Queue frames), a place in the node's pinger, and no goroutine: a frame sent to
// an idle socket is written at once by the sender when the socket takes it without
// blocking (writeThrough), and otherwise a writer goroutine runs while there is
// something to write, and ends when the queue is empty. A Conn exists before its socket
// (a client socket may be admitted before the upgrade is answered): what is sent
// meanwhile waits until Transport.Upgrade starts it.
type Conn struct {
	mu      sync.Mutex
	conn    *websocket.Conn // set by start
	queue   []any           // []byte or *Frame
	writing bool            // a writer goroutine runs (or the socket is not started yet: none may)
	closed  bool            // Close was called: nothing more is queued
	ended   bool            // closed and written for the last time (done is closed then)
	// lingering: the writer waits a moment for more frames (wake) before it ends.
	lingering bool
	slot      uint8 // the pinger's slot the socket is in, once started
	code      int16 // the close code (at most 4999): two bytes keep the Conn in its size class
	reason    string
	wake      chan struct{}
	// node is the Transport that made the Conn: its settings, its pinger and the linger
	// clock writers wait on (nil in tests: default settings, no pings, and a writer
	// ends at once); one pointer for all keeps a Conn in its size class.
	node *Transport

	// done, made only once someone waits (an idle socket holds no channel), is closed
	// when the socket ends.
	done chan struct{}
	// onClose, when set, is told the close code once the socket is closed.
	onClose func(code int)
}

func newConn() *Conn {
	// writing is true until start: frames queue up, nobody writes them yet.
	return &Conn{writing: true}
}

// Frame is a text message encoded once as a frame for every socket it is sent to (a
// broadcast).
type Frame struct {
	msg   []byte
	frame []byte
	sent  atomic.Int32 // the sockets it was handed to (fanOut)
}

// NewFrame encodes msg as a server's text frame.
func NewFrame(msg []byte) *Frame {
	return &Frame{msg: msg, frame: appendFrame(make([]byte, 0, frameSize(msg)), msg)}
}

// start gives the Conn its socket, starts the pings and writes what was queued.
func (p *Conn) start(conn *websocket.Conn) {
	p.mu.Lock()
	p.conn = conn
	p.mu.Unlock()
	if g := p.node.ping(); g != nil {
		g.add(p)
	}
	go p.write()
}

// Send queues a text frame holding msg (which the Conn keeps: the caller does not reuse
// it). It answers false when the socket is closed, or too slow to take it (its queue is
// full: it is then closed with 1013). It never blocks.
func (p *Conn) Send(msg []byte) bool { return p.enqueue(msg) }

// SendFrame queues a frame encoded once for many sockets. Same answer as Send.
func (p *Conn) SendFrame(f *Frame) bool { return p.enqueue(f) }

func (p *Conn) enqueue(msg any) bool {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return false
	}
	if len(p.queue) >= p.node.queue() {
		p.mu.Unlock()
		// A reader this slow would hold memory for everyone: it is dropped.
		p.Close(websocket.CloseTryAgainLater, "too slow to receive")
		return false
	}
	if !p.writing && len(p.queue) == 0 {
		var through bool
		if f, ok := msg.(*Frame); ok {
			through = p.fanOut(f)
		} else {
			through = p.writeThrough(msg)
		}
		if through {
			p.mu.Unlock()
			return true
		}
	}
	p.queue = append(p.queue, msg)
	p.kick()
	p.mu.Unlock()
	return true
}

// writeThrough writes msg from the caller's goroutine when no writer runs and nothing is
// queued, without blocking (socketConn.tryWrite): a frame the socket takes at once costs
// no writer goroutine to wake (most of a broadcast's server CPU per socket beside the
// write itself). What the socket did not take is left to a writer, started here, as is
// anything queued or a Close that came meanwhile. It answers false when the socket could
// not be tried (the caller queues msg). p.mu is held, and released during the write;
// p.writing keeps every other writer out meanwhile (frames sent meanwhile queue up
// behind msg).
func (p *Conn) writeThrough(msg any) bool {
	sc, ok := p.conn.NetConn().(*socketConn)
	if !ok || sc.fd < 0 {
		return false
	}
	p.writing = true
	p.mu.Unlock()
	taken, left, err := sc.tryWrite(dataFrame(msg))
	p.mu.Lock()
	if !taken {
		// Someone was writing (a ping, a pong): the writer writes msg first, then what
		// was queued meanwhile.
		q := make([]any, 0, len(p.queue)+1)
		p.queue = append(append(q, msg), p.queue...)
		go p.write()
		return true
	}
	p.afterWriteThrough(left, err)
	return true
}

// afterWriteThrough leaves to a writer what a write through that the socket took left
// to do: the rest of its frame, frames queued meanwhile, a Close, or the end of a socket
// whose write failed. p.mu is held, and p.writing is set.
func (p *Conn) afterWriteThrough(left bool, err error) {
	switch {
	case err != nil:
		// The socket is gone: the writer closes it (no close frame after a failed write).
		p.closeLocked(websocket.CloseAbnormalClosure, "")
		go p.write()
	case left || len(p.queue) > 0 || p.closed:
		go p.write()
	default:
		p.writing = false
	}
}

// pingThrough writes a ping to an idle socket from the pinger's goroutine, as
// writeThrough writes a frame: without blocking and without a goroutine of its own
// (most of what an idle socket costs the node beside its revalidation). It answers false
// when the socket is not idle or could not take it at once (the caller pings it from a
// goroutine, sendPing).
func (p *Conn) pingThrough() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed || p.writing || len(p.queue) > 0 || p.conn == nil {
		return false
	}
	sc, ok := p.conn.NetConn().(*socketConn)
	if !ok || sc.fd < 0 {
		return false
	}
	p.writing = true
	p.mu.Unlock()
	ping := [2]byte{finalBit | websocket.PingMessage, 0}
	taken, left, err := sc.tryWrite(ping[:])
	p.mu.Lock()
	if !taken {
		p.writing = false
		if len(p.queue) > 0 || p.closed {
			// Queued or closed meanwhile: a writer takes over, as kick would have.
			p.writing = true
			go p.write()
		}
		return false
	}
	p.afterWriteThrough(left, err)
	return true
}

// kick starts a writer if none runs. p.mu is held.
func (p *Conn) kick() {
	switch {
	case !p.writing:
		p.writing = true
		go p.write()
	case p.lingering:
		select {
		case p.wake <- struct{}{}:
		default: // woken already
		}
	}
}

// Close ends the socket after the frames queued before: it sends a close frame with
// code (an RFC 6455 close code, or an application's 4000-4999) and reason (cut to what a
// close frame holds), then closes the connection. 1006 (CloseAbnormalClosure) closes
// without a close frame. Calling it again does nothing.
func (p *Conn) Close(code int, reason string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closeLocked(code, reason)
}

// closeLocked is Close with p.mu held.
func (p *Conn) closeLocked(code int, reason string) {
	if p.closed {
		return
	}
	p.closed = true
	p.code, p.reason = int16(code), truncateReason(reason)
	p.kick()
}

// truncateReason cuts s to what a close frame's reason holds (123 bytes), valid UTF-8.
func truncateReason(s string) string {
	if len(s) > 120 {
		s = s[:120]
	}
	return strings.ToValidUTF8(s, "")
}

// Closed answers whether Close was called, and the close code it was given.
func (p *Conn) Closed() (closed bool, code int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.closed, int(p.code)
}

// Wait blocks until the socket is closed and written for the last time.
func (p *Conn) Wait() { <-p.Done() }

// Done is closed when the socket is closed and written for the last time.
func (p *Conn) Done() <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.done == nil {
		p.done = make(chan struct{})
		if p.ended {
			close(p.done)
		}
	}
	return p.done
}

// write writes the queue until it is empty, then ends; after Close it writes what was
// queued before, the close frame, and closes the socket. Before it ends it waits up to a
// tick of its linger clock for more frames: a socket that receives often keeps one
// writer (whose stack has grown to what a write needs) instead of starting one per frame
// (measured: a goroutine start and its stack growth were a sixth of a broadcast's server
// CPU per socket); an idle socket still holds no goroutine.
func (p *Conn) write() {
	lingered := false
	for {
		// The rest of a frame written through goes first; none is left behind after it
		// (only a writer that finds none running writes through).
		if p.flushPending() != nil {
			p.Close(websocket.CloseAbnormalClosure, "")
			p.finish(false)
			return
		}
		p.mu.Lock()
		batch := p.queue
		p.queue = nil // the next frames get a fresh queue; an idle Conn holds none
		if len(batch) == 0 {
			if !p.closed && p.node.lingerer() != nil && !lingered {
				if p.wake == nil {
					p.wake = make(chan struct{}, 1)
				}
				p.lingering, lingered = true, true
				wake := p.wake
				p.mu.Unlock()
				p.node.lingerer().wake(wake)
				<-wake // a frame, Close, or the clock's tick
				p.mu.Lock()
				p.lingering = false
				select {
				case <-wake: // a wake that came with the tick
				default:
				}
				p.mu.Unlock()
				continue
			}
			if !p.closed {
				p.writing = false
				p.wake = nil // an idle Conn holds no channel
				p.mu.Unlock()
				return
			}
			p.mu.Unlock()
			p.finish(true)
			return
		}
		p.mu.Unlock()
		lingered = false
		if p.writeBatch(batch) != nil {
			p.Close(websocket.CloseAbnormalClosure, "")
			p.finish(false)
			return
		}
	}
}

// flushPending writes what a write through left of a frame, if anything.
func (p *Conn) flushPending() error {
	if sc, ok := p.conn.NetConn().(*socketConn); ok {
		return sc.flushPending(p.node.writeWait())
	}
	return nil
}

// writeBatch writes the frames that were queued together, in one write to the network
// when there are several.
func (p *Conn) writeBatch(batch []any) error {
	wait := p.node.writeWait()
	sc, ok := p.conn.NetConn().(*socketConn)
	if !ok {
		// Not a connection Upgrade answered (tests): gorilla writes the frames.
		for _, msg := range batch {
			_ = p.conn.SetWriteDeadline(time.Now().Add(wait))
			if err := p.conn.WriteMessage(websocket.TextMessage, textOf(msg)); err != nil {
				return err
			}
		}
		return nil
	}
	corked := len(batch) > 1
	if corked {
		sc.cork()
	}
	for _, msg := range batch {
		_ = sc.SetWriteDeadline(time.Now().Add(wait))
		var err error
		if f, ok := msg.(*Frame); ok {
			err = sc.writeData(f.frame)
		} else {
			err = sc.writeText(textOf(msg))
		}
		if err != nil {
			if corked {
				_ = sc.uncork()
			}
			return err
		}
	}
	if corked {
		return sc.uncork()
	}
	return nil
}

// textOf is the text of a queued frame.
func textOf(msg any) []byte {
	switch m := msg.(type) {
	case []byte:
		return m
	case *Frame:
		return m.msg
	}
	return nil
}

// dataFrame is the frame of a queued message: a broadcast's encoded once for every
// socket that gets it.
func dataFrame(msg any) []byte {
	if f, ok := msg.(*Frame); ok {
		return f.frame
	}
	text := textOf(msg)
	return appendFrame(make([]byte, 0, frameSize(text)), text)
}

// finish sends the close frame (when the socket can still take it) and closes the socket.
func (p *Conn) finish(frame bool) {
	if g := p.node.ping(); g != nil {
		g.remove(p)
	}
	p.mu.Lock()
	code, reason := int(p.code), p.reason
	p.mu.Unlock()
	if frame && code != websocket.CloseAbnormalClosure {
		_ = p.conn.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(code, reason), time.Now().Add(p.node.writeWait()))
	}
	_ = p.conn.Close()
	if p.onClose != nil {
		p.onClose(code)
	}
	// A socket that waited in the read poller has no reader to end it: its end is called
	// here, once it is written for the last time.
	end := p.endPolled()
	p.mu.Lock()
	p.ended = true
	if p.done != nil {
		close(p.done)
	}
	p.mu.Unlock()
	if end != nil {
		end()
	}
}

// sendPing is the pinger's work for the socket (gorilla lets a control frame be written
// beside a message writer).
func (p *Conn) sendPing() {
	p.mu.Lock()
	closed := p.closed
	p.mu.Unlock()
	if closed {
		return
	}
	if p.conn.WriteControl(websocket.PingMessage, nil, time.Now().Add(p.node.writeWait())) != nil {
		p.Close(websocket.CloseAbnormalClosure, "")
	}
}
