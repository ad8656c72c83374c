package sockets

import (
	"context"

	"github.com/keyward/keyward/actors/app"
	"github.com/keyward/keyward/core/realtime"
)

// Each socket is an actor (app.Socket, a child of its app's actor): Client is a
// SessionActor's state and rules, Dashboard a DashboardActor's. Everything that happens
// to a socket is a message to its actor, handled one at a time: a frame it sent (the
// edge's reader hands it over with ClientMessage or DashboardMessage and waits for it to
// be handled, so a socket's messages keep their order and a fast sender is held back), a
// delivery (the app's actor fans a bus delivery out to its sockets' actors), a
// revalidation's verdict, a token recheck, its leaving. Storage and cluster calls never
// run inside the actor: a message's I/O is a job (jobs.go), done on a goroutine, whose end
// comes back as a message; frames that arrive meanwhile wait their turn.

// Messages of a socket's actor.
type (
	// inbound is a frame the socket sent; done is closed once it is handled.
	inbound struct {
		raw  []byte
		done chan struct{}
	}
	// verdict is a revalidation's answer for a client socket (nil: it passes).
	verdict struct{ err error }
)

// turn orders a socket's frames: one is handled at a time, with the I/O it started.
type turn struct {
	busy    bool
	leaving bool
	cur     chan struct{} // done of the frame under way
	pending []inbound
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

// take handles frame m now, or after the frame under way.
func (t *turn) take(sc app.SocketContext, m inbound, handle func(raw []byte) app.Job) {
	if t.busy {
		t.pending = append(t.pending, m)
		return
	}
	t.run(sc, m, handle)
}

func (t *turn) run(sc app.SocketContext, m inbound, handle func(raw []byte) app.Job) {
	t.busy, t.cur = true, m.done
	job := handle(m.raw)
	if job == nil {
		t.busy, t.cur = false, nil
		release(m.done)
		return
	}
	sc.Pipe(job)
}

// next goes on with the frame under way (job: more of its I/O) or, job nil, ends it and
// takes the frames that waited.
func (t *turn) next(sc app.SocketContext, job app.Job, handle func(raw []byte) app.Job) {
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

// leave: the socket left; its actor stops once the frames it took are handled.
func (t *turn) leave(sc app.SocketContext) {
	t.leaving = true
	t.maybeDone(sc)
}

func (t *turn) maybeDone(sc app.SocketContext) {
	if t.leaving && !t.busy && len(t.pending) == 0 {
		sc.Done()
	}
}

// failed releases every reader waiting on the socket's actor, which failed.
func (t *turn) failed(msg any) {
	release(t.cur)
	if m, ok := msg.(inbound); ok {
		release(m.done)
	}
	for _, m := range t.pending {
		release(m.done)
	}
	t.pending = nil
}

// hand gives frame raw to a socket's actor and waits until it is handled, the socket's
// actor is gone, or ctx ends.
func hand(ctx context.Context, ref app.Ref, raw []byte) {
	if !ref.Valid() {
		return
	}
	done := make(chan struct{})
	ref.Tell(inbound{raw: raw, done: done})
	ctx, cancel := context.WithTimeout(ctx, realtime.MessageDeadline)
	defer cancel()
	select {
	case <-done:
	case <-ctx.Done():
	}
}
