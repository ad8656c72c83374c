// Package realtime holds the domain rules of the WebSocket channels of SPEC 4.9, 4.11,
// 6.2 and 6.3, and nothing that runs them: the limits of SPEC 8 and of this
// implementation (limits.go: sockets per app, message rates and their sliding Window,
// the lease ttl's bounds, the bounds of what a socket sends), what the session list shows
// of a socket (SessionInfo, SessionsOf), what hooks see of a client message and what they
// answer (HookInput, HookAction, Planner: core/wshooks plans), and the rules that refuse
// a message or an operation (rules.go: ValidText, ValidPayload, ValidUser,
// ValidMetadata, which dashboard actions are audited).
//
// It imports no actors package and knows no frame: the realtime wing (actors/...) runs
// the sockets, its facade (actors/sockets) is what http and core call, and actors/wire
// holds the wire format.
package realtime
