package dashboard

import "github.com/keyward/keyward/actors/wire"

// How the facade (actors/sockets) addresses a dashboard socket without knowing its kind.

// SocketID is the socket's id in its app's actor.
func (d *Dashboard) SocketID() string { return d.ID }

// Pick answers the message of delivery r for this socket's actor: r's message for the
// dashboards (a *Delivery, which the filters read), nil when it has none.
func (d *Dashboard) Pick(r *wire.Routed) any { return r.ToDashboards }

// Departure: the dashboards are told nothing when a dashboard leaves.
func (d *Dashboard) Departure() (wire.Outgoing, bool) { return wire.Outgoing{}, false }
