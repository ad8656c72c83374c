package app

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/scheduler"

	"github.com/keyward/keyward/actors/actorkit"
)

// An AppActor holds the registry of its application's sockets on this node: a client
// socket is admitted through it (Admit), a socket joins and leaves with a message to it,
// deliveries from the app's bus subscription are handed to its sockets in the actor
// (bus.go), and the actor drives the periodic work on them (Tick) with its own timers. An
// actor that holds sockets is not passivated. The registry is made with the actor's
// props, not by the actor, so that an actor restarted by its supervisor after a panic
// finds its sockets (and restarts their timers).

// Tick is periodic work on the sockets of each app: every Every, the directory's
// TickWork runs it over the app's sockets on this node. It runs on a goroutine of the
// directory (never in Receive), one at a time per app and tick.
type Tick struct {
	// Name tells the ticks apart in TickWork.RunTick.
	Name  string
	Every time.Duration
	// OnChange runs it also as soon as the app changed (Invalidate) and its snapshot was
	// reloaded; a run under way at that moment is followed by another.
	OnChange bool
}

// TickWork does the periodic work of the ticks (SetTicks) over an app's sockets; ctx ends
// when the directory closes.
type TickWork interface {
	RunTick(ctx context.Context, appID string, tick Tick, sockets []Member)
}

// registry is an app's sockets on this node, kept across restarts of the app's actor;
// only the app's actor touches it.
type registry struct {
	sockets map[string]Member
	list    []Member // the sockets as a slice, rebuilt after a change (nil)
	timers  []scheduler.CancelFunc
	running []bool // by tick: a Run is under way
	again   []bool // by tick: the app changed during the Run under way; it runs again after

	// live is the actor of each socket that has one (socket.go), while it runs; leaving
	// the sockets that left and whose actor finishes its work, with the Leave to answer.
	live    map[string]*actor.PID
	leaving map[string]leaver
	// props of the socket actors by kind; spawning is the socket being spawned.
	props    map[string]*actor.Props
	spawning Socket
	// reads are the reads of the app's live state under way or waiting (reads.go).
	reads map[string]*readState
	// sub is the app's bus subscription, subscribing is true while one is being made, and
	// the registrations that wait for it are pending (bus.go); admitting counts the
	// admissions under way.
	sub           *subscription
	subscribing   bool
	pendingJoins  []pendingJoin
	pendingAdmits []admitReq
	admitting     int
	// renewing is true while a renewal of the leases is under way; renewWaiters wait for
	// the next one (leases.go).
	renewing     bool
	renewWaiters []*actor.PID
}

// leaver is a socket that left, until its actor stopped.
type leaver struct {
	waiter *actor.PID
	socket Member
}

func (r *registry) members() []Member {
	if r.list == nil {
		r.list = make([]Member, 0, len(r.sockets))
		for _, s := range r.sockets {
			r.list = append(r.list, s)
		}
	}
	return r.list
}

// Messages of the registry.
type (
	join struct {
		id     string
		socket Member
	}
	// admitReq is answered on reply (made with room for one answer, so the actor never
	// waits on it): every socket's upgrade makes one, and a channel is far cheaper than
	// a protoactor future (a process registered and removed, a timer, an envelope).
	admitReq struct {
		ctx    context.Context
		id     string
		socket Admittee
		reply  chan<- admitReply
	}
	admitted struct {
		req admitReq
		err error
	}
	// admitReply answers an admitReq; dead is set when the request reached no actor (it
	// had stopped: deadLetters), and the caller asks again.
	admitReply struct {
		err  error
		dead bool
	}
	leave   struct{ id string }
	left    struct{ held bool }
	members struct{}
	tickNow struct{ i int }
	// toSocket is the end of a job of socket id (SocketContext.Pipe): what its Work
	// answered, or why it panicked.
	toSocket struct {
		id     string
		done   Job
		failed string
	}
	tickDone struct{ i int }
)

// SetTicks sets the periodic work on every app's sockets: work runs each tick; it is
// called once, before the first socket joins.
func (a *Apps[S]) SetTicks(work TickWork, ticks ...Tick) {
	a.mu.Lock()
	a.tickWork, a.ticks = work, ticks
	a.mu.Unlock()
}

