package httpapi

import (
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

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
// handlers do (socketWriter), its network writes counted, and the client side.
func upgradedPair(t *testing.T) (*websocket.Conn, *countingConn, *websocket.Conn) {
	t.Helper()
	conns := make(chan *websocket.Conn, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := (&websocket.Upgrader{}).Upgrade(&socketWriter{ResponseWriter: w}, r, nil)
		if err == nil {
			conns <- c
		}
	}))
	t.Cleanup(srv.Close)
	cc, _, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(srv.URL, "http"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	sc := <-conns
	sock, ok := sc.NetConn().(*socketConn)
	if !ok {
		t.Fatalf("the upgraded connection is a %T, not a socketConn", sc.NetConn())
	}
	counted := &countingConn{Conn: sock.Conn}
	sock.Conn = counted
	return sc, counted, cc
}

// TestPeerWritesQueuedFramesTogether: frames queued together reach the client in order,
// in one write to the network rather than one per frame.
func TestPeerWritesQueuedFramesTogether(t *testing.T) {
	sc, counted, cc := upgradedPair(t)
	p := newPeer()
	const n = 20
	for i := range n {
		if !p.Send(fmt.Appendf(nil, `{"type":"message","data":{"message":"m%d"}}`, i)) {
			t.Fatalf("frame %d refused", i)
		}
	}
	p.start(sc) // the writer finds the twenty frames queued
	_ = cc.SetReadDeadline(time.Now().Add(5 * time.Second))
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
	p.wait()
	if _, _, err := cc.ReadMessage(); !websocket.IsCloseError(err, websocket.CloseNormalClosure) {
		t.Fatalf("close: %v", err)
	}
}

// TestPeerWriterLingersThenEnds: a socket's writer waits a moment for more frames (a
// frame sent meanwhile is written by it), then ends: an idle socket holds no writer and
// no channel.
func TestPeerWriterLingersThenEnds(t *testing.T) {
	sc, _, cc := upgradedPair(t)
	p := newPeer()
	p.clocks = &socketClocks{linger: &lingerClock{}}
	p.start(sc)
	_ = cc.SetReadDeadline(time.Now().Add(5 * time.Second))
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
	for deadline := time.Now().Add(5 * time.Second); !idle(); time.Sleep(5 * time.Millisecond) {
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
	p.wait()
	if _, _, err := cc.ReadMessage(); !websocket.IsCloseError(err, websocket.CloseNormalClosure) {
		t.Fatalf("close while lingering: %v", err)
	}
}
