// Package sockets is the realtime wing's facade: what http (the socket handlers and the
// REST helpers of SPEC 4.9), core's event pipeline and server call to run the WebSocket
// channels of SPEC 4.9, 4.11, 6.2 and 6.3 on one node. Service connects a socket
// (ConnectClient, ConnectDashboard), hands it its frames (ClientMessage,
// DashboardMessage) and forgets it (DisconnectClient, DisconnectDashboard); it
// broadcasts, chats, commands, pushes, kicks, bans, logs a user out, answers the online
// count and the session list, and turns the event pipeline's events into deliveries
// (HandleEvent). Each call becomes a message: to the app's actor (admission, join, leave,
// reads: actors/app) or to the socket's actor (a frame), or a delivery on the cluster bus
// that the app's actor of every node holding sockets of the app hands to its sockets'
// actors. The domain rules (the limits, SessionInfo, what hooks see and answer, what a
// message may hold, what an error means to a socket) are core/realtime's; the sockets'
// state and rules are their actors' (actors/session, actors/dashboard), which ask the
// node for what they need through the small Node interfaces this package implements
// (nodes.go); the wire format is actors/wire's.
//
// A socket lives on one node. The node's sockets of an app are registered with the app's
// actor (Registry, app.Apps), which runs a client socket's admission (one atomic call
// of the cluster engine's Presence: the 500-per-app limit and the one-socket-per-user rule
// in one step, the user's earlier socket named to be closed; on a goroutine, the
// registration in the same step as the answer), hands them the app's bus deliveries and
// drives their periodic work. Presence (online counts and session lists too) lives in the
// cluster engine as leases that the app's actor keeps while the socket is open
// (app.LeaseConfig: one renewal call for all its client sockets of an app every third
// of the lease, the release when a socket leaves), so a node that dies releases its
// sockets within Deps.LeaseTTL (10 s by default). What a renewal finds reaches the
// socket's actor as a message: a socket it restored writes what the list shows of it
// again (app.LeaseRestored), one it finds replaced is closed (app.LeaseSuperseded).
// The node's other periodic work runs per app, not per socket (tick.go, on the app
// actor's timers): one batched revalidation every realtime.RevalidateEvery and at once
// when the app changed (the change reaches the app's actor as a message,
// Registry.Invalidate). The online count, the session list (one engine call) and whether a
// user is online are asked of the app's actor, which reads them from the cluster engine
// outside its Receive and shares a read among the requests that arrive while it runs
// (Registry.Read).
//
// Each socket is an actor, a child of its app's actor (app.Socket): Client
// (actors/session) is the state and rules of a client socket's SessionActor (user,
// status, metadata, its message limiter), Dashboard (actors/dashboard) those of a
// DashboardActor (filters, limiter, the deliveries held until its first messages are
// sent, the owner's token recheck on its timer, and what it audits: a TokenCheck and an
// Auditor given at its connection). The actor handles a frame, a delivery, a
// revalidation verdict or its close one at a time (app.Turn); a frame's storage and
// cluster calls are a typed job that the actor pipes and the socket's Work does off the
// actor; the job comes back with its outcome as a message, and the next frame waits for
// it. wire.Peer is the edge's socket writer: a socket's actor hands it frames and closes
// it.
//
// A delivery for a user, an app's clients or an app's dashboards is published on the
// cluster bus; on every node that holds sockets of the app, the app's actor, which owns
// the subscription, builds its messages once (a session.Delivery or a broadcast's one
// wire.Shared for the clients, a dashboard.Delivery for the dashboards: one wire.Routed)
// and hands it to each socket through one small interface (kinds.go: held.Take), never by
// its concrete kind. A client socket queues its message on its writer at once, in the app
// actor's order of deliveries (a delivery only writes, so a broadcast to 500 sockets is
// not 500 actor turns); a dashboard hands it to its actor, which owns its filters and the
// deliveries it holds. A REST call, a ban or a variable change on any node therefore
// reaches a socket on any other.
//
// What crosses the wire is actors/wire's: message types, encoding and decoding, the
// Peer a socket is written through and why it closes (wire.Disconnect, the close code
// sent). A refusal or a check that fails tells the socket the domain error's code; a
// part that did not answer (engine, storage, actor, deadline) is UNAVAILABLE ("try
// again"), and anything else is a bug: INTERNAL, closed with 1011, logged and counted
// (Stats.InternalErrors).
//
// The http package admits a client socket (ConnectClient, with a Peer whose queue exists
// before its socket) before it answers the upgrade, so that a program holding its 101
// receives every delivery made after it; it runs one reader goroutine per socket that
// hands each message to the socket's actor (ClientMessage, DashboardMessage: they return
// once the message is handled, which holds back a fast sender), and a writer with a
// bounded queue behind Peer.
//
// A client socket's coming and going (session_connect, session_disconnect) is published
// only while the app is marked watched in the cluster engine by a node that holds one of
// its dashboards (watch.go): most of the time no dashboard is open, and the message would
// cost every connect a publication that each node of the app reads for nothing.
package sockets
