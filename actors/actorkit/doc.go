// Package actorkit is the protoactor-go glue the realtime wing's actors share, and nothing
// of what they do:
//
//   - Metrics: per kind of actor (app, session, dashboard), the actors alive, spawned,
//     stopped and passivated, messages and their handling time, mailbox depth, failures,
//     restarts, dead letters and panics in off-Receive work; Props gives a kind's props
//     options, SpawnPrefix-style names (kind$id) attribute dead letters.
//   - Runner and Pipe: work an actor hands off so as never to block in Receive runs on a
//     goroutine the Runner owns (Close ends its context and waits for it), under a recover
//     that logs and counts a panic; Pipe sends the work's answer back to the actor as a
//     typed message (or, after a panic, the message its failed function makes), so no
//     waiter is left hanging.
//
// The supervision deciders stay with the actors they supervise (actors: an AppActor's
// children are stopped and their socket closed; the AppActor itself is restarted).
package actorkit
