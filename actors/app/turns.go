package app

import (
	"context"
	"time"
)

// A socket's frames are handled one at a time, each with the I/O it started (Turn): a
// frame the edge's reader hands over (Hand) waits until the frame before it and its jobs
// are done, so a socket's messages keep their order and a fast sender is held back;
// deliveries, verdicts and timers are not held back by it. The SessionActor and the
// DashboardActor each keep a Turn.

// Frame is a frame a socket sent, a message to its actor; Done is closed once it is
// handled.
type Frame struct {
	Raw  []byte
	Done chan struct{}
}

// Turn orders a socket's frames: one is handled at a time, with the I/O it started. It
// belongs to the socket's actor.
type Turn struct {
	busy    bool
	leaving bool
	cur     chan struct{} // Done of the frame under way
	pending []Frame
}

// release tells a waiting reader its frame is handled (once).
func release(done chan struct{}) {
	if done == nil {
		return
	}
	select {
	case <-done:
	default:
		close(done)
	}
}

// Take handles frame m now, or after the frame under way; handle answers the frame's I/O
// (nil: none).
func (t *Turn) Take(sc SocketContext, m Frame, handle func(raw []byte) Job) {
	if t.busy {
		t.pending = append(t.pending, m)
		return
	}
	t.run(sc, m, handle)
}

func (t *Turn) run(sc SocketContext, m Frame, handle func(raw []byte) Job) {
	t.busy, t.cur = true, m.Done
	job := handle(m.Raw)
	if job == nil {
		t.busy, t.cur = false, nil
		release(m.Done)
		return
	}
	sc.Pipe(job)
}

// Next goes on with the frame under way (job: more of its I/O) or, job nil, ends it and
// takes the frames that waited.
func (t *Turn) Next(sc SocketContext, job Job, handle func(raw []byte) Job) {
	if job != nil {
		sc.Pipe(job)
		return
	}
	t.busy = false
	release(t.cur)
	t.cur = nil
	for !t.busy && len(t.pending) > 0 {
		m := t.pending[0]
		t.pending = t.pending[1:]
		t.run(sc, m, handle)
	}
	if len(t.pending) == 0 {
		t.pending = nil
	}
	t.maybeDone(sc)
}

// Leave: the socket left; its actor stops once the frames it took are handled.
func (t *Turn) Leave(sc SocketContext) {
	t.leaving = true
	t.maybeDone(sc)
}

func (t *Turn) maybeDone(sc SocketContext) {
	if t.leaving && !t.busy && len(t.pending) == 0 {
		sc.Done()
	}
}

// Failed releases every reader waiting on the socket's actor, which failed while it
// handled msg.
func (t *Turn) Failed(msg any) {
	release(t.cur)
	if m, ok := msg.(Frame); ok {
		release(m.Done)
	}
	for _, m := range t.pending {
		release(m.Done)
	}
	t.pending = nil
}

// Hand gives frame raw to a socket's actor and waits until it is handled, the socket's
// actor is gone, ctx ends or deadline passed.
func Hand(ctx context.Context, ref Ref, raw []byte, deadline time.Duration) {
	if !ref.Valid() {
		return
	}
	done := make(chan struct{})
	ref.Tell(Frame{Raw: raw, Done: done})
	ctx, cancel := context.WithTimeout(ctx, deadline)
	defer cancel()
	select {
	case <-done:
	case <-ctx.Done():
	}
}
