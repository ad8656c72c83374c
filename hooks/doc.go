// Package hooks is the WebSocket hook model of SPEC 4.9: an owner defines, per application,
// up to MaxHooksPerApp hooks, each bound to a custom client message type (its Event), with
// up to MaxConditions conditions (all must hold) and 1 to MaxActions actions.
//
// Validate checks every bound of the spec (SPEC 2 "WebSocket hook", SPEC 8 "WebSocket
// limits") and Normalize fills the defaults. Compile turns an application's enabled hooks
// into an immutable Pipeline, with each hook's conditions compiled once into one
// expr-lang/expr program; Plan evaluates a client message against it and returns the
// Steps to carry out, with targets resolved and templates rendered.
//
// The package performs no side effects: it returns what to do and the owning actor does it.
package hooks
