// Package ws is Keyward's WebSocket transport: what a socket is on the wire, and nothing
// of what it means. It owns
//
//   - the sockets' side of the API's listener (Listener, listener.go): a socket's
//     request (a bodiless GET of a socket route) is read and served on a pooled worker
//     goroutine, through the same handler, without net/http's per-connection buffers
//     and goroutine; every other connection goes on to net/http unchanged. A request
//     served here has a context that never ends (the handler serves it whole before the
//     worker goes on, and a socket's admission has deadlines of its own); its
//     connection-wrapping helper WrappedConn keeps what net/http takes from a plain
//     connection;
//   - the upgrade (Transport.Upgrade): gorilla/websocket's Upgrader with hardened
//     settings (Config: no compression, no subprotocol, a bounded handshake, an origin
//     check the caller decides) and an upgrade it refuses answered with the body the
//     caller gives (Config.Refusal: the http package's error envelope, as JSON bytes);
//   - the reader (Conn.Read): one message after another to the caller's function, pings
//     and pongs answered, the read limit and the pong deadline; on Linux an idle socket
//     has no reader goroutine: it waits in the node's read poller (one epoll instance),
//     and a goroutine reads only when data came (elsewhere a goroutine per socket waits
//     in a shallow call, so that its stack stays at 2 KiB);
//   - the writer (Conn.Send, Conn.SendFrame): a bounded queue per socket (a socket too
//     slow to take it is closed with 1013), frames queued together written in one
//     system call, a frame for an idle socket written through by the sender without
//     blocking (send(2) on Linux) so that no goroutine starts, and a broadcast's frame
//     encoded once for every socket (Frame) and written through to its idle sockets by
//     the node's fan-out writers, up to GOMAXPROCS goroutines that run only while a
//     broadcast waits (fanout.go);
//   - the pinger: one timer per second of the ping period for the whole node, not one
//     per socket;
//   - the close (Conn.Close): a close code and reason after the frames queued before.
//
// It imports neither gin nor any of Keyward's domain packages (a test checks with `go
// list -deps`): the http package authenticates and admits a socket, upgrades it here, and
// hands the Conn to the realtime wing, which sends to it and closes it through a small
// interface of its own.
package ws
