package ws

import (
	"testing"
	"time"
	"unsafe"

	"github.com/gorilla/websocket"
)

// readUntilClosed reads c's messages until its socket closes (a client that keeps up).
func readUntilClosed(c *websocket.Conn) {
	for {
		if _, _, err := c.ReadMessage(); err != nil {
			return
		}
	}
}

// TestPingerPingsStartedSockets: the node's pinger holds a started socket in its slot,
// pings it when the slot's timer runs (run here by hand: the period is 25 s), and lets go
// of it, and of the slot, once the socket ends.
func TestPingerPingsStartedSockets(t *testing.T) {
	sc, cc, _ := loopbackSocket(t, false)
	pinged := make(chan struct{}, 1)
	cc.SetPingHandler(func(string) error {
		select {
		case pinged <- struct{}{}:
		default:
		}
		return nil
	})
	go readUntilClosed(cc)

	g := newPinger(DefaultPingEvery)
	p := newConn()
	p.node = &Transport{pinger: g}
	p.start(sc)
	slot := func() (int, bool) {
		p.mu.Lock()
		i := int(p.slot)
		p.mu.Unlock()
		g.mu.Lock()
		defer g.mu.Unlock()
		_, held := g.slots[i].peers[p]
		return i, held && g.slots[i].timer != nil
	}
	i, held := slot()
	if !held {
		t.Fatal("a started socket is not in its ping slot")
	}
	g.ping(i)
	select {
	case <-pinged:
	case <-time.After(30 * time.Second):
		t.Fatal("the slot's run sent no ping")
	}
	p.Close(websocket.CloseNormalClosure, "")
	<-p.Done()
	if _, held := slot(); held {
		t.Fatal("an ended socket is still in its ping slot")
	}
	g.ping(i)
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.slots[i].peers != nil || g.slots[i].timer != nil {
		t.Fatal("an empty slot keeps its map or its timer")
	}
}

// TestPeerSize: every socket holds a Conn; it stays in the 96-byte size class (no timer
// of its own, its flags packed).
func TestPeerSize(t *testing.T) {
	if n := unsafe.Sizeof(Conn{}); n > 96 {
		t.Fatalf("a Conn is %d bytes, more than the 96-byte size class", n)
	}
}

// TestPingerWritesPingsThrough: the pinger writes an idle socket's ping itself, without
// starting a writer, and a busy socket's from a goroutine of its own; both arrive, and
// the frames around them arrive whole and in order.
func TestPingerWritesPingsThrough(t *testing.T) {
	sc, cc := upgradedSocket(t)
	// The client's reader tells what it read, pings included, in order.
	events := make(chan string, 16)
	cc.SetPingHandler(func(string) error {
		events <- "ping"
		return nil
	})
	go func() {
		defer close(events)
		for {
			_, msg, err := cc.ReadMessage()
			if err != nil {
				return
			}
			events <- string(msg)
		}
	}()
	next := func(want ...string) {
		t.Helper()
		got := map[string]bool{}
		for range want {
			select {
			case e := <-events:
				got[e] = true
			case <-time.After(30 * time.Second):
				t.Fatalf("read %v, want %q", got, want)
			}
		}
		for _, w := range want {
			if !got[w] {
				t.Fatalf("read %v, want %q", got, want)
			}
		}
	}
	g := newPinger(DefaultPingEvery)
	p := newConn()
	p.node = &Transport{pinger: g}
	p.start(sc)
	waitIdle(t, p)
	p.mu.Lock()
	i := int(p.slot)
	p.mu.Unlock()

	if !p.pingThrough() {
		t.Fatal("an idle socket's ping was not written through")
	}
	if p.mu.Lock(); p.writing {
		t.Fatal("a ping written through started a writer")
	}
	p.mu.Unlock()
	p.Send(msgText(0))
	next("ping")
	next(string(msgText(0)))

	// A busy socket (a writer runs) is pinged from a goroutine.
	p.mu.Lock()
	p.writing = true
	p.mu.Unlock()
	if p.pingThrough() {
		t.Fatal("a busy socket's ping was written through")
	}
	g.ping(i)
	next("ping")
	p.mu.Lock()
	p.writing = false
	p.mu.Unlock()
	p.Send(msgText(1))
	next(string(msgText(1)))
	p.Close(websocket.CloseNormalClosure, "bye")
	p.Wait()
}
