package app

import (
	"context"
	"fmt"
	"log/slog"
	"runtime/debug"
	"strings"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/scheduler"

	"github.com/keyward/keyward/actors/actorkit"
)

// A socket registered with an AppActor that implements Socket gets an actor of its own, a
// child of the AppActor (SessionActor for a client socket, DashboardActor for an owner's):
// it owns the order of everything that happens to the socket. The socket's state and its
// rules are the socket kind's (actors/session, actors/dashboard: the Socket's Receive);
// the actor runs them one message at a time and gives them a way to do I/O without blocking: the socket hands its
// actor a Job (data saying what to do, SocketContext.Pipe), the socket's Work does it on a
// goroutine, and the job comes back with its outcome as a message (JobDone).
//
// Supervision: a panic while a socket actor handles a message stops that actor alone and
// tells its socket (Failed, which closes it), with a log line naming the app and the
// socket; the AppActor and its other sockets go on. When the AppActor itself fails and is
// restarted, protoactor stops its children first: the new incarnation spawns them again
// from the registry (the state lives in the Socket values the registry keeps, not in the
// actors), under the same names, so a Ref made before the restart reaches the new actor.
// The results of the sockets' I/O come back through the AppActor, whose mailbox keeps
// them through its restart, so none is lost; other messages that were in a child's
// mailbox at that moment are (a frame a reader handed over: the reader goes on at its
// deadline; a delivery).

// Member is a socket registered with its app's actor: the registry, the deliveries and the
// periodic work handle it as one. A Member that is a Socket gets an actor of its own.
type Member interface {
	// Kind is the actor kind in the metrics and the held counts: "session" or "dashboard".
	Kind() string
}

// Socket is one socket's state and rules, run by its actor.
type Socket interface {
	Member
	// Spawned gives the socket the reference of its actor, once, before the admission or
	// the join that registered it answers.
	Spawned(ref Ref)
	// Receive handles one message in the socket's actor: SocketStarted after each spawn,
	// SocketStopping before the actor stops, Leaving when the socket leaves its app (the
	// socket calls sc.Done once it has finished its work), JobDone when a job it piped
	// ended, and whatever is sent to its Ref. It must not block.
	Receive(sc SocketContext, msg any)
	// Work does job's I/O, on a goroutine of the directory (never in Receive), and answers
	// the job with its outcome, which comes back to Receive as JobDone; nil: nothing comes
	// back. ctx ends when the directory closes. A panic in Work fails the socket's actor as
	// a panic in Receive would.
	Work(ctx context.Context, job Job) Job
	// Failed is told that handling msg panicked with reason; the actor is stopped. It
	// closes the socket. It runs in the AppActor and must not block.
	Failed(reason, msg any)
}

// Job is I/O a socket's actor hands off (SocketContext.Pipe): data saying what to do,
// done by the socket's Work.
type Job interface {
	// JobName names the job in a log line.
	JobName() string
}

// Messages the socket actor passes to its Socket.
type (
	// JobDone: a job the socket piped ended; Job is what its Work answered.
	JobDone struct{ Job Job }
	// SocketStarted: the actor started (also after an AppActor restart re-spawned it).
	SocketStarted struct{}
	// SocketStopping: the actor is stopping (it left, it failed, or its AppActor restarts).
	SocketStopping struct{}
	// Leaving: the socket leaves its app; call SocketContext.Done when its work is over.
	Leaving struct{}
)

// SocketContext is what a socket's actor offers its Socket inside Receive.
type SocketContext interface {
	// Pipe has the socket's Work do job on a goroutine owned by the directory; its answer,
	// when not nil, comes back to the socket as JobDone.
	Pipe(job Job)
	// Every sends msg to the socket every d until stop is called or the actor stops.
	Every(d time.Duration, msg any) (stop func())
	// Done stops the actor after Leaving.
	Done()
}

// Ref sends messages to a socket's actor, from anywhere.
type Ref struct {
	root *actor.RootContext
	pid  *actor.PID
}

