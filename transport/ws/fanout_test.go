package ws

import (
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// TestFanoutWritesABroadcastInOrder: frames shared by many idle sockets (broadcasts) go
// through the node's fan-out writers, the first socket's from the sender. Each socket
// reads the broadcasts and the frames sent to it alone in the order they were sent, and a
// Close after them comes after them; the writers end once nothing waits, and every
// socket is idle again (no writer goroutine holds it).
func TestFanoutWritesABroadcastInOrder(t *testing.T) {
	const n, rounds = 80, 3
	node := &Transport{linger: &lingerClock{}, fanout: &fanoutWriters{max: 2, panicked: func(v any) { t.Errorf("fan-out writer panicked: %v", v) }}}
	peers := make([]*Conn, n)
	clients := make([]*websocket.Conn, n)
	for i := range n {
		sc, cc := upgradedSocket(t)
		p := newConn()
		p.node = node
		p.start(sc)
		waitIdle(t, p)
		peers[i], clients[i] = p, cc
	}
	for r := range rounds {
		f := NewFrame(msgText(2 * r))
		for _, p := range peers {
			if !p.SendFrame(f) || !p.Send(msgText(2*r+1)) {
				t.Fatal("a frame was refused")
			}
		}
		// The first round finds every socket idle; later ones find the writers that the
		// frames sent alone started, lingering.
		if got := f.sent.Load(); r == 0 && got != n {
			t.Fatalf("the broadcast was handed to %d idle sockets, want %d", got, n)
		}
	}
	for _, cc := range clients {
		readInOrder(t, cc, 0, 2*rounds)
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(2 * time.Millisecond) {
		node.fanout.mu.Lock()
		running, waiting := node.fanout.running, len(node.fanout.waiting)
		node.fanout.mu.Unlock()
		if running == 0 && waiting == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d fan-out writers run, %d sockets wait, after every frame was read", running, waiting)
		}
	}
	for _, p := range peers {
		waitIdle(t, p)
	}
	// A broadcast, then Close at once: the frame, then the close frame.
	f := NewFrame(msgText(2 * rounds))
	for _, p := range peers {
		p.SendFrame(f)
		p.Close(websocket.CloseNormalClosure, "bye")
	}
	for i, cc := range clients {
		readInOrder(t, cc, 2*rounds, 2*rounds+1)
		if _, _, err := cc.ReadMessage(); !websocket.IsCloseError(err, websocket.CloseNormalClosure) {
			t.Fatalf("socket %d: after the last broadcast: %v, want its close", i, err)
		}
		peers[i].Wait()
	}
}
