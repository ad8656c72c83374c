package ws

import (
	"runtime"
	"sync"
)

// fanoutWriters write a broadcast's frame through to idle sockets on up to GOMAXPROCS
// goroutines at once. A write through is one send(2) per socket, and on loopback and on
// a busy link most of a delivery's CPU is that call; made one after another on the
// sender's goroutine (the app's actor, which delivers to every socket of the app), a
// broadcast to 500 sockets took 500 of them in a row on one core while the others were
// idle. The writers start when a broadcast needs them and end when no socket waits, so
// an idle node holds none.
//
// A socket handed to them is marked writing, with the frame first in its queue, as if a
// writer ran: what is sent or Close called meanwhile waits behind the frame, in order
// (afterWriteThrough leaves it to a writer goroutine, as after any write through).
type fanoutWriters struct {
	mu       sync.Mutex
	waiting  []*Conn
	running  int
	max      int
	panicked func(v any)
}

// fanoutChunk is how many sockets a writer takes at once; a second writer starts only
// when more than that wait (a small broadcast costs no second goroutine).
const fanoutChunk = 32

func newFanoutWriters(panicked func(v any)) *fanoutWriters {
	return &fanoutWriters{max: max(1, runtime.GOMAXPROCS(0)), panicked: panicked}
}

// add hands socket p, marked writing with its frame queued first, to the writers.
func (f *fanoutWriters) add(p *Conn) {
	f.mu.Lock()
	f.waiting = append(f.waiting, p)
	start := f.running == 0 || (f.running < f.max && len(f.waiting) > fanoutChunk)
	if start {
		f.running++
	}
	f.mu.Unlock()
	if start {
		go f.run()
	}
}

// run writes through to waiting sockets until none waits.
func (f *fanoutWriters) run() {
	var batch []*Conn
	defer func() {
		if v := recover(); v != nil {
			f.panicked(v)
			// The sockets of the batch not yet written are left to writer goroutines.
			for _, p := range batch {
				if p != nil {
					p.mu.Lock()
					go p.write()
					p.mu.Unlock()
				}
			}
			f.mu.Lock()
			restart := len(f.waiting) > 0 // the others go on being written
			if !restart {
				f.running--
			}
			f.mu.Unlock()
			if restart {
				go f.run()
			}
		}
	}()
	for {
		f.mu.Lock()
		n := min(len(f.waiting), fanoutChunk)
		if n == 0 {
			f.waiting = nil // the next broadcast gets a fresh slice; an idle node holds none
			f.running--
			f.mu.Unlock()
			return
		}
		batch = append(batch[:0], f.waiting[:n]...)
		clear(f.waiting[:n])
		f.waiting = f.waiting[n:]
		f.mu.Unlock()
		for i, p := range batch {
			batch[i] = nil
			p.writeFirstThrough()
		}
	}
}

// writeFirstThrough writes the first queued frame of a socket the fan-out writers hold
// (p.writing is set for them) as writeThrough does.
func (p *Conn) writeFirstThrough() {
	p.mu.Lock()
	msg := p.queue[0]
	p.queue = p.queue[1:]
	if len(p.queue) == 0 {
		p.queue = nil
	}
	sc := p.conn.NetConn().(*socketConn) // fanOut hands over socketConns only
	p.mu.Unlock()
	taken, left, err := sc.tryWrite(dataFrame(msg))
	p.mu.Lock()
	defer p.mu.Unlock()
	if !taken {
		q := make([]any, 0, len(p.queue)+1)
		p.queue = append(append(q, msg), p.queue...)
		go p.write()
		return
	}
	p.afterWriteThrough(left, err)
}

// fanOut hands a broadcast's frame for idle socket p to the node's fan-out writers,
// except the frame's first socket, written through by the sender at once (a broadcast to
// one socket costs no goroutine). It answers false when p cannot be written through (the
// caller queues f). p.mu is held.
func (p *Conn) fanOut(f *Frame) bool {
	w := p.node.fanouts()
	if w == nil || f.sent.Add(1) == 1 {
		return p.writeThrough(f)
	}
	if sc, ok := p.conn.NetConn().(*socketConn); !ok || sc.fd < 0 {
		return false
	}
	p.writing = true
	p.queue = append(p.queue, f)
	w.add(p)
	return true
}