// ask sends msg to appID's actor (spawning it) and answers its reply, retrying when the
// actor passivated between the lookup and the request.
func (a *Apps[S]) ask(ctx context.Context, appID string, msg any) (any, error) {
	for try := 0; try < 3; try++ {
		timeout := askTimeout
		if d, ok := ctx.Deadline(); ok {
			timeout = min(timeout, time.Until(d))
		}
		if timeout <= 0 {
			return nil, context.DeadlineExceeded
		}
		fut, pid, err := a.send(appID, msg, timeout)
		if err != nil {
			return nil, err
		}
		res, err := fut.Result()
		if errors.Is(err, actor.ErrDeadLetter) {
			// The actor passivated between the lookup and the request.
			a.forget(appID, pid)
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("app actor %s: %w: %w", appID, ErrUnavailable, err)
		}
		return res, nil
	}
	return nil, fmt.Errorf("app actor %s: stopped repeatedly: %w", appID, ErrUnavailable)
}

// Join registers a socket of the app with the app's actor; it returns once the socket is
// registered (a delivery handed to the actor after that reaches it).
func (a *Apps[S]) Join(ctx context.Context, appID, id string, socket Member) error {
	res, err := a.ask(ctx, appID, join{id: id, socket: socket})
	if err != nil {
		return err
	}
	r, _ := res.(joinReply)
	return r.err
}

// Admittee is a socket that is admitted before it is registered: its Admit makes the
// admission's storage and cluster calls. The AppActor runs it on a goroutine of the
// directory, never in its Receive; the socket travels in the actor's messages as data.
type Admittee interface {
	Member
	Admit(ctx context.Context) error
}

// Admit drives a socket's admission through the app's actor: the actor runs the socket's
// Admit (the admission's storage and cluster calls) on a goroutine, and when its answer comes back
// as a message the actor registers the socket in the same step if it passed, so that no
// delivery handed to the actor after that misses it. It answers admit's error; after an
// error (the caller's ctx ended too) the caller calls Leave, which undoes a registration
// that raced with the end of ctx.
func (a *Apps[S]) Admit(ctx context.Context, appID, id string, socket Admittee) error {
	reply := make(chan admitReply, 1)
	for try := 0; try < 3; try++ {
		deadline, hasDeadline := ctx.Deadline()
		if hasDeadline && time.Until(deadline) <= 0 {
			return context.DeadlineExceeded
		}
		pid, err := a.post(appID, admitReq{ctx: ctx, id: id, socket: socket, reply: reply})
		if err != nil {
			return err
		}
		// The caller's deadline, when it comes before askTimeout (a socket's admission has
		// one), is the wait's: no timer of its own.
		var expired <-chan time.Time
		timer := (*time.Timer)(nil)
		if !hasDeadline || time.Until(deadline) > askTimeout {
			timer = time.NewTimer(askTimeout)
			expired = timer.C
		}
		var r admitReply
		answered := false
		select {
		case r = <-reply:
			answered = true
		case <-expired:
		case <-ctx.Done():
		}
		if timer != nil {
			timer.Stop()
		}
		switch {
		case !answered:
			return fmt.Errorf("app actor %s: %w: %w", appID, ErrUnavailable, actor.ErrTimeout)
		case r.dead:
			// The actor passivated between the lookup and the request.
			a.forget(appID, pid)
			continue
		}
		return r.err
	}
	return fmt.Errorf("app actor %s: stopped repeatedly: %w", appID, ErrUnavailable)
}

// answer answers an admission; it never waits (the reply channel has room for the one
// answer a request gets).
func (m admitReq) answer(err error) { m.reply <- admitReply{err: err} }

// Leave unregisters a socket; it answers whether the actor held it.
func (a *Apps[S]) Leave(appID, id string) bool {
	ctx, cancel := context.WithTimeout(a.work.Context(), askTimeout)
	defer cancel()
	res, err := a.ask(ctx, appID, leave{id: id})
	if err != nil {
		return false
	}
	l, _ := res.(left)
	return l.held
}

// Held answers how many sockets of kind (Socket.Kind: "session", "dashboard") the node's
// AppActors hold, for metrics.
func (a *Apps[S]) Held(kind string) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.held[kind]
}

