// Package actors holds Keyward's actors (protoactor-go). Actors own their state and never
// block in Receive: slow I/O runs in a goroutine and comes back as a message.
//
// Apps is the per-node directory of AppActors: one actor per application, spawned on the
// first request for it and passivated (stopped) after an idle time. The actor owns the
// application's snapshot (enabled, paused, version, flags, compiled rules, settings, and
// the compiled WebSocket hook pipeline — the type is the caller's, server.AppState) and
// answers client requests and hook plans from it, so the hot path reads no
// storage. A dashboard change reaches the actor as Invalidate (from the event pipeline on
// this node and the cluster bus from other nodes): the actor drops its snapshot and loads
// a fresh one, and requests that arrive meanwhile wait for it, so a pause takes effect on
// the next request. A snapshot older than the refresh age is reloaded in the background
// (served meanwhile), a backstop for changes whose notification was lost.
//
// Sockets are not actors of this package. Each socket is owned by its reader goroutine in
// the http edge, which hands core/realtime one message at a time (so a socket's own state
// changes in order, as in an actor's Receive), and by a writer goroutine behind a bounded
// queue; what sockets share (presence, the per-app and per-user limits) lives in the
// cluster engine, where every node must see it, so no per-app actor would own it. A hook
// change invalidates the app's actor like any other app change.
//
// Metrics counts the actors' life cycle, messages, handling time, failures and dead
// letters per kind, through a receiver middleware (protoactor-go's own OpenTelemetry
// metrics read a process-global provider; see Metrics).
package actors
