package app

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/keyward/keyward/actors/actorkit"
)

// Defaults of the directory.
const (
	DefaultIdle    = 10 * time.Minute
	DefaultRefresh = time.Minute
	// askTimeout bounds a request to an actor; a load slower than this fails the request
	// (the load goes on and serves later requests).
	askTimeout = 10 * time.Second
)

// Loader reads an application's snapshot from storage. It runs outside the actor.
type Loader[S any] func(ctx context.Context, appID string) (S, error)

// AppsConfig configures the directory; zero members take the defaults.
type AppsConfig struct {
	// Idle is how long an actor without requests lives before it is passivated.
	Idle time.Duration
	// Refresh is the age after which a snapshot is reloaded in the background.
	Refresh time.Duration
	Now     func() time.Time
	Log     *slog.Logger
	// Metrics counts the actors' work under kind "app"; none when nil.
	Metrics *actorkit.Metrics
}

// Apps is the node's directory of AppActors, with snapshots of type S.
type Apps[S any] struct {
	system *actor.ActorSystem
	load   Loader[S]
	cfg    AppsConfig

	// work runs what the actors hand off (loads, admissions, reads, ticks, subscriptions,
	// the sockets' jobs); Close ends it and waits for it.
	work *actorkit.Runner

	mu     sync.Mutex
	pids   map[string]*actor.PID
	closed bool
	// snaps are the snapshots the actors published, read by Snapshot without a message to
	// the actor; gens counts each app's invalidations. A snapshot is served from snaps
	// only while it is younger than the refresh age and no invalidation came after its
	// load started (its gen is the app's).
	snaps map[string]published[S]
	gens  map[string]uint64
	// ticks is the periodic work on the apps' sockets, done by tickWork (sockets.go).
	ticks    []Tick
	tickWork TickWork
	// live is what the AppActors read their apps' live state from (reads.go).
	live LiveReader
	// leases is where the AppActors keep their leaseholders' leases; leaseErrors counts
	// the renewals that failed (leases.go).
	leases      LeaseConfig
	leaseErrors atomic.Uint64
	// bus is how the AppActors subscribe to their apps' deliveries; topics counts their
	// subscriptions (bus.go).
	bus    BusConfig
	topics int
	// held counts the registered sockets by kind (Socket.Kind), for metrics.
	held map[string]int

	// propsOpts are the options of every AppActor (the metrics' middlewares, the
	// dispatcher of their mailboxes: dispatch).
	propsOpts      []actor.PropsOption
	dispatch       *workers
	stopDeadLetter func()
	// stopDeadAdmits ends the answering of admissions that reached no actor.
	stopDeadAdmits func()
}

// appKind is the kind label of AppActors in the metrics.
const appKind = "app"

// NewApps starts the directory.
func NewApps[S any](load Loader[S], cfg AppsConfig) *Apps[S] {
	if cfg.Idle <= 0 {
		cfg.Idle = DefaultIdle
	}
	if cfg.Refresh <= 0 {
		cfg.Refresh = DefaultRefresh
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	system := actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger { return quiet }))
	a := &Apps[S]{system: system, load: load, cfg: cfg, work: actorkit.NewRunner(appKind, cfg.Log, cfg.Metrics), pids: map[string]*actor.PID{},
		snaps: map[string]published[S]{}, gens: map[string]uint64{}}
	a.dispatch = newWorkers(0, cfg.Log, func(any) { cfg.Metrics.WorkPanicked(appKind) })
	a.propsOpts = append(cfg.Metrics.Props(appKind), actor.WithDispatcher(a.dispatch))
	a.stopDeadLetter = cfg.Metrics.WatchDeadLetters(system)
	a.stopDeadAdmits = answerDeadAdmits(system)
	return a
}

// answerDeadAdmits answers, as dead, an admission that reached no actor (protoactor hands
// it to its dead letters: the actor stopped between the lookup and the send), so that its
// caller asks again at once, as a future's ErrDeadLetter made it do. It runs on the
// sender's goroutine, within its send.
func answerDeadAdmits(system *actor.ActorSystem) func() {
	sub := system.EventStream.SubscribeWithPredicate(func(evt any) {
		m := evt.(*actor.DeadLetterEvent).Message.(admitReq)
		select {
		case m.reply <- admitReply{dead: true}:
		default: // answered already (never: a request is delivered or dead, once)
		}
	}, func(evt any) bool {
		d, ok := evt.(*actor.DeadLetterEvent)
		if !ok {
			return false
		}
		_, ok = d.Message.(admitReq)
		return ok
	})
	return func() { system.EventStream.Unsubscribe(sub) }
}

