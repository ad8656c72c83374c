package ws

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/gorilla/websocket"
)

// countingConn counts the writes to the network.
type countingConn struct {
	net.Conn
	writes atomic.Int32
}

func (c *countingConn) Write(b []byte) (int, error) {
	c.writes.Add(1)
	return c.Conn.Write(b)
}

// upgradedPair answers the server side of a real loopback socket upgraded as the
// Transport.Upgrade does (socketWriter), its network writes counted, and the client side. Its
// network writes go through the counter, so its peer cannot write through (the counter
// is no plain socket).
func upgradedPair(t *testing.T) (*websocket.Conn, *countingConn, *websocket.Conn) {
	t.Helper()
	sc, cc := upgradedSocket(t)
	sock := sc.NetConn().(*socketConn)
	counted := &countingConn{Conn: sock.Conn}
	sock.Conn = counted
	sock.fd = -1
	return sc, counted, cc
}

// loopbackSocket answers the server and the client side of a real socket on loopback,
// upgraded through socketWriter as Transport.Upgrade does when asHandlers is set (br is
// then the read buffer it kept for the socket's reader; nil otherwise).
func loopbackSocket(t testing.TB, asHandlers bool) (server, client *websocket.Conn, br *bufio.Reader) {
	t.Helper()
	ups := make(chan *websocket.Conn, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if asHandlers {
			w = &socketWriter{ResponseWriter: w}
		}
		if c, err := (&websocket.Upgrader{}).Upgrade(w, r, nil); err == nil {
			ups <- c
		}
	}))
	t.Cleanup(srv.Close)
	cc, _, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(srv.URL, "http"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	sc := <-ups
	if s, ok := sc.NetConn().(*socketConn); ok {
		if s.rd != nil {
			br = s.rd.br
		}
	}
	return sc, cc, br
}

// upgradedSocket answers the server side of a real loopback socket upgraded as the
// Transport.Upgrade does (socketWriter), and the client side.
func upgradedSocket(t testing.TB) (*websocket.Conn, *websocket.Conn) {
	t.Helper()
	sc, cc, _ := loopbackSocket(t, true)
	if _, ok := sc.NetConn().(*socketConn); !ok {
		t.Fatalf("the upgraded connection is a %T, not a socketConn", sc.NetConn())
	}
	return sc, cc
}

// TestPeerWritesQueuedFramesTogether: frames queued together reach the client in order,
// in one write to the network rather than one per frame.
func TestPeerWritesQueuedFramesTogether(t *testing.T) {
	sc, counted, cc := upgradedPair(t)
	p := newConn()
	const n = 20
	for i := range n {
		if !p.Send(fmt.Appendf(nil, `{"type":"message","data":{"message":"m%d"}}`, i)) {
			t.Fatalf("frame %d refused", i)
		}
	}
	p.start(sc) // the writer finds the twenty frames queued
	_ = cc.SetReadDeadline(time.Now().Add(20 * time.Second))
	for i := range n {
		_, msg, err := cc.ReadMessage()
		if err != nil {
			t.Fatalf("frame %d: %v", i, err)
		}
		if want := fmt.Sprintf(`"m%d"`, i); !strings.Contains(string(msg), want) {
			t.Fatalf("frame %d is %s, want %s", i, msg, want)
		}
	}
	if w := counted.writes.Load(); w != 1 {
		t.Fatalf("%d frames queued together took %d network writes, want 1", n, w)
	}
	// A frame queued alone is written at once, and the socket closes as before.
	p.Send([]byte(`{"type":"message","data":{"message":"last"}}`))
	if _, msg, err := cc.ReadMessage(); err != nil || !strings.Contains(string(msg), "last") {
		t.Fatalf("the next frame: %s, %v", msg, err)
	}
	p.Close(websocket.CloseNormalClosure, "bye")
	p.Wait()
	if _, _, err := cc.ReadMessage(); !websocket.IsCloseError(err, websocket.CloseNormalClosure) {
		t.Fatalf("close: %v", err)
	}
}

