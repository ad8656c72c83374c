package ws

import (
	"fmt"
	"sync"
	"time"

	"github.com/gorilla/websocket"
)

// pinger pings every started socket of the node every period (give or take the second
// of its slot): a socket joins the slot of the second it starts in, and each slot's
// timer, running while the slot holds sockets, pings them all: an idle socket's ping is
// written at once without blocking (Conn.pingThrough), any other's in a goroutine of its
// own as a socket's own timer did (a socket slow to take a ping delays no other). The
// node has a timer per slot of a second, not one per socket (a timer costs each idle
// socket more than a hundred bytes).
type pinger struct {
	period time.Duration
	mu     sync.Mutex
	slots  []pingSlot
	// panicked reports a panic of a slot's run (nil: it is dropped).
	panicked func(v any)
}

type pingSlot struct {
	peers map[*Conn]struct{}
	timer *time.Timer // runs while peers is not empty
}

// newPinger makes a pinger that pings each socket every period (whole seconds, at
// least one).
func newPinger(period time.Duration) *pinger {
	n := max(1, int(period/time.Second))
	return &pinger{period: time.Duration(n) * time.Second, slots: make([]pingSlot, n)}
}

func (g *pinger) add(p *Conn) {
	i := int(time.Now().Unix() % int64(len(g.slots)))
	p.mu.Lock()
	p.slot = uint8(i)
	p.mu.Unlock()
	g.mu.Lock()
	defer g.mu.Unlock()
	s := &g.slots[i]
	if s.peers == nil {
		s.peers = make(map[*Conn]struct{})
	}
	s.peers[p] = struct{}{}
	if s.timer == nil {
		s.timer = time.AfterFunc(g.period, func() { g.ping(i) })
	}
}

func (g *pinger) remove(p *Conn) {
	p.mu.Lock()
	i := p.slot
	p.mu.Unlock()
	g.mu.Lock()
	defer g.mu.Unlock()
	delete(g.slots[i].peers, p)
}

// ping is slot i's timer: it pings the slot's sockets and runs again, or stops and frees
// the slot once it is empty.
func (g *pinger) ping(i int) {
	defer func() {
		// A goroutine of the node's: a panic here must not end the process.
		if v := recover(); v != nil && g.panicked != nil {
			g.panicked(v)
		}
	}()
	g.mu.Lock()
	defer g.mu.Unlock()
	s := &g.slots[i]
	if len(s.peers) == 0 {
		s.peers, s.timer = nil, nil
		return
	}
	now := time.Now()
	for p := range s.peers {
		if p.silent(now) {
			// Nothing came, not even a pong, for the pong wait: the peer is gone (a polled
			// socket has no read deadline that would say so).
			p.Close(websocket.CloseNormalClosure, "")
			continue
		}
		if !p.pingThrough() {
			go p.sendPing()
		}
	}
	s.timer.Reset(g.period)
}

// panicReport is how a Transport reports a panic of one of its goroutines.
func panicReport(t *Transport, where string) func(v any) {
	return func(v any) { t.log().Error("socket transport: recovered a panic", "in", where, "panic", fmt.Sprint(v)) }
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
