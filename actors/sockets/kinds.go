package sockets

import (
	"github.com/keyward/keyward/actors/app"
	"github.com/keyward/keyward/actors/wire"
)

// held is a socket this node holds, whatever its kind (a Client: actors/session; a
// Dashboard: actors/dashboard). The facade hands it deliveries and closes it through
// these methods, never through its concrete type.
type held interface {
	app.Member
	// SocketID is its id in its app's actor.
	SocketID() string
	// Ref is its actor.
	Ref() app.Ref
	// Pick answers the message of a delivery for its actor, nil when the delivery is not
	// for it.
	Pick(r *wire.Routed) any
	// Close closes it (the node shuts down).
	Close(d wire.Disconnect)
	// Departure is what the app's dashboards are told when it leaves (ok false: nothing).
	Departure() (m wire.Outgoing, ok bool)
}

var (
	_ held = (*Client)(nil)
	_ held = (*Dashboard)(nil)
)
