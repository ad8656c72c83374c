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
	// Take carries out a delivery when it is addressed to the socket: a client socket
	// writes it at once (in the app's actor, which keeps the deliveries' order), a
	// dashboard hands it to its actor (its filters, its held deliveries).
	Take(r *wire.Routed)
	// Close closes it (the node shuts down).
	Close(d wire.Disconnect)
	// Departure is what the app's dashboards are told when it leaves (ok false: nothing).
	Departure() (m wire.Outgoing, ok bool)
}

var (
	_ held = (*Client)(nil)
	_ held = (*Dashboard)(nil)
)
