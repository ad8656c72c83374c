package session

import "github.com/keyward/keyward/actors/wire"

// How the facade (actors/sockets) addresses a client socket without knowing its kind.

// SocketID is the socket's id in its app's actor.
func (c *Client) SocketID() string { return c.ID }

// Pick answers the message of delivery r for this socket's actor: r's message for the
// client sockets when r is addressed to this one, else nil.
func (c *Client) Pick(r *wire.Routed) any {
	if r.ToClients == nil || r.ByUser && r.User != c.User.UserID || r.ByConn && r.Conn != c.ID ||
		r.Session != "" && r.Session != c.session {
		return nil
	}
	return r.ToClients
}

// Departure is what the app's dashboards are told when the socket leaves: session_disconnect.
func (c *Client) Departure() (wire.Outgoing, bool) {
	return wire.Outgoing{Type: wire.TypeSessionDisconnect,
		Data: map[string]any{"userId": c.User.UserID, "username": c.User.Username, "id": c.ID}}, true
}
