// Package app holds the AppActor (protoactor-go): the per-node directory of one actor per
// application, and the shell of the socket actors it spawns as its children. Actors own their state and never block in Receive: slow I/O
// runs off the actor (actorkit.Runner, actorkit.Pipe) and comes back as a typed message.
// Every message is a struct of data: no function fields, no collections of any.
//
// Apps is the per-node directory of AppActors: one actor per application, spawned on the
// first request for it and passivated (stopped) after an idle time. The actor owns the
// application's snapshot (enabled, paused, version, flags, compiled rules, settings, and
// the compiled WebSocket hook pipeline — the type is the caller's, server.AppState) and
// answers client requests and hook plans from it, so the hot path reads no storage. A
// snapshot that is a HookPlanner plans a client message's hook actions inside the
// actor's Receive (Plan, plans.go). An app change (pause, disable, plan, rules, hooks)
// reaches the actor as a message, Invalidate: from the event pipeline on this node and,
// through Announce and ListenChanges, from the cluster bus on the others. The actor drops
// its snapshot, so requests that arrive meanwhile wait for a fresh one; if it holds
// sockets it reloads at once and then runs the ticks marked OnChange (the batched
// revalidation of its sockets, off the actor), so a pause closes the app's sockets on
// every node within milliseconds, not at the next 30 s check. A snapshot older than the
// refresh age is reloaded in the background (served meanwhile), a backstop for changes
// whose notification was lost.
//
// Passivation (idle.go) uses a timer of the actor's own that only sends it a message
// (idleCheck), not protoactor's receive timeout, whose timer goroutine writes the actor's
// context while the actor reads it (a data race). An idle actor leaves the directory,
// then stops on its own passivate message; requests are sent under the directory's lock,
// so a request is either ahead of passivate in the mailbox (and answered) or goes to a new
// actor, never to a stopped one.
//
// The AppActor also holds the registry of its application's sockets on this node
// (sockets.go), each a Member: a client socket's admission runs through it (Admit: the
// socket, an Admittee, travels in the message as data; its Admit, the admission's I/O,
// runs off the actor, and the socket is registered in the same step as the answer, given
// on the request's reply channel rather than through a protoactor future), a
// socket joins and leaves with a message to it (Join, Leave), it owns the app's
// subscription to the cluster bus (bus.go, SetBus: made before its first socket
// registers, a registration waiting for it; ended with its last socket; one subscription
// per app) and hands each delivery to its sockets inside Receive (a Deliverer, which only
// sends messages), and its timers drive the periodic work on the app's sockets (SetTicks:
// named Ticks, run by a TickWork off the actor, one batch per app: the revalidation). It
// keeps its client sockets' leases itself (leases.go, SetLeases; the Members that are a
// Leaseholder): every third of the lease ttl it renews them in one cluster-engine call
// whose answer comes back as a message and is told to the sockets' actors
// (LeaseRestored, LeaseSuperseded), and an app with a dashboard on this node is marked
// watched with the same renewal (LeaseConfig.Watch); a Leave releases the socket's lease before it
// answers, and a socket that left while a renewal was under way is released again when
// the renewal's answer comes in, so no flag is shared with another goroutine. An actor that holds sockets is never passivated. Reads of the app's live
// state are typed (LiveRead: the online count, the session list, whether a user is
// online; answered as LiveState): the actor reads them from the engine's presence
// (SetLive) off its Receive and shares one run among the requests of a read that arrive
// while one is under way, answering each request only from a run that started after it
// arrived (reads.go).
//
// Each registered Member that is a Socket gets an actor of its own, a child of the
// AppActor (socket.go): the SessionActor of a client socket, the DashboardActor of an
// owner's. The socket's state and rules are actors/session's Client and
// actors/dashboard's Dashboard; its actor runs them one message at a time (frames the
// edge's reader hands over, deliveries, verdicts, timers, its leaving; turns.go: Turn
// keeps a socket's frames in order, each with its I/O, and Hand is how the edge hands
// one over). A socket's I/O is a Job, data saying what to do, that
// its actor pipes (SocketContext.Pipe); the socket's Work does it off the actor and the
// job comes back with its outcome as JobDone, through the AppActor (whose mailbox keeps it
// through a restart). Leave waits until the socket's actor has finished the work it took.
// Supervision is explicit: the AppActor's supervisor strategy for its children stops a
// socket actor that panicked and tells its Socket (which closes the socket with 1011),
// logging the app and the socket; nothing else is touched. The registry is made with the
// AppActor's props, not by the actor, so that an AppActor restarted by its supervisor
// after a panic finds its sockets, restarts their timers and spawns their actors again
// (protoactor stops the children of a restarting actor) under the same names, so the
// sockets' Refs reach the new actors; the sockets' state lives in the Socket values and
// is kept. Other messages in a socket actor's mailbox at that moment are lost. A socket's
// actor runs on the goroutine of the sender that finds it idle (a synchronized
// dispatcher: its Receive never blocks), so a delivery fanned out to 500 sockets starts
// no goroutine per socket. An idle socket's actor costs about 1.2 KiB of heap
// (BenchmarkSocketActorMemory): a lock-free mailbox that holds one node when empty, and
// the metrics run by the actor, not as a props middleware (which gives every actor a
// context extension).
//
// The AppActors' mailboxes run on a few long-lived workers of the directory, not on a new
// goroutine per run (dispatch.go): a worker keeps the stack it grew for an actor's turn.
//
// Work an actor runs outside its Receive (a snapshot load, an admission, a read, a tick,
// a subscription, a socket's job) runs under actorkit.Runner: a panic is logged and
// counted (work panics) and its waiters are answered with an error, never left waiting.
// A request an actor could not answer (the directory closed, no answer in time) wraps
// ErrUnavailable: a part that did not answer, which a socket is told to try again;
// anything else is a bug. The wire format of the sockets is the wire subpackage's; the
// protoactor glue (metrics per kind, Runner and Pipe) is actorkit's.
package app