// TestPeerWriterLingersThenEnds: a socket's writer waits a moment for more frames (a
// frame sent meanwhile is written by it), then ends: an idle socket holds no writer and
// no channel.
func TestPeerWriterLingersThenEnds(t *testing.T) {
	sc, _, cc := upgradedPair(t)
	p := newConn()
	p.node = &Transport{linger: &lingerClock{}}
	p.start(sc)
	_ = cc.SetReadDeadline(time.Now().Add(20 * time.Second))
	for i := range 3 {
		p.Send(fmt.Appendf(nil, `{"type":"message","data":{"message":"m%d"}}`, i))
		if _, msg, err := cc.ReadMessage(); err != nil || !strings.Contains(string(msg), fmt.Sprintf(`"m%d"`, i)) {
			t.Fatalf("frame %d: %s, %v", i, msg, err)
		}
	}
	idle := func() bool {
		p.mu.Lock()
		defer p.mu.Unlock()
		return !p.writing && !p.lingering && p.wake == nil
	}
	for deadline := time.Now().Add(30 * time.Second); !idle(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the writer of an idle socket did not end")
		}
	}
	// A later frame starts a writer again; Close ends the socket as before.
	p.Send([]byte(`{"type":"message","data":{"message":"again"}}`))
	if _, msg, err := cc.ReadMessage(); err != nil || !strings.Contains(string(msg), "again") {
		t.Fatalf("a frame after the writer ended: %s, %v", msg, err)
	}
	p.Close(websocket.CloseNormalClosure, "bye")
	p.Wait()
	if _, _, err := cc.ReadMessage(); !websocket.IsCloseError(err, websocket.CloseNormalClosure) {
		t.Fatalf("close while lingering: %v", err)
	}
}

// msgText is the text of frame i of a test.
func msgText(i int) []byte {
	return fmt.Appendf(nil, `{"type":"message","data":{"message":"m%d"}}`, i)
}

// readInOrder reads frames from..to-1 (msgText) from cc, in order, and whole.
func readInOrder(t *testing.T, cc *websocket.Conn, from, to int) {
	t.Helper()
	_ = cc.SetReadDeadline(time.Now().Add(10 * time.Second))
	for i := from; i < to; i++ {
		_, msg, err := cc.ReadMessage()
		if err != nil {
			t.Fatalf("frame %d: %v", i, err)
		}
		if string(msg) != string(msgText(i)) {
			t.Fatalf("frame %d is %.80q, want %q", i, msg, msgText(i))
		}
	}
}

// waitIdle waits until no writer runs for p.
func waitIdle(t testing.TB, p *Conn) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(2 * time.Millisecond) {
		p.mu.Lock()
		writing := p.writing
		p.mu.Unlock()
		if !writing {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the writer of a socket with nothing queued did not end")
		}
	}
}

// TestPeerWritesThroughWithoutAWriter: a frame sent to an idle socket is written by the
// sender itself (no writer goroutine starts: one would linger), a broadcast's shared
// frame as well, and the socket closes as before.
func TestPeerWritesThroughWithoutAWriter(t *testing.T) {
	sc, cc := upgradedSocket(t)
	p := newConn()
	p.node = &Transport{linger: &lingerClock{}}
	p.start(sc)
	waitIdle(t, p)
	shared := NewFrame(msgText(1))
	if !p.Send(msgText(0)) || !p.SendFrame(shared) {
		t.Fatal("a frame was refused")
	}
	if p.mu.Lock(); p.writing {
		t.Fatal("a writer started for frames the socket took at once")
	}
	p.mu.Unlock()
	readInOrder(t, cc, 0, 2)
	p.Close(websocket.CloseNormalClosure, "bye")
	p.Wait()
	if _, _, err := cc.ReadMessage(); !websocket.IsCloseError(err, websocket.CloseNormalClosure) {
		t.Fatalf("close: %v", err)
	}
}

