package ws

import (
	"net"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// readingPair answers a real loopback socket upgraded as Transport.Upgrade does
// (socketWriter), its server side read by a Conn's reader into the returned channel, and the client's
// raw connection (frames are written to it by hand: several in one write, or one cut in
// two). The channel is closed when the reader ends. With node set, the Conn is node's
// (its reads wait in node's read poller where there is one); without, its reader waits
// in a goroutine.
func readingPair(t *testing.T, node *Transport) (<-chan string, net.Conn, *websocket.Conn) {
	t.Helper()
	sc, cc, br := loopbackSocket(t, true)
	if br == nil {
		t.Fatal("the upgrade kept no read buffer for the reader")
	}
	p := newConn()
	p.node = node
	p.start(sc)
	got := make(chan string, 16)
	p.Read(func(msg []byte) { got <- string(msg) }, func() { close(got) })
	t.Cleanup(func() { p.Close(websocket.CloseNormalClosure, "") })
	return got, cc.NetConn(), cc
}

// clientFrame is a frame as a client sends it: final, masked (with a key that changes
// every byte, so an unmasking mistake shows).
func clientFrame(opcode byte, payload string) []byte {
	key := [4]byte{1, 2, 3, 4}
	f := []byte{0x80 | opcode, 0x80 | byte(len(payload)), key[0], key[1], key[2], key[3]}
	for i := range len(payload) {
		f = append(f, payload[i]^key[i%4])
	}
	return f
}

func receive(t *testing.T, got <-chan string, want string) {
	t.Helper()
	select {
	case msg := <-got:
		if msg != want {
			t.Fatalf("the reader passed %q, want %q", msg, want)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("the reader did not pass %q", want)
	}
}

// TestReaderHandlesFramesWrittenTogether: messages and control frames that arrive in one
// network read are all handled, in order, without waiting for more (the reader waits for
// the next frame only once its buffer is empty); a ping sent among them is answered with
// its payload, and a ping cut in two is answered once whole.
func TestReaderHandlesFramesWrittenTogether(t *testing.T) {
	forEachReader(t, testReaderHandlesFramesWrittenTogether)
}

// forEachReader runs test with a reader that waits in a goroutine, and with one that
// waits in a node's read poller (where there is one).
func forEachReader(t *testing.T, test func(t *testing.T, node *Transport)) {
	t.Run("goroutine", func(t *testing.T) { test(t, nil) })
	if canPollReads {
		t.Run("polled", func(t *testing.T) { test(t, New(Config{})) })
	}
}

func testReaderHandlesFramesWrittenTogether(t *testing.T, node *Transport) {
	got, raw, cc := readingPair(t, node)
	pongs := make(chan string, 4)
	cc.SetPongHandler(func(s string) error { pongs <- s; return nil })
	go readUntilClosed(cc)
	var together []byte
	together = append(together, clientFrame(websocket.TextMessage, `{"type":"a"}`)...)
	together = append(together, clientFrame(websocket.PingMessage, "p1")...)
	together = append(together, clientFrame(websocket.PongMessage, "unasked")...)
	together = append(together, clientFrame(websocket.TextMessage, `{"type":"b"}`)...)
	if _, err := raw.Write(together); err != nil {
		t.Fatal(err)
	}
	receive(t, got, `{"type":"a"}`)
	receive(t, got, `{"type":"b"}`)
	ping := clientFrame(websocket.PingMessage, "p2")
	for _, part := range [][]byte{ping[:3], ping[3:]} {
		if _, err := raw.Write(part); err != nil {
			t.Fatal(err)
		}
		time.Sleep(20 * time.Millisecond) // the reader sees the first part alone
	}
	for _, want := range []string{"p1", "p2"} {
		select {
		case p := <-pongs:
			if p != want {
				t.Fatalf("pong %q, want %q", p, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("no pong for the ping %q", want)
		}
	}
	if _, err := raw.Write(clientFrame(websocket.TextMessage, `{"type":"c"}`)); err != nil {
		t.Fatal(err)
	}
	receive(t, got, `{"type":"c"}`)
}

// TestReaderRefusesBadControlFramesAsGorilla: a ping gorilla refuses (an RSV bit set) is
// left to gorilla, which ends the socket with a protocol error, as before.
func TestReaderRefusesBadControlFramesAsGorilla(t *testing.T) {
	forEachReader(t, func(t *testing.T, node *Transport) {
		got, raw, cc := readingPair(t, node)
		refusesBadPing(t, got, raw, cc)
	})
}

func refusesBadPing(t *testing.T, got <-chan string, raw net.Conn, cc *websocket.Conn) {
	bad := clientFrame(websocket.PingMessage, "p")
	bad[0] |= 0x40 // RSV1, no extension negotiated
	if _, err := raw.Write(bad); err != nil {
		t.Fatal(err)
	}
	_ = cc.SetReadDeadline(time.Now().Add(10 * time.Second))
	_, _, err := cc.ReadMessage()
	if !websocket.IsCloseError(err, websocket.CloseProtocolError) {
		t.Fatalf("the client read %v, want a close for a protocol error", err)
	}
	for range got { // the reader ends
	}
}

// TestIdleReaderWaitsOutsideGorilla: once a socket is idle again after a message, a
// ping and a pong, its reader waits for the next frame in its own shallow call, not
// within gorilla's frame reading (over 1 KiB of stack more: a 4 KiB stack per idle
// socket instead of 2 KiB).
func TestIdleReaderWaitsOutsideGorilla(t *testing.T) {
	got, raw, cc := readingPair(t, nil)
	go readUntilClosed(cc)
	for _, f := range [][]byte{
		clientFrame(websocket.TextMessage, `{"type":"a"}`),
		clientFrame(websocket.PingMessage, "p"),
		clientFrame(websocket.PongMessage, "p"),
	} {
		if _, err := raw.Write(f); err != nil {
			t.Fatal(err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	receive(t, got, `{"type":"a"}`)
	// Readers of other tests' sockets may wait too: none may wait within gorilla.
	var shallow, deep []string
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		shallow, deep = shallow[:0], deep[:0]
		buf := make([]byte, 1<<20)
		for _, g := range strings.Split(string(buf[:runtime.Stack(buf, true)]), "\n\n") {
			switch {
			case !strings.Contains(g, "transport/ws.(*Conn).read") || !strings.Contains(g, "[IO wait"):
			case strings.Contains(g, "gorilla/websocket"):
				deep = append(deep, g)
			default:
				shallow = append(shallow, g)
			}
		}
		if len(shallow) > 0 && len(deep) == 0 {
			return
		}
	}
	t.Fatalf("%d readers wait outside gorilla, %d within it, as:\n%s", len(shallow), len(deep), strings.Join(deep, "\n\n"))
}