// ErrUnavailable wraps the errors of a request an actor could not answer (the directory
// closed, the actor did not answer in time): a part that did not answer, not a bug. It
// says so (Unavailable), which is how core/realtime.Explain knows it without importing
// the actors.
var ErrUnavailable error = unavailableError{}

type unavailableError struct{}

func (unavailableError) Error() string     { return "actors: unavailable" }
func (unavailableError) Unavailable() bool { return true }

// ErrClosed is answered after Close.
var ErrClosed = fmt.Errorf("actors: directory closed: %w", ErrUnavailable)

// Messages of the AppActor.
type (
	getSnapshot   struct{}
	invalidate    struct{}
	loaded[S any] struct {
		gen  uint64
		snap S
		err  error
		// invalidations is the directory's count of the app's invalidations when the
		// load started (Apps.publish).
		invalidations uint64
	}
	snapshotReply[S any] struct {
		snap S
		err  error
	}
)

// published is a snapshot an actor published for Snapshot's reads without a message.
type published[S any] struct {
	snap     S
	loadedAt time.Time
	gen      uint64
}

// Snapshot answers the application's snapshot from its actor, spawning the actor if needed.
// The loader's error (for example the application does not exist) comes back as is. A
// snapshot the actor holds and published is answered without a message to it (every
// client request and socket admission reads one), unless it is as old as the refresh
// age (the actor serves it and reloads) or the app was invalidated since its load
// started (the request waits for the new one in the actor, as before).
func (a *Apps[S]) Snapshot(ctx context.Context, appID string) (S, error) {
	now := a.cfg.Now()
	a.mu.Lock()
	p, ok := a.snaps[appID]
	ok = ok && !a.closed && p.gen == a.gens[appID] && now.Sub(p.loadedAt) < a.cfg.Refresh
	a.mu.Unlock()
	if ok {
		return p.snap, nil
	}
	res, err := a.ask(ctx, appID, getSnapshot{})
	if err != nil {
		var zero S
		return zero, err
	}
	r := res.(snapshotReply[S])
	return r.snap, r.err
}

// Invalidate tells the application's actor, if it runs on this node, that the application
// changed (paused, disabled, plan, rules, hooks): it drops its snapshot, so requests wait
// for a fresh one, and if it holds sockets it reloads the snapshot at once and then runs
// the ticks marked OnChange (the batched revalidation) over them, on a goroutine. It
// never blocks: it is called from the event pipeline and the cluster bus.
func (a *Apps[S]) Invalidate(appID string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	// From now on no snapshot loaded before is served without the actor (Snapshot).
	a.gens[appID]++
	delete(a.snaps, appID)
	// Sent under mu, as every request is (send): see idle.go.
	if pid := a.pids[appID]; pid != nil {
		a.system.Root.Send(pid, invalidate{})
	}
}

// Len reports how many actors run, for metrics and tests.
func (a *Apps[S]) Len() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.pids)
}

// Close stops every actor and waits for loads in flight.
func (a *Apps[S]) Close() {
	a.mu.Lock()
	if a.closed {
		a.mu.Unlock()
		return
	}
	a.closed = true
	pids := make([]*actor.PID, 0, len(a.pids))
	for _, p := range a.pids {
		pids = append(pids, p)
	}
	a.mu.Unlock()
	a.work.Cancel()
	for _, p := range pids {
		_ = a.system.Root.StopFuture(p).Wait()
	}
	a.work.Wait()
	a.stopDeadLetter()
	a.stopDeadAdmits()
	a.system.Shutdown()
	a.dispatch.stop()
}

// panicked logs and counts a panic in work an AppActor ran outside its Receive.
func (a *Apps[S]) panicked(what, appID string, p any) {
	a.cfg.Metrics.WorkPanicked(appKind)
	a.cfg.Log.Error("actors: panic in "+what, "app", appID, "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
}

// post sends msg to appID's actor, spawning it if needed, under mu as send does; msg
// carries its own way to be answered.
func (a *Apps[S]) post(appID string, msg any) (*actor.PID, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		return nil, ErrClosed
	}
	pid := a.pids[appID]
	if pid == nil {
		pid = a.spawn(appID)
	}
	a.system.Root.Send(pid, msg)
	return pid, nil
}

