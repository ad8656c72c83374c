// Package session is the SessionActor: a client socket's state and rules (SPEC 4.11,
// client to server), run by its actor, a child of its app's actor (actors/app). Client
// owns the socket's user, status and metadata (what the session list shows of it) and its
// limiter of 20 messages per 10 s (core/realtime.Window), with no lock: only its actor
// touches them. It handles, one at a time, a frame the edge's reader hands over (Hand;
// app.Turn keeps the order, each frame with its I/O), a revalidation's verdict (Verdict),
// what its app's lease renewal found (app.LeaseRestored, app.LeaseSuperseded), its
// leaving. A bus delivery takes no turn of the actor: the app's actor hands it to Take
// (routing.go), which writes it to the socket's writer in the bus's order and reads only
// what never changes after the socket opened (its user, id and session). A frame's I/O is
// a typed job (jobs.go: describe, to dashboards, custom message, hook actions) that the
// actor pipes and Work does off it; a custom message comes back with the actions the
// app's hooks planned, which the actor carries out (actions.go: an answer to the sender
// and a log line at once, what needs the cluster in a further job).
//
// What the socket needs of its node (the cluster bus, presence, hooks, the event log,
// the counts) it asks through Node, which actors/sockets implements; the admission
// itself (Admit, app.Admittee) runs in the app's actor. What crosses the wire is
// actors/wire's.
package session
