// Package actors holds Keyward's actors (protoactor-go). Actors own their state and never
// block in Receive: slow I/O runs in a goroutine and comes back as a message.
//
// Apps is the per-node directory of AppActors: one actor per application, spawned on the
// first request for it and passivated (stopped) after an idle time. The actor owns the
// application's snapshot (enabled, paused, version, flags, compiled rules, settings, and
// the compiled WebSocket hook pipeline — the type is the caller's, server.AppState) and
// answers client requests and hook plans from it, so the hot path reads no
// storage. An app change (pause, disable, plan, rules, hooks) reaches the actor as a
// message, Invalidate: from the event pipeline on this node and, through Announce and
// ListenChanges, from the cluster bus on the others. The actor drops its snapshot, so
// requests that arrive meanwhile wait for a fresh one; if it holds sockets it reloads at
// once and then runs the ticks marked OnChange (the batched revalidation of its sockets,
// on a goroutine), so a pause closes the app's sockets on every node within
// milliseconds, not at the next 30 s check. A snapshot older than the refresh age is
// reloaded in the background (served meanwhile), a backstop for changes whose
// notification was lost.
//
// The AppActor also holds the registry of its application's sockets on this node
// (sockets.go): a client socket's admission runs through it (Admit: the admission's I/O on
// a goroutine, the socket registered in the same step as the answer), a socket joins and
// leaves with a message to it (Join, Leave), a delivery
// is handed to it and fanned out inside Receive (Each: frames are only queued), and its
// timers drive the periodic work on the app's sockets (SetTicks: lease renewal and
// revalidation, one batch per app, run on a goroutine whose end comes back as a message).
// An actor that holds sockets is never passivated. The registry is made with the actor's
// props, so an actor restarted by its supervisor after a panic gets its sockets back and
// restarts their timers. The sockets themselves are not actors yet: each is owned by its
// reader goroutine in the http edge, which hands core/realtime one message at a time, and
// a writer behind a bounded queue; what sockets share across nodes (presence, the limits)
// lives in the cluster engine.
//
// Metrics counts, per kind of actor (app, session, dashboard), the actors alive, spawned,
// stopped and passivated, the messages handled and their handling time, the messages in
// the mailboxes, failures, restarts and dead letters. Any kind gets them from two props
// options (Metrics.Props(kind): a receiver middleware and a counting mailbox) and by
// being spawned under its kind's name prefix (SpawnPrefix(props, kind), which attributes
// dead letters). protoactor-go's own OpenTelemetry metrics are not used: the version in
// use makes its instruments on the process-global meter provider whatever provider the
// actor system is given, and registers a mailbox callback per actor that it never
// removes (see Metrics).
package actors
