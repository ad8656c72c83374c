package wire

// Routed is one delivery to the sockets of an app on this node, as each socket kind reads
// it: the message for the client sockets it is addressed to, and the message for the
// dashboard sockets. Each kind takes its own (the socket kinds' Take), so the facade
// (actors/sockets) hands a delivery to every socket the same way, whatever its kind. The
// messages are built once per delivery and shared by every socket that picks them.
type Routed struct {
	// ToClients is the message for the client sockets addressed; nil: none.
	ToClients any
	// ByUser narrows ToClients to the sockets of User, ByConn to the socket Conn, and a
	// Session that is not empty to the sockets opened with that session.
	ByUser, ByConn      bool
	User, Conn, Session string
	// ToDashboards is the message for every dashboard socket; nil: none.
	ToDashboards any
}
