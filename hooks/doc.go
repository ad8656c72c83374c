// Package hooks will hold the WebSocket hook model of SPEC 4.9: validation of the bounds in
// the spec, conditions compiled with expr-lang/expr, and action planning. It performs no
// side effects: it returns what to do and the owning actor does it.
//
// Nothing lives here yet: the WebSocket issue brings it.
package hooks