// TestPeerWriteThroughLeavesTheRestToTheWriter: a frame larger than what the socket takes
// at once is written partly by the sender and finished by the writer, before the frames
// sent after it, while pings are written beside them; every frame arrives whole and in
// order.
func TestPeerWriteThroughLeavesTheRestToTheWriter(t *testing.T) {
	sc, cc := upgradedSocket(t)
	tcp, ok := sc.NetConn().(*socketConn).Conn.(*net.TCPConn)
	if !ok {
		t.Fatalf("the socket is a %T", sc.NetConn().(*socketConn).Conn)
	}
	if err := tcp.SetWriteBuffer(8 << 10); err != nil {
		t.Fatal(err)
	}
	p := newConn()
	p.start(sc)
	waitIdle(t, p)
	big := append(msgText(0), strings.Repeat(" ", 4<<20)...)
	cc.SetReadLimit(8 << 20)
	const n = 200
	pings := make(chan struct{})
	go func() {
		defer close(pings)
		for range 50 {
			p.sendPing()
			time.Sleep(time.Millisecond)
		}
	}()
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = cc.SetReadDeadline(time.Now().Add(20 * time.Second))
		if _, msg, err := cc.ReadMessage(); err != nil || string(msg) != string(big) {
			t.Errorf("the large frame: %d bytes, %v", len(msg), err)
			return
		}
		readInOrder(t, cc, 1, n)
	}()
	if !p.Send(big) {
		t.Fatal("the large frame was refused")
	}
	if p.mu.Lock(); !p.writing {
		t.Fatal("the socket took a frame larger than its buffer at once")
	}
	p.mu.Unlock()
	for i := 1; i < n; i++ {
		if !p.Send(msgText(i)) {
			t.Fatalf("frame %d refused", i)
		}
		if i%20 == 0 {
			time.Sleep(time.Millisecond) // some frames find the socket idle again
		}
	}
	<-done
	<-pings
	p.Close(websocket.CloseNormalClosure, "bye")
	p.Wait()
}

// TestPeerWritesNoFrameAfterACloseFrame: once a close frame went out (the reader answers
// the other side's close), a frame sent after it is not written: the socket closes.
func TestPeerWritesNoFrameAfterACloseFrame(t *testing.T) {
	sc, cc := upgradedSocket(t)
	p := newConn()
	p.start(sc)
	waitIdle(t, p)
	if err := sc.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""), time.Now().Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	p.Send(msgText(0))
	select {
	case <-p.Done():
	case <-time.After(30 * time.Second):
		t.Fatal("a frame after the close frame did not end the socket")
	}
	_ = cc.SetReadDeadline(time.Now().Add(20 * time.Second))
	if _, msg, err := cc.ReadMessage(); !websocket.IsCloseError(err, websocket.CloseNormalClosure) {
		t.Fatalf("after the close frame: %q, %v", msg, err)
	}
}

// TestPeerWritesThroughAfterItsDeadlinePassed: a socket idle for longer than its last
// write deadline still takes a frame written through.
func TestPeerWritesThroughAfterItsDeadlinePassed(t *testing.T) {
	sc, cc := upgradedSocket(t)
	p := newConn()
	p.start(sc)
	p.Send(msgText(0))
	readInOrder(t, cc, 0, 1)
	_ = sc.NetConn().SetWriteDeadline(time.Now().Add(-time.Second))
	waitIdle(t, p)
	if !p.Send(msgText(1)) {
		t.Fatal("refused")
	}
	readInOrder(t, cc, 1, 2)
}

// TestPeerClosesASlowReader: a socket whose reader does not keep up has its queue fill
// and is closed as too slow (1013), counted once it ends.
func TestPeerClosesASlowReader(t *testing.T) {
	sc, cc := upgradedSocket(t)
	p := newConn()
	codes := make(chan int, 1)
	p.onClose = func(code int) { codes <- code }
	p.start(sc)
	big := append(msgText(0), strings.Repeat(" ", 64<<10)...)
	refused := false
	for i := 0; i < 10*DefaultQueue && !refused; i++ {
		refused = !p.Send(big)
	}
	if !refused {
		t.Fatal("a reader that reads nothing was never refused")
	}
	cc.Close() // the writer's blocked write fails: the socket ends
	select {
	case code := <-codes:
		if code != websocket.CloseTryAgainLater {
			t.Fatalf("closed with %d, want %d", code, websocket.CloseTryAgainLater)
		}
	case <-time.After(2 * DefaultWriteWait):
		t.Fatal("the slow socket did not end")
	}
}