// countHeld counts a socket registered (delta 1) or gone (-1) under its kind.
func (a *Apps[S]) countHeld(socket Member, delta int) {
	a.mu.Lock()
	if a.held == nil {
		a.held = map[string]int{}
	}
	a.held[socket.Kind()] += delta
	a.mu.Unlock()
}

// Sockets answers a copy of the app's sockets on this node.
func (a *Apps[S]) Sockets(ctx context.Context, appID string) ([]Member, error) {
	a.mu.Lock()
	pid := a.pids[appID]
	a.mu.Unlock()
	if pid == nil {
		return nil, nil
	}
	res, err := a.ask(ctx, appID, members{})
	if err != nil {
		return nil, err
	}
	out, _ := res.([]Member)
	return out, nil
}

// AllSockets answers the sockets of every app on this node, by app.
func (a *Apps[S]) AllSockets(ctx context.Context) map[string][]Member {
	a.mu.Lock()
	apps := make([]string, 0, len(a.pids))
	for appID := range a.pids {
		apps = append(apps, appID)
	}
	a.mu.Unlock()
	out := make(map[string][]Member, len(apps))
	for _, appID := range apps {
		if list, err := a.Sockets(ctx, appID); err == nil && len(list) > 0 {
			out[appID] = list
		}
	}
	return out
}

// receiveSockets handles the registry's messages; it answers false for others.
func (s *appActor[S]) receiveSockets(ctx actor.Context) bool {
	r := s.reg
	switch m := ctx.Message().(type) {
	case join:
		if s.needsSubscription(ctx) {
			r.pendingJoins = append(r.pendingJoins, pendingJoin{m: m, sender: ctx.Sender()})
			return true
		}
		s.register(ctx, m.id, m.socket)
		ctx.Respond(joinReply{})
	case admitReq:
		if s.needsSubscription(ctx) {
			r.pendingAdmits = append(r.pendingAdmits, m)
			return true
		}
		s.runAdmission(ctx, m)
	case admitted:
		r.admitting--
		err := m.err
		if err == nil {
			err = m.req.ctx.Err() // the caller gave up: it is not registered
		}
		if err == nil {
			s.register(ctx, m.req.id, m.req.socket)
		} else if _, ok := m.req.socket.(Leaseholder); ok && s.leaseConfig().Presence != nil {
			// The admission may have put a lease in place that no registered socket holds.
			s.releaseLeases([]string{m.req.id})
		}
		m.req.answer(err)
		s.maybeUnsubscribe()
	case leave:
		socket, held := r.sockets[m.id]
		delete(r.sockets, m.id)
		if held {
			s.dir.countHeld(socket, -1)
		}
		r.list = nil
		if held && len(r.sockets) == 0 {
			s.stopTimers()
			// The idle time counts from the last socket's leaving: the timer is armed again
			// (an actor that held sockets when it fired stayed without one).
			s.armIdle(ctx, s.dir.cfg.Idle)
		}
		s.maybeUnsubscribe()
		if held && s.releaseOnLeave(ctx, m.id, socket, ctx.Sender()) {
			return true // its Leave goes on once the lease is released (released)
		}
		s.finishLeave(ctx, m.id, socket, held, ctx.Sender())
	case *actor.Terminated:
		s.childTerminated(ctx, m.Who)
	case members:
		ctx.Respond(append([]Member(nil), r.members()...))
	case toSocket:
		if pid := r.live[m.id]; pid != nil && (m.done != nil || m.failed != "") {
			if m.failed != "" {
				ctx.Send(pid, workFailed{reason: m.failed})
			} else {
				ctx.Send(pid, JobDone{Job: m.done})
			}
		}
	case tickNow:
		if m.i < len(s.ticks) && !r.running[m.i] {
			s.startTick(ctx, m.i)
		}
	case tickDone:
		if m.i < len(r.running) {
			r.running[m.i] = false
			if r.again[m.i] {
				r.again[m.i] = false
				s.startTick(ctx, m.i)
			}
		}
	default:
		return false
	}
	return true
}