// Tell sends msg to the socket's actor; it never blocks (a message to an actor that
// stopped is dropped).
func (r Ref) Tell(msg any) {
	if r.pid != nil {
		r.root.Send(r.pid, msg)
	}
}

// Valid answers whether the reference names an actor.
func (r Ref) Valid() bool { return r.pid != nil }

// socketThroughput is how many messages a socket's actor handles in a row before it
// lets other goroutines run.
const socketThroughput = 300

// socketActor is the actor of one socket: a shell around its Socket. It is small: an
// idle socket's actor is most of what a socket costs beyond its connection.
type socketActor struct {
	sock Socket
	work *actorkit.Runner
	// metrics count and time receive (nil: none). They are called here rather than set
	// on the props as a middleware: a props middleware gives every actor a context
	// extension of its own (about 260 bytes a socket), and a middleware's envelope is an
	// allocation per message (a delivery to each socket of a broadcast).
	metrics *actorkit.KindMetrics
	ctx     actor.Context // during Receive
}

// workFailed comes back from a Work that panicked; the actor panics with it in turn.
type workFailed struct{ reason string }

func (a *socketActor) Receive(ctx actor.Context) {
	if a.metrics != nil {
		a.metrics.Receive(ctx.Self(), ctx.Message(), func() { a.receive(ctx) })
		return
	}
	a.receive(ctx)
}

func (a *socketActor) receive(ctx actor.Context) {
	a.ctx = ctx
	defer func() { a.ctx = nil }()
	switch m := ctx.Message().(type) {
	case *actor.Started:
		a.sock.Receive(a, SocketStarted{})
	case *actor.Stopping:
		a.sock.Receive(a, SocketStopping{})
	case *actor.Stopped, *actor.Restarting:
	case workFailed:
		panic(m.reason)
	default:
		a.sock.Receive(a, m)
	}
}

// A job's answer comes back through the AppActor (toSocket), not straight to the socket's
// actor: while the AppActor restarts, its children are stopped and spawned again, and a
// message sent to a child in between would be dropped, leaving the socket waiting for
// the end of its I/O for ever. The AppActor's mailbox holds messages through its
// restart, and it hands this one to the socket's actor of the moment.
func (a *socketActor) Pipe(job Job) {
	self, parent, sock := a.ctx.Self(), a.ctx.Parent(), a.sock
	id := childID(self)
	actorkit.Pipe(a.work, a.ctx.ActorSystem().Root, parent, "a socket's job ("+job.JobName()+")", []any{"socket", id}, 0,
		func(ctx context.Context) toSocket { return toSocket{id: id, done: sock.Work(ctx, job)} },
		func(p any) toSocket {
			return toSocket{id: id, failed: fmt.Sprintf("socket %s: %s: %v\n%s", id, job.JobName(), p, debug.Stack())}
		})
}

func (a *socketActor) Every(d time.Duration, msg any) func() {
	return scheduler.NewTimerScheduler(a.ctx.ActorSystem().Root).SendRepeatedly(d, d, a.ctx.Self(), msg)
}

func (a *socketActor) Done() { a.ctx.Stop(a.ctx.Self()) }