// send sends msg to appID's actor, spawning it if needed, as a request answered through
// the future. The send is made under mu, the lock under which a passivating actor leaves
// the directory: a request is either in the actor's mailbox before the actor's passivate
// message, or goes to a new actor (idle.go).
func (a *Apps[S]) send(appID string, msg any, timeout time.Duration) (*actor.Future, *actor.PID, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		return nil, nil, ErrClosed
	}
	pid := a.pids[appID]
	if pid == nil {
		pid = a.spawn(appID)
	}
	return a.system.Root.RequestFuture(pid, msg, timeout), pid, nil
}

// spawn starts appID's actor; a.mu is held.
func (a *Apps[S]) spawn(appID string) *actor.PID {
	// The registry belongs to the actor's incarnations: one restarted by its supervisor
	// gets the registry of the one it replaces.
	reg := &registry{sockets: map[string]Member{}}
	opts := append([]actor.PropsOption{actor.WithSupervisor(socketSupervisor{reg: reg, appID: appID, log: a.cfg.Log})}, a.propsOpts...)
	p := a.system.Root.SpawnPrefix(actor.PropsFromProducer(func() actor.Actor {
		return &appActor[S]{dir: a, appID: appID, reg: reg}
	}, opts...), appKind)
	a.pids[appID] = p
	return p
}

// readopt puts pid back as appID's actor unless another took its place; it answers
// whether it did (idle.go).
func (a *Apps[S]) readopt(appID string, pid *actor.PID) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if cur := a.pids[appID]; cur != nil {
		return cur.Equal(pid)
	}
	if a.closed {
		return false
	}
	a.pids[appID] = pid
	return true
}

// forget drops the directory entry of appID if it still names pid.
func (a *Apps[S]) forget(appID string, pid *actor.PID) {
	a.mu.Lock()
	if cur := a.pids[appID]; cur != nil && cur.Equal(pid) {
		delete(a.pids, appID)
		delete(a.snaps, appID)
	}
	a.mu.Unlock()
}

// genOf answers how many times the app was invalidated (a load's start, Snapshot).
func (a *Apps[S]) genOf(appID string) uint64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.gens[appID]
}

// publish lets Snapshot read an actor's snapshot without a message, unless the app was
// invalidated after the snapshot's load started or its actor left the directory.
func (a *Apps[S]) publish(appID string, pid *actor.PID, p published[S]) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if cur := a.pids[appID]; cur != nil && cur.Equal(pid) && p.gen == a.gens[appID] {
		a.snaps[appID] = p
	}
}

// appActor owns one application's snapshot.
type appActor[S any] struct {
	dir   *Apps[S]
	appID string
	// reg is the app's sockets on this node; ticks the periodic work on them.
	reg      *registry
	ticks    []Tick
	tickWork TickWork

	snap     S
	have     bool
	loadedAt time.Time
	// gen numbers loads; a load result of an older generation (started before an
	// Invalidate) is dropped.
	gen     uint64
	loading bool
	waiters []*actor.PID
	// planWaiters are the hook plans asked for while the snapshot loads (plans.go).
	planWaiters []planWaiter
	// failed is the load error of an actor that never had a snapshot; it has left the
	// directory and stops after failedLinger.
	failed error
	// changed is set by an Invalidate while the actor holds sockets: the reload it started
	// is followed by the ticks marked OnChange.
	changed bool

	// The passivation timer (idle.go): idleTimer sends idleCheck{idleGen} after idleFor;
	// lastActive is when the actor last handled a message.
	idleTimer  *time.Timer
	idleGen    uint64
	idleFor    time.Duration
	lastActive time.Time
	// activeSinceIdle: a message came after the actor decided it was idle and left the
	// directory (idle.go).
	activeSinceIdle bool
}

// failedLinger is how long an actor whose first load failed answers stragglers before it
// stops.
const failedLinger = 200 * time.Millisecond