// finishLeave ends the Leave of a socket (no longer registered): its actor finishes its
// work first, and the answer follows its end.
func (s *appActor[S]) finishLeave(ctx actor.Context, id string, socket Member, held bool, waiter *actor.PID) {
	r := s.reg
	if pid := r.live[id]; held && pid != nil {
		if r.leaving == nil {
			r.leaving = map[string]leaver{}
		}
		r.leaving[id] = leaver{waiter: waiter, socket: socket}
		ctx.Send(pid, Leaving{})
		return
	}
	if waiter != nil {
		ctx.Send(waiter, left{held: held})
	}
}

// register registers a socket (its admission passed, or it joined) and spawns its actor.
func (s *appActor[S]) register(ctx actor.Context, id string, socket Member) {
	r := s.reg
	if _, again := r.sockets[id]; !again {
		s.dir.countHeld(socket, 1)
	}
	r.sockets[id] = socket
	r.list = nil
	if len(r.sockets) == 1 {
		s.startTimers(ctx)
	}
	s.spawnSocket(ctx, id, socket, true)
}

// startTimers starts the actor's periodic ticks (with its first socket, or after a restart).
func (s *appActor[S]) startTimers(ctx actor.Context) {
	s.stopTimers()
	s.dir.mu.Lock()
	s.ticks, s.tickWork = s.dir.ticks, s.dir.tickWork
	leaseTTL := s.dir.leases.TTL
	s.dir.mu.Unlock()
	r := s.reg
	if len(r.running) != len(s.ticks) {
		r.running, r.again = make([]bool, len(s.ticks)), make([]bool, len(s.ticks))
	}
	timers := scheduler.NewTimerScheduler(ctx.ActorSystem().Root)
	for i, t := range s.ticks {
		r.timers = append(r.timers, timers.SendRepeatedly(t.Every, t.Every, ctx.Self(), tickNow{i: i}))
	}
	if every := leaseTTL / 3; every > 0 {
		r.timers = append(r.timers, timers.SendRepeatedly(every, every, ctx.Self(), renewNow{}))
	}
}

func (s *appActor[S]) stopTimers() {
	for _, stop := range s.reg.timers {
		stop()
	}
	s.reg.timers = nil
}

// runAdmission runs an admission off the actor, under the caller's ctx; its answer comes
// back as admitted (to this actor, or to the incarnation that replaced it after a restart).
func (s *appActor[S]) runAdmission(ctx actor.Context, m admitReq) {
	s.reg.admitting++
	actorkit.Pipe(s.dir.work, ctx.ActorSystem().Root, ctx.Self(), "an admission", []any{"app", s.appID}, 0,
		func(context.Context) admitted { return admitted{req: m, err: m.socket.Admit(m.ctx)} },
		func(any) admitted {
			return admitted{req: m, err: errors.New("actors: the admission failed")}
		})
}

// startTick runs tick i (not under way) over the app's sockets, if it holds any.
func (s *appActor[S]) startTick(ctx actor.Context, i int) {
	r := s.reg
	if len(r.sockets) == 0 {
		return
	}
	r.running[i] = true
	s.runTick(ctx, i, append([]Member(nil), r.members()...))
}

// runOnChange runs the ticks marked OnChange now (after the app changed and its snapshot
// was reloaded); one under way runs again when it ends, since it may have read the old
// state.
func (s *appActor[S]) runOnChange(ctx actor.Context) {
	r := s.reg
	for i, t := range s.ticks {
		switch {
		case !t.OnChange || i >= len(r.running):
		case r.running[i]:
			r.again[i] = true
		default:
			s.startTick(ctx, i)
		}
	}
}

// runTick runs tick i over sockets off the actor; its end comes back as a message.
func (s *appActor[S]) runTick(ctx actor.Context, i int, sockets []Member) {
	appID, work, tick := s.appID, s.tickWork, s.ticks[i]
	actorkit.Pipe(s.dir.work, ctx.ActorSystem().Root, ctx.Self(), "the periodic work of an app", []any{"app", appID}, 0,
		func(ctx context.Context) tickDone {
			work.RunTick(ctx, appID, tick, sockets)
			return tickDone{i: i}
		},
		func(any) tickDone { return tickDone{i: i} })
}