// socketProps is the props of an app's socket actors of one kind: the producer takes the
// socket the AppActor is spawning (reg.spawning, set in the AppActor just before).
func (s *appActor[S]) socketProps(kind string) *actor.Props {
	if p := s.reg.props[kind]; p != nil {
		return p
	}
	reg, dir := s.reg, s.dir
	var counted *actorkit.KindMetrics
	mailbox := actor.UnboundedLockfree()
	if m := dir.cfg.Metrics; m != nil {
		counted = m.Kind(kind)
		mailbox = actor.UnboundedLockfree(counted.CountingMailbox())
	}
	// An idle socket's mailbox holds one node of a lock-free list, not a ring buffer.
	// A socket's actor runs on the goroutine of the sender that finds it idle (a
	// synchronized dispatcher; a sender that finds it running only queues): a delivery
	// fanned out by the AppActor costs no goroutine start and switch per socket (measured
	// 1.3 to 2.7 µs per delivery with one, against about 0.1 µs; BenchmarkBroadcastFanOut
	// in actors/sockets). Receive never blocks, so whoever runs it is not held up.
	p := actor.PropsFromProducer(func() actor.Actor {
		return &socketActor{sock: reg.spawning, work: dir.work, metrics: counted}
	}, actor.WithMailbox(mailbox), actor.WithDispatcher(actor.NewSynchronizedDispatcher(socketThroughput)))
	if reg.props == nil {
		reg.props = map[string]*actor.Props{}
	}
	reg.props[kind] = p
	return p
}

// spawnSocket starts the actor of socket id when it is a Socket; first says whether
// this is its first actor (not a re-spawn after a restart).
func (s *appActor[S]) spawnSocket(ctx actor.Context, id string, socket Member, first bool) {
	sock, ok := socket.(Socket)
	if !ok {
		return
	}
	r := s.reg
	r.spawning = sock
	// Named kind$id: the metrics read the kind of a dead letter's target from the name.
	pid, err := ctx.SpawnNamed(s.socketProps(sock.Kind()), sock.Kind()+"$"+id)
	r.spawning = nil
	if err != nil {
		s.dir.cfg.Log.Error("actors: cannot spawn a socket's actor", "app", s.appID, "socket", id, "err", err)
		return
	}
	if r.live == nil {
		r.live = map[string]*actor.PID{}
	}
	r.live[id] = pid
	if first {
		sock.Spawned(Ref{root: ctx.ActorSystem().Root, pid: pid})
	}
}

// respawnSockets starts the actors of the registry's sockets again after a restart.
func (s *appActor[S]) respawnSockets(ctx actor.Context) {
	for id, sock := range s.reg.sockets {
		if s.reg.live[id] == nil {
			s.spawnSocket(ctx, id, sock, false)
		}
	}
}

// childID is the socket id of a child actor's pid (its name under the AppActor).
func childID(pid *actor.PID) string {
	_, id := splitChild(pid)
	return id
}

// splitChild answers the parent's id and the socket id of a child actor's pid (named
// kind$id).
func splitChild(pid *actor.PID) (parent, id string) {
	name := pid.Id
	if i := strings.LastIndexByte(name, '/'); i >= 0 {
		parent, name = name[:i], name[i+1:]
	}
	if i := strings.IndexByte(name, '$'); i >= 0 {
		name = name[i+1:]
	}
	return parent, name
}

// childTerminated handles the end of a socket's actor: a Leave that waited for it is
// answered.
func (s *appActor[S]) childTerminated(ctx actor.Context, who *actor.PID) {
	id := childID(who)
	r := s.reg
	if cur := r.live[id]; cur != nil && cur.Equal(who) {
		delete(r.live, id)
	}
	if l, ok := r.leaving[id]; ok {
		delete(r.leaving, id)
		ctx.Send(l.waiter, left{held: true})
	}
}

// socketSupervisor is the supervision of an app's socket actors: a socket actor that
// failed is stopped and its socket told (it closes), nothing else.
type socketSupervisor struct {
	reg   *registry
	appID string
	log   *slog.Logger
}

func (s socketSupervisor) HandleFailure(_ *actor.ActorSystem, sup actor.Supervisor, child *actor.PID, _ *actor.RestartStatistics, reason, msg any) {
	id := childID(child)
	s.log.Error("actors: a socket's actor failed; the socket is closed", "app", s.appID, "socket", id, "panic", fmt.Sprint(reason))
	sup.StopChildren(child)
	socket, ok := s.reg.sockets[id]
	if !ok {
		socket = s.reg.leaving[id].socket
	}
	if sock, ok := socket.(Socket); ok {
		sock.Failed(reason, msg)
	}
}
