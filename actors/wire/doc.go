// Package wire is the realtime wing's edge: what crosses a socket of SPEC 6.2 and 6.3 and
// nothing of what it means. It owns the message types the SDKs read, the encoding of an
// outgoing message (Outgoing, Encode: no HTML escaping, which the C++ SDK does not
// decode), the decoding of an incoming one (Decode, Incoming: its members may sit beside
// type or inside data), the bound of one incoming message, a broadcast's shared frame
// (Shared), the writer the transport gives a socket (Peer), and why a socket is closed
// (Disconnect: a close code and its reason, an error value).
//
// The close codes are the ones sent: RFC 6455's for what is not the domain's (normal end,
// going away, policy, internal error) and SPEC 6.3's 4000 range, which the SDKs read
// (force logout, kicked, banned, replaced). There are no pseudo-codes to translate.
//
// The package imports nothing of the project: the socket actors (actors/session,
// actors/dashboard), the facade (actors/sockets) and the socket handlers (http) import it.
package wire
