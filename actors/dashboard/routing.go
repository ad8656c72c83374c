package dashboard

import "github.com/keyward/keyward/actors/wire"

// How the facade (actors/sockets) addresses a dashboard socket without knowing its kind.

// SocketID is the socket's id in its app's actor.
func (d *Dashboard) SocketID() string { return d.ID }

// Take hands delivery r's message for the dashboards (a *Delivery) to the socket's
// actor, which alone reads its filters and holds deliveries until its greeting.
func (d *Dashboard) Take(r *wire.Routed) {
	if r.ToDashboards != nil {
		d.ref.Tell(r.ToDashboards)
	}
}

// Departure: the dashboards are told nothing when a dashboard leaves.
func (d *Dashboard) Departure() (wire.Outgoing, bool) { return wire.Outgoing{}, false }
