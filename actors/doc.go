// Package actors will hold Keyward's actors (protoactor-go): one AppActor per application
// on each node (config snapshot, connected sessions, hook pipeline, limiters), one
// SessionActor per client socket and one DashboardActor per owner socket, with supervision
// and idle passivation. Actors own their state and never block in Receive: slow I/O runs
// in a goroutine and comes back as a message.
//
// Nothing lives here yet: the client API issue brings the AppActor, the WebSocket issue the
// session and dashboard actors.
package actors
