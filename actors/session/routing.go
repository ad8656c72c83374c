package session

import "github.com/keyward/keyward/actors/wire"

// How the facade (actors/sockets) addresses a client socket without knowing its kind.

// SocketID is the socket's id in its app's actor.
func (c *Client) SocketID() string { return c.ID }

// Take carries out delivery r when it is addressed to this socket: its message is
// written, then the socket is closed when the delivery says so. The app's actor calls it
// for each delivery, in the bus's order, so a socket's deliveries keep their order. A
// delivery only writes to the socket's writer (safe to call from anywhere) and reads the
// socket's fixed user, id and session, nothing the SessionActor changes: it takes no turn
// of that actor (a broadcast to 500 sockets is not 500 actor activations).
func (c *Client) Take(r *wire.Routed) {
	if r.ToClients == nil || r.ByUser && r.User != c.User.UserID || r.ByConn && r.Conn != c.ID ||
		r.Session != "" && r.Session != c.session {
		return
	}
	switch m := r.ToClients.(type) {
	case *wire.Shared:
		c.peer.SendShared(m)
	case *Delivery:
		if len(m.Msg) > 0 {
			c.peer.Send(m.Msg)
		}
		if m.Close.Code != 0 {
			c.peer.Close(m.Close)
		}
	}
}

// Departure is what the app's dashboards are told when the socket leaves: session_disconnect.
func (c *Client) Departure() (wire.Outgoing, bool) {
	return wire.Outgoing{Type: wire.TypeSessionDisconnect,
		Data: map[string]any{"userId": c.User.UserID, "username": c.User.Username, "id": c.ID}}, true
}
