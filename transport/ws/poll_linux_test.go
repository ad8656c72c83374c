//go:build linux

package ws

import (
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// readersWaiting answers how many goroutines of this package's readers exist.
func readersWaiting() int {
	buf := make([]byte, 1<<20)
	n := 0
	for _, g := range strings.Split(string(buf[:runtime.Stack(buf, true)]), "\n\n") {
		if strings.Contains(g, "transport/ws.(*Conn).read") {
			n++
		}
	}
	return n
}

// waitFor polls cond for up to 30 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); !cond(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("waited 30 s for %s", what)
		}
	}
}

// TestPolledIdleSocketsHoldNoReader: sockets of a node that have read messages, a ping
// and a pong and are idle again hold no reader goroutine: they wait in the node's read
// poller, and still read what comes next.
func TestPolledIdleSocketsHoldNoReader(t *testing.T) {
	node := New(Config{})
	const n = 3
	var gots []<-chan string
	var raws []func([]byte)
	for range n {
		got, raw, cc := readingPair(t, node)
		go readUntilClosed(cc)
		gots = append(gots, got)
		raws = append(raws, func(b []byte) {
			if _, err := raw.Write(b); err != nil {
				t.Error(err)
			}
		})
	}
	for i := range n {
		raws[i](clientFrame(websocket.TextMessage, `{"type":"a"}`))
		raws[i](clientFrame(websocket.PingMessage, "p"))
		raws[i](clientFrame(websocket.PongMessage, "p"))
		receive(t, gots[i], `{"type":"a"}`)
	}
	if got := node.readPoller().registered(); got != n {
		t.Fatalf("%d sockets wait in the read poller, want %d", got, n)
	}
	// Other tests' sockets may have readers: none of this node's may be left.
	waitFor(t, "the readers to end", func() bool { return readersWaiting() == 0 })
	for i := range n {
		raws[i](clientFrame(websocket.TextMessage, `{"type":"b"}`))
		receive(t, gots[i], `{"type":"b"}`)
	}
}

// TestPolledSocketEnds: a polled socket's end is called once, whether the client goes
// away or the server closes it while it waits in the poller; it leaves the poller, and
// the poller's instance is closed with the last socket.
func TestPolledSocketEnds(t *testing.T) {
	node := New(Config{})
	url, socks := serve(t, node, nil, nil)
	gone, _ := dial(t, &websocket.Dialer{}, url)
	byClient := nextSocket(t, socks)
	kept, _ := dial(t, &websocket.Dialer{}, url)
	byServer := nextSocket(t, socks)
	if got := node.readPoller().registered(); got != 2 {
		t.Fatalf("%d sockets wait in the read poller, want 2", got)
	}
	_ = gone.Close()
	for range byClient.got { // the client's end reaches the reader
	}
	byServer.conn.Close(4001, "replaced")
	_ = kept.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, _, err := kept.ReadMessage(); !websocket.IsCloseError(err, 4001) {
		t.Fatalf("the closed socket's client read %v, want 4001", err)
	}
	for range byServer.got { // finish called the socket's end
	}
	waitFor(t, "the sockets to leave the poller", func() bool { return node.readPoller().registered() == 0 })
	node.reads.mu.Lock()
	defer node.reads.mu.Unlock()
	if node.reads.file != nil {
		t.Fatal("the read poller keeps its instance with no socket")
	}
}

// TestPolledSilentSocketEnds: a polled socket whose client sends nothing, not even a
// pong, for the pong wait is closed by the pinger (it has no read deadline while it
// waits), and its end is called.
func TestPolledSilentSocketEnds(t *testing.T) {
	node := New(Config{PingEvery: time.Second, PongWait: time.Second})
	url, socks := serve(t, node, nil, nil)
	dial(t, &websocket.Dialer{}, url) // never reads: never answers a ping
	s := nextSocket(t, socks)
	done := make(chan struct{})
	go func() {
		for range s.got {
		}
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("a silent socket is still open after 10 s with a pong wait of 1 s")
	}
	if closed, code := s.conn.Closed(); !closed || code != websocket.CloseNormalClosure {
		t.Fatalf("closed %v with %d, want 1000", closed, code)
	}
}