// TestPeerEndsWhenItsWriteThroughFails: a frame written through to a socket the other
// side closed ends the socket (no writer was running to see it).
func TestPeerEndsWhenItsWriteThroughFails(t *testing.T) {
	sc, cc := upgradedSocket(t)
	p := newConn()
	p.start(sc)
	waitIdle(t, p)
	done := p.Done()
	if tcp, ok := cc.NetConn().(*net.TCPConn); ok {
		_ = tcp.SetLinger(0) // closing resets the connection: the next writes fail
	}
	cc.Close()
	for i := 0; i < 1000; i++ {
		if !p.Send(msgText(i)) {
			break
		}
		time.Sleep(time.Millisecond)
	}
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("the socket did not end after its writes failed")
	}
}

// TestPeerEndsWhileFramesAreWrittenThrough: a socket closed while frames are written
// through to it ends cleanly (the descriptor is not closed under a send).
func TestPeerEndsWhileFramesAreWrittenThrough(t *testing.T) {
	for round := range 20 {
		sc, cc := upgradedSocket(t)
		p := newConn()
		p.start(sc)
		waitIdle(t, p)
		go func() {
			for range 200 {
				_, _, _ = cc.ReadMessage()
			}
		}()
		sent := make(chan struct{})
		go func() {
			defer close(sent)
			for i := 0; i < 200 && p.Send(msgText(i)); i++ {
			}
		}()
		if round%2 == 0 {
			time.Sleep(time.Duration(round) * 50 * time.Microsecond)
		}
		p.Close(websocket.CloseNormalClosure, "bye")
		select {
		case <-p.Done():
		case <-time.After(30 * time.Second):
			t.Fatalf("round %d: the socket did not end", round)
		}
		<-sent
	}
}

// TestSocketConnSize: every socket holds a socketConn; it stays in the 80-byte size class.
func TestSocketConnSize(t *testing.T) {
	if n := unsafe.Sizeof(socketConn{}); n > 80 {
		t.Fatalf("a socketConn is %d bytes, more than the 80-byte size class", n)
	}
}

// TestPeerFramesOfEveryLengthForm: frames whose lengths take each of RFC 6455's three
// length forms (7-bit, 16-bit, 64-bit) and their edges reach a client whole, written
// through and by the writer (queued behind a frame the socket is still taking).
func TestPeerFramesOfEveryLengthForm(t *testing.T) {
	sc, cc := upgradedSocket(t)
	cc.SetReadLimit(1 << 20)
	p := newConn()
	p.start(sc)
	waitIdle(t, p)
	sizes := []int{0, 1, 125, 126, 127, 65535, 65536, 70000}
	for _, queued := range []bool{false, true} {
		for _, n := range sizes {
			msg := []byte(strings.Repeat("x", n))
			if queued {
				p.mu.Lock()
				p.writing = true // as if a writer ran: the frame is queued
				p.mu.Unlock()
			}
			if !p.SendFrame(NewFrame(msg)) {
				t.Fatalf("a frame of %d bytes was refused", n)
			}
			if queued {
				go p.write()
			}
			_ = cc.SetReadDeadline(time.Now().Add(20 * time.Second))
			kind, got, err := cc.ReadMessage()
			if err != nil || kind != websocket.TextMessage || string(got) != string(msg) {
				t.Fatalf("a frame of %d bytes (queued %v): kind %d, %d bytes, %v", n, queued, kind, len(got), err)
			}
			waitIdle(t, p)
		}
	}
}
