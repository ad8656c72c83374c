package app

import (
	"time"

	"github.com/asynkron/protoactor-go/actor"
)

// An AppActor passivates (stops) after an idle time without messages, by a timer of its
// own rather than protoactor's receive timeout. protoactor-go's receive timeout (the
// version in go.mod) is not safe: its timer's goroutine cancels the timeout by writing
// the actor context's fields (CancelReceiveTimeout in receiveTimeoutHandler) while the
// actor's goroutine reads them for every message it handles, a data race the race
// detector reports under load (seen in TestAppActorRestartKeepsItsSockets; reproduced
// alone by an actor with a 1 ms receive timeout that keeps receiving). Here the timer
// only sends a message (idleCheck); the actor reads and writes its idle state in
// Receive alone.
//
// The timer is not reset per message (a timer reset on every delivery to a busy app):
// each message records when it came (lastActive), and a check that finds the actor
// active within the idle time arms the timer again for what is left of it.

// idleCheck is the passivation timer's message; gen names the arming it belongs to, so
// that a check of an earlier arming (a timer that fired as it was stopped) is dropped.
type idleCheck struct{ gen uint64 }

// armIdle starts the passivation timer: the actor checks whether it may stop once it got
// no message for d.
func (s *appActor[S]) armIdle(ctx actor.Context, d time.Duration) {
	s.stopIdle()
	s.idleGen++
	s.idleFor = d
	s.arm(ctx, d)
}

func (s *appActor[S]) arm(ctx actor.Context, d time.Duration) {
	gen, self, root := s.idleGen, ctx.Self(), ctx.ActorSystem().Root
	s.idleTimer = time.AfterFunc(d, func() { root.Send(self, idleCheck{gen: gen}) })
}

func (s *appActor[S]) stopIdle() {
	if s.idleTimer != nil {
		s.idleTimer.Stop()
		s.idleTimer = nil
	}
}

// idle handles a passivation check: an actor idle for its idle time stops unless it holds
// sockets or has work under way (a load, a read, a subscription, an admission). One that
// stays without sockets checks again after another idle time; one that holds sockets is
// armed again when its last socket leaves.
func (s *appActor[S]) idle(ctx actor.Context, m idleCheck) {
	if m.gen != s.idleGen || s.idleTimer == nil {
		return
	}
	s.idleTimer = nil
	if left := s.idleFor - time.Since(s.lastActive); left > 0 {
		s.arm(ctx, left)
		return
	}
	if len(s.reg.sockets) > 0 {
		return
	}
	if s.loading || len(s.reg.reads) > 0 || s.reg.subscribing || s.reg.admitting > 0 {
		s.arm(ctx, s.idleFor)
		return
	}
	// The actor leaves the directory first, then stops on its passivate message: a request
	// sent before it left (sends are made under the directory's lock) is in the mailbox
	// ahead of passivate and is answered; one sent after goes to a new actor. protoactor
	// drops, without an answer, a message that reaches an actor after it stopped.
	s.activeSinceIdle = false
	s.dir.forget(s.appID, ctx.Self())
	ctx.Send(ctx.Self(), passivate{})
}

// passivate is the actor's last message once it left the directory as idle.
type passivate struct{}

// passivate stops the actor, unless a request reached it after it decided it was idle:
// then it goes back into the directory (if no new actor took its place) and waits for
// another idle time.
func (s *appActor[S]) passivate(ctx actor.Context) {
	if s.activeSinceIdle && s.failed == nil {
		s.dir.readopt(s.appID, ctx.Self())
		s.armIdle(ctx, s.idleFor)
		return
	}
	if s.failed == nil {
		s.dir.cfg.Metrics.Passivated(appKind)
	}
	ctx.Stop(ctx.Self())
}
