// Package actors is the realtime wing: the WebSocket channels run by actors
// (protoactor-go) that own their state and their behaviour, with typed messages (data:
// no functions, no collections of any). It holds no code; its packages are:
//
//   - sockets: the facade http, core's event pipeline and server call (connect a socket,
//     hand it a frame, broadcast, chat, command, push, kick, ban, force logout, online
//     count, session list); each call becomes a message.
//   - app: the AppActor, one per application per node (snapshot, compiled hooks and
//     their planning, socket registry, bus subscription, admission, leases, ticks,
//     reads, passivation), and the shell of its sockets' actors.
//   - session: the SessionActor of a client socket (user, status, metadata, limiter).
//   - dashboard: the DashboardActor of an owner's socket (filters, limiter, held
//     deliveries, token recheck, audit).
//   - wire: the wire format at the wing's edge (message types, encoding, decoding, the
//     socket writer, typed Disconnect).
//   - actorkit: the protoactor glue (metrics per kind, Runner and Pipe).
//
// The domain rules the actors apply are core/realtime's; the transport (upgrade, reader,
// writer, pinger) is transport/ws's.
package actors