func (s *appActor[S]) Receive(ctx actor.Context) {
	switch ctx.Message().(type) {
	case idleCheck, passivate:
	default:
		s.lastActive = time.Now()
		s.activeSinceIdle = true
	}
	if s.receiveSockets(ctx) || s.receiveLeases(ctx) || s.receiveBus(ctx) || s.receiveReads(ctx) || s.receivePlans(ctx) {
		return
	}
	switch m := ctx.Message().(type) {
	case *actor.Started:
		s.armIdle(ctx, s.dir.cfg.Idle)
		if len(s.reg.sockets) > 0 {
			// A restart: the registry's sockets are still here; their timers and their
			// actors (stopped with the incarnation that failed) start again.
			s.startTimers(ctx)
			s.respawnSockets(ctx)
		}
	case *actor.Restarting:
		s.stopTimers()
		s.stopIdle()
	case getSnapshot:
		if s.failed != nil {
			ctx.Respond(snapshotReply[S]{err: s.failed})
			return
		}
		if s.have {
			ctx.Respond(snapshotReply[S]{snap: s.snap})
			if !s.loading && s.dir.cfg.Now().Sub(s.loadedAt) >= s.dir.cfg.Refresh {
				s.startLoad(ctx)
			}
			return
		}
		s.waiters = append(s.waiters, ctx.Sender())
		if !s.loading {
			s.startLoad(ctx)
		}
	case invalidate:
		var zero S
		s.snap, s.have = zero, false
		s.gen++ // results of loads started earlier are stale
		s.loading = false
		// The app's sockets are revalidated against the new snapshot, so it loads now.
		s.changed = s.changed || len(s.reg.sockets) > 0
		if len(s.waiters) > 0 || len(s.planWaiters) > 0 || s.changed {
			s.startLoad(ctx)
		}
	case loaded[S]:
		if m.gen != s.gen {
			return
		}
		s.loading = false
		if s.changed {
			// After the answer to the waiters, whatever the load's outcome (an app that is
			// gone fails its sockets' checks).
			s.changed = false
			defer s.runOnChange(ctx)
		}
		if m.err != nil && !s.have && len(s.reg.sockets) == 0 {
			// Errors are not cached: the actor leaves the directory before answering, so
			// the next request spawns a fresh actor that loads again, and it stops soon,
			// so probing unknown ids leaves no actors behind. A request that raced to it
			// meanwhile gets the same error.
			s.dir.forget(s.appID, ctx.Self())
			s.failed = m.err
			s.armIdle(ctx, failedLinger)
		}
		if m.err == nil {
			// Recorded before the waiters hear of it: a waiter that acts at once (and a
			// clock read after it) must find this snapshot's age, not a later one.
			s.snap, s.have, s.loadedAt = m.snap, true, s.dir.cfg.Now()
			s.dir.publish(s.appID, ctx.Self(), published[S]{snap: m.snap, loadedAt: s.loadedAt, gen: m.invalidations})
		}
		for _, w := range s.waiters {
			ctx.Send(w, snapshotReply[S]{snap: m.snap, err: m.err})
		}
		s.waiters = s.waiters[:0]
		s.answerPlans(ctx, m.err)
	case idleCheck:
		s.idle(ctx, m)
	case passivate:
		s.passivate(ctx)
	case *actor.Stopping:
		s.stopTimers()
		s.stopIdle()
		s.unsubscribe()
		s.dir.forget(s.appID, ctx.Self())
		for _, w := range s.waiters {
			ctx.Send(w, snapshotReply[S]{err: ErrClosed})
		}
		s.waiters = nil
		for _, j := range s.reg.pendingJoins {
			ctx.Send(j.sender, joinReply{err: ErrClosed})
		}
		for _, a := range s.reg.pendingAdmits {
			a.answer(ErrClosed)
		}
		s.reg.pendingJoins, s.reg.pendingAdmits = nil, nil
		s.answerPlans(ctx, ErrClosed)
		s.failReads(ctx, ErrClosed)
	}
}

// startLoad runs the loader off the actor; the result comes back as a message. A loader
// that panics answers the waiters with an error (they never hang) and is logged and
// counted; the process goes on.
func (s *appActor[S]) startLoad(ctx actor.Context) {
	s.gen++
	s.loading = true
	gen, dir, appID := s.gen, s.dir, s.appID
	invalidations := dir.genOf(appID)
	actorkit.Pipe(dir.work, ctx.ActorSystem().Root, ctx.Self(), "the loader of an app", []any{"app", appID}, askTimeout,
		func(ctx context.Context) loaded[S] {
			snap, err := dir.load(ctx, appID)
			return loaded[S]{gen: gen, snap: snap, err: err, invalidations: invalidations}
		},
		func(p any) loaded[S] {
			return loaded[S]{gen: gen, err: fmt.Errorf("actors: loading app %s panicked: %v", appID, p)}
		})
}
